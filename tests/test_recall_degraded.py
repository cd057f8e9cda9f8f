"""Recall with the graph server stopped: it answers, within the graph's budget, with the
graph marked as down (or timed out) in the manifest and every other layer intact."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.conftest import AppServer, connect


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with AppServer(
        tmp_path_factory.mktemp("degraded") / "data",
        graph_backend="falkordb",
        llm_provider="none",
        recall_graph_budget_ms=300,
    ) as app:
        yield app


def falkordb_pid(server) -> int:
    return int((server.data_dir / "graph" / "falkordb.pid").read_text())


def test_recall_with_the_graph_frozen_answers_within_the_graph_budget(server):
    client = connect(server, server.pps("entity", "create", "lyra").strip())
    client.post("/v1/anchors", json={"title": "Robe", "content": "The comfy blue robe."})
    warm = client.post("/v1/recall", json={"context": "the comfy robe"}).json()
    assert warm["manifest"]["graph"]["status"] in ("ok", "empty")

    pid = falkordb_pid(server)
    os.kill(pid, signal.SIGSTOP)  # the graph server hangs: the worst kind of down
    try:
        started = time.monotonic()
        answer = client.post("/v1/recall", json={"context": "the comfy robe"}).json()
        elapsed = time.monotonic() - started
    finally:
        os.kill(pid, signal.SIGCONT)
    graph = answer["manifest"]["graph"]
    assert graph["status"] == "timeout" and graph["count"] == 0
    assert answer["manifest"]["anchors"]["status"] == "ok"
    assert "comfy blue robe" in answer["context"]
    assert elapsed < 5, "recall waited on the frozen graph instead of skipping it"


def test_recall_with_the_graph_killed_still_answers(server):
    client = connect(server, server.pps("entity", "create", "nexus").strip())
    client.post("/v1/anchors", json={"title": "Kitchen", "content": "Bread on Sundays."})
    os.kill(falkordb_pid(server), signal.SIGKILL)
    answer = client.post("/v1/recall", json={"context": "bread in the kitchen"}).json()
    assert "Bread on Sundays" in answer["context"]
    health = client.get("/health").json()
    assert health["components"]["database"]["status"] == "ok"
