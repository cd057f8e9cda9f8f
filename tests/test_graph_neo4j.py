"""Compose's own Neo4j image, where a Docker engine runs (through testcontainers): turns
become facts traced to their events, over REST, and two entities in its one database see
nothing of each other. Everywhere else the whole graph suite runs on a real Neo4j 5.26
without Docker (the `graph_target` fixture; tests/graphs.py)."""

from __future__ import annotations

import pytest
from stub_llm import StubLLM
from test_graph_http import TURNS, Entity, llm_settings

from tests.conftest import AppServer


def _docker_problem() -> str | None:
    try:
        import docker

        docker.from_env(timeout=3).ping()
    except Exception as exc:  # any failure to reach an engine is a reason to skip
        return f"no Docker engine runs here ({type(exc).__name__}: {exc})"
    return None


@pytest.mark.skipif(_docker_problem() is not None, reason=_docker_problem() or "")
def test_the_same_flow_on_the_compose_image(tmp_path):
    """Where a Docker engine runs: compose's own image, through testcontainers."""
    from testcontainers.community.neo4j import Neo4jContainer

    with Neo4jContainer("neo4j:5.26-community", password="pps-test-password") as container:
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
