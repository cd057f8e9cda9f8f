"""The same flow on Neo4j (what compose runs), through testcontainers. Skipped, saying
why, where no Docker engine runs. On Neo4j every entity shares one database, so the
isolation checks matter most here."""

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


pytestmark = pytest.mark.skipif(
    _docker_problem() is not None, reason=_docker_problem() or "Docker is available"
)


@pytest.fixture(scope="module")
def neo4j():
    from testcontainers.community.neo4j import Neo4jContainer

    with Neo4jContainer("neo4j:5.26-community", password="pps-test-password") as container:
        yield container


def test_turns_to_facts_on_neo4j_with_isolation(tmp_path, neo4j):
    with StubLLM() as stub:
        settings = {
            **llm_settings(stub),
            "graph_backend": "neo4j",
            "graph_url": neo4j.get_connection_url(),
            "neo4j_user": "neo4j",
            "neo4j_password": "pps-test-password",
        }
        with AppServer(tmp_path / "data", **settings) as server:
            lyra, nexus = Entity(server, "lyra"), Entity(server, "nexus")
            uids = lyra.say(*TURNS)
            stats = lyra.ingested()
            assert stats["backend"] == "neo4j" and stats["graph"]["episodes"] == 1
            facts = lyra.search("Denver mountains").json()["facts"]
            assert facts and all(f["event_uids"] == uids for f in facts)
            assert nexus.search("Denver mountains").json()["facts"] == []
            with nexus.http as http:
                assert http.delete(f"/v1/texture/{facts[0]['uuid']}").status_code == 404
            with lyra.http as http:
                assert http.delete(f"/v1/texture/{facts[0]['uuid']}").json()["deleted"] == "fact"
            assert nexus.stats()["graph"] == {"episodes": 0, "entities": 0, "facts": 0}
