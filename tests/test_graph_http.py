"""Layer 3 end to end, on each backend (`graph_target`: the embedded FalkorDB and a real
Neo4j 5, see tests/graphs.py): the real app on real HTTP and MCP, the real embedding
model, fed by the stub LLM over HTTP. Faults: the LLM failing or absent, the graph server
killed mid-run or down for a delete, the engine killed with SIGKILL mid-job; and a replay
into an empty graph. On Neo4j every entity of the module shares one database (entity
names are unique in this module for that reason)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from typing import Any

import httpx
import pytest
from mcp_client import ToolFailed, call, session
from stub_llm import StubLLM

from pps.process import ServerProcess, free_port
from tests.conftest import AppServer, create_entity, settings_env, wait_for

FAST = {
    "graph_episode_idle_s": 0.3,
    "graph_sweep_s": 0.1,
    "queue_poll_s": 0.05,
    "queue_backoff_initial_s": 0.1,
    "queue_backoff_max_s": 0.3,
    "llm_timeout_s": 5,
    "graph_backend": "falkordb",
    "graph_url": None,
}
TURNS = [
    "I moved to Denver with Lyra last spring.",
    "Lyra likes the Denver mountains.",
    "Jeff works at Lockheed on satellites.",
]


def llm_settings(stub: StubLLM | None, graph: dict[str, Any] | None = None) -> dict[str, Any]:
    """Quick timings and the stub LLM (None: no LLM), on the embedded FalkorDB unless
    `graph` gives the settings of another graph server."""
    fast = {**FAST, **(graph or {})}
    if stub is None:
        return {**fast, "llm_provider": "none"}
    return {
        **fast,
        "llm_provider": "openai_compatible",
        "llm_base_url": stub.url,
        "llm_model": "stub",
    }


class Entity:
    """An entity on a server, talking REST like a client would."""

    def __init__(self, server: AppServer | ServerProcess, name: str, create: bool = True):
        self.server, self.name = server, name
        if create:
            self.token = create_entity(server.data_dir, name)

    @property
    def http(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.Client(base_url=self.server.url, headers=headers, timeout=30)

    def say(self, *turns: str, session: str = "s1") -> list[str]:
        events = [
            {"channel": "terminal", "author": "Jeff", "content": t, "session_id": session}
            for t in turns
        ]
        with self.http as http:
            stored = http.post("/v1/events", json=events)
        assert stored.status_code == 200, stored.text
        return [e["event_uid"] for e in stored.json()["events"]]

    def stats(self) -> dict:
        with self.http as http:
            return http.get("/v1/texture/stats").json()

    def search(self, query: str, **extra) -> httpx.Response:
        with self.http as http:
            return http.post("/v1/texture/search", json={"query": query, **extra})

    def ingested(self, n: int = 1, timeout: float = 300) -> dict:
        """Stats once n episodes are in the graph and their jobs are settled (a job is
        marked done in its own transaction, just after its episode is). The bound only
        ends a stuck test: on a loaded machine an extraction takes minutes, and how long
        it takes is bench/graph.py's to measure."""
        return wait_for(
            lambda: (
                (s := self.stats())["episodes"]["ingested"] >= n
                and not s["jobs"].get("running")
                and s
            ),
            timeout,
            "ingestion",
        )


def jobs(server: AppServer | ServerProcess) -> list[tuple]:
    with sqlite3.connect(server.data_dir / "pps.sqlite3") as conn:
        return conn.execute(
            "SELECT key, state, attempts, last_error FROM jobs WHERE kind = 'graph_episode'"
            " ORDER BY id"
        ).fetchall()


@pytest.fixture(scope="module")
def server(tmp_path_factory, stub, graph_target):
    graph_target.fresh()
    settings = llm_settings(stub, graph_target.settings())
    with AppServer(tmp_path_factory.mktemp("graph") / "data", **settings) as app:
        yield app


@pytest.fixture
def healthy(stub):
    stub.set_mode(None)
    stub.reset_counts()
    yield stub
    stub.set_mode(None)


def test_turns_become_facts_traced_to_their_events(server, healthy):
    lyra = Entity(server, "lyra")
    uids = lyra.say(*TURNS)
    stats = lyra.ingested()
    assert stats["graph"]["episodes"] == 1 and stats["graph"]["facts"] > 0
    assert stats["usage_today"]["calls"] == healthy.calls > 0
    found = lyra.search("Denver mountains", limit=5)
    assert found.status_code == 200 and found.json()["status"] == "ok"
    facts = found.json()["facts"]
    assert facts and len(facts) <= 5
    assert {"uuid", "fact", "valid_at", "invalid_at", "source", "target", "event_uids"} <= set(
        facts[0]
    )
    assert all(f["event_uids"] == uids for f in facts)
    with lyra.http as http:
        around = http.get("/v1/texture/explore", params={"entity_name": "Denver", "depth": 2})
        assert around.status_code == 200
        assert {"Jeff", "Lyra"} <= {n["name"] for n in around.json()["nodes"]}
        line = http.get("/v1/texture/timeline", params={"limit": 5}).json()
        assert [e["event_uids"] for e in line["episodes"]] == [uids]
        assert line["episodes"][0]["facts"]


