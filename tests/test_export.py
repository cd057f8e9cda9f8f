"""Export and import of one entity as an operator lives them: `pps export` while the
server runs, `pps import export` into a fresh data dir under another name, and a server
there that answers the same searches (the same event uids and file paths) and a recall;
re-imports that add nothing, exports that are byte-identical, another entity's data
never in an export, and bad exports refused with nothing written.

Real parts only: the app on a real HTTP server (tests/conftest.py), the `pps` command in
process, real SQLite files and real folders.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.capture import entities
from tests.conftest import AppServer, connect, settings_env, wait_for

# BM25 only: no CPU for vectors, and no reranker, whose time budget reads fewer
# candidates on a busy machine and so orders the same data differently.
NO_MODEL = {"embedding_model": "no-such-org/no-such-model", "search_rerank": 0}
QUERIES = ["lighthouse keeper gulls", "orchard ladder apples", "violin practice evening"]
CHANNELS = [("terminal", "s-1"), ("discord:general", "s-2"), ("reflection", None)]


def pps(*args: str):
    """The `pps` command in process; the result (exit_code, stdout, stderr)."""
    from pps.cli import app

    umask = os.umask(0o077)
    try:
        return CliRunner().invoke(
            app, list(args), env=settings_env(graph_backend="none", **NO_MODEL)
        )
    finally:
        os.umask(umask)


def ok(result):
    assert result.exit_code == 0, result.stderr
    return result


def refused(result, *words: str) -> None:
    assert result.exit_code == 1, result.stdout
    for word in words:
        assert word in result.stderr, result.stderr


def files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def settled(client) -> bool:
    """Every job the queue can run has been run (without a model, turn jobs wait)."""
    counts = client.get("/v1/queue").json()["counts"]
    return counts["pending"] == counts["running"] == counts["retry"] == 0


def answers(client) -> dict[str, list]:
    found = {}
    for query in QUERIES:
        response = client.post("/v1/search", json={"query": query, "limit": 8})
        assert response.status_code == 200, response.text
        found[query] = [(r.get("event_uid"), r.get("path")) for r in response.json()["results"]]
    return found


def count(data_dir: Path, table: str, entity: str) -> int:
    conn = sqlite3.connect(data_dir / "pps.sqlite3")
    try:
        return conn.execute(f"SELECT COUNT(*) FROM {table} WHERE entity = ?", (entity,)).fetchone()[
            0
        ]
    finally:
        conn.close()


TOPICS = [
    "the lighthouse keeper counts {n} gulls at dusk",
    "we carried the orchard ladder to pick {n} apples",
    "violin practice in the evening, scale number {n}",
    "tea in the kitchen while the rain keeps on, cup {n}",
]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A source data dir with lyra (events on three channels, word-photos, a fragment, a
    memory file, a crystal, a summary, inventory) and nova (its own words), exported while
    its server runs; then imported as vega into a fresh data dir."""
    root = tmp_path_factory.mktemp("export")
    source = root / "source"
    (source / "entities" / "lyra").mkdir(parents=True)
    (source / "entities" / "lyra" / "MEMORY.md").write_text("# Memory\n\nThe violin lives here.\n")
    with AppServer(source, **NO_MODEL) as server:
        lyra = connect(server, entities.create(server.db, "lyra"))
        nova = connect(server, entities.create(server.db, "nova"))
        batch = []
        for n in range(48):
            channel, session = CHANNELS[n % 3]
            batch.append(
                {
                    "event_uid": f"lyra-{n}",
                    "channel": channel,
                    "session_id": session,
                    "author": "jeff" if n % 2 else "lyra",
                    "role": "user" if n % 2 else "assistant",
                    "content": TOPICS[n % 4].format(n=n),
                    "metadata": {"n": n, "tags": ["b", "a"], "z": {"y": 1, "x": 2}},
                    "created_at": f"2026-01-{1 + n // 4:02d}T10:{n % 60:02d}:00Z",
                }
            )
        assert lyra.post("/v1/events", json=batch).status_code == 200
        assert (
            nova.post(
                "/v1/events",
                json=[
                    {"event_uid": f"nova-{n}", "channel": "terminal", "content": f"zeppelin {n}"}
                    for n in range(5)
                ],
            ).status_code
            == 200
        )
        for title in ("Harbor", "Orchard"):
            response = lyra.post(
                "/v1/anchors",
                json={"title": title, "content": f"The {title.lower()} and its lighthouse keeper."},
            )
            assert response.status_code in (200, 201), response.text
        response = lyra.post(
            "/v1/fragments",
            json={
                "text": "Apples from the orchard ladder.",
                "category": "home",
                "tags": ["orchard"],
            },
        )
        assert response.status_code in (200, 201), response.text
        assert lyra.post(
            "/v1/crystals", json={"content": "# Steady\n\nViolin and tea."}
        ).status_code in (200, 201)
        first, last = _ids(lyra)
        response = lyra.post(
            "/v1/summaries",
            json={
                "summary_text": "The first days: gulls, apples, violin.",
                "start_id": first,
                "end_id": last,
                "channels": ["terminal"],
            },
        )
        assert response.status_code in (200, 201), response.text
        assert lyra.post(
            "/v1/spaces", json={"name": "kitchen", "description": "# Kitchen\n\nWarm."}
        ).status_code in (200, 201)
        response = lyra.post(
            "/v1/inventory",
            json={
                "name": "blue robe",
                "category": "wardrobe",
                "description": "soft",
                "attributes": {"color": "blue"},
                "space": "kitchen",
            },
        )
        assert response.status_code in (200, 201), response.text
        assert lyra.post("/v1/spaces/kitchen/enter", json={}).status_code == 200
        assert nova.post("/v1/spaces", json={"name": "zeppelin deck"}).status_code in (200, 201)
        wait_for(lambda: settled(lyra), 60, "lyra's jobs")
        wait_for(
            lambda: lyra.get("/v1/search/index").json()["files"] == 4, 30, "lyra's 4 files indexed"
        )
        before = answers(lyra)
        out = root / "lyra-export"
        exported = server.pps("export", "--entity", "lyra", str(out))
        nova_out = root / "nova-export"
        server.pps("export", "--entity", "nova", str(nova_out))
    target = root / "target"
    imported = ok(pps("import", "export", str(out), "--entity", "vega", "--data-dir", str(target)))
    token = imported.stdout.strip()
    yield {
        "root": root,
        "source": source,
        "out": out,
        "nova_out": nova_out,
        "target": target,
        "token": token,
        "before": before,
        "exported": exported,
        "imported": imported,
    }


