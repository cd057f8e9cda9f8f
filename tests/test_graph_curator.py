"""The graph curator (engine.graph.curator) on each backend (`graph_target`: a FalkorDB
and a real Neo4j 5, see tests/graphs.py): duplicates built on purpose through the real
app (triplets through the queue, extracted with the stub LLM on real HTTP, so every fact
traces to its event), found over REST and the CLI, a dry run that changes nothing, a
merge that keeps every fact and its provenance, another entity's graph untouched, the
scheduled curator, and a graph that is down. The graph server is the test's own (given
as GRAPH_URL), so the CLI reaches it beside the running app, and it can be stopped."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from engine.graph import curator
from pps.cli import app as cli
from tests.conftest import AppServer, settings_env, wait_for
from tests.test_graph_http import Entity, llm_settings

# (source, relationship, target, fact): "the Blue Robe"/"blue robe" are one name once
# normalized; "Lyra's garden"/"Lyra garden" are not, but their embeddings are at 0.965;
# "Denver"/"Boulder" (0.561) stay apart. Graphiti keeps all of these as nodes of their
# own (its own dedupe compares names by case and whitespace only, and the stub LLM says
# no duplicate unless the names match but for case).
TRIPLETS = [
    ("the Blue Robe", "HANGS_IN", "Lyra's garden", "The Blue Robe hangs in Lyra's garden."),
    ("Lyra", "WEARS", "blue robe", "Lyra wears the blue robe on Sundays."),
    ("Lyra garden", "NEAR", "Denver", "Lyra garden is near Denver."),
    ("Boulder", "NEAR", "Denver", "Boulder is near Denver."),
]
# Written straight into the graph (no LLM, one node per exact name): "Jeff" and "jeff".
IMPORTED = [
    ("Jeff", "KNOWS", "Lyra", "Jeff knows Lyra."),
    ("jeff", "LIVES_IN", "Boulder", "jeff lives in Boulder."),
    ("Jeff", "LIKES", "jeff", "Jeff likes jeff."),
]


@pytest.fixture(scope="module")
def switch(tmp_path_factory, graph_target):
    graph_target.fresh()
    with graph_target.own(tmp_path_factory.mktemp("graph-server")) as own:
        yield own


@pytest.fixture(scope="module")
def server(tmp_path_factory, stub, switch):
    with AppServer(
        tmp_path_factory.mktemp("curator") / "data", **llm_settings(stub, switch.settings)
    ) as app:
        yield app


def build(server: AppServer, name: str) -> Entity:
    """An entity whose graph holds the duplicates above."""
    entity = Entity(server, name)
    with entity.http as http:
        for i, (source, relationship, target, fact) in enumerate(TRIPLETS):
            sent = http.post(
                "/v1/texture/triplets",
                json={"source": source, "relationship": relationship, "target": target,
                      "fact": fact, "created_at": f"2026-0{i + 1}-01T12:00:00Z"},
            )  # fmt: skip
            assert sent.status_code == 202, sent.text
    entity.ingested(len(TRIPLETS))
    server.app.state.service.runtime.graph.store.import_facts(name, IMPORTED)
    return entity


def facts(entity: Entity) -> dict[str, dict]:
    with entity.http as http:
        got = http.get("/v1/texture/facts", params={"limit": 2000})
    assert got.status_code == 200 and got.json()["status"] == "ok", got.text
    return {f["uuid"]: f for f in got.json()["facts"]}


def duplicates(entity: Entity) -> dict:
    with entity.http as http:
        got = http.get("/v1/texture/duplicates")
    assert got.status_code == 200, got.text
    return got.json()


def names(report: dict) -> list[set[str]]:
    return sorted(
        ({g["keep"]["name"], *(n["name"] for n in g["merge"])} for g in report["groups"]),
        key=sorted,
    )


def pps(server: AppServer, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli, [*args, "--data-dir", str(server.data_dir)], env=settings_env(**server.overrides)
    )
    return result.exit_code, result.stdout, result.stderr


EXPECTED = [{"Jeff", "jeff"}, {"Lyra garden", "Lyra's garden"}, {"blue robe", "the Blue Robe"}]


def test_duplicates_are_found_and_a_dry_run_changes_nothing(server):
    ada = build(server, "ada")
    before = facts(ada)
    report = duplicates(ada)
    assert names(report) == EXPECTED  # Denver and Boulder are not the same place
    reasons = {
        frozenset({g["keep"]["name"], *(n["name"] for n in g["merge"])}): g["reason"]
        for g in report["groups"]
    }
    assert "similar names" in reasons[frozenset({"Lyra garden", "Lyra's garden"})]
    assert reasons[frozenset({"blue robe", "the Blue Robe"})] == "same name"
    for group in report["groups"]:  # the survivor: the most facts, then the oldest
        members = [group["keep"], *group["merge"]]
        assert group["keep"]["facts"] == max(n["facts"] for n in members)
    code, out, _ = pps(server, "graph", "duplicates", "--entity", "ada", "--json")
    assert code == 0 and names(json.loads(out)["ada"]) == EXPECTED
    code, out, _ = pps(server, "graph", "duplicates", "--entity", "ada")
    assert code == 0 and "3 groups of duplicates" in out and "'jeff'" in out

    with ada.http as http:
        dry = http.post("/v1/texture/duplicates/merge", json={})
    assert dry.status_code == 200, dry.text
    assert dry.json()["dry_run"] is True and dry.json()["nodes_merged"] == 3
    code, out, _ = pps(server, "graph", "merge", "--entity", "ada", "--dry-run")
    assert code == 0 and "would merge 3 nodes" in out
    assert facts(ada) == before
    assert names(duplicates(ada)) == EXPECTED


def test_a_merge_keeps_every_fact_and_its_provenance_and_no_other_entity(server):
    bea, other = build(server, "bea"), build(server, "other")
    before, others = facts(bea), facts(other)
    assert len(before) == len(TRIPLETS) + len(IMPORTED)
    assert sum(bool(f["event_uids"]) for f in before.values()) == len(TRIPLETS)
    plan = duplicates(bea)

    code, out, err = pps(server, "graph", "merge", "--entity", "bea", "--yes")
    assert code == 0, err
    assert "merged 3 nodes" in out and f"facts {len(before)} before, {len(before)} after" in out

    after = facts(bea)
    assert after.keys() == before.keys()  # no fact lost, none made
    renamed = {n["name"]: g["keep"]["name"] for g in plan["groups"] for n in g["merge"]}
    for uuid, fact in before.items():
        moved = {
            **fact,
            "source": renamed.get(fact["source"], fact["source"]),
            "target": renamed.get(fact["target"], fact["target"]),
        }
        assert after[uuid] == moved  # episodes, event uids, valid_at... as they were
    assert duplicates(bea)["groups"] == []
    with bea.http as http:
        for group in plan["groups"]:  # each fact reachable from the survivor, by any name
            keep = group["keep"]["name"]
            members = {keep, *(n["name"] for n in group["merge"])}
            owned = {u for u, f in after.items() if keep in (f["source"], f["target"])}
            assert owned == {u for u, f in before.items() if {f["source"], f["target"]} & members}
            for asked in [keep, *(n["name"] for n in group["merge"])]:
                around = http.get("/v1/texture/explore", params={"entity_name": asked})
                assert around.status_code == 200, around.text
                assert around.json()["center"]["uuid"] == group["keep"]["uuid"]
                assert owned <= {f["uuid"] for f in around.json()["facts"]}
        found = http.post("/v1/texture/search", json={"query": "blue robe on Sundays"}).json()
    robe = next(f for f in found["facts"] if f["fact"] == "Lyra wears the blue robe on Sundays.")
    assert robe["target"] == renamed.get("blue robe", "blue robe") and robe["event_uids"]

    assert facts(other) == others  # another entity's graph: untouched
    assert names(duplicates(other)) == EXPECTED
    with other.http as http:  # merged over REST this time
        done = http.post("/v1/texture/duplicates/merge", json={"dry_run": False})
    assert done.status_code == 200 and done.json()["facts_after"] == len(others)
    assert duplicates(other)["groups"] == [] and facts(other).keys() == others.keys()


def test_the_scheduled_curator_merges_by_itself(server, stub, switch, tmp_path):
    settings = {**llm_settings(stub, switch.settings), "graph_curate_s": 0.2}
    with AppServer(tmp_path / "data", **settings) as scheduled:
        cid = build(scheduled, "cid")
        count = len(facts(cid))
        wait_for(lambda: duplicates(cid)["groups"] == [], 60, "the scheduled merge")
        assert len(facts(cid)) == count


def test_a_graph_that_is_down_is_said_and_nothing_changes(server, switch):
    dan = Entity(server, "dan")
    switch.stop()
    try:
        with dan.http as http:
            report = http.get("/v1/texture/duplicates")
            merged = http.post("/v1/texture/duplicates/merge", json={"dry_run": False})
        for answer in (report, merged):
            assert answer.status_code == 503, answer.text
            assert "graph" in answer.json()["message"]
        code, _, err = pps(server, "graph", "duplicates", "--entity", "dan")
        assert code == 1 and "graph" in err and "nothing was read" in err
        code, _, err = pps(server, "graph", "merge", "--entity", "dan", "--yes")
        assert code == 1 and "nothing was merged" in err
    finally:
        switch.start()


def test_no_graph_is_a_clear_message(tmp_path):
    with AppServer(tmp_path / "data") as plain:  # GRAPH_BACKEND=none
        eve = Entity(plain, "eve")
        with eve.http as http:
            assert http.get("/v1/texture/duplicates").status_code == 404
        code, _, err = pps(plain, "graph", "duplicates")
        assert code == 1 and "GRAPH_BACKEND=none" in err


# --- the rules, without a graph ---


@pytest.mark.parametrize(
    ("a", "b"),
    [("Jeff", "jeff"), ("the Blue Robe", "blue robe"), ("Lyra.", "lyra"), ("A-Team", "a team"),
     ("  New   York ", "new york"), ("\uff2a\uff45\uff46\uff46", "jeff")],
)  # fmt: skip
def test_normalized_names(a, b):
    assert curator.normalize(a) == curator.normalize(b)


def test_grouping_by_name_and_by_meaning():
    def node(uuid, name, facts=0, created="2026-01-01T00:00:00Z", vector=None):
        return {"uuid": uuid, "name": name, "facts": facts, "created_at": created, "vector": vector}

    nodes = [
        node("1", "Jeff", 1, "2026-01-02T00:00:00Z"),
        node("2", "jeff", 1, "2026-01-01T00:00:00Z"),  # older: kept on a tie
        node("3", "the Blue Robe", 1),
        node("4", "blue robe", 5),  # most facts: kept
        node("5", "Denver", vector=[1.0, 0.0]),
        node("6", "Boulder", vector=[0.6, 0.8]),  # cosine 0.6
        node("7", "Lyra garden", vector=[0.0, 1.0]),
        node("8", "Lyra's garden", vector=[0.05, 1.0]),  # cosine 0.999
        node("9", "Room 101", vector=[1.0, 1.0]),
        node("10", "Room 102", vector=[1.0, 1.0]),  # the same vector, another number
    ]
    groups = curator.group(nodes, 0.95)
    assert [(g.keep.uuid, [n.uuid for n in g.merge]) for g in groups] == [
        ("4", ["3"]),
        ("2", ["1"]),
        ("7", ["8"]),
    ]
    assert len(curator.group(nodes, 0)) == 2  # names only
