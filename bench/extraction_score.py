"""The labelled household episodes (bench/data/extraction/*.json) and the scorer that
compares what an extraction found with them. Used by bench/extraction.py; the rules are
in docs/extraction.md, and tests/test_extraction_scorer.py holds them to it.

An episode file: `id`, `about`, `turns` (each `speaker` and `text`), `entities` (each a
`name`, optional `aliases`, and `optional: true` for what a careful reader may leave out)
and `facts` (each `source` and `target`, names of the file's entities, `relation`: words
any of which says the relation, `fact`: the fact in a sentence, and `optional`).

Matching is lenient, and both scores are micro-averaged over the episodes:
- a name matches an entity when, normalised (case, accents, punctuation, a possessive
  's, the words the/a/an/my/his/her/our/their/your dropped), it equals the entity's name
  or an alias, contains one of them as whole words ("Miso the kitten" is Miso), or, two
  words or longer, is contained in one ("Humane Society" is Boulder Humane Society);
- a found fact matches a labelled one when both its ends match the label's ends (either
  way round) and either one of the label's relation words starts a word of the found
  relation's name or sentence (words under 4 letters must be whole words), or the two
  sentences mean the same: cosine >= MEANING with the bundled embedding model;
- or, with one end matching, when the sentences are that close (an end named otherwise).
Precision: the share of what was found that matches some label (optional ones too);
recall: the share of the labels that are not optional that something found matches.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "extraction"

MEANING = 0.9
"""The cosine two fact sentences need to mean the same (all-MiniLM-L6-v2, the bundled
model): "Anna relocates to Portland" ~ "Anna is moving to Portland in March." 0.89,
"Jeff has a sister named Anna" ~ "Anna is Jeff's sister." 0.93, but "Anna is Jeff's
mother" 0.90 from that too, hence the ends it also needs."""

_DROPPED = frozenset(["the", "a", "an", "my", "his", "her", "our", "their", "your"])
_WHOLE_BELOW = 4

Embed = Callable[[Sequence[str]], Any]
"""Unit vectors (rows) for texts, in order: `Embedder.embed` of engine.search.embeddings."""


@dataclass(frozen=True)
class Entity:
    name: str
    aliases: tuple[str, ...] = ()
    optional: bool = False

    @property
    def forms(self) -> list[tuple[str, ...]]:
        return [words(n) for n in (self.name, *self.aliases) if words(n)]


@dataclass(frozen=True)
class Fact:
    source: str
    target: str
    relation: tuple[str, ...]
    fact: str
    optional: bool = False


@dataclass(frozen=True)
class Episode:
    id: str
    about: str
    turns: list[tuple[str, str]]
    entities: list[Entity]
    facts: list[Fact]

    def entity(self, name: str) -> Entity:
        return next(e for e in self.entities if e.name == name)


@dataclass(frozen=True)
class Found:
    """What an extraction found in one episode: entity names, and facts as (source name,
    relation name, target name, sentence)."""

    entities: list[str]
    facts: list[tuple[str, str, str, str]]


@dataclass
class Counts:
    """One kind (entities or facts): found and right, labels and matched."""

    found: int = 0
    right: int = 0
    labels: int = 0
    matched: int = 0
    invented: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float | None:
        return self.right / self.found if self.found else None

    @property
    def recall(self) -> float | None:
        return self.matched / self.labels if self.labels else None

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.found + other.found,
            self.right + other.right,
            self.labels + other.labels,
            self.matched + other.matched,
            self.invented + other.invented,
            self.missed + other.missed,
        )


@dataclass
class Score:
    entities: Counts
    facts: Counts

    def __add__(self, other: Score) -> Score:
        return Score(self.entities + other.entities, self.facts + other.facts)

    @classmethod
    def empty(cls) -> Score:
        return cls(Counts(), Counts())


