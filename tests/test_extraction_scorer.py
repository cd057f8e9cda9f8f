"""The extraction bench's labels and scorer (bench/extraction_score.py), as a user reading
its figures relies on them: the labels load and are shaped as docs/extraction.md says, an
extraction that finds exactly the labels scores 1, a fact missed lowers recall and one
invented lowers precision, and the lenient matches (names, aliases, relation words, the
embedding model's meaning) count where docs/extraction.md says they do, and only there."""

from __future__ import annotations

import pytest

from bench.extraction_score import Episode, Found, load, names, score
from engine.kernel.config import Settings
from engine.search import embeddings


@pytest.fixture(scope="module")
def episodes() -> list[Episode]:
    return load()


@pytest.fixture(scope="module")
def embed():
    return embeddings.get(Settings()).embed


@pytest.fixture(scope="module")
def kitten(episodes) -> Episode:
    return next(e for e in episodes if e.id == "kitten")


def perfect(episode: Episode) -> Found:
    """What an extraction that found exactly the labels (optional ones too) reports."""
    return Found(
        entities=[e.name for e in episode.entities],
        facts=[
            (f.source, f.relation[0].upper().replace(" ", "_"), f.target, f.fact)
            for f in episode.facts
        ],
    )


def test_the_set_is_20_to_30_household_episodes_of_2_to_6_turns(episodes):
    assert 20 <= len(episodes) <= 30
    assert len({e.id for e in episodes}) == len(episodes)
    for episode in episodes:
        assert 2 <= len(episode.turns) <= 6, episode.id
        required = [f for f in episode.facts if not f.optional]
        assert len(required) >= 3, episode.id
        text = " ".join(f"{speaker}: {t}" for speaker, t in episode.turns)
        for entity in episode.entities:  # every labelled name is in the episode's lines
            said = [entity.name, *entity.aliases]
            assert any(n.lower() in text.lower() for n in said), (episode.id, entity.name)


def test_a_perfect_extraction_scores_1(episodes, embed):
    for episode in episodes:
        for with_model in (None, embed):
            got = score(episode, perfect(episode), with_model)
            assert (got.entities.precision, got.entities.recall) == (1.0, 1.0), episode.id
            assert (got.facts.precision, got.facts.recall) == (1.0, 1.0), episode.id


def test_a_missed_fact_lowers_recall_and_nothing_else(kitten, embed):
    found = perfect(kitten)
    first = next(f for f in kitten.facts if not f.optional)
    missing = Found(found.entities, [f for f in found.facts if f[3] != first.fact])
    got = score(kitten, missing, embed)
    required = sum(not f.optional for f in kitten.facts)
    assert got.facts.recall == (required - 1) / required
    assert got.facts.precision == 1.0
    assert got.facts.missed == [first.fact]


def test_an_invented_fact_or_entity_lowers_precision(kitten, embed):
    found = perfect(kitten)
    invented = ("Jeff", "WORKS_AT", "radiator", "Jeff works at the radiator.")
    wrong_end = ("Mira", "SLEEPS_ON", "blue robe", "Mira sleeps on the blue robe.")
    got = score(kitten, Found([*found.entities, "radiator"], [*found.facts, invented, wrong_end]))
    assert got.facts.precision == len(found.facts) / (len(found.facts) + 2)
    assert got.facts.recall == 1.0
    assert got.entities.precision == len(found.entities) / (len(found.entities) + 1)
    assert got.entities.invented == ["radiator"]


def test_optional_labels_are_right_to_find_and_free_to_miss(kitten):
    found = perfect(kitten)
    required_only = Found(
        [e.name for e in kitten.entities if not e.optional],
        [f for f, label in zip(found.facts, kitten.facts, strict=True) if not label.optional],
    )
    for extraction in (found, required_only):
        got = score(kitten, extraction)
        assert got.entities.recall == got.facts.recall == 1.0
        assert got.entities.precision == got.facts.precision == 1.0


def test_names_match_leniently_but_not_loosely(kitten):
    miso, shelter = kitten.entity("Miso"), kitten.entity("Boulder Humane Society")
    robe = kitten.entity("blue robe")
    assert names("MISO", miso) and names("Miso the kitten", miso) and names("the kitten", miso)
    assert names("Humane Society", shelter) and names("the shelter", shelter)
    assert names("Jeff's blue robe", robe) and names("the Blue Robe", robe)
    assert not names("Boulder", shelter)  # one word inside a longer name is not it
    assert not names("Mis", miso) and not names("the", miso)


def test_a_fact_matches_by_its_ends_and_a_relation_word_either_way_round(kitten):
    found = [
        # the relation word in the relation's name; the ends named by an alias, reversed
        ("the shelter", "ADOPTED_FROM", "Miso the kitten", "The kitten is from there."),
        # the relation word ("sleep") starting a word of the sentence only
        ("Miso", "RELATES_TO", "robe", "Miso is sleeping on the robe."),
    ]
    got = score(kitten, Found([], found))
    assert got.facts.right == 2
    assert got.facts.matched == 2
    # the right ends with no word of the relation: not that fact
    unrelated = ("Miso", "CHEWED", "blue robe", "Miso chewed a hole in the blue robe.")
    assert score(kitten, Found([], [unrelated])).facts.right == 0


def test_a_fact_matches_by_meaning_with_the_bundled_model(kitten, embed):
    # No relation word of "Jeff brought the kitten Miso home." (adopt, brought home, got, own,
    # pet, took home), but the same meaning: cosine 0.95 with all-MiniLM-L6-v2.
    said = ("Jeff", "RELATED_TO", "Miso", "Jeff's kitten Miso came home with him.")
    assert score(kitten, Found([], [said])).facts.right == 0
    assert score(kitten, Found([], [said]), embed).facts.right == 1
    # One end named otherwise, the same sentence: matched by meaning too.
    other_end = ("Mira", "GAVE_NAME", "the little cat", "Mira named the kitten Miso.")
    assert score(kitten, Found([], [other_end]), embed).facts.right == 1
    # Close in words, wrong in fact: neither end of the label's.
    wrong = ("Jeff", "WORKS_AT", "radiator", "Jeff works at the radiator.")
    assert score(kitten, Found([], [wrong]), embed).facts.right == 0


def test_a_fact_naming_no_listed_entity_is_refused(tmp_path):
    (tmp_path / "x.json").write_text(
        '{"id": "x", "about": "", "turns": [], "entities": [{"name": "Jeff"}], "facts":'
        ' [{"source": "Jeff", "target": "Acme", "relation": ["work"], "fact": "Jeff works."}]}'
    )
    with pytest.raises(ValueError, match="'Acme'"):
        load(tmp_path)