def test_notes_and_triplets_through_the_queue(server, healthy):
    nexus = Entity(server, "nexus")
    with nexus.http as http:
        note = http.post("/v1/texture", json={"content": "Nexus keeps a garden in Boulder."})
        trip = http.post(
            "/v1/texture/triplets",
            json={"source": "Nexus", "relationship": "LIVES_IN", "target": "Boulder",
                  "fact": "Nexus lives in Boulder."},
        )  # fmt: skip
    assert note.status_code == trip.status_code == 202
    nexus.ingested(2)
    facts = nexus.search("Boulder").json()["facts"]
    by_fact = {f["fact"]: f for f in facts}
    assert by_fact["Nexus lives in Boulder."]["event_uids"] == [trip.json()["event_uid"]]
    assert any(f["event_uids"] == [note.json()["event_uid"]] for f in facts)


def test_bad_input_names_the_field_and_changes_nothing(server, healthy):
    orion = Entity(server, "orion")
    cases = [
        ("post", "/v1/texture/search", {"json": {"query": "x", "limit": 0}}, "limit"),
        ("post", "/v1/texture/search", {"json": {"limit": 3}}, "query"),
        ("post", "/v1/texture/search", {"json": {"query": "x", "since": "soon"}}, "since"),
        ("post", "/v1/texture/search", {"json": {"query": "x", "colour": 1}}, "colour"),
        ("get", "/v1/texture/explore", {"params": {"entity_name": "x", "depth": 9}}, "depth"),
        ("get", "/v1/texture/timeline", {"params": {"limit": 0}}, "limit"),
        ("post", "/v1/texture", {"json": {"content": "  "}}, "content"),
        ("post", "/v1/texture/triplets", {"json": {"source": "a", "relationship": "R",
                                                   "fact": "a r b"}}, "target"),
    ]  # fmt: skip
    with orion.http as http:
        for method, path, kwargs, field in cases:
            answer = getattr(http, method)(path, **kwargs)
            assert answer.status_code == 422, (path, answer.text)
            assert field in {p["field"] for p in answer.json()["problems"]}, (path, answer.text)
        assert http.delete("/v1/texture/not-a-uuid").status_code == 404
        assert http.get("/v1/events").json()["events"] == []
    assert orion.stats()["episodes"] == {"closed": 0, "ingested": 0, "truncated": 0,
                                         "turns_waiting": 0}  # fmt: skip


def test_one_entity_never_reaches_anothers_graph(server, healthy):
    """By fact, node and episode uuid, by name, over REST and MCP: nothing of vega's
    reaches altair (on Neo4j both live in one database)."""
    owner, other = Entity(server, "vega"), Entity(server, "altair")
    owner.say("Vega plays the Cello in Prague.")
    owner.ingested()
    fact = owner.search("Cello Prague").json()["facts"][0]
    with owner.http as http:
        prague = http.get("/v1/texture/explore", params={"entity_name": "Prague"}).json()
        (episode,) = http.get("/v1/texture/timeline").json()["episodes"]
    uuids = [fact["uuid"], prague["center"]["uuid"], episode["uuid"]]
    assert other.search("Cello Prague").json()["facts"] == []
    with other.http as http:
        for uuid in uuids:
            assert http.delete(f"/v1/texture/{uuid}").status_code == 404
        assert http.get("/v1/texture/explore", params={"entity_name": "Prague"}).status_code == 404
        assert http.get("/v1/texture/timeline").json()["episodes"] == []

    async def look_and_delete(client) -> list[str]:
        assert (await call(client, "texture_search", query="Cello Prague"))["facts"] == []
        assert (await call(client, "texture_timeline"))["episodes"] == []
        refusals = []
        for tool, arguments in [
            ("texture_explore", {"entity_name": "Prague"}),
            *[("texture_delete", {"uuid": uuid}) for uuid in uuids],
        ]:
            with pytest.raises(ToolFailed) as refused:
                await call(client, tool, **arguments)
            refusals.append(str(refused.value))
        return refusals

    refusals = session(f"{server.url}/mcp", other.token, look_and_delete)
    assert all("not found" in r.lower() for r in refusals), refusals
    assert fact["uuid"] in {f["uuid"] for f in owner.search("Cello Prague").json()["facts"]}
    with owner.http as http:
        assert http.delete(f"/v1/texture/{fact['uuid']}").json()["deleted"] == "fact"
    assert fact["uuid"] not in {f["uuid"] for f in owner.search("Cello Prague").json()["facts"]}