def load(folder: Path = DATA) -> list[Episode]:
    """Every episode file of the folder, in name order; a fact naming an entity the file
    does not list is refused."""
    found = []
    for path in sorted(folder.glob("*.json")):
        raw = json.loads(path.read_text())
        entities = [
            Entity(e["name"], tuple(e.get("aliases", ())), bool(e.get("optional")))
            for e in raw["entities"]
        ]
        names = {e.name for e in entities}
        facts = []
        for f in raw["facts"]:
            for end in (f["source"], f["target"]):
                if end not in names:
                    raise ValueError(f"{path.name}: the fact {f['fact']!r} names {end!r}")
            relation, optional = tuple(f["relation"]), bool(f.get("optional"))
            facts.append(Fact(f["source"], f["target"], relation, f["fact"], optional))
        turns = [(t["speaker"], t["text"]) for t in raw["turns"]]
        found.append(Episode(raw["id"], raw["about"], turns, entities, facts))
    return found


def words(text: str) -> tuple[str, ...]:
    """A name or sentence as the scorer compares it: lower case, no accents, no
    punctuation, no possessive 's, without the/a/an and possessive pronouns."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"['\u2019]s\b", "", text.lower()).replace("_", " ")
    return tuple(w for w in re.findall(r"[a-z0-9]+", text) if w not in _DROPPED)


def _within(part: tuple[str, ...], whole: tuple[str, ...]) -> bool:
    n = len(part)
    return any(whole[i : i + n] == part for i in range(len(whole) - n + 1))


def names(found: str, entity: Entity) -> bool:
    """Whether a found name is this entity (see the module docstring)."""
    mine = words(found)
    if not mine:
        return False
    return any(
        mine == form or _within(form, mine) or (len(mine) >= 2 and _within(mine, form))
        for form in entity.forms
    )


def says(relation: Sequence[str], text: tuple[str, ...]) -> bool:
    """Whether one of the relation words (or phrases) starts words of the text, in order."""
    for phrase in relation:
        wanted = words(phrase)
        if not wanted:
            continue
        for i in range(len(text) - len(wanted) + 1):
            if all(
                t == w if len(w) < _WHOLE_BELOW else t.startswith(w)
                for t, w in zip(text[i : i + len(wanted)], wanted, strict=True)
            ):
                return True
    return False


def score(episode: Episode, found: Found, embed: Embed | None = None) -> Score:
    """Entities and facts found, against the episode's labels. Without `embed`, no fact
    matches by meaning."""
    return Score(_entities(episode, found), _facts(episode, found, embed))


def _entities(episode: Episode, found: Found) -> Counts:
    counts = Counts(found=len(found.entities))
    for name in found.entities:
        if any(names(name, e) for e in episode.entities):
            counts.right += 1
        else:
            counts.invented.append(name)
    for e in episode.entities:
        if e.optional:
            continue
        counts.labels += 1
        if any(names(name, e) for name in found.entities):
            counts.matched += 1
        else:
            counts.missed.append(e.name)
    return counts


def _facts(episode: Episode, found: Found, embed: Embed | None) -> Counts:
    labels = episode.facts
    close = _cosines([f[3] for f in found.facts], [f.fact for f in labels], embed)
    hits = [
        [_fact_matches(episode, got, label, close[i][j]) for j, label in enumerate(labels)]
        for i, got in enumerate(found.facts)
    ]
    counts = Counts(found=len(found.facts))
    for i, got in enumerate(found.facts):
        if any(hits[i]):
            counts.right += 1
        else:
            counts.invented.append(f"{got[0]} -{got[1]}-> {got[2]}: {got[3]}")
    for j, label in enumerate(labels):
        if label.optional:
            continue
        counts.labels += 1
        if any(row[j] for row in hits):
            counts.matched += 1
        else:
            counts.missed.append(label.fact)
    return counts


def _fact_matches(
    episode: Episode, got: tuple[str, str, str, str], label: Fact, cosine: float
) -> bool:
    source, relation, target, sentence = got
    a, b = episode.entity(label.source), episode.entity(label.target)
    ends = (names(source, a) and names(target, b)) or (names(source, b) and names(target, a))
    meant = cosine >= MEANING
    if ends:
        return meant or says(label.relation, words(relation) + words(sentence))
    one_end = any(names(n, e) for n in (source, target) for e in (a, b))
    return one_end and meant


def _cosines(found: list[str], labels: list[str], embed: Embed | None) -> list[list[float]]:
    if embed is None or not found or not labels:
        return [[0.0] * len(labels) for _ in found]
    vectors = embed([*found, *labels])
    near = vectors[: len(found)] @ vectors[len(found) :].T
    return [[float(x) for x in row] for row in near]


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"
