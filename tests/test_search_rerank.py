"""The models share the cores: their ONNX sessions' threads sleep while they wait, and the
reranker reads only what fits in its time budget, and says how much it read."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.search import embeddings, hybrid, rerank
from tests.conftest import AppServer, wait_for
from tests.searching import search

TINY_BUDGET_MS = 0.001


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[AppServer]:
    """A server whose reranker has next to no time."""
    data = tmp_path_factory.mktemp("pps") / "data"
    with AppServer(data, search_rerank_budget_ms=TINY_BUDGET_MS) as app:
        yield app


def session_of(model):
    """The ONNX Runtime session fastembed made for one of its models."""
    return model.model.model


def spinning(session) -> tuple[str, str]:
    options = session.get_session_options()
    return tuple(
        options.get_session_config_entry(f"session.{pool}.allow_spinning")
        for pool in ("intra_op", "inter_op")
    )


def test_the_models_threads_sleep_while_they_wait(server):
    """Every session (the query embedder's, the bulk embedder's, the reranker's) is made
    with spinning off, on a thread count chosen for the machine's cores (the reranker's:
    one, its batches read side by side)."""
    embedder = embeddings.get(server.settings)
    query, bulk = session_of(embedder._query), session_of(embedder._bulk)
    reranker = session_of(rerank.get()._engine)
    for session in (query, bulk, reranker):
        assert spinning(session) == ("0", "0")
    cores = embeddings.cores()
    assert query.get_session_options().intra_op_num_threads == 1
    assert bulk.get_session_options().intra_op_num_threads == max(1, cores - 1)
    assert reranker.get_session_options().intra_op_num_threads == 1  # a thread a batch


def turn(uid: str, content: str) -> dict:
    return {"event_uid": uid, "channel": "discord", "author": "dana", "content": content}


def test_a_reranker_without_time_reads_nothing_and_says_so(server, client):
    said = [
        turn("a", "the kettle is broken again, it just clicks and stays cold"),
        turn("b", "we need a new kettle, the old one finally died"),
        turn("c", "I put the tea things back in the cupboard above the sink"),
        turn("d", "the boiler man comes on Thursday at nine"),
    ]
    assert client.post("/v1/events", json=said).status_code == 200
    wait_for(lambda: client.get("/v1/queue").json()["counts"].get("done", 0) >= 1, timeout=20)
    body = search(client, "what is wrong with the kettle?", tiers="longform")
    found = body["results"]
    assert len(found) >= 2
    assert body["reranked"] == f"0 of {len(found)}"
    # As without the reranker: the same order, the same scores.
    asked = hybrid.SearchRequest(query="what is wrong with the kettle?", tiers="longform")
    index = server.app.state.service.runtime.index
    plain = hybrid.search(index, client.entity, asked, reranked=False)
    assert [r["event_uid"] for r in found] == [r.event_uid for r in plain.results]
    assert [r["score"] for r in found] == [r.score for r in plain.results]
    assert plain.reranked is None
    reranker = client.get("/health").json()["components"]["reranker"]
    assert reranker["budget_ms"] == TINY_BUDGET_MS


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_pace_that_saw_slow_batches_reads_the_best_candidates_only():
    """After batches that took long (a busy machine), a search reads its first
    candidates, as many as fit, and none of those after them."""
    clock = Clock()
    reranker = rerank.Reranker(rerank.get()._engine)
    reranker.pace = rerank.Pace(clock=clock)
    passages = [f"the kettle number {i} clicks and stays cold in the kitchen" for i in range(20)]
    assert None not in reranker.logits("what is wrong with the kettle?", passages, 10.0)
    reranker.pace.took(padded_tokens=100, seconds=1.0)  # 10 ms a token: a busy machine
    read = reranker.logits("what is wrong with the kettle?", passages, 0.5)
    first = read.index(None)
    assert 0 < first < len(passages)
    assert all(logit is not None for logit in read[:first])
    assert all(logit is None for logit in read[first:])


def test_a_slow_pace_is_forgotten_once_the_machine_is_quiet():
    """A pace measured on a busy machine counts half as much every FORGET_S seconds
    without a batch, back toward the quiet machine's."""
    clock = Clock()
    pace = rerank.Pace(clock=clock)
    assert pace.ms_per_token() == rerank.PRIOR_MS_PER_TOKEN
    pace.took(padded_tokens=100, seconds=2.0)  # 20 ms a token
    slow = pace.ms_per_token()
    assert slow > 10 * rerank.PRIOR_MS_PER_TOKEN
    clock.now += rerank.FORGET_S
    excess = pace.ms_per_token() - rerank.PRIOR_MS_PER_TOKEN
    assert excess == pytest.approx((slow - rerank.PRIOR_MS_PER_TOKEN) / 2)
    clock.now += 20 * rerank.FORGET_S
    assert pace.ms_per_token() == pytest.approx(rerank.PRIOR_MS_PER_TOKEN, rel=1e-3)
