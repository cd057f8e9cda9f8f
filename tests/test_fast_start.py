"""A start in seconds: the server answers while its slow parts load (engine.runtime), and
`pps doctor` and `pps check` ask a running server instead of loading their own copies."""

from __future__ import annotations

import subprocess
import sys

import httpx

from tests.conftest import AppServer, connect, create_entity, wait_for

STUBBORN = "import signal, sys\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nsys.stdin.read()\n"
"""A process that outlives SIGTERM until its stdin closes: a graph server left over from an
engine killed with SIGKILL, which the next start stops before starting its own."""


def test_health_says_starting_while_the_graph_starts_and_nothing_waits_for_it(tmp_path):
    data_dir = tmp_path / "data"
    token = create_entity(data_dir, "ines")
    (data_dir / "graph").mkdir(mode=0o700)
    leftover = subprocess.Popen(
        [sys.executable, "-c", STUBBORN, str(data_dir / "graph")], stdin=subprocess.PIPE
    )
    (data_dir / "graph" / "falkordb.pid").write_text(str(leftover.pid))
    server = AppServer(data_dir, graph_backend="falkordb", graph_url="", llm_provider="none")
    server.wait_loaded = False
    try:
        with server, connect(server, token) as client:
            health = httpx.get(f"{server.url}/health", timeout=10).json()
            assert health["status"] == "starting", health
            assert health["components"]["graph"]["status"] == "starting"
            assert health["components"]["database"]["status"] == "ok"
            # What needs the graph says it is starting, at once, and the rest answers.
            stored = client.post(
                "/v1/events",
                json={"channel": "terminal", "event_type": "user", "content": "kiwi allergy"},
            )
            assert stored.status_code in (200, 201), stored.text
            recall = client.post("/v1/recall", json={"context": "what is Ines allergic to?"})
            assert recall.status_code == 200, recall.text
            graph = recall.json()["manifest"]["graph"]
            assert graph["status"] == "down" and "starting" in graph["detail"], graph
            facts = client.get("/v1/texture/facts")
            assert "starting" in facts.text, facts.text

            leftover.stdin.close()  # the leftover goes; the graph starts
            leftover.wait()
            health = wait_for(
                lambda: _settled(httpx.get(f"{server.url}/health", timeout=10).json()),
                timeout=120,  # FalkorDB and Graphiti start: seconds on a busy machine
                what="/health to settle once the graph has started",
            )
            assert health["status"] == "ok", health
            assert server.app.state.runtime.loaded()
    finally:
        leftover.kill()
        leftover.wait()


def _settled(health: dict) -> dict | None:
    return None if health["status"] == "starting" else health