def _ids(client) -> tuple[int, int]:
    events = client.get("/v1/events", params={"order": "oldest", "limit": 100}).json()["events"]
    return events[0]["id"], events[20]["id"]


def test_an_export_is_plain_readable_files(world):
    out = world["out"]
    assert "48 events" in world["exported"] and "1 summaries" in world["exported"]
    names = files(out)
    assert {"export.json", "events.jsonl", "summaries.jsonl", "inventory.jsonl"} <= names.keys()
    homes = sorted(n for n in names if n.startswith("home/"))
    assert "home/MEMORY.md" in homes
    assert any(n.startswith("home/word_photos/") for n in homes)
    assert any(n.startswith("home/.brain/fragments/home/") for n in homes)
    assert "home/crystals/crystal_001.md" in homes
    lines = names["events.jsonl"].decode().splitlines()
    assert len(lines) == 48
    first = json.loads(lines[0])
    assert list(first) == [
        "event_uid",
        "created_at",
        "received_at",
        "channel",
        "event_type",
        "session_id",
        "author",
        "role",
        "content",
        "metadata",
    ]
    assert first["metadata"] == {"n": 0, "tags": ["b", "a"], "z": {"x": 2, "y": 1}}
    assert [json.loads(line)["event_uid"] for line in lines] == [f"lyra-{n}" for n in range(48)]
    [summary] = [json.loads(x) for x in names["summaries.jsonl"].decode().splitlines()]
    assert (summary["start_uid"], summary["end_uid"]) == ("lyra-0", "lyra-20")
    kinds = [json.loads(x)["kind"] for x in names["inventory.jsonl"].decode().splitlines()]
    assert kinds == ["space", "item", "current_space"]
    manifest = json.loads(names["export.json"])
    assert manifest["entity"] == "lyra" and manifest["counts"]["events"] == 48
    assert manifest["counts"]["home_files"] == len(homes)
    for path in [out, *out.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path


def test_another_entitys_data_is_never_in_an_export(world):
    for name, data in files(world["out"]).items():
        assert b"zeppelin" not in data and b"nova" not in data, name
    nova = files(world["nova_out"])
    assert len(nova["events.jsonl"].decode().splitlines()) == 5
    assert b"lyra" not in b"".join(nova.values())


def test_the_import_answers_the_same_searches_and_recalls(world):
    assert world["token"].startswith("pps_") and "\n" not in world["token"]
    assert "48 events new" in world["imported"].stderr
    with AppServer(world["target"], **NO_MODEL) as server, connect(server, world["token"]) as vega:
        wait_for(lambda: settled(vega), 60, "vega's jobs")
        assert answers(vega) == world["before"]
        assert all(world["before"][q] for q in QUERIES)
        recalled = vega.post("/v1/recall", json={"context": "the lighthouse keeper"})
        assert recalled.status_code == 200, recalled.text
        assert "lighthouse" in recalled.json()["context"]
        startup = vega.post("/v1/recall", json={"context": "startup"}).json()["context"]
        assert "Steady" in startup  # the crystal
        stats = vega.get("/v1/summaries/stats").json()
        assert stats["summaries"] == 1
        [item] = vega.get("/v1/inventory").json()["items"]
        assert (item["name"], item["space"], item["attributes"]) == (
            "blue robe",
            "kitchen",
            {"color": "blue"},
        )

        # Re-imported while this server serves the data dir: nothing new.
        counts = {t: count(world["target"], t, "vega") for t in _TABLES}
        again = ok(
            pps(
                "import",
                "export",
                str(world["out"]),
                "--entity",
                "vega",
                "--data-dir",
                str(world["target"]),
            )
        )
        assert again.stdout == ""  # no token: the entity exists
        assert "0 events new, 48 already there" in again.stderr
        assert "0 summaries new, 1 already there" in again.stderr
        assert "0 home files copied" in again.stderr
        assert {t: count(world["target"], t, "vega") for t in _TABLES} == counts
        assert answers(vega) == world["before"]


_TABLES = ("events", "summaries", "spaces", "inventory_items", "current_spaces", "search_files")


def test_exports_of_unchanged_data_are_identical_and_survive_an_import(world, tmp_path):
    first = files(world["out"])
    ok(pps("export", "--entity", "lyra", str(world["out"]), "--data-dir", str(world["source"])))
    assert files(world["out"]) == first
    # The imported copy exports to the same lines and files, only its name differs.
    copy = tmp_path / "vega"
    ok(pps("export", "--entity", "vega", str(copy), "--data-dir", str(world["target"])))
    again = files(copy)
    assert {k: v for k, v in again.items() if k != "export.json"} == {
        k: v for k, v in first.items() if k != "export.json"
    }


def test_a_re_export_shows_what_changed_and_drops_what_is_gone(world, tmp_path):
    out = tmp_path / "again"
    shutil.copytree(world["out"], out)
    (out / ".git").mkdir()  # not the export's: left alone
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / "home" / "stale.md").write_text("gone from the home\n")
    ok(pps("export", "--entity", "lyra", str(out), "--data-dir", str(world["source"])))
    assert not (out / "home" / "stale.md").exists()
    assert (out / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"


def test_a_folder_that_is_not_an_export_of_the_entity_is_refused(world, tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    refused(
        pps("export", "--entity", "lyra", str(busy), "--data-dir", str(world["source"])),
        "not empty",
    )
    refused(
        pps("export", "--entity", "nova", str(world["out"]), "--data-dir", str(world["source"])),
        "export of 'lyra'",
    )
    refused(
        pps(
            "export", "--entity", "nobody", str(tmp_path / "x"), "--data-dir", str(world["source"])
        ),
        "no entity named 'nobody'",
    )


def test_a_table_no_one_placed_stops_the_export_and_names_where_it_is_placed(tmp_path):
    data = tmp_path / "data"
    with AppServer(data, **NO_MODEL) as server:
        entities.create(server.db, "wren")
    conn = sqlite3.connect(data / "pps.sqlite3")
    conn.execute("CREATE TABLE later_notes (entity TEXT, note TEXT)")  # a later migration's
    conn.commit()
    conn.close()
    out = tmp_path / "out"
    result = pps("export", "--entity", "wren", str(out), "--data-dir", str(data))
    refused(result, "table 'later_notes' holds an entity's rows", "no export until it does")
    [named] = re.findall(r"engine/backup/\w+\.py", result.stderr)
    placed = importlib.import_module(named.removesuffix(".py").replace("/", "."))
    assert "events" in placed.CARRIED and "jobs" in placed.NOT_EXPORTED  # the file that places
    assert not out.exists()


def test_a_missing_folder_is_refused(tmp_path):
    refused(
        pps("import", "export", str(tmp_path / "nowhere"), "--data-dir", str(tmp_path / "d")),
        "no export at",
    )
    assert not (tmp_path / "d").exists()


def _broken(world, tmp_path, name: str, edit) -> Path:
    copy = tmp_path / name
    shutil.copytree(world["out"], copy)
    edit(copy)
    return copy


def test_a_malformed_line_is_refused_naming_its_file_and_line_and_nothing_is_written(
    world, tmp_path
):
    def break_line_7(folder: Path) -> None:
        lines = (folder / "events.jsonl").read_text().splitlines()
        lines[6] = lines[6][:-5]
        (folder / "events.jsonl").write_text("\n".join(lines) + "\n")

    bad = _broken(world, tmp_path, "bad", break_line_7)
    fresh = tmp_path / "fresh"
    refused(
        pps("import", "export", str(bad), "--data-dir", str(fresh)),
        "events.jsonl line 7",
        "not JSON",
    )
    assert not fresh.exists()  # nothing at all: no data dir, no entity, no token


def test_an_inventory_kind_that_is_not_text_is_refused_naming_its_line(world, tmp_path):
    """A hand-edited export whose first inventory line has a list for its kind: refused
    like any other unknown kind, with its line, rather than a crash."""

    def list_kind(folder: Path) -> None:
        lines = (folder / "inventory.jsonl").read_text().splitlines()
        lines[0] = json.dumps({**json.loads(lines[0]), "kind": ["space"]})
        (folder / "inventory.jsonl").write_text("\n".join(lines) + "\n")

    bad = _broken(world, tmp_path, "kind", list_kind)
    fresh = tmp_path / "fresh"
    refused(
        pps("import", "export", str(bad), "--data-dir", str(fresh)),
        "inventory.jsonl line 1",
        "kind: one of space, item, current_space",
    )
    assert not fresh.exists()


def test_a_bad_line_after_new_events_stores_none_of_them(world, tmp_path):
    """Into the existing vega: a new event on line 49, then one with no content on line 50.
    The whole export is checked before anything is written, so line 49 is not stored."""

    def append(folder: Path) -> None:
        with open(folder / "events.jsonl", "a") as handle:
            line = json.loads((folder / "events.jsonl").read_text().splitlines()[0])
            handle.write(json.dumps({**line, "event_uid": "late-1"}) + "\n")
            handle.write(json.dumps({**line, "event_uid": "late-2", "content": " "}) + "\n")

    bad = _broken(world, tmp_path, "late", append)
    before = {t: count(world["target"], t, "vega") for t in _TABLES}
    refused(
        pps("import", "export", str(bad), "--entity", "vega", "--data-dir", str(world["target"])),
        "events.jsonl line 50",
        "content",
    )
    assert {t: count(world["target"], t, "vega") for t in _TABLES} == before


def test_a_summary_of_unknown_events_and_a_different_home_file_are_refused(world, tmp_path):
    def unknown(folder: Path) -> None:
        line = json.loads((folder / "summaries.jsonl").read_text())
        (folder / "summaries.jsonl").write_text(json.dumps({**line, "end_uid": "nope"}) + "\n")

    refused(
        pps(
            "import",
            "export",
            str(_broken(world, tmp_path, "s", unknown)),
            "--data-dir",
            str(tmp_path / "d1"),
        ),
        "summaries.jsonl line 1",
        "'nope'",
    )
    assert not (tmp_path / "d1").exists()

    def changed(folder: Path) -> None:
        (folder / "home" / "MEMORY.md").write_text("# Memory\n\nSomething else.\n")

    before = {t: count(world["target"], t, "vega") for t in _TABLES}
    memory = world["target"] / "entities" / "vega" / "MEMORY.md"
    kept = memory.read_bytes()
    refused(
        pps(
            "import",
            "export",
            str(_broken(world, tmp_path, "h", changed)),
            "--entity",
            "vega",
            "--data-dir",
            str(world["target"]),
        ),
        "MEMORY.md",
        "nothing was imported",
    )
    assert memory.read_bytes() == kept
    assert {t: count(world["target"], t, "vega") for t in _TABLES} == before