def test_explore_finds_a_name_in_any_case_and_nothing_else(server, healthy):
    """An unknown name is a 404 naming it, over REST and MCP, not the nearest entity."""
    bellatrix = Entity(server, "bellatrix")
    bellatrix.say("Bellatrix keeps a Telescope in Flagstaff.")
    bellatrix.ingested()
    with bellatrix.http as http:
        for asked in ("Flagstaff", "flagstaff", "FLAGSTAFF"):
            found = http.get("/v1/texture/explore", params={"entity_name": asked})
            assert found.status_code == 200, (asked, found.text)
            assert found.json()["center"]["name"] == "Flagstaff"
        for asked in ("Flagstaff Arizona", "the Telescope", "Flag"):
            missing = http.get("/v1/texture/explore", params={"entity_name": asked})
            assert missing.status_code == 404, (asked, missing.text)
            assert missing.json()["problems"] == [
                {"field": "entity_name", "problem": f"no entity named {asked!r} in the graph"}
            ]

    async def explore(client) -> str:
        assert (await call(client, "texture_explore", entity_name="telescope"))["center"]
        with pytest.raises(ToolFailed) as refused:
            await call(client, "texture_explore", entity_name="Flagstaff Arizona")
        return str(refused.value)

    refusal = session(f"{server.url}/mcp", bellatrix.token, explore)
    assert "not found: no entity named 'Flagstaff Arizona' in the graph" in refusal


def test_llm_500_three_times_then_recovers_lands_once(server, healthy):
    sirius = Entity(server, "sirius")
    healthy.fail("500", times=3)
    sirius.say("Sirius adopted a dog named Rigel in Austin.")
    stats = sirius.ingested()
    assert healthy.faults_served["500"] == 3
    assert stats["graph"]["episodes"] == 1 and stats["jobs"]["done"] == 1
    ((state, attempts),) = job_states(server, sirius)
    assert (state, attempts) == ("done", 4)


def job_states(server: AppServer, entity: Entity) -> list[tuple[str, int]]:
    """(state, attempts) of the entity's graph jobs, oldest episode first."""
    with entity.http as http:
        keys = [e["uuid"] for e in http.get("/v1/texture/timeline").json()["episodes"]][::-1]
    by_key = {key: (state, attempts) for key, state, attempts, _ in jobs(server)}
    return [by_key[key] for key in keys]


def test_llm_failing_for_good_retries_and_says_why(server, healthy):
    deneb = Entity(server, "deneb")
    healthy.set_mode("500")
    uids = deneb.say("Deneb sings in Oslo.")
    wait_for(lambda: deneb.stats()["jobs"]["retry"] + deneb.stats()["jobs"]["running"], 10)
    health = wait_for(
        lambda: (h := httpx.get(f"{server.url}/health").json())["components"]["llm"]["status"]
        == "failing" and h, 10, "health to report the failing LLM",
    )  # fmt: skip
    assert "500" in health["components"]["llm"]["error"] and health["status"] == "degraded"
    with deneb.http as http:
        assert [e["event_uid"] for e in http.get("/v1/events").json()["events"]] == uids
        assert http.get("/v1/events/search", params={"q": "Oslo"}).json()["results"]
    assert deneb.search("Oslo").json()["status"] == "ok"
    healthy.set_mode(None)
    deneb.ingested()
    assert httpx.get(f"{server.url}/health").json()["components"]["llm"]["status"] == "ok"


def test_without_an_llm_jobs_wait_and_everything_else_works(tmp_path, graph_target):
    with AppServer(tmp_path / "data", **llm_settings(None, graph_target.settings())) as server:
        rigel = Entity(server, "rigel")
        uids = rigel.say(*TURNS)
        waiting = wait_for(lambda: (s := rigel.stats())["jobs"]["waiting"] and s, 10, "a pause")
        assert "LLM_PROVIDER=none" in waiting["paused"]
        health = httpx.get(f"{server.url}/health")
        assert health.status_code == 200
        llm = health.json()["components"]["llm"]
        assert llm["status"] == "unconfigured" and "graph jobs wait" in llm["reason"]
        with rigel.http as http:
            queue = http.get("/v1/queue").json()
            assert queue["counts"]["waiting"] == 1
            assert "LLM_PROVIDER=none" in queue["paused"][0]["reason"]
            assert [e["event_uid"] for e in http.get("/v1/events").json()["events"]] == uids[::-1]
        assert rigel.search("Denver").json() == {"facts": [], "status": "ok"}


