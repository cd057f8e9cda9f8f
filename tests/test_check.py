"""The consistency check: every invariant broken on purpose behind the service's back is
found (GET /v1/check, the MCP tool, `pps check`), the safe ones are repaired by
`pps check --repair` (after which the check is clean once the server's workers have
run the jobs it enqueued), and source data (events, home files) is never touched.

The server does not follow file changes here (no watcher, no rescans), so a file edited
or deleted behind the index stays so until the check repairs it."""

from __future__ import annotations

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from engine.api import Service
from engine.graph import episodes
from engine.kernel.config import Settings
from engine.kernel.lock import owner
from pps.cli import app
from tests.conftest import AppServer, connect, create_entity, settings_env, wait_for
from tests.mcp_client import call, session
from tests.searching import home, write

LIMIT = 4096  # PPS_SEARCH_MAX_FILE_BYTES


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    settings = dict(
        search_watch=False, search_rescan_s=3600, search_max_file_bytes=LIMIT, queue_poll_s=0.05
    )
    with AppServer(tmp_path_factory.mktemp("pps") / "data", **settings) as app:
        yield app


def check(client) -> dict:
    response = client.get("/v1/check")
    assert response.status_code == 200, response.text
    report = response.json()
    assert [e["entity"] for e in report["entities"]] == [client.entity]
    return report["entities"][0]


def kinds(found: dict) -> dict[str, dict]:
    return {p["kind"]: p for p in found["problems"]}


def pps_check(server, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        app,
        ["check", *args, "--data-dir", str(server.data_dir)],
        env=settings_env(**server.overrides),
    )
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, result.stdout


def turns(client, n: int, channel: str = "terminal", **extra) -> list[int]:
    events = [
        {
            "event_uid": f"{channel}-{i}",
            "channel": channel,
            "content": f"{channel} turn number {i} about the garden",
            "created_at": f"2026-01-04T12:{i:02}:00Z",
            **extra,
        }
        for i in range(n)
    ]
    response = client.post("/v1/events", json=events)
    assert response.status_code == 200, response.text
    return [ack["id"] for ack in response.json()["events"]]


def settled(client) -> dict | None:
    """The check once clean and every embedding made (the workers have run)."""
    found = check(client)
    c = found["counts"]
    done = c["turns_embedded"] == c["turns"] and c["file_chunks_embedded"] == c["file_chunks"]
    return found if not found["problems"] and done else None


def raw(server) -> sqlite3.Connection:
    """A connection of our own, as a person with sqlite3 (foreign keys off, its default)."""
    return sqlite3.connect(server.settings.database_path, isolation_level=None, timeout=30)


def test_each_broken_invariant_is_found_and_the_safe_ones_repaired(server, client):
    ids = turns(client, 6)
    turns(client, 1, channel="hooks", event_type="session_start")  # a marker: no search row
    write(server, client, "memory/a.md", "# Alpha\n\nThe shed key hangs by the door.\n")
    write(server, client, "memory/b.md", "# Beta\n\nTomatoes go in the south bed.\n")
    write(server, client, "documents/c.md", "# Gamma\n\nThe well is 12 metres deep.\n")
    found = check(client)  # files written behind a server that does not watch
    assert kinds(found)["file_not_indexed"]["count"] == 3
    assert kinds(found)["file_not_indexed"]["safe"] is True
    assert pps_check(server, "--entity", client.entity, "--repair")[0] == 0
    found = wait_for(lambda: settled(client), what="a clean check")
    assert found["counts"]["files_indexed"] == 3 and found["counts"]["turns"] == 6
    assert found["counts"]["markers"] == 1

    # Break each invariant behind the service's back.
    (home(server, client) / "memory/a.md").unlink()
    (home(server, client) / "memory/b.md").write_text("# Beta\n\nPeppers now, not tomatoes.\n")
    write(server, client, "memory/new.md", "# New\n\nThe bees swarmed in May.\n")
    write(server, client, "memory/big.md", "# Big\n\n" + "word " * LIMIT)
    conn = raw(server)
    conn.execute(
        "DELETE FROM search_vectors WHERE chunk_id = (SELECT id FROM search_chunks"
        " WHERE event_id = ?)",
        (ids[0],),
    )
    conn.execute("DELETE FROM search_chunks WHERE event_id = ?", (ids[1],))
    for kind, payload in (
        ("embed_events", {"event_ids": [10**9]}),
        ("graph_episode", {"episode": "no-such-episode"}),
    ):
        conn.execute(
            "INSERT INTO jobs (entity, kind, key, payload, state, created_at, updated_at)"
            " VALUES (?, ?, 'broken', ?, 'dead', '2026-01-01T00:00:00.000000Z',"
            " '2026-01-01T00:00:00.000000Z')",
            (client.entity, kind, json.dumps(payload)),
        )
    conn.close()

    found = check(client)
    problems = kinds(found)
    assert problems["file_gone"]["examples"] == ["memory/a.md"]
    assert problems["file_changed"]["examples"] == ["memory/b.md"]
    assert problems["file_not_indexed"]["examples"] == ["memory/new.md"]
    assert problems["turn_without_vector"]["examples"] == [f"event {ids[0]}"]
    assert problems["turn_unindexed"]["examples"] == [f"event {ids[1]}"]
    assert problems["orphan_job"]["count"] == 2
    assert all(p["repair"] for p in found["problems"])
    assert [s["path"] for s in found["skipped"]] == ["memory/big.md"]
    assert "PPS_SEARCH_MAX_FILE_BYTES" in found["skipped"][0]["problem"]

    tool = session(
        f"{server.url}/mcp",
        client.headers["Authorization"].removeprefix("Bearer "),
        lambda mcp: call(mcp, "validate_retrieval_chain"),
    )
    assert set(kinds(tool["entities"][0])) == set(problems)

    code, out = pps_check(server, "--entity", client.entity, "--json")
    assert code == 1
    assert set(kinds(json.loads(out)["entities"][0])) == set(problems)

    code, out = pps_check(server, "--entity", client.entity, "--repair")
    assert code == 0, out
    assert "repaired" in out and "memory/b.md" in out and "skipped   memory/big.md" in out
    found = wait_for(lambda: settled(client), what="a clean check after the repair")
    assert found["counts"]["files_indexed"] == 3  # b, c, new; a gone, big skipped
    assert found["counts"]["turns_embedded"] == 6 and found["counts"]["events"] == 7
    for kept in ("memory/b.md", "memory/new.md", "memory/big.md", "documents/c.md"):
        assert (home(server, client) / kept).is_file()
    hits = client.post("/v1/search", json={"query": "peppers"}).json()["results"]
    assert any("Peppers" in hit["text"] for hit in hits)


