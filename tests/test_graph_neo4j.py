"""Compose's own Neo4j image through testcontainers: turns become facts traced to their
events, over REST, and two entities in its one database see nothing of each other. The
whole graph suite also runs on a real Neo4j 5.26 without Docker (the `graph_target`
fixture; tests/graphs.py).

Needs a Docker engine (tests/containers/setup makes one, and a stand-in image where none
can be pulled); skipped without one, except under PPS_REQUIRE_CONTAINERS=1 (CI)."""

from __future__ import annotations

import pytest
import yaml
from stub_llm import StubLLM
from test_graph_http import TURNS, Entity, llm_settings

from tests.conftest import AppServer, unless_required
from tests.test_stack import ROOT, engine_problem

pytestmark = pytest.mark.containers


def test_the_same_flow_on_the_compose_image(tmp_path, monkeypatch):
    from testcontainers.community.neo4j import Neo4jContainer

    unless_required(engine_problem(), "PPS_REQUIRE_CONTAINERS")
    image = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]["neo4j"]["image"]
    # testcontainers' reaper (Ryuk) is an image of its own, not pulled where no registry
    # answers; the `with` below stops the container either way.
    monkeypatch.setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
    with Neo4jContainer(image, password="pps-test-password") as container:
        flow(tmp_path, container.get_connection_url(), "neo4j", "pps-test-password")


def flow(tmp_path, uri: str, user: str, password: str) -> None:
    with StubLLM() as stub:
        settings = {
            **llm_settings(stub),
            "graph_backend": "neo4j",
            "graph_url": uri,
            "neo4j_user": user,
            "neo4j_password": password,
        }
        with AppServer(tmp_path / "data", **settings) as server:
            lyra, nexus = Entity(server, "lyra"), Entity(server, "nexus")
            uids = lyra.say(*TURNS)
            stats = lyra.ingested()
            assert stats["backend"] == "neo4j"
            assert stats["graph"]["episodes"] == 1 and stats["graph"]["facts"] > 0
            facts = lyra.search("Denver mountains", limit=5).json()["facts"]
            assert facts and all(f["event_uids"] == uids for f in facts)
            with lyra.http as http:
                around = http.get("/v1/texture/explore", params={"entity_name": "Denver"})
                assert {"Jeff", "Lyra"} <= {n["name"] for n in around.json()["nodes"]}
                line = http.get("/v1/texture/timeline", params={"limit": 5}).json()
                assert [e["event_uids"] for e in line["episodes"]] == [uids]
                assert line["episodes"][0]["facts"]

            # The other entity, on the same database: nothing of lyra's, then its own only.
            assert nexus.stats()["graph"] == {"episodes": 0, "entities": 0, "facts": 0}
            assert nexus.search("Denver mountains").json()["facts"] == []
            with nexus.http as http:
                assert http.get("/v1/texture/timeline").json()["episodes"] == []
                explored = http.get("/v1/texture/explore", params={"entity_name": "Denver"})
                assert explored.status_code == 404
                assert http.delete(f"/v1/texture/{facts[0]['uuid']}").status_code == 404
            theirs = nexus.say("Nexus plays the Cello in Prague.")
            nexus.ingested()
            cello = nexus.search("Cello Prague").json()["facts"]
            assert cello and all(f["event_uids"] == theirs for f in cello)
            # lyra's search may rank its own facts; never one of nexus's.
            assert not {f["uuid"] for f in lyra.search("Cello Prague").json()["facts"]} & {
                f["uuid"] for f in cello
            }
            with nexus.http as http:
                prague = http.get("/v1/texture/explore", params={"entity_name": "Prague"}).json()
                theirs_nodes = {n["uuid"] for n in prague["nodes"]}
                assert theirs_nodes and "Prague" in {n["name"] for n in prague["nodes"]}
            with lyra.http as http:
                # No Prague of lyra's (nexus's is not lyra's to see).
                explored = http.get("/v1/texture/explore", params={"entity_name": "Prague"})
                assert explored.status_code == 404
                line = http.get("/v1/texture/timeline").json()["episodes"]
                assert [e["event_uids"] for e in line] == [uids]
                assert http.delete(f"/v1/texture/{cello[0]['uuid']}").status_code == 404
                assert http.delete(f"/v1/texture/{facts[0]['uuid']}").json()["deleted"] == "fact"
            assert facts[0]["uuid"] not in {
                f["uuid"] for f in lyra.search("Denver mountains").json()["facts"]
            }
            assert cello[0]["uuid"] in {
                f["uuid"] for f in nexus.search("Cello Prague").json()["facts"]
            }
            assert nexus.stats()["graph"]["episodes"] == 1
