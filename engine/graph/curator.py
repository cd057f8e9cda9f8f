"""Layer 3 upkeep, the graph curator: entity nodes of one entity's graph that are the same
thing, found and merged.

Two nodes are the same thing when their names are equal once normalized (case, accents
as NFKC, punctuation, whitespace and a leading "the", "a" or "an" set aside), or when
their names' embeddings are very close: cosine at or above
`PPS_GRAPH_DUPLICATE_SIMILARITY` (0.95 by default; 0 turns this rule off). The
embeddings are those Graphiti stored on the nodes (the engine's model, see
engine.graph.embedder); a node without one has its name embedded here. With the bundled
MiniLM, "the Blue Robe"/"blue robe" are at 0.963, "Lyra's garden"/"Lyra garden" 0.965,
and "New York City"/"New York" 0.948, "Dr. Smith"/"Doctor Smith" 0.944,
"Monday"/"Tuesday" 0.872, "Jeff"/"Jeffrey" 0.771, "Denver"/"Boulder" 0.561: 0.95 merges
spellings of one name and leaves related names apart (docs/layers.md has the table).
Names whose numbers differ are never the same by their embeddings ("Room 101"/"Room 102"
are at 0.909, "Ada Stone 13"/"Ada Stone 14" above 0.95).

Groups are closed over both rules (A like B, B like C: one group). The node kept is the
one with the most facts, then the oldest, then the smallest uuid; the others are merged
into it by the store (`GraphStore.merge_nodes`): every fact re-pointed with all its
properties and provenance, nothing deleted but the emptied nodes. Only ever within one
entity's graph. A replay (`pps replay graph --fresh`) extracts the graph again from the
log, duplicates included: run the curator again after it.
"""

from __future__ import annotations

import logging
import re
import time
import unicodedata

import numpy as np
from pydantic import BaseModel, Field

from engine.kernel.config import Settings
from engine.kernel.errors import NotFound, Unavailable
from engine.kernel.requests import Request
from engine.store.ticker import Ticker

log = logging.getLogger("pps.graph.curator")

_ARTICLES = ("the ", "a ", "an ")
_BLOCK = 1024  # rows of the similarity matrix computed at once (1024 x N floats)


class DuplicateNode(BaseModel):
    uuid: str
    name: str
    facts: int = Field(description="Facts (edges) to or from the node.")
    created_at: str | None


class DuplicateGroup(BaseModel):
    keep: DuplicateNode = Field(description="The survivor: most facts, then the oldest.")
    merge: list[DuplicateNode] = Field(description="Merged into `keep`.")
    reason: str = Field(description="same name (normalized), or similar names (cosine >= x).")


class Duplicates(BaseModel):
    nodes: int = Field(description="Entity nodes in the entity's graph.")
    groups: list[DuplicateGroup]
    similarity: float = Field(description="The cosine at or above which names are the same.")
    seconds: float = Field(description="Time to read the nodes and find the groups.")


class MergeRequest(Request):
    dry_run: bool = Field(True, description="Only say what would change (the default).")


class Merged(BaseModel):
    dry_run: bool
    groups: list[DuplicateGroup]
    nodes_merged: int = Field(description="Nodes merged into another (or that would be).")
    facts_moved: int = Field(description="Facts re-pointed to a survivor (or that would be).")
    facts_before: int
    facts_after: int = Field(description="Always facts_before: nothing is lost.")
    seconds: float


def normalize(name: str) -> str:
    """The name as compared: NFKC, case-folded, punctuation as spaces, whitespace
    collapsed, a leading article dropped (unless nothing else is left)."""
    text = unicodedata.normalize("NFKC", name).casefold()
    text = re.sub(r"[\W_]+", " ", text).strip()
    for article in _ARTICLES:
        if text.startswith(article) and len(text) > len(article):
            return text[len(article) :]
    return text


def find(store, settings: Settings, entity: str) -> Duplicates:
    """The groups of duplicate entity nodes in this entity's graph."""
    started = time.perf_counter()
    nodes = store.entity_nodes(entity)
    groups = group(nodes, settings.graph_duplicate_similarity, lambda: _embed(settings))
    return Duplicates(
        nodes=len(nodes),
        groups=groups,
        similarity=settings.graph_duplicate_similarity,
        seconds=round(time.perf_counter() - started, 3),
    )


