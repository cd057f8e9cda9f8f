"""The longform tier: a captured turn's words are searchable at once, and its meaning
within seconds, once the embed_events job has run."""

from __future__ import annotations

from types import SimpleNamespace

from engine.recall import ambient
from engine.recall.shapes import RecallRequest
from engine.search import hybrid
from tests.conftest import wait_for
from tests.searching import search


def turn(uid: str, content: str, **more) -> dict:
    return {"event_uid": uid, "channel": "discord", "author": "jeff", "content": content, **more}


def first_stage(server, client, query: str) -> list[str]:
    """The turns a search finds before the reranker reads them (as recall ranks)."""
    asked = hybrid.SearchRequest(query=query, tiers="longform")
    index = server.app.state.service.runtime.index
    return [r.event_uid for r in hybrid.search(index, client.entity, asked, reranked=False).results]


def test_a_turn_is_found_by_its_words_at_once_and_by_meaning_within_seconds(client):
    sent = client.post(
        "/v1/events",
        json=[
            turn("t-1", "I finally adopted a scruffy terrier from the shelter!", session_id="s"),
            turn("t-2", "The quarterly report is due on Friday.", session_id="s"),
        ],
    )
    assert sent.status_code == 200
    at_once = search(client, "scruffy terrier", tiers="longform")["results"]
    assert at_once[0]["event_uid"] == "t-1"
    assert at_once[0]["author"] == "jeff" and at_once[0]["channel"] == "discord"
    assert at_once[0]["created_at"].endswith("Z") and at_once[0]["tier"] == "longform"

    def by_meaning():
        results = search(client, "getting a new pet dog", tiers="longform")["results"]
        return results and results[0]["event_uid"] == "t-1"

    wait_for(by_meaning, timeout=20)
    # The job stores the vectors, then is marked done in its own transaction.
    wait_for(lambda: client.get("/v1/queue").json()["counts"].get("done", 0) >= 1, timeout=10)
    assert client.get("/v1/queue").json()["dead"] == []


def test_each_request_enqueues_one_embedding_job(client):
    client.post("/v1/events", json=[turn(f"b-{i}", f"batch line {i}") for i in range(50)])
    client.post("/v1/events", json=turn("solo", "one more line"))
    client.post("/v1/events", json=turn("solo", "one more line"))  # a duplicate: no new job
    wait_for(lambda: client.get("/v1/queue").json()["counts"]["done"] == 2)
    counts = client.get("/v1/queue").json()["counts"]
    assert sum(counts.values()) == 2


def test_a_query_that_names_a_speaker_ranks_their_turns_first(server, client):
    """Before the reranker (as recall ranks), and after it (as search answers)."""
    said = [
        turn("a-1", "Did the roof over the porch leak again in the storm?"),
        turn("a-2", "Yes, water came through above the porch door.", author="maria"),
        turn("a-3", "Then the roof over the porch needs new tar."),
    ]
    assert client.post("/v1/events", json=said).status_code == 200
    wait_for(lambda: client.get("/v1/queue").json()["counts"].get("done", 0) >= 1, timeout=20)

    def first(query: str, reranked: bool = True) -> str:
        if reranked:
            return search(client, query, tiers="longform")["results"][0]["event_uid"]
        return first_stage(server, client, query)[0]

    assert first("the roof over the porch leaking", reranked=False) != "a-2"
    for named in ("Maria", "maria"):
        asked = f"what did {named} say about the roof over the porch leaking?"
        assert first(asked, reranked=False) == "a-2"
        assert first(asked) == "a-2"


def test_chatter_does_not_outrank_the_turn_that_answers(client):
    """A turn of a few words ("brb", "running late") is near any short question about its
    author by meaning (the author's name is most of what it says): it tells little."""
    said = [
        turn("c-1", "running late, 6 min", author="oskar"),
        turn("c-2", "brb", author="oskar"),
        turn("c-3", "who borrowed the ladder?", author="oskar"),
        turn("c-4", "Oskar are you alive? haven't seen you in ages", author="dana"),
        turn(
            "c-5",
            "starting at the city archive next month, night shifts for the first six months",
            author="oskar",
        ),
        turn("c-6", "congrats!! we'll do the bins", author="dana"),
    ]
    assert client.post("/v1/events", json=said).status_code == 200
    wait_for(lambda: client.get("/v1/queue").json()["counts"].get("done", 0) >= 1, timeout=20)
    found = search(client, "Where is Oskar working now?", tiers="longform")["results"]
    assert found[0]["event_uid"] == "c-5", [r["text"] for r in found]


def test_the_reranker_finds_an_answer_that_does_not_name_what_it_answers(server, client):
    """ "What is Ines allergic to?" is answered by a turn that names neither Ines nor an
    allergy; the turn before it names her. The reranker reads each of the first
    candidates with the question, a turn with the turn before it."""
    said = [
        turn("q", "can I bring a dessert on Saturday? something with fruit maybe", author="ines"),
        turn(
            "answer",
            "yes! just nothing with kiwi in it please, last time she came out in hives",
            author="dana",
        ),
        turn("d1", "the ferry is cancelled again, I'll take the bus to the city", author="ines"),
        turn("d2", "Ines called, she wants help with the new tablet again", author="dana"),
        turn("d3", "pollen season is brutal this year, my eyes are streaming", author="oskar"),
        turn("d4", "what is everyone bringing to the picnic?", author="ines"),
    ]
    for i, event in enumerate(said):  # the question and its answer: one conversation
        event.update(session_id="s-1" if i < 2 else f"s-{i}")
        event.update(created_at=f"2026-03-0{1 + i // 2}T10:0{i}:00Z")
    assert client.post("/v1/events", json=said).status_code == 200
    wait_for(lambda: client.get("/v1/queue").json()["counts"].get("done", 0) >= 1, timeout=20)
    question = "What is Ines allergic to?"
    body = search(client, question, tiers="longform")
    found = body["results"]
    assert found[0]["event_uid"] == "answer", [r["text"] for r in found]
    assert body["reranked"] == f"{len(said)} of {len(said)}"  # within the default budget
    reranker = client.get("/health").json()["components"]["reranker"]
    assert reranker["status"] == "ok" and reranker["candidates"] == 30

    assert first_stage(server, client, question).index("answer") >= 2

    # Recall reads its first turn candidates so too (the budget is the test machine's
    # business: the reranker's pace is bench/locomo.py --recall's), and keeps the answer
    # although its words are far from the question's (a cosine of 0.18: below the floor).
    runtime = server.app.state.service.runtime

    def recalled(**settings) -> list[str]:
        layers = SimpleNamespace(
            settings=runtime.settings.model_copy(update=settings),
            db=runtime.db,
            index=runtime.index,
            graph=None,
        )
        found = ambient.recall(layers, client.entity, RecallRequest(context=question))
        return [i.source["event_uid"] for i in found.items if i.layer == "turns"]

    assert recalled(recall_rerank_budget_ms=60_000)[0] == "answer"
    assert "answer" not in recalled(recall_rerank=0)[:1]