def test_events_gone_from_the_log_are_reported_never_invented(server, client):
    """Events are source data: an episode or a summary whose events are gone is reported
    with no repair; the index rows and window entries that pointed at them are dropped."""
    ids = turns(client, 4)
    episodes.close_windows(server.db, episodes.Window(), force=True)
    late = turns(client, 1, channel="late")[0]  # waits in its episode window
    response = client.post(
        "/v1/summaries",
        json={"summary_text": "four turns", "start_id": ids[0], "end_id": ids[-1]},
    )
    assert response.status_code == 200, response.text
    wait_for(lambda: settled(client), what="a clean check")
    conn = raw(server)  # foreign keys off: the rows that point at them stay
    conn.execute("DELETE FROM events WHERE id IN (?, ?)", (ids[1], late))
    conn.close()

    problems = kinds(check(client))
    assert set(problems) == {
        "episode_events_gone",
        "summary_events_gone",
        "orphan_turn_row",
        "pending_event_gone",
    }
    assert problems["summary_events_gone"]["safe"] is False
    assert "1 of 4 events gone" in problems["summary_events_gone"]["examples"][0]
    assert problems["orphan_turn_row"]["count"] == 2

    assert pps_check(server, "--entity", client.entity, "--repair")[0] == 1
    found = check(client)
    assert set(kinds(found)) == {"episode_events_gone", "summary_events_gone"}
    assert found["counts"]["events"] == 3 and found["counts"]["summaries"] == 1


def test_a_fact_that_traces_to_no_event_is_found_when_the_graph_is_up(tmp_path, falkordb):
    with AppServer(tmp_path / "data", graph_backend="falkordb") as graph_server:
        token = create_entity(graph_server.data_dir, "ada")
        client = connect(graph_server, token)
        client.entity = "ada"
        graph = graph_server.app.state.service.runtime.graph
        wait_for(lambda: graph.status()["status"] == "ok", 60, "the graph")
        assert check(client)["graph"] == "ok"
        # A fact written straight into the graph, from no episode: it has no events.
        graph.store.import_facts("ada", [("Ada", "KNOWS", "Bob", "Ada knows Bob")])
        found = check(client)
        assert found["counts"]["facts"] == 1
        untraced = kinds(found)["fact_untraced"]
        assert untraced["safe"] is False and "pps replay graph" in untraced["repair"]
        # `pps check` beside the server reaches its FalkorDB through the data dir's socket
        code, out = pps_check(graph_server, "--entity", "ada", "--json")
        cli = json.loads(out)["entities"][0]
        if graph.server.port == 0:  # a socket (a data dir path short enough for one)
            assert code == 1 and cli["graph"] == "ok" and "fact_untraced" in kinds(cli)
        else:
            assert cli["graph"].startswith("unavailable")
        graph.server.stop()  # the graph down: said, and skipped
        found = wait_for(lambda: (f := check(client))["graph"] != "ok" and f)
        assert found["graph"].startswith("unavailable") and "fact_untraced" not in kinds(found)


def test_a_command_reaches_the_graph_only_once_a_part_asks_for_it(tmp_path, falkordb):
    """A command's service (`Service.open(settings, graph="pps check")`) holds neither the
    data dir nor a graph until a part asks for the graph: a command that fails first (an
    entity that does not exist) starts no FalkorDB. Once asked, the embedded graph runs
    under the data dir's lock in the command's name, until the service closes."""
    settings = Settings(data_dir=tmp_path / "data", graph_backend="falkordb")
    with Service.open(settings, graph="pps check") as service:
        assert owner(settings.data_dir) is None
        assert service.check([]).entities == []  # the check reaches the graph
        held = owner(settings.data_dir)
        assert held is not None and held.command == "pps check"
    assert owner(settings.data_dir) is None
