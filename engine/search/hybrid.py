"""Hybrid search over an entity's memory: its files (shortform and domain tiers) and its
raw turns (longform), one ranking for all of them.

What happens on a search: the filters (tiers, category, tags, dates, channel, growth)
become one SQL condition, applied before ranking, so a narrow window still returns its
matches. The query is embedded once; dense cosine runs over the entity's vectors in
memory (engine/vectors.py: exact, or through an approximate index past 50k vectors),
BM25 over FTS5 (stopwords dropped, any remaining word may match). The two are
fused: weighted (cosine clipped to [0, 1] plus BM25 divided by the best BM25 of the
query) or reciprocal rank fusion, as the settings say; bench/locomo.py measured both.
Then: kind weights (distilled notes above raw turns), a penalty for superseded chunks,
a boost when the query and a chunk share an exact identifier, a smaller one for a turn
said by someone the query names ("what did Jeff say about the roof?"), a lower score for
chatter, scores clamped to [0, 1]; then the reranker reads the first candidates with the
query, as many as its time budget allows, and reorders them (engine/search/rerank.py;
recall reads fewer; the response says how many it read: `reranked`); a recall's search
finds nothing when nothing it found bears on the query (`floor`); and duplicates by
content hash are dropped. Every file excerpt is checked against the
file on disk before it is returned; a file that changed is re-indexed and the search
runs again.
Without the embedding model, BM25 ranks alone and the response says `fallback: bm25`.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Literal

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_serializer,
)

from engine.capture import events
from engine.capture.words import any_of, keywords
from engine.kernel import timestamps
from engine.kernel.errors import InputError
from engine.kernel.patterns import CHANNEL_PATTERN
from engine.kernel.requests import NON_BLANK, SPACES, Request, is_blank
from engine.search import embeddings, rerank, turns
from engine.search.index import Index

TIERS = ("shortform", "longform", "domain")
KIND_WEIGHTS = {
    "anchor": 1.0,
    "fragment": 1.0,
    "memory": 1.0,
    "document": 0.97,
    "journal": 0.97,
    "turn": 0.90,
}
SUPERSEDED_FACTOR = 0.9
IDENTIFIER_BOOST = 0.3
AUTHOR_BOOST = 0.1  # a fusion weight: chosen on LoCoMo conversations 1-5, checked on 6-10
CHATTER_WORDS = 5  # a turn of fewer words ("brb", "lol", "good morning!") ...
CHATTER_FACTOR = 0.7  # ... counts this much: it tells little to remember (companion set)
CANDIDATES = 200  # from each ranker, before fusion
FILES_BEYOND = 5  # file chunks past the first PPS_SEARCH_RERANK the reranker also reads:
# curated memories are few, and turns crowd them out of the first 30 (companion set)
RRF_K = 60
POSTINGS_BUDGET = 10_000  # chunks BM25 ranks at most, about; see _keyword

_keyword_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="search-bm25")
TAG_PATTERN = f"^[{SPACES}]*[^{SPACES},](?:[^,\\n]{{0,62}}[^{SPACES},])?[{SPACES}]*$"
"""A tag as sent: 1-64 characters, no commas or newlines, once blanks around it are off."""
_TAG = re.compile(TAG_PATTERN)


def _any_case(word: str) -> str:
    return "".join(f"[{letter.upper()}{letter}]" for letter in word)


def _tiers_pattern() -> str:
    """`all`, or comma codes among TIERS, in any case; spaces and empty codes aside."""
    code = f"(?:{'|'.join(_any_case(tier) for tier in TIERS)})"
    every = f"(?: *,)* *{_any_case('all')} *(?:, *)*"
    some = f"(?: *,)* *{code} *(?:, *(?:{code} *)?)*"
    return f"^(?:{every}|{some})$"


TIERS_PATTERN = _tiers_pattern()


_IDENTIFIER = re.compile(
    r"\b[A-Za-z]+-\d+\b"  # ABC-123
    r"|\b\d{4,}\b"  # numbers of 4+ digits
    r"|\b(?=\w*\d)(?=\w*[A-Za-z])\w+\b"  # words with digits
)


_DAY = re.compile(timestamps.DAY_PATTERN)

Tag = Annotated[str, Field(json_schema_extra={"pattern": TAG_PATTERN})]


def _not_blank(query: str) -> str:
    if is_blank(query):
        raise ValueError("empty query; say what to look for")
    return query


Query = Annotated[
    str,
    Field(min_length=1, max_length=4096, json_schema_extra=NON_BLANK),
    AfterValidator(_not_blank),
]
"""What a search looks for: text that is not blank. Every search request takes it, so
that one the engine builds from another (a word-photo search, a shared store's) holds."""

MAX_LIMIT = 100
"""The most results one search returns."""


class SearchRequest(Request):
    """A search as callers send it (REST body, MCP tool arguments)."""

    model_config = ConfigDict(
        # What `check` refuses, in the JSON Schema: a day, or a window, not both.
        json_schema_extra={
            "if": {"properties": {"date": {"type": "string"}}, "required": ["date"]},
            "then": {"properties": {"since": {"type": "null"}, "until": {"type": "null"}}},
        }
    )

    query: Query = Field(description="What to look for, in words.")
    tiers: str = Field(
        "all",
        validate_default=True,
        description="all, or comma codes among shortform, longform, domain.",
        json_schema_extra={"pattern": TIERS_PATTERN},
    )
    category: str | None = Field(None, max_length=64, description="One fragment category.")
    tags: list[Tag] = Field(default_factory=list, max_length=32, description="Any of these.")
    tags_mode: Literal["any", "all"] = Field("any", description="all: every tag must be there.")
    date: str | None = Field(
        None,
        description="One day, YYYY-MM-DD (UTC); not with since or until.",
        json_schema_extra={"pattern": timestamps.DAY_PATTERN},
    )
    since: str | None = Field(
        None,
        description="Inclusive; a day (from its start) or a timestamp.",
        json_schema_extra={"pattern": timestamps.PATTERN},
    )
    until: str | None = Field(
        None,
        description="Inclusive; a day (to its end) or a timestamp; not before since.",
        json_schema_extra={"pattern": timestamps.PATTERN},
    )
    growth: bool = Field(False, description="Also search the growth journals.")
    channel: str | None = Field(
        None, pattern=CHANNEL_PATTERN, description="Turns from one channel."
    )
    limit: int = Field(10, ge=1, le=MAX_LIMIT, description=f"How many results, 1-{MAX_LIMIT}.")
    min_score: float = Field(
        0.0, ge=0.0, le=1.0, description="Leave out results scoring below this (0-1)."
    )

    @field_validator("tiers")
    @classmethod
    def _tiers(cls, value: str) -> str:
        codes = [code.strip(" ").lower() for code in value.split(",") if code.strip(" ")]
        if not codes:
            raise ValueError("empty; use all, or comma codes among " + ", ".join(TIERS))
        if codes == ["all"]:
            return ",".join(TIERS)
        unknown = [code for code in codes if code not in TIERS]
        if unknown:
            raise ValueError(
                f"unknown tier code {unknown[0]!r}; use all, or comma codes among "
                + ", ".join(TIERS)
            )
        return ",".join(dict.fromkeys(codes))

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        return normalise_tags(value)

    @field_validator("category")
    @classmethod
    def _category(cls, value: str | None) -> str | None:
        return value.strip().lower() if value is not None else None

    @field_validator("date")
    @classmethod
    def _date(cls, value: str | None) -> str | None:
        if value is None or _is_day(value):
            return value
        raise ValueError(f"unparseable date {value!r}: use YYYY-MM-DD")

    @field_validator("since", "until")
    @classmethod
    def _moment(cls, value: str | None) -> str | None:
        if value is None or _is_day(value):
            return value
        return timestamps.normalise(value)

    def check(self) -> None:
        """What no single field can say wrong on its own."""
        if self.date is not None and (self.since is not None or self.until is not None):
            raise InputError.of("date", "give either date or since/until, not both")
        low, high = self.window()
        if low is not None and high is not None and low > high:
            raise InputError.of("until", "is before since")

    @property
    def tier_list(self) -> list[str]:
        return self.tiers.split(",")

    def window(self) -> tuple[str | None, str | None]:
        """The inclusive time window as stored timestamps."""
        if self.date is not None:
            return _start_of(self.date), _end_of(self.date)
        low = _start_of(self.since) if self.since and _is_day(self.since) else self.since
        high = _end_of(self.until) if self.until and _is_day(self.until) else self.until
        return low, high


class SearchResult(BaseModel):
    text: str
    score: float
    tier: str
    kind: str
    path: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    event_uid: str | None = None
    channel: str | None = None
    author: str | None = None
    created_at: str | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    date: str | None = None

    @model_serializer(mode="wrap")
    def _known_fields_only(self, handler):
        """A turn has no path and a file chunk no event_uid: absent, not null."""
        return {k: v for k, v in handler(self).items() if v is not None}


class SearchResponse(BaseModel):
    results: list[SearchResult]
    fallback: Literal["bm25"] | None = None
    reranked: str | None = Field(
        None,
        description="How many of the candidates the reranker was to read it read within"
        ' its time budget (PPS_SEARCH_RERANK_BUDGET_MS), as "12 of 30"; null where'
        " the search does not rerank.",
        examples=["30 of 30"],
    )


def search(
    index: Index,
    entity: str,
    request: SearchRequest,
    kinds: tuple[str, ...] | None = None,
    query_vector: np.ndarray | None = None,
    files: list[str] | None = None,
    reranked: bool | rerank.Reading = True,
    floor: float = 0.0,
) -> SearchResponse:
    """Ranked excerpts of the entity's memory for the request (see the module doc).
    `query_vector`: the query embedded already (recall embeds its context once).
    `files`: only chunks of these files (home-relative paths), before ranking.
    `reranked`: the first PPS_SEARCH_RERANK candidates read by the reranker, as many as
    fit in PPS_SEARCH_RERANK_BUDGET_MS; or what a `rerank.Reading` says (recall's); or
    none. `floor`: recall's relevance gate (see `_above`): when nothing found bears on
    the query (at least this similar to it by meaning, read by the reranker as bearing
    on it, or holding one of its identifiers), only what holds an identifier is kept;
    not where the query could not be embedded (ranked by words alone)."""
    request.check()
    categories = index.settings.fragment_categories
    if categories and request.category is not None and request.category not in categories:
        raise InputError.of("category", f"unknown category; known: {', '.join(categories)}")
    where, params, simple = _where(entity, request, kinds, files)
    fallback = said = None
    for attempt in range(3):
        # BM25 runs in another thread while the query is embedded and compared.
        keyword = _keyword_pool.submit(
            _keyword, index, entity, request.tier_list, request.query, where, params
        )
        if attempt == 0 and query_vector is None:
            query_vector, fallback = _embed_query(index, request.query)
        ranked, cosine = _rank(
            index, entity, request, query_vector, (where, params, simple), keyword
        )
        floored = (floor, cosine) if floor and query_vector is not None else None
        results, stale, said = _materialise(index, entity, ranked, request, reranked, floored)
        if not stale or attempt == 2:
            break
        for path in stale:  # changed on disk behind the index: index it now, rank again
            with index.db.dropping("search_reindex"):  # a full disk: ranked without it
                index.sync_file(entity, path)
    return SearchResponse(results=results, fallback=fallback, reranked=said)


def identifiers(text: str) -> set[str]:
    """Exact tokens worth matching verbatim: ABC-123, 4+ digit numbers, words with digits."""
    return set(_IDENTIFIER.findall(text))


def normalise_tags(tags: list[str]) -> list[str]:
    cleaned = []
    for tag in tags:
        if not _TAG.fullmatch(tag):
            raise ValueError(
                f"bad tag {tag.strip()!r}: 1-64 characters, no commas or newlines,"
                " not starting blank"
            )
        cleaned.append(tag.strip().lower())
    return list(dict.fromkeys(cleaned))


def _embed_query(index: Index, query: str) -> tuple[np.ndarray | None, str | None]:
    try:
        return index.embedder(wait=False).embed_query(query), None
    except embeddings.Unavailable:
        return None, "bm25"


def _where(entity: str, request: SearchRequest, kinds, files=None) -> tuple[str, list, bool]:
    """The filter as SQL over search_chunks `c`, and whether it is only tiers and growth
    (then the vectors in memory can filter themselves)."""
    tiers = request.tier_list
    clauses = ["c.entity = ?", f"c.tier IN ({','.join('?' * len(tiers))})"]
    params: list = [entity, *tiers]
    if not request.growth:
        clauses.append("c.growth = 0")
    simple = True
    if kinds:
        clauses.append(f"c.kind IN ({','.join('?' * len(kinds))})")
        params += list(kinds)
        simple = False
    if request.category is not None:
        clauses.append("c.category = ?")
        params.append(request.category)
        simple = False
    if request.tags:
        wanted = "(SELECT value FROM json_each(?))"
        if request.tags_mode == "any":
            clauses.append(f"EXISTS (SELECT 1 FROM json_each(c.tags) t WHERE t.value IN {wanted})")
            params.append(json.dumps(request.tags))
        else:
            clauses.append(
                "(SELECT COUNT(DISTINCT t.value) FROM json_each(c.tags) t"
                f" WHERE t.value IN {wanted}) = ?"
            )
            params += [json.dumps(request.tags), len(request.tags)]
        simple = False
    low, high = request.window()
    if low is not None:
        clauses.append("c.date >= ?")
        params.append(low)
        simple = False
    if high is not None:
        clauses.append("c.date <= ?")
        params.append(high)
        simple = False
    if request.channel is not None:
        clauses.append("c.channel = ?")
        params.append(request.channel)
        simple = False
    if files is not None:
        clauses.append(
            "c.file_id IN (SELECT id FROM search_files WHERE entity = ?"
            " AND path IN (SELECT value FROM json_each(?)))"
        )
        params += [entity, json.dumps(files)]
        simple = False
    return " AND ".join(clauses), params, simple


def _rank(index, entity, request, query_vector, condition, keyword):
    """(chunk id, fused score before adjustments), best first; and each candidate's
    cosine (none without the query's vector)."""
    matrix = None if query_vector is None else index.matrix(entity)
    ids = None if matrix is None or not len(matrix) else _filtered_ids(index, condition)
    keyword_order, keyword_scores = keyword.result()
    if matrix is None or not len(matrix):
        fused = _fuse(index.settings, {}, [], keyword_scores, keyword_order, keywords_only=True)
        return fused, {}
    # One layout of the matrix for the mask and the lookups: vectors arrive (and rows
    # move, when it is compacted) while searches run.
    with matrix.lock:
        if ids is None:
            allowed = matrix.mask(request.tier_list, request.growth)
        else:
            allowed = matrix.alive[: matrix.n] & np.isin(matrix.ids[: matrix.n], ids)
        dense_order, dense = _dense(matrix, allowed, query_vector, also=keyword_order)
    fused = _fuse(
        index.settings, dense, dense_order, keyword_scores, keyword_order, keywords_only=False
    )
    return fused, dense


def _above(index, scored, floored, logits: dict[int, float], query: str):
    """The scored candidates as they are when one of them bears on the query: at least
    `floor` similar to it by meaning (`floored`: the floor and each candidate's cosine),
    read by the reranker as bearing on it, holding one of its identifiers (a ticket
    number says nothing to the model), or without a vector yet (just stored: its words
    found it); else only those that hold an identifier, if any. A gate, not a cut: an
    answer in other words than the question's is often below the floor while a better
    match of the same search is above it (docs/retrieval-evaluation.md, the ambient
    path)."""
    floor, cosine = floored
    wanted = identifiers(query)
    low = [
        i
        for _, i in scored
        if cosine.get(i, floor) < floor and logits.get(i, rerank.BEARS - 1) < rerank.BEARS
    ]
    if wanted and low:
        rows = index.db.conn.execute(
            "SELECT id, body FROM search_chunks WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(low),),
        )
        kept = {r[0] for r in rows if any(token in r[1] for token in wanted)}
        low = [i for i in low if i not in kept]
    if len(low) < len(scored):
        return scored
    dropped = set(low)
    return [(score, i) for score, i in scored if i not in dropped]


def _keyword(index, entity, tiers, query, where, params) -> tuple[list[int], dict[int, float]]:
    """BM25 (FTS5) candidates within the filter, best first, with their scores. Any of
    the words may match. Ranking costs time for every chunk that holds any of them, so
    on a large index the rarest words are kept while the chunks holding them stay within
    POSTINGS_BUDGET; commoner words (low idf, long postings) are left to the dense side.
    A small index keeps every word (bench/search_scale.py). When the entity's chunks of
    the tiers asked for are few (its word-photos among 100k turns, a small entity among
    large ones), FTS5 is told so with their scope token (migrations/0006) and ranks only
    those; over a large scope that intersection costs more than it saves."""
    conn = index.db.conn
    words = keywords(query)
    if not words:
        return [], {}
    docs = {
        word: conn.execute(
            "SELECT COUNT(*) FROM (SELECT rowid FROM search_fts WHERE search_fts MATCH ? LIMIT ?)",
            (f'"{word}"', POSTINGS_BUDGET + 1),
        ).fetchone()[0]
        for word in words
    }
    kept: list[str] = []
    total = 0
    for word in sorted(words, key=docs.__getitem__):
        if kept and total + docs[word] > POSTINGS_BUDGET:
            break
        kept.append(word)
        total += docs[word]
    match = any_of(kept)
    in_scope = conn.execute(
        "SELECT COUNT(*) FROM (SELECT 1 FROM search_chunks WHERE entity = ?"
        f" AND tier IN ({','.join('?' * len(tiers))}) LIMIT ?)",
        [entity, *tiers, total],
    ).fetchone()[0]
    if in_scope < total:
        tokens = " OR ".join(f"{entity.encode().hex()}x{tier}" for tier in tiers)
        match = f"({match}) AND scope:({tokens})"
    rows = conn.execute(
        "SELECT c.id, -search_fts.rank FROM search_fts"
        " JOIN search_chunks c ON c.id = search_fts.rowid"
        f" WHERE search_fts MATCH ? AND {where} ORDER BY search_fts.rank LIMIT ?",
        [match, *params, CANDIDATES],
    ).fetchall()
    return [r[0] for r in rows], {r[0]: max(r[1], 0.0) for r in rows}


def _filtered_ids(index, condition) -> list[int] | None:
    """The chunk ids a filter allows, or None where the tiers and growth flag say it all
    (the matrix knows those)."""
    where, params, simple = condition
    if simple:
        return None
    return [
        r[0]
        for r in index.db.conn.execute(f"SELECT c.id FROM search_chunks c WHERE {where}", params)
    ]


def _dense(matrix, allowed, query_vector, also) -> tuple[list[int], dict[int, float]]:
    """Cosine candidates within the filter, best first, and the cosine of each of them
    and of the chunks in `also` (the keyword candidates)."""
    positions, scores = matrix.nearest(query_vector, allowed, CANDIDATES)
    order = [int(i) for i in matrix.ids[positions]]
    cosine = dict(zip(order, (float(s) for s in scores), strict=True))
    extra = [
        p
        for p in (matrix.where.get(i) for i in also if i not in cosine)
        if p is not None and p < len(allowed) and allowed[p]
    ]
    if extra:
        extra_scores = matrix.cosines(query_vector, np.asarray(extra))
        for position, score in zip(extra, extra_scores, strict=True):
            cosine[int(matrix.ids[position])] = float(score)
    return order, cosine


def _fuse(settings, dense, dense_order, keyword, keyword_order, *, keywords_only):
    candidates = list(dict.fromkeys([*dense_order, *keyword_order]))
    top_keyword = max(keyword.values(), default=0.0) or 1.0
    if keywords_only:
        fused = {i: keyword.get(i, 0.0) / top_keyword for i in candidates}
    elif settings.search_fusion == "rrf":
        dense_rank = {i: r for r, i in enumerate(dense_order)}
        keyword_rank = {i: r for r, i in enumerate(keyword_order)}
        best = 2.0 / (RRF_K + 1)
        fused = {
            i: (
                (1.0 / (RRF_K + 1 + dense_rank[i]) if i in dense_rank else 0.0)
                + (1.0 / (RRF_K + 1 + keyword_rank[i]) if i in keyword_rank else 0.0)
            )
            / best
            for i in candidates
        }
    else:
        w = settings.search_bm25_weight
        fused = {
            i: (1.0 - w) * min(max(dense.get(i, 0.0), 0.0), 1.0)
            + w * keyword.get(i, 0.0) / top_keyword
            for i in candidates
        }
    return sorted(fused.items(), key=lambda item: -item[1])


def _materialise(index, entity, ranked, request, reranked: bool | rerank.Reading, floored):
    """Results for the ranked ids: adjusted, reranked, above the floor (`floored`, see
    `_above`; None: no floor), deduplicated, checked against disk. Returns (results,
    paths of files that changed behind the index, how many of its candidates the
    reranker read: "12 of 30", or None)."""
    scored = _adjusted(index, entity, ranked, request.query)
    said, logits = None, {}
    settings = index.settings
    if reranked is True:
        reranked = rerank.Reading(settings.search_rerank, settings.search_rerank_budget_ms)
    if reranked and reranked.candidates and len(scored) > 1:
        top = reranked.candidates
        head = [chunk_id for _, chunk_id in scored[:top]]
        head += _files_among(index, [chunk_id for _, chunk_id in scored[top:]], FILES_BEYOND)
        passages = _passages(index, entity, head)
        reordered = rerank.reorder(scored, request.query, passages, reranked.budget_ms)
        scored, said, logits = reordered.scored, reordered.said, reordered.logits
    if floored is not None:
        scored = _above(index, scored, floored, logits, request.query)
    results: list[SearchResult] = []
    seen: set[str] = set()
    stale: set[str] = set()
    files: dict[str, list[str] | None] = {}
    home = index.home(entity)
    batch = 2 * request.limit + 10
    for start in range(0, len(scored), batch):
        rows = _rows(index, entity, [chunk_id for _, chunk_id in scored[start : start + batch]])
        for score, chunk_id in scored[start : start + batch]:
            if len(results) >= request.limit or score < request.min_score or score <= 0.0:
                return results, stale, said
            row = rows.get(chunk_id)
            if row is None or row["content_hash"] in seen:
                continue
            text = row["content"] if row["event_id"] is not None else row["body"]
            if row["file_id"] is not None:
                if row["path"] not in files:
                    files[row["path"]] = _lines(home, row["path"])
                lines = files[row["path"]]
                span = lines[row["start_line"] - 1 : row["end_line"]] if lines else None
                if span is None or text not in "\n".join(span):
                    stale.add(row["path"])
                    continue
            seen.add(row["content_hash"])
            results.append(_result(row, text, score, index.settings.chunk_max_chars))
    return results, stale, said


def _adjusted(index, entity, ranked, query: str) -> list[tuple[float, int]]:
    """(score, chunk id), best first: the fused score times the kind weight, lowered for
    superseded chunks and for chatter (a turn of a few words: its neighbours' words and
    its author's name carry it near any question), raised for an exact identifier the
    query shares and for a turn whose author the query names, in [0, 1]."""
    if not ranked:
        return []
    wanted = identifiers(query)
    asked = _words(query)
    rows = {
        row["id"]: row
        for row in index.db.conn.execute(
            f"SELECT id, kind, superseded, event_id, {'body' if wanted else 'NULL AS body'}"
            " FROM search_chunks WHERE id IN (SELECT value FROM json_each(?)) AND +entity = ?",
            (json.dumps([i for i, _ in ranked]), entity),
        )
    }
    said = _said(index, entity, rows.values())
    scored = []
    for chunk_id, fused in ranked:
        row = rows.get(chunk_id)
        if row is None:
            continue
        turn = said.get(row["event_id"])  # None for a file chunk
        score = fused * KIND_WEIGHTS.get(row["kind"], 1.0)
        if row["superseded"]:
            score *= SUPERSEDED_FACTOR
        text = turn["content"] if turn is not None else row["body"]
        if turn is not None and text.strip(" ").count(" ") + 1 < CHATTER_WORDS:  # words
            score *= CHATTER_FACTOR
        if wanted and any(token in text for token in wanted):
            score += IDENTIFIER_BOOST
        author = turn["author"] if turn is not None else None
        if author and (author := _words(author)).strip() and author in asked:
            score += AUTHOR_BOOST
        scored.append((min(max(score, 0.0), 1.0), chunk_id))
    scored.sort(key=lambda item: -item[0])
    return scored


def _files_among(index, ids: list[int], most: int) -> list[int]:
    """The first `most` file chunks among these chunk ids, in their order."""
    if not most or not ids:
        return []
    files = {
        r[0]
        for r in index.db.conn.execute(
            "SELECT id FROM search_chunks WHERE id IN (SELECT value FROM json_each(?))"
            " AND event_id IS NULL",
            (json.dumps(ids),),
        )
    }
    return [i for i in ids if i in files][:most]


def _passages(index, entity, ids: list[int]) -> dict[int, str]:
    """What the reranker reads of each chunk: a turn after the turn it replies to
    (engine/search/turns.py `with_previous`), a file chunk as indexed."""
    rows = index.db.conn.execute(
        "SELECT id, event_id, body FROM search_chunks"
        " WHERE id IN (SELECT value FROM json_each(?)) AND +entity = ?",
        (json.dumps(ids), entity),
    ).fetchall()
    said = turns.with_previous(index.db.conn, [r[1] for r in rows if r[1] is not None])
    return {r[0]: said.get(r[1], "") if r[1] is not None else r[2] for r in rows}


def _words(text: str) -> str:
    """The text's words, lowercase, one space apart and around, so that whole words in
    order are a substring: " mary ann " in " what did mary ann s roof "."""
    return " " + " ".join(re.findall(r"\w+", text.lower())) + " "


def _rows(index, entity, ids: list[int]) -> dict:
    """Each chunk's row with its file's path, and for a turn its event_uid, author,
    content and created_at (None for a file chunk)."""
    rows = {
        row["id"]: dict(row)
        for row in index.db.conn.execute(
            "SELECT c.*, f.path FROM search_chunks c"
            " LEFT JOIN search_files f ON f.id = c.file_id"
            " WHERE c.id IN (SELECT value FROM json_each(?)) AND +c.entity = ?",
            (json.dumps(ids), entity),
        )
    }
    said = _said(index, entity, rows.values())
    for row in rows.values():
        turn = said.get(row["event_id"])
        row.update({key: turn[key] if turn else None for key in _SAID})
    return rows


_SAID = ("event_uid", "author", "content", "created_at")


def _said(index, entity, rows) -> dict:
    """What capture holds of the turns among these chunk rows: event id -> its row."""
    return events.said(
        index.db.conn, entity, [r["event_id"] for r in rows if r["event_id"] is not None]
    )


def _result(row, text: str, score: float, excerpt_chars: int) -> SearchResult:
    common = {
        "score": round(score, 4),
        "tier": row["tier"],
        "kind": row["kind"],
        "category": row["category"],
        "tags": json.loads(row["tags"]),
    }
    if row["event_id"] is not None:
        return SearchResult(
            text=_excerpt(text, 2 * excerpt_chars),
            event_uid=row["event_uid"],
            channel=row["channel"],
            author=row["author"],
            created_at=row["created_at"],
            date=row["created_at"][:10],
            **common,
        )
    return SearchResult(
        text=text,
        path=row["path"],
        start_line=row["start_line"],
        end_line=row["end_line"],
        date=row["date"][:10] if row["date"] else None,
        **common,
    )


def _lines(home, relative: str) -> list[str] | None:
    try:
        path = home.path(relative)
        if not home.inside(path):
            return None
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None


def _excerpt(text: str, limit: int) -> str:
    """A long turn cut at a word boundary (read it whole with /v1/turns/around)."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip() + " …"


def _is_day(value: str) -> bool:
    return _DAY.fullmatch(value) is not None


def _start_of(day: str) -> str:
    return f"{day}T00:00:00.000000Z"


def _end_of(day: str) -> str:
    return f"{day}T23:59:59.999999Z"
