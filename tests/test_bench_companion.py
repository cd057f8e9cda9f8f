"""The companion benchmark's corpus (bench/companion_corpus.py), as a user of the bench
relies on it: the same seed gives the same corpus, every question's answer is in its
entity's memory (and only there) where search can return it, the filters and changed
facts say what they claim, and the questions give little of their answers away.

Generation only: the scores need the model and minutes (`bench/companion.py`)."""

from __future__ import annotations

from collections import Counter
from datetime import date

import pytest

from bench.companion_corpus import KINDS, Corpus, generate, overlap
from engine.search import chunks

MEAN_OVERLAP_MAX = 0.2
"""The mean share of a question's content words found in its answer (0.119 when this was
written; LoCoMo's questions: 0.324)."""
QUESTION_OVERLAP_MAX = 0.5
"""No question but an identifier lookup ("What is GH-412 about?") shares more."""


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return generate(seed=11)


def test_the_same_seed_makes_the_same_corpus(corpus):
    assert generate(seed=11).to_json() == corpus.to_json()
    assert generate(seed=12).to_json() != corpus.to_json()


def test_the_corpus_is_shaped_like_real_use(corpus):
    assert 50 <= len(corpus.questions) <= 80
    for entity in corpus.entities:
        turns = [t for s in entity.sessions for t in s.turns]
        days = sorted({s.day for s in entity.sessions})
        assert len(turns) >= 300
        assert len(entity.sessions) >= 10
        assert {s.channel for s in entity.sessions} == {"terminal", "discord", "reflection"}
        assert (date.fromisoformat(days[-1]) - date.fromisoformat(days[0])).days >= 21
        assert len({t.uid for t in turns}) == len(turns)
        folders = Counter(path.split("/")[0] for path in entity.files)
        assert folders["word_photos"] >= 5 and folders[".brain"] >= 5
        assert folders["MEMORY.md"] == 1 and folders["memory"] >= 1
        asked = {q.kind for q in corpus.questions if q.entity == entity.name}
        assert asked == set(KINDS)
    for half in "AB":
        assert {q.kind for q in corpus.questions if q.half == half} == set(KINDS)


def test_every_answer_is_in_its_entity_memory_and_only_there(corpus):
    for q in corpus.questions:
        own = next(e for e in corpus.entities if e.name == q.entity)
        others = [e for e in corpus.entities if e is not own]
        assert len(q.gold) == 1, q.id
        for gold in q.gold + q.stale:
            if gold.uid is not None:
                assert corpus.turns(q.entity)[gold.uid].content == gold.text, q.id
                assert all(gold.uid not in corpus.turns(e.name) for e in others), q.id
                continue
            lines = own.files[gold.path].splitlines()
            assert "\n".join(lines[gold.start - 1 : gold.end]) == gold.text, q.id
            assert all(gold.text not in e.files.get(gold.path, "") for e in others), q.id
            # the engine's chunker makes a chunk over the answer's lines: search can return it
            document = chunks.split(own.files[gold.path], 1500)
            assert any(
                c.start_line <= gold.end and c.end_line >= gold.start for c in document.chunks
            ), q.id


def test_filters_and_changed_facts_say_what_they_claim(corpus):
    for q in corpus.questions:
        turns = corpus.turns(q.entity)
        if q.kind == "date-filtered":
            day = turns[q.gold[0].uid].created_at[:10]
            low = q.filters.get("date") or q.filters["since"]
            high = q.filters.get("date") or q.filters["until"]
            assert low <= day <= high, q.id
        if q.kind == "filtered":
            own = next(e for e in corpus.entities if e.name == q.entity)
            meta, _ = chunks.front_matter(own.files[q.gold[0].path].splitlines())
            if "category" in q.filters:
                assert meta["category"] == q.filters["category"], q.id
            if "tags" in q.filters:
                assert set(q.filters["tags"]) <= set(meta["tags"]), q.id
        if q.kind == "changed-fact":
            assert q.stale, q.id
            newer = turns[q.gold[0].uid].created_at
            assert all(turns[old.uid].created_at < newer for old in q.stale), q.id
        else:
            assert not q.stale, q.id


def test_questions_give_little_of_their_answers_away(corpus):
    shares = [(q, overlap(q.text, [g.text for g in q.gold])) for q in corpus.questions]
    assert sum(share for _, share in shares) / len(shares) <= MEAN_OVERLAP_MAX
    too_close = [
        (q.id, round(share, 2))
        for q, share in shares
        if share > QUESTION_OVERLAP_MAX and q.kind != "identifier"
    ]
    assert not too_close