def test_the_graph_killed_mid_run_retries_without_duplicates(server, healthy, graph_target):
    procyon = Entity(server, "procyon")
    healthy.set_mode("hang")
    procyon.say("Procyon builds telescopes in Tucson.", session="a")
    wait_for(lambda: healthy.calls >= 1, 15, "the job to reach the LLM")
    graph_target.kill(server.data_dir)
    healthy.set_mode(None)  # the hung call fails; the attempt is retried
    graph_target.revive()
    procyon.say("Procyon met Vega in Tucson.", session="b")
    stats = procyon.ingested(2)
    health = httpx.get(f"{server.url}/health").json()["components"]["graph"]
    assert health["status"] == "ok"
    assert stats["graph"]["episodes"] == 2 == stats["episodes"]["closed"]
    (first, first_attempts), (second, _) = job_states(server, procyon)
    assert first == second == "done" and first_attempts >= 2  # it failed, then was retried


def test_delete_with_the_graph_down_answers_503_and_deletes_nothing(
    tmp_path, healthy, graph_target
):
    with (
        graph_target.own(tmp_path / "graph") as graph,
        AppServer(tmp_path / "data", **llm_settings(healthy, graph.settings)) as server,
    ):
        hadar = Entity(server, "hadar")
        with hadar.http as http:
            http.post("/v1/texture/triplets", json={"source": "Hadar", "target": "Oslo",
                      "relationship": "LIVES_IN", "fact": "Hadar lives in Oslo."})  # fmt: skip
        hadar.ingested()
        (fact,) = hadar.search("Hadar Oslo").json()["facts"]
        graph.stop()

        with hadar.http as http:
            answer = http.delete(f"/v1/texture/{fact['uuid']}")
        assert answer.status_code == 503, answer.text
        assert answer.json()["error"] == "unavailable"
        assert "the graph is down; nothing was deleted; retry later" in answer.text

        async def delete_by_mcp(client) -> str:
            with pytest.raises(ToolFailed) as refused:
                await call(client, "texture_delete", uuid=fact["uuid"])
            return str(refused.value)

        refused = session(f"{server.url}/mcp", hadar.token, delete_by_mcp)
        assert "the graph is down; nothing was deleted; retry later" in refused
        assert hadar.search("Hadar Oslo").json()["status"].startswith("unavailable")

        graph.start()
        # Reads said `unavailable` at once while it was down; it is pinged every second.
        found = wait_for(lambda: hadar.search("Hadar Oslo").json()["facts"], 15, "the graph")
        assert [f["uuid"] for f in found] == [fact["uuid"]]
        with hadar.http as http:
            assert http.delete(f"/v1/texture/{fact['uuid']}").json()["deleted"] == "fact"
        assert hadar.search("Hadar Oslo").json() == {"facts": [], "status": "ok"}


def test_engine_killed_mid_job_is_reclaimed_and_lands_once(tmp_path, stub, graph_target, processes):
    stub.reset_counts()
    env = settings_env(**llm_settings(stub, graph_target.settings()), queue_lease_s=1.5)
    server = ServerProcess(tmp_path / "data", env=env).start()
    try:
        canopus = Entity(server, "canopus")
        stub.set_mode("hang")
        canopus.say("Canopus sails from Lisbon to Madeira.")
        wait_for(lambda: stub.calls >= 1, 15, "the job to reach the LLM")
        server.kill()
        stub.set_mode(None)
        server.start()
        stats = canopus.ingested()
        assert stats["graph"]["episodes"] == 1
        ((_, state, attempts, _),) = jobs(server)
        assert state == "done" and attempts == 2
    finally:
        stub.set_mode(None)
        server.stop()
    assert len(graph_target.episodes(server.data_dir, "canopus")) == 1


def test_replay_into_an_empty_graph_gives_the_same_episodes(
    tmp_path, stub, graph_target, processes
):
    stub.set_mode(None)
    settings = llm_settings(stub, graph_target.settings())
    with AppServer(tmp_path / "data", **settings) as server:
        mira = Entity(server, "mira")
        mira.say(*TURNS, session="one")
        mira.say("Mira studies Orion from Chile.", session="two")
        mira.ingested(2)
    data_dir = server.data_dir
    before = graph_target.episodes(data_dir, "mira")
    assert len(before) == 2
    graph_target.lose(data_dir, "mira")  # the graph is lost; the log is not
    with AppServer(data_dir, **settings) as server:
        graph = wait_for(
            lambda: (g := httpx.get(f"{server.url}/health").json()["components"]["graph"]).get(
                "warning") and g, 15, "the empty graph to be reported",
        )  # fmt: skip
        assert "pps replay graph" in graph["warning"]
    replay = subprocess.run(
        [sys.executable, "-m", "pps.cli", "replay", "graph", "--data-dir", str(data_dir)],
        env={**os.environ, **settings_env(**settings), "PPS_PORT": str(free_port())},  # none there
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert replay.returncode == 0, replay.stderr
    assert "2 of 2 episodes replayed here" in replay.stdout
    assert graph_target.episodes(data_dir, "mira") == before
