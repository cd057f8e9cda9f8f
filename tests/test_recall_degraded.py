"""Recall with the graph server stopped, on each backend (tests/graphs.py): it answers,
within the graph's budget, with the graph marked as down (or timed out) in the manifest
and every other layer intact. Each entity has an episode in its graph first (recall
reads no graph that holds nothing)."""

from __future__ import annotations

import os
import signal
import time

import pytest
from test_graph_http import TURNS, Entity, llm_settings

from engine.recall.fanout import MAX_RUNNING, pool
from tests.conftest import AppServer, connect, wait_for


@pytest.fixture(scope="module")
def server(tmp_path_factory, graph_target, stub):
    graph_target.fresh()
    with AppServer(
        tmp_path_factory.mktemp("degraded") / "data",
        **llm_settings(stub, graph_target.settings()),
        recall_graph_budget_ms=300,
    ) as app:
        yield app


def entity(server, name: str, anchor: dict):
    """A client of a new entity with `anchor` and an episode in its graph, recalled once."""
    made = Entity(server, name)
    made.say(*TURNS)
    made.ingested()
    client = connect(server, made.token)
    client.post("/v1/anchors", json=anchor)
    client.post("/v1/recall", json={"context": "warm"})
    return client


def test_recall_with_the_graph_frozen_answers_within_the_graph_budget(server, graph_target):
    client = entity(server, "lyra", {"title": "Robe", "content": "The comfy blue robe."})
    warm = client.post("/v1/recall", json={"context": "the comfy robe"}).json()
    assert warm["manifest"]["graph"]["status"] in ("ok", "empty")

    pid = graph_target.pid(server.data_dir)
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


def test_recalls_piling_up_on_a_frozen_graph_never_starve_the_other_layers(server, graph_target):
    """Each recall stops waiting for the frozen graph, but its read goes on in a thread of
    the layers' pool: more recalls than the pool has threads, and every one still gets its
    other layers, the graph skipped once MAX_RUNNING of its reads hang."""
    client = entity(server, "vera", {"title": "Robe", "content": "The comfy blue robe."})
    pid = graph_target.pid(server.data_dir)
    os.kill(pid, signal.SIGSTOP)
    try:
        answers = [
            client.post("/v1/recall", json={"context": "the comfy robe"}).json()
            for _ in range(pool._max_workers + 4)
        ]
    finally:
        os.kill(pid, signal.SIGCONT)
    for answer in answers:
        assert answer["manifest"]["anchors"]["status"] == "ok", answer["manifest"]
        assert "comfy blue robe" in answer["context"]
    graph = [answer["manifest"]["graph"] for answer in answers]
    assert {g["status"] for g in graph} == {"timeout"}
    assert all("have not returned" in (g["detail"] or "") for g in graph[MAX_RUNNING:])

    def graph_back():
        answer = client.post("/v1/recall", json={"context": "the comfy robe"}).json()
        return answer["manifest"]["graph"]["status"] in ("ok", "empty", "waiting")

    wait_for(graph_back, 120, "the graph layer answering again")


def test_recall_with_the_graph_killed_still_answers(server, graph_target):
    client = entity(server, "nexus", {"title": "Kitchen", "content": "Bread on Sundays."})
    graph_target.kill(server.data_dir)
    try:
        answer = client.post("/v1/recall", json={"context": "bread in the kitchen"}).json()
    finally:
        graph_target.revive()
    assert "Bread on Sundays" in answer["context"]
    assert answer["manifest"]["graph"]["count"] == 0
    health = client.get("/health").json()
    assert health["components"]["database"]["status"] == "ok"