def group(nodes: list[dict], similarity: float, embedder=None) -> list[DuplicateGroup]:
    """Nodes (uuid, name, created_at, facts, vector) grouped by both rules; groups of
    one are left out. `embedder()` gives a function embedding names without a vector."""
    parent = list(range(len(nodes)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def join(i: int, j: int) -> None:
        a, b = root(i), root(j)
        if a != b:
            parent[max(a, b)] = min(a, b)

    by_name: dict[str, int] = {}
    for i, node in enumerate(nodes):
        key = normalize(node["name"]) or node["name"]
        if key in by_name:
            join(by_name[key], i)
        else:
            by_name[key] = i
    if 0 < similarity <= 1 and len(nodes) > 1:
        numbers = [re.findall(r"\d+", n["name"]) for n in nodes]
        for i, j in _close_pairs(nodes, similarity, embedder):
            if numbers[i] == numbers[j]:  # "Room 101" and "Room 102" are two rooms
                join(i, j)
    members: dict[int, list[int]] = {}
    for i in range(len(nodes)):
        members.setdefault(root(i), []).append(i)
    groups = []
    for indices in members.values():
        if len(indices) < 2:
            continue
        ranked = sorted(
            (nodes[i] for i in indices),
            key=lambda n: (-n["facts"], n["created_at"] or "~", n["uuid"]),
        )
        names = {normalize(n["name"]) for n in ranked}
        reason = "same name" if len(names) == 1 else f"similar names (cosine >= {similarity})"
        out = [
            DuplicateNode(**{k: n[k] for k in ("uuid", "name", "facts", "created_at")})
            for n in ranked
        ]
        groups.append(DuplicateGroup(keep=out[0], merge=out[1:], reason=reason))
    groups.sort(key=lambda g: (normalize(g.keep.name), g.keep.uuid))
    return groups


def _close_pairs(nodes: list[dict], similarity: float, embedder):
    """Index pairs (i < j) whose name vectors' cosine is at or above `similarity`."""
    missing = [i for i, n in enumerate(nodes) if not n.get("vector")]
    vectors: list = [n.get("vector") for n in nodes]
    if missing and embedder is not None:
        embed = embedder()
        for i, vector in zip(missing, embed([nodes[i]["name"] for i in missing]), strict=True):
            vectors[i] = vector
    have = [i for i, v in enumerate(vectors) if v is not None and len(v)]
    if len(have) < 2:
        return
    dims = {len(vectors[i]) for i in have}
    if len(dims) > 1:  # names embedded by two models: compare those of the current one
        dim = len(vectors[have[-1]])
        have = [i for i in have if len(vectors[i]) == dim]
    matrix = np.asarray([vectors[i] for i in have], dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix /= np.where(norms == 0, 1, norms)
    for start in range(0, len(have), _BLOCK):
        block = matrix[start : start + _BLOCK] @ matrix.T
        rows, cols = np.nonzero(block >= similarity - 1e-6)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            if start + r < c:
                yield have[start + r], have[c]


def _embed(settings: Settings):
    from engine.search import embeddings

    model = embeddings.get(settings)
    return lambda names: model.embed(names).tolist()


def merge(store, settings: Settings, entity: str, *, dry_run: bool = True) -> Merged:
    """Merge each group into its survivor (or, with `dry_run`, only say what would
    change). Facts are counted before and after: a merge never loses one."""
    started = time.perf_counter()
    found = find(store, settings, entity)
    before = store.counts(entity)["facts"]
    moved = 0
    merged = sum(len(g.merge) for g in found.groups)
    if dry_run:
        moved = sum(n.facts for g in found.groups for n in g.merge)
    else:
        for g in found.groups:
            moved += store.merge_nodes(entity, g.keep.uuid, [n.uuid for n in g.merge])
    after = before if dry_run else store.counts(entity)["facts"]
    if after != before:  # never seen; said loudly if it ever is
        log.error("merging the duplicates of %s: %s facts before, %s after", entity, before, after)
    if merged and not dry_run:
        log.info("merged %s duplicate nodes of %s (%s facts moved)", merged, entity, moved)
    return Merged(
        dry_run=dry_run,
        groups=found.groups,
        nodes_merged=merged,
        facts_moved=moved,
        facts_before=before,
        facts_after=after,
        seconds=round(time.perf_counter() - started, 3),
    )


# --- the faces' services: the graph of a running server (engine.graph.backend.Graph) ---


def duplicates(graph, settings: Settings, entity: str) -> Duplicates:
    """The report (`GET /v1/texture/duplicates`, `pps graph duplicates`). A graph that is
    off is NotFound; one that is down or starting is Unavailable (503)."""
    return _run(graph, "nothing was read", lambda store: find(store, settings, entity))


def merge_duplicates(graph, settings: Settings, entity: str, dry_run: bool = True) -> Merged:
    """`POST /v1/texture/duplicates/merge`, `pps graph merge`."""
    return _run(
        graph,
        "nothing was merged",
        lambda store: merge(store, settings, entity, dry_run=dry_run),
    )


def _run(graph, nothing: str, work):
    from engine.graph.entity_graphs import GraphUnavailable

    if graph is None:
        raise NotFound("no graph is configured (GRAPH_BACKEND=none)")
    store = getattr(graph, "store", None)
    if store is None:
        why = getattr(graph, "why", None) or "the graph is starting"
        raise Unavailable("graph", f"{why}; {nothing}")
    try:
        return work(store)
    except GraphUnavailable as exc:
        raise Unavailable("graph", f"the graph is down: {exc}; {nothing}; retry later") from exc


def curate_all(graph, db, settings: Settings) -> int:
    """Merge the duplicates of every entity's graph (the scheduled curator); the nodes
    merged. An entity whose graph fails is logged and the others still run."""
    from engine.capture import entities

    if graph is None or graph.store is None:
        return 0
    merged = 0
    for known in entities.list_all(db):
        try:
            merged += merge(graph.store, settings, known.name, dry_run=False).nodes_merged
        except Exception:
            log.exception("curating the graph of %s failed", known.name)
    return merged


def scheduler(graph, db, settings: Settings) -> Ticker | None:
    """The scheduled curator (`PPS_GRAPH_CURATE_S`), or None when it is off (default)."""
    if graph is None or settings.graph_curate_s <= 0:
        return None
    return Ticker("graph-curator", settings.graph_curate_s, lambda: curate_all(graph, db, settings))
