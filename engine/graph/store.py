"""Graphiti over FalkorDB or Neo4j: the one module that imports graphiti_core and the
graph drivers. Everything else calls the plain (blocking) methods of `GraphStore`.

How it is wired, and why:
- Graphiti is asyncio; the engine's workers and routes are threads. The store runs one
  event loop in a thread of its own and every call is submitted to it, so the async
  drivers (bound to the loop they first ran on) are only ever used from that loop.
- One Graphiti (and one driver) per entity, with group_id = the entity's name. On
  FalkorDB each group_id is a graph of its own, so the driver's database is the entity:
  reads and deletes can only see that entity's graph (Graphiti's `remove_episode`
  ignores group_id there). On Neo4j the entities share one database and every query
  here filters on group_id as well.
- What differs between the two servers (connecting, indexes, the word and vector
  searches) is in `_FalkorDB` and `_Neo4j`, behind one small interface (`_Server`);
  the rest of the store is written once for both.
- No cross-encoder (searches use the RRF recipes); telemetry is off (engine/__init__.py).
- An episode is added under its own uuid, derived from its events: the episode node is
  written first, then Graphiti extracts into it (`add_episode(uuid=...)` reprocesses an
  existing node), then the node is marked complete. Before adding, the state is checked:
  complete -> nothing to do (a retry after a crash between the graph write and the job's
  completion); partial -> extracted again into the same node (a crash mid-write).
- Episodes of one entity are added one at a time (Graphiti requires it), whatever the
  number of workers.
- The indexes are made before the first query, once per graph (`prepare`): the backend
  calls it at start and for each new entity, off the request path; a search that comes
  first waits for it. On a fresh Neo4j that takes seconds (each index, the vector one,
  their population) and so does its first search (Cypher compiles each query once,
  and a second connection opens for the two halves of the search): `prepare` runs one
  search too, so that a recall's budget pays for neither.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Coroutine
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from graphiti_core import Graphiti
from graphiti_core.cross_encoder.client import CrossEncoderClient
from graphiti_core.driver.driver import GraphDriver, GraphProvider
from graphiti_core.edges import EntityEdge, get_entity_edge_from_record
from graphiti_core.errors import EdgeNotFoundError, NodeNotFoundError
from graphiti_core.graph_queries import get_fulltext_indices, get_range_indices
from graphiti_core.nodes import EntityNode, EpisodeType, EpisodicNode
from graphiti_core.search.search_filters import SearchFilters
from graphiti_core.search.search_utils import (
    DEFAULT_MIN_SCORE,
    RELEVANT_SCHEMA_LIMIT,
    edge_similarity_search,
    fulltext_query,
    rrf,
)
from graphiti_core.utils.datetime_utils import utc_now
from graphiti_core.utils.maintenance.graph_data_operations import clear_data
from neo4j.exceptions import ClientError as Neo4jClientError
from redis.exceptions import ResponseError

from engine.graph.embedder import LocalEmbedder
from engine.graph.episodes import Episode
from engine.graph.facts import Fact, Node
from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.llm import budget
from engine.llm import client as llm
from engine.search import embeddings

log = logging.getLogger("pps.graph.store")

_READ_TIMEOUT_S = 60.0
_VECTOR_EF_RUNTIME = 200  # HNSW search breadth; at 10 a third of an exact top 10 was missed
_NEO4J_VECTOR_INDEX = "pps_fact_embedding"
_NEO4J_MAX_K = 5000  # the most nearest facts asked of Neo4j's shared index (see _Neo4j)
_NEO4J_CLIENT = {"max_transaction_retry_time": 5.0, "connection_timeout": 5.0}
# The names of a fact's two ends, read with it (as its attributes), so that a search
# needs no second query for them (see `_facts`).
_NAMES = "{pps_source: n.name, pps_target: m.name} AS attributes"
# The edge fields a Fact needs, for get_entity_edge_from_record. Not Graphiti's
# properties(e): that carries the embedding, 384 floats an edge (~15 ms for 10 edges).
_EDGE_FIELDS = (
    "e.uuid AS uuid, n.uuid AS source_node_uuid, m.uuid AS target_node_uuid,"
    " e.group_id AS group_id, e.name AS name, e.fact AS fact, e.episodes AS episodes,"
    " e.created_at AS created_at, e.expired_at AS expired_at, e.valid_at AS valid_at,"
    " e.invalid_at AS invalid_at, e.reference_time AS reference_time, " + _NAMES
)


class IncompleteEpisode(RuntimeError):
    """Graphiti finished the episode, but some of its LLM calls failed on the way."""


class GraphUnavailable(RuntimeError):
    """The graph server cannot be reached now (the work is retried later)."""


@dataclass
class Exploration:
    center: Node | None
    nodes: list[Node] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)


@dataclass
class Added:
    added: bool
    entities: int = 0
    facts: int = 0


class GraphStore:
    def __init__(self, settings: Settings, falkordb: dict | None = None):
        """`falkordb`: connection arguments of the embedded server; else GRAPH_URL."""
        self.settings = settings
        self.backend = settings.graph_backend
        self._server: _Server = (
            _Neo4j(settings) if self.backend == "neo4j" else _FalkorDB(settings, falkordb)
        )
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="graph", daemon=True)
        self._client: Any = None  # the shared FalkorDB client or Neo4j driver
        self._graphs: dict[str, Graphiti] = {}
        self._prepared: set[str] = set()  # index keys whose indexes are made
        self._preparing: dict[str, asyncio.Future] = {}  # index key -> the making of them
        self._entity_locks: dict[str, asyncio.Lock] = {}
        self._llm = None
        self._embedder = LocalEmbedder(settings)

    # --- lifecycle ---

    def start(self) -> GraphStore:
        self._thread.start()
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        try:
            self._call(self._close(), timeout=15)
        except Exception:
            log.exception("closing the graph connection failed")
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(15)
        if not self._thread.is_alive():
            self._loop.close()

    async def _close(self) -> None:
        """Cancel work still running (its callers get an error, their jobs retry), then
        close the shared connection (per-entity drivers share it: never close those)."""
        current = asyncio.current_task()
        for task in asyncio.all_tasks():
            if task is not current:
                task.cancel()
        client, self._client = self._client, None
        if client is not None:
            await self._server.close(client)

    # --- writing ---

    def add_episode(self, episode: Episode, usage: budget.Usage | None = None) -> Added:
        """Add the episode once (see the module docstring); the LLM calls it makes are
        counted into `usage`, even when it fails."""
        graph = self._graph(episode.entity)
        return self._call(self._add(graph, episode, usage or budget.Usage()), timeout=None)

    async def _add(self, graph: Graphiti, episode: Episode, usage: budget.Usage) -> Added:
        llm.count_into(usage)
        entity = episode.entity
        await self._ensure_indices(entity, graph)
        async with self._entity_lock(entity):
            state = await self._episode_state(graph, entity, episode.uuid)
            if state == "complete":
                return Added(added=False)
            node = EpisodicNode(
                uuid=episode.uuid,
                name=episode.name,
                group_id=entity,
                labels=[],
                source=EpisodeType.text if episode.kind == "triplet" else EpisodeType.message,
                content=episode.body,
                source_description=episode.source_description,
                created_at=utc_now(),
                valid_at=episode.reference_time,
            )
            if episode.kind == "triplet":
                added = await self._add_triplet(graph, node, episode.triplet or {})
            else:
                added = await self._add_turns(graph, node, state)
            if usage.failed:
                raise IncompleteEpisode(
                    f"{usage.failed} LLM calls failed while extracting episode {episode.uuid}"
                    f" (Graphiti carried on without them; last: {usage.last_error});"
                    " it will be extracted again"
                )
            await graph.driver.execute_query(
                "MATCH (e:Episodic {uuid: $uuid}) WHERE e.group_id = $group_id"
                " SET e.pps_complete = true",
                uuid=episode.uuid,
                group_id=entity,
            )
            return added

    async def _add_turns(self, graph: Graphiti, node: EpisodicNode, state: str) -> Added:
        previous = await graph.retrieve_episodes(
            node.valid_at, last_n=RELEVANT_SCHEMA_LIMIT + 1, group_ids=[node.group_id]
        )
        previous_uuids = [p.uuid for p in previous if p.uuid != node.uuid][:RELEVANT_SCHEMA_LIMIT]
        if state == "absent":
            await node.save(graph.driver)
        result = await graph.add_episode(
            name=node.name,
            episode_body=node.content,
            source_description=node.source_description,
            reference_time=node.valid_at,
            source=node.source,
            group_id=node.group_id,
            uuid=node.uuid,
            previous_episode_uuids=previous_uuids,
        )
        return Added(added=True, entities=len(result.nodes), facts=len(result.edges))

    async def _add_triplet(self, graph: Graphiti, node: EpisodicNode, triplet: dict) -> Added:
        entity = node.group_id
        source = EntityNode(name=triplet["source"], group_id=entity, labels=["Entity"])
        target = EntityNode(name=triplet["target"], group_id=entity, labels=["Entity"])
        edge = EntityEdge(
            group_id=entity,
            source_node_uuid=source.uuid,
            target_node_uuid=target.uuid,
            name=triplet["relationship"],
            fact=triplet["fact"],
            episodes=[node.uuid],
            created_at=utc_now(),
            valid_at=node.valid_at,
            reference_time=node.valid_at,
        )
        await node.save(graph.driver)
        result = await graph.add_triplet(source, edge, target, episode=node)
        return Added(added=True, entities=len(result.nodes), facts=len(result.edges))

    async def _episode_state(self, graph: Graphiti, entity: str, uuid: str) -> str:
        records, *_ = await graph.driver.execute_query(
            "MATCH (e:Episodic {uuid: $uuid}) WHERE e.group_id = $group_id"
            " RETURN e.pps_complete AS complete",
            uuid=uuid,
            group_id=entity,
        )
        if not records:
            return "absent"
        return "complete" if records[0]["complete"] else "partial"

    def delete(self, entity: str, uuid: str) -> str | None:
        """Delete a fact, an entity node or an episode of this entity; return which, or
        None if this entity's graph has no such uuid."""
        return self._call(self._delete(self._graph(entity), entity, uuid))

    async def _delete(self, graph: Graphiti, entity: str, uuid: str) -> str | None:
        driver = graph.driver
        for kind, model in (
            ("fact", EntityEdge),
            ("entity", EntityNode),
            ("episode", EpisodicNode),
        ):
            try:
                found = await model.get_by_uuid(driver, uuid)
            except (EdgeNotFoundError, NodeNotFoundError):
                continue
            if found.group_id != entity:
                continue  # Neo4j: another entity's (uuids are global there)
            async with self._entity_lock(entity):
                if kind == "episode":
                    await graph.remove_episode(uuid)
                else:
                    await found.delete(driver)
            return kind
        return None

    def import_facts(self, entity: str, facts: list[tuple[str, str, str, str]]) -> int:
        """Write (source, relationship, target, fact) rows as given: no LLM, no dedupe
        beyond one node per name. For benchmarks and seeding a graph; returns the count."""
        graph = self._graph(entity)
        return self._call(self._import_facts(graph, entity, facts), timeout=None)

    async def _import_facts(self, graph: Graphiti, entity: str, facts) -> int:
        from graphiti_core.edges import create_entity_edge_embeddings
        from graphiti_core.nodes import create_entity_node_embeddings
        from graphiti_core.utils.bulk_utils import add_nodes_and_edges_bulk

        await self._ensure_indices(entity, graph)
        now = utc_now()
        names = {n for source, _, target, _ in facts for n in (source, target)}
        known = await EntityNode.get_by_names(graph.driver, list(names), [entity])
        nodes = {n.name: n for n in known}
        for name in names - nodes.keys():
            nodes[name] = EntityNode(name=name, group_id=entity, labels=["Entity"], summary="")
        fresh = [n for n in nodes.values() if n.name_embedding is None]
        await create_entity_node_embeddings(self._embedder, fresh)
        for start in range(0, len(facts), 500):
            edges = [
                EntityEdge(
                    group_id=entity,
                    source_node_uuid=nodes[source].uuid,
                    target_node_uuid=nodes[target].uuid,
                    name=relationship,
                    fact=fact,
                    episodes=[],
                    created_at=now,
                    reference_time=now,
                )
                for source, relationship, target, fact in facts[start : start + 500]
            ]
            await create_entity_edge_embeddings(self._embedder, edges)
            batch = fresh if start == 0 else []
            await add_nodes_and_edges_bulk(graph.driver, [], [], batch, edges, self._embedder)
        return len(facts)

    def clear(self, entity: str) -> None:
        """Remove everything in this entity's graph (tests and a fresh replay)."""
        graph = self._graph(entity)
        self._call(clear_data(graph.driver, [entity]))
        self._server.forget(entity)
        self._prepared.discard(self._server.index_key(entity))  # made again before use

    # --- reading ---

    def search(
        self,
        entity: str,
        query: str,
        limit: int,
        since: str | None,
        until: str | None,
        vector: list[float] | None = None,
    ) -> list[Fact]:
        """Facts by BM25 + cosine, fused by RRF (Graphiti's EDGE_HYBRID_SEARCH_RRF recipe,
        with the cosine side on an index; see `_similar_edges`). `vector`: the query
        already embedded with the same model (recall embeds its context once)."""
        graph = self._graph(entity)
        return self._call(self._search(graph, entity, query, limit, since, until, vector))

    async def _search(self, graph, entity, query, limit, since, until, vector) -> list[Fact]:
        await self._ensure_indices(entity, graph)
        return await self._find(graph, entity, query, limit, since, until, vector)

    async def _find(self, graph, entity, query, limit, since, until, vector) -> list[Fact]:
        windowed = since is not None or until is not None
        wanted = min(limit * 5, 500) if windowed else limit
        if vector is None:
            vector = await self._embedder.create(query.replace("\n", " "))
        matching, similar = await asyncio.gather(
            self._server.matching_edges(graph, entity, query, 2 * wanted),
            self._similar_edges(graph, entity, vector, 2 * wanted),
        )
        edges = {e.uuid: e for e in (*matching, *similar) if e.group_id == entity}
        ranked, _ = rrf([[e.uuid for e in matching], [e.uuid for e in similar]])
        chosen = [edges[uuid] for uuid in ranked if uuid in edges][:wanted]
        if windowed:
            chosen = [e for e in chosen if _within(_when(e), since, until)]
        return await self._facts(graph, chosen[:limit])

    async def _similar_edges(self, graph, entity, vector, limit) -> list[EntityEdge]:
        """The facts nearest the query vector (cosine, over Graphiti's minimum score),
        through the server's vector index; Graphiti's exact scan of the entity's facts
        while the index is not ready (being built, or after a server restart)."""
        found = await self._server.similar_edges(graph, entity, vector, limit)
        if found is not None:
            return found
        return await edge_similarity_search(
            graph.driver, vector, None, None, SearchFilters(), [entity], limit
        )

    def explore(self, entity: str, name: str, depth: int, limit: int) -> Exploration:
        graph = self._graph(entity)
        return self._call(self._explore(graph, entity, name, depth, limit))

    async def _explore(self, graph, entity, name, depth, limit) -> Exploration:
        driver = graph.driver
        center = await self._entity_named(graph, entity, name)
        if center is None:
            return Exploration(center=None)
        seen = {center.uuid}
        frontier = [center.uuid]
        edges: dict[str, EntityEdge] = {}
        for _ in range(depth):
            reached: list[str] = []
            for uuid in frontier:
                for edge in await EntityEdge.get_by_node_uuid(driver, uuid):
                    if edge.group_id != entity or len(edges) >= limit:
                        continue
                    edges[edge.uuid] = edge
                    for other in (edge.source_node_uuid, edge.target_node_uuid):
                        if other not in seen:
                            seen.add(other)
                            reached.append(other)
            frontier = reached
        nodes = await EntityNode.get_by_uuids(driver, list(seen))
        return Exploration(
            center=_node(center),
            nodes=[_node(n) for n in nodes if n.group_id == entity],
            facts=await self._facts(graph, list(edges.values())),
        )

    async def _entity_named(self, graph, entity: str, name: str) -> EntityNode | None:
        """The entity node of that name, or else one whose name differs only in case, or
        else the one a node of that name was merged into; never a merely similar one
        (asked for "Flagstaff Arizona", "Flagstaff" is not it)."""
        found = await EntityNode.get_by_names(graph.driver, [name], [entity])
        if not found:
            records, *_ = await graph.driver.execute_query(
                "MATCH (n:Entity) WHERE n.group_id = $g AND toLower(n.name) = toLower($name)"
                " RETURN n.uuid AS uuid ORDER BY n.name, n.uuid LIMIT 1",
                g=entity,
                name=name,
            )
            if not records:  # a name merged into another node (engine.graph.curator)
                records, *_ = await graph.driver.execute_query(
                    "MATCH (n:Entity) WHERE n.group_id = $g AND any(a IN"
                    " coalesce(n.pps_merged, []) WHERE toLower(a) = toLower($name))"
                    " RETURN n.uuid AS uuid ORDER BY n.name, n.uuid LIMIT 1",
                    g=entity,
                    name=name,
                )
            uuids = [r["uuid"] for r in records]
            found = await EntityNode.get_by_uuids(graph.driver, uuids) if uuids else []
        found = [n for n in found if n.group_id == entity]
        return found[0] if found else None

    def list_facts(
        self, entity: str, limit: int, offset: int, contains: str | None, state: str | None
    ) -> list[Fact]:
        """This entity's facts, newest first: `contains` (any case) in the fact's text or
        an end's name; `state` valid (no invalid_at) or invalidated."""
        graph = self._graph(entity)
        return self._call(self._list_facts(graph, entity, limit, offset, contains, state))

    async def _list_facts(self, graph, entity, limit, offset, contains, state) -> list[Fact]:
        where = ["e.group_id = $g"]
        if contains:
            where.append(
                "(toLower(e.fact) CONTAINS $q OR toLower(a.name) CONTAINS $q"
                " OR toLower(b.name) CONTAINS $q)"
            )
        if state == "valid":
            where.append("e.invalid_at IS NULL")
        elif state == "invalidated":
            where.append("e.invalid_at IS NOT NULL")
        records, *_ = await graph.driver.execute_query(
            "MATCH (a:Entity)-[e:RELATES_TO]->(b:Entity) WHERE " + " AND ".join(where) + " RETURN"
            " e.uuid AS uuid, e.fact AS fact, e.name AS name, e.valid_at AS valid_at,"
            " e.invalid_at AS invalid_at, e.created_at AS created_at, e.episodes AS episodes,"
            " a.name AS source, b.name AS target"
            " ORDER BY e.created_at DESC, e.uuid SKIP $skip LIMIT $limit",
            g=entity,
            q=(contains or "").lower(),
            skip=offset,
            limit=limit,
        )
        return [
            Fact(
                uuid=r["uuid"],
                fact=r["fact"] or "",
                name=r["name"] or "",
                valid_at=_any_stamp(r["valid_at"]),
                invalid_at=_any_stamp(r["invalid_at"]),
                created_at=_any_stamp(r["created_at"]),
                source=r["source"] or "",
                target=r["target"] or "",
                episodes=list(r["episodes"] or []),
            )
            for r in records
        ]

    def episode_facts(self, entity: str, episode_uuids: list[str]) -> dict[str, list[Fact]]:
        """The facts each episode produced (or confirmed), for the timeline."""
        graph = self._graph(entity)
        return self._call(self._episode_facts(graph, entity, episode_uuids))

    async def _episode_facts(self, graph, entity, episode_uuids) -> dict[str, list[Fact]]:
        if not episode_uuids:
            return {}
        nodes = await EpisodicNode.get_by_uuids(graph.driver, episode_uuids)
        nodes = [n for n in nodes if n.group_id == entity]
        edge_uuids = sorted({uuid for n in nodes for uuid in n.entity_edges})
        edges = await EntityEdge.get_by_uuids(graph.driver, edge_uuids) if edge_uuids else []
        facts = {f.uuid: f for f in await self._facts(graph, edges)}
        return {n.uuid: [facts[u] for u in n.entity_edges if u in facts] for n in nodes}

    def counts(self, entity: str) -> dict[str, int]:
        """Episodes, entity nodes and facts in this entity's graph."""
        graph = self._graph(entity)
        return self._call(self._counts(graph, entity))

    async def _counts(self, graph, entity) -> dict[str, int]:
        queries = {
            "episodes": "MATCH (n:Episodic) WHERE n.group_id = $g RETURN count(n) AS n",
            "entities": "MATCH (n:Entity) WHERE n.group_id = $g RETURN count(n) AS n",
            "facts": "MATCH (:Entity)-[e:RELATES_TO]->(:Entity) WHERE e.group_id = $g"
            " RETURN count(e) AS n",
        }
        counts = {}
        for name, query in queries.items():
            records, *_ = await graph.driver.execute_query(query, g=entity)
            counts[name] = int(records[0]["n"]) if records else 0
        return counts

    def episode_uuids(self, entity: str) -> list[str]:
        """Every complete episode in this entity's graph."""
        graph = self._graph(entity)
        records, *_ = self._call(
            graph.driver.execute_query(
                "MATCH (e:Episodic) WHERE e.group_id = $g AND e.pps_complete = true"
                " RETURN e.uuid AS uuid",
                g=entity,
            )
        )
        return sorted(r["uuid"] for r in records)

    def fact_sources(self, entity: str) -> dict[str, list[str]]:
        """Every fact of this entity's graph -> the episodes it was extracted from (the
        consistency check traces each to events)."""
        graph = self._graph(entity)
        records, *_ = self._call(
            graph.driver.execute_query(
                "MATCH (:Entity)-[e:RELATES_TO]->(:Entity) WHERE e.group_id = $g"
                " RETURN e.uuid AS uuid, e.episodes AS episodes",
                g=entity,
            )
        )
        return {r["uuid"]: list(r["episodes"] or []) for r in records}

    # --- curating (engine.graph.curator) ---

    def entity_nodes(self, entity: str) -> list[dict]:
        """Every entity node of this entity's graph: uuid, name, created_at (text), its
        facts (edge ends on it) and its name's embedding (None where it has none)."""
        graph = self._graph(entity)
        return self._call(self._entity_nodes(graph, entity), timeout=None)

    async def _entity_nodes(self, graph, entity) -> list[dict]:
        records, *_ = await graph.driver.execute_query(
            "MATCH (n:Entity) WHERE n.group_id = $g RETURN n.uuid AS uuid, n.name AS name,"
            " n.created_at AS created_at, n.name_embedding AS vector",
            g=entity,
        )
        facts: dict[str, int] = {}
        for pattern in (
            "(n:Entity)-[e:RELATES_TO]->(:Entity)",
            "(:Entity)-[e:RELATES_TO]->(n:Entity)",
        ):
            counted, *_ = await graph.driver.execute_query(
                f"MATCH {pattern} WHERE n.group_id = $g AND e.group_id = $g"
                " RETURN n.uuid AS uuid, count(e) AS facts",
                g=entity,
            )
            for r in counted:  # a fact from a node to itself counts twice
                facts[r["uuid"]] = facts.get(r["uuid"], 0) + int(r["facts"])
        return [
            {
                "uuid": r["uuid"],
                "name": r["name"] or "",
                "created_at": _any_stamp(r["created_at"]),
                "facts": facts.get(r["uuid"], 0),
                "vector": list(r["vector"]) if r["vector"] else None,
            }
            for r in records
        ]

    def merge_nodes(self, entity: str, keep: str, others: list[str]) -> int:
        """Merge the `others` entity nodes into `keep`, all of this entity's graph: every
        fact (RELATES_TO) re-pointed to `keep` with all its properties (uuid, episodes,
        valid_at/invalid_at, embedding), episodes' MENTIONS and communities' HAS_MEMBER
        moved too; `keep` records the merged names (`pps_merged`, which explore also
        answers to) and takes a summary where it has none; a merged node is deleted
        once nothing points at it. Each move is one query (the copy and the delete
        together), so a merge stopped midway loses nothing and the next one finishes
        it. Returns the facts moved."""
        graph = self._graph(entity)
        return self._call(self._merge_nodes(graph, entity, keep, others), timeout=None)

    async def _merge_nodes(self, graph, entity, keep, others) -> int:
        driver, moved = graph.driver, 0
        ends = "MATCH (k:Entity {uuid: $keep}) WHERE k.group_id = $g"
        moves = (
            # A fact from the merged node: from `keep` now (to itself where it was a loop).
            "MATCH (d:Entity {uuid: $other})-[e:RELATES_TO]->(m:Entity)"
            f" WHERE d.group_id = $g AND e.group_id = $g {ends}"
            " CREATE (k)-[c:RELATES_TO]->(m) SET c = properties(e) DELETE e RETURN count(c) AS n",
            "MATCH (m:Entity)-[e:RELATES_TO]->(d:Entity {uuid: $other})"
            f" WHERE d.group_id = $g AND e.group_id = $g {ends}"
            " CREATE (m)-[c:RELATES_TO]->(k) SET c = properties(e) DELETE e RETURN count(c) AS n",
            "MATCH (x:Episodic)-[e:MENTIONS]->(d:Entity {uuid: $other}) WHERE d.group_id = $g"
            f" {ends} MERGE (x)-[c:MENTIONS]->(k) ON CREATE SET c = properties(e)"
            " DELETE e RETURN 0 AS n",
            "MATCH (x:Community)-[e:HAS_MEMBER]->(d:Entity {uuid: $other}) WHERE d.group_id = $g"
            f" {ends} MERGE (x)-[c:HAS_MEMBER]->(k) ON CREATE SET c = properties(e)"
            " DELETE e RETURN 0 AS n",
        )
        async with self._entity_lock(entity):
            for other in others:
                if other == keep:
                    continue
                for query in moves:
                    records, *_ = await driver.execute_query(
                        query, other=other, keep=keep, g=entity
                    )
                    moved += sum(int(r["n"]) for r in records)
                await driver.execute_query(
                    "MATCH (d:Entity {uuid: $other}) WHERE d.group_id = $g"
                    f" {ends} SET k.pps_merged = coalesce(k.pps_merged, []) + [d.name]"
                    " + coalesce(d.pps_merged, []),"
                    " k.summary = CASE WHEN coalesce(k.summary, '') = '' THEN d.summary"
                    " ELSE k.summary END",
                    other=other,
                    keep=keep,
                    g=entity,
                )
                await driver.execute_query(
                    "MATCH (d:Entity {uuid: $other}) WHERE d.group_id = $g"
                    " OPTIONAL MATCH (d)-[r]-() WITH d, count(r) AS left WHERE left = 0"
                    " DELETE d",
                    other=other,
                    g=entity,
                )
        return moved

    def prepare(self, entity: str | None = None) -> None:
        """Make the indexes the entity's graph needs (None: those all entities share,
        where the server has one database for all), once; see the module docstring."""
        entity = entity or self._server.shared
        if entity is None:
            return
        graph = self._graph(entity)
        self._call(self._ensure_indices(entity, graph), timeout=None)

    def prepared(self, entity: str | None = None) -> bool:
        entity = entity or self._server.shared
        return entity is None or self._server.index_key(entity) in self._prepared

    def ping(self) -> None:
        """Raise GraphUnavailable unless the graph server answers."""
        client = self._connect()  # outside the loop: see _graph
        self._call(self._server.ping(client), timeout=3)

    # --- plumbing ---

    def _call(self, coro: Coroutine, timeout: float | None = _READ_TIMEOUT_S):
        if not self._thread.is_alive():
            coro.close()
            raise GraphUnavailable("the graph store is not running")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise GraphUnavailable(f"the graph did not answer within {timeout}s") from None
        except CancelledError:
            raise GraphUnavailable("the graph store stopped while this ran") from None
        except (OSError, ConnectionError) as exc:
            raise GraphUnavailable(f"the graph server is unreachable: {exc}") from exc
        except Exception as exc:
            if _unreachable(exc):
                raise GraphUnavailable(f"the graph server is unreachable: {exc}") from exc
            raise

    def _connect(self):
        """The shared client, made on first use (and again after a failure), in the
        caller's thread: FalkorDB's client makes a blocking call when it is created."""
        with self._lock:
            if self._client is not None:
                return self._client
            try:
                self._client = self._server.connect()
            except Exception as exc:
                raise GraphUnavailable(f"cannot connect to the graph: {exc}") from exc
            return self._client

    def _graph(self, entity: str) -> Graphiti:
        """The entity's Graphiti, made outside the loop so that drivers do not schedule
        index building on their own (they do when made inside a running loop)."""
        client = self._connect()
        with self._lock:
            graph = self._graphs.get(entity)
            if graph is not None:
                return graph
            if self._llm is None:
                self._llm = llm.client(self.settings)
            graph = Graphiti(
                graph_driver=self._server.driver(client, entity),
                llm_client=self._llm,
                embedder=self._embedder,
                cross_encoder=_NoReranker(),
                max_coroutines=self.settings.graph_llm_parallel,
            )
            self._graphs[entity] = graph
            return graph

    async def _ensure_indices(self, entity: str, graph: Graphiti) -> None:
        """The graph's indexes made (and its first search run), once per index key;
        callers that come while they are being made wait for the same making, which
        a caller that gives up does not stop. One that failed is tried again."""
        key = self._server.index_key(entity)
        if key in self._prepared:
            return
        making = self._preparing.get(key)
        if making is None:
            making = asyncio.ensure_future(self._make_indices(key, entity, graph))
            self._preparing[key] = making
            making.add_done_callback(lambda done: done.cancelled() or done.exception())
        await asyncio.shield(making)

    async def _make_indices(self, key: str, entity: str, graph: Graphiti) -> None:
        try:
            if not await self._server.indexes_made(graph):
                await graph.driver.build_indices_and_constraints()
                await self._server.vector_index_state(graph)
                await self._server.await_indexes(graph)
            vector = await self._embedder.create("the first search")
            await self._find(graph, entity, "the first search", 1, None, None, vector)
            self._prepared.add(key)
        finally:
            self._preparing.pop(key, None)

    def _entity_lock(self, entity: str) -> asyncio.Lock:
        lock = self._entity_locks.get(entity)
        if lock is None:
            lock = self._entity_locks[entity] = asyncio.Lock()
        return lock

    async def _facts(self, graph: Graphiti, edges: list[EntityEdge]) -> list[Fact]:
        if not edges:
            return []
        names = {}
        for e in edges:  # read with the edge where the query asked for them (_NAMES)
            if "pps_source" in (e.attributes or {}):
                names[e.source_node_uuid] = e.attributes["pps_source"]
                names[e.target_node_uuid] = e.attributes["pps_target"]
        uuids = {u for e in edges for u in (e.source_node_uuid, e.target_node_uuid)}
        if uuids - names.keys():
            records, *_ = await graph.driver.execute_query(  # names only, not the embeddings
                "MATCH (n:Entity) WHERE n.uuid IN $uuids RETURN n.uuid AS uuid, n.name AS name",
                uuids=sorted(uuids - names.keys()),
            )
            names |= {r["uuid"]: r["name"] for r in records}
        return [
            Fact(
                uuid=e.uuid,
                fact=e.fact,
                name=e.name,
                valid_at=_stamp(e.valid_at),
                invalid_at=_stamp(e.invalid_at),
                created_at=_stamp(e.created_at),
                source=names.get(e.source_node_uuid, ""),
                target=names.get(e.target_node_uuid, ""),
                episodes=list(e.episodes),
            )
            for e in edges
        ]


class _Server:
    """What differs between the graph servers; the store calls only these."""

    shared: str | None = None
    """Where all entities share one database: a group no entity can be (names begin
    with a letter or digit), for preparing it before any entity's first query."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._vector_ready: set[str] = set()  # index keys whose vector index is built

    def connect(self) -> Any:
        """The shared client (blocking; in the caller's thread)."""
        raise NotImplementedError

    async def close(self, client: Any) -> None:
        raise NotImplementedError

    async def ping(self, client: Any) -> None:
        raise NotImplementedError

    def driver(self, client: Any, entity: str) -> GraphDriver:
        """The Graphiti driver for the entity's graph."""
        raise NotImplementedError

    def index_key(self, entity: str) -> str:
        """Where indexes live: the entity's graph, or one database for all."""
        raise NotImplementedError

    async def matching_edges(self, graph, entity, query, limit) -> list[EntityEdge]:
        """The entity's facts whose words match the query best (BM25)."""
        raise NotImplementedError

    async def similar_edges(self, graph, entity, vector, limit) -> list[EntityEdge] | None:
        """The entity's facts nearest the vector, through the vector index; None where
        the index cannot answer now (the store then scans the entity's facts)."""
        raise NotImplementedError

    async def vector_index_state(self, graph) -> str:
        """ "ready" once the vector index on fact embeddings is built; made now (with the
        embedding model's dimension) where there is none."""
        raise NotImplementedError

    async def await_indexes(self, graph) -> None:
        """Return once the indexes just made answer queries."""

    async def indexes_made(self, graph) -> bool:
        """Whether every index is there already, online (so none need be made)."""
        return False

    def forget(self, entity: str) -> None:
        """Ask the server again whether the entity's vector index is ready."""
        self._vector_ready.discard(self.index_key(entity))

    async def _vector_index_ready(self, graph, entity: str) -> bool:
        key = self.index_key(entity)
        if key not in self._vector_ready:
            if await self.vector_index_state(graph) != "ready":
                return False
            self._vector_ready.add(key)
        return True

    async def _dimension(self) -> int:
        return await asyncio.to_thread(lambda: embeddings.get(self.settings).dim)


class _FalkorDB(_Server):
    """Each entity is a graph of its own, with its own indexes. Its fulltext and vector
    searches are queried here directly: without the edges' embeddings (see _EDGE_FIELDS),
    and through an HNSW index on the fact embeddings (at 10k facts an exact scan takes
    ~50 ms, the index ~2 ms for the same top 10). FalkorDB builds that index again after
    a restart (~2 s per 10k facts)."""

    def __init__(self, settings: Settings, embedded: dict | None):
        super().__init__(settings)
        self._embedded = embedded  # connection arguments of the embedded server

    def connect(self) -> Any:
        from falkordb.asyncio import FalkorDB

        if self._embedded:
            return FalkorDB(
                **self._embedded, socket_timeout=_READ_TIMEOUT_S, socket_connect_timeout=5
            )
        if not self.settings.graph_url:
            raise ValueError("no embedded FalkorDB running and no GRAPH_URL")
        return FalkorDB.from_url(self.settings.graph_url, socket_timeout=_READ_TIMEOUT_S)

    async def close(self, client: Any) -> None:
        await client.connection.aclose()

    async def ping(self, client: Any) -> None:
        await client.connection.ping()

    def driver(self, client: Any, entity: str) -> GraphDriver:
        from graphiti_core.driver.falkordb_driver import FalkorDriver

        return FalkorDriver(falkor_db=client, database=entity)

    def index_key(self, entity: str) -> str:
        return entity

    async def matching_edges(self, graph, entity, query, limit) -> list[EntityEdge]:
        words = fulltext_query(query, [entity], graph.driver)
        if not words:
            return []
        records, *_ = await graph.driver.execute_query(
            "CALL db.idx.fulltext.queryRelationships('RELATES_TO', $query)"
            " YIELD relationship AS e, score WITH e, score, startNode(e) AS n, endNode(e) AS m"
            " WHERE e.group_id = $group_id AND n:Entity AND m:Entity"
            f" RETURN {_EDGE_FIELDS} ORDER BY score DESC LIMIT $limit",
            query=words,
            group_id=entity,
            limit=limit,
        )
        return [get_entity_edge_from_record(r, GraphProvider.FALKORDB) for r in records]

    async def similar_edges(self, graph, entity, vector, limit) -> list[EntityEdge] | None:
        if not await self._vector_index_ready(graph, entity):
            return None
        try:
            records, *_ = await graph.driver.execute_query(
                "CALL db.idx.vector.queryRelationships('RELATES_TO', 'fact_embedding', $k,"
                " vecf32($vector)) YIELD relationship AS e, score"
                " WITH e, score, startNode(e) AS n, endNode(e) AS m"
                " WHERE score <= $distance AND e.group_id = $group_id"
                f" AND n:Entity AND m:Entity RETURN {_EDGE_FIELDS} ORDER BY score",
                k=limit,
                vector=vector,
                distance=2 * (1 - DEFAULT_MIN_SCORE),  # Graphiti's score: (2 - distance) / 2
                group_id=entity,
            )
        except ResponseError:  # the server restarted and is building the index again
            self.forget(entity)
            return None
        return [get_entity_edge_from_record(r, GraphProvider.FALKORDB) for r in records]

    async def vector_index_state(self, graph) -> str:
        records, *_ = await graph.driver.execute_query(
            "CALL db.indexes() YIELD label, types, status"
            " WHERE label = 'RELATES_TO' RETURN types, status"
        )
        states = [r["status"] for r in records if "VECTOR" in r["types"].get("fact_embedding", [])]
        if states:
            return "ready" if "OPERATIONAL" in states else states[0]
        await graph.driver.execute_query(
            "CREATE VECTOR INDEX FOR ()-[e:RELATES_TO]-() ON (e.fact_embedding) OPTIONS"
            f" {{dimension: {await self._dimension()}, similarityFunction: 'cosine',"
            f" efRuntime: {_VECTOR_EF_RUNTIME}}}"
        )
        return "created"


class _Neo4j(_Server):
    """One database for every entity; group_id separates them, and every query filters
    on it. Neo4j 5's vector index (HNSW, on the fact embeddings) covers all entities'
    facts and cannot filter while it searches: the nearest are asked for, as many as the
    entity's share of them last time calls for, then the entity's kept, asking for more
    while too few are the entity's. An entity with a small share of a big database is
    quicker to scan (the store's exact scan, through the group_id index), so past
    `_NEO4J_MAX_K` the index gives up."""

    # _EDGE_FIELDS, but each time as text: the driver decodes a DateTime in pure Python,
    # and the two searches of a texture_search return ~80 of them (~3 ms).
    _TIMES = ("created_at", "expired_at", "valid_at", "invalid_at", "reference_time")
    _FIELDS = (
        "e.uuid AS uuid, n.uuid AS source_node_uuid, m.uuid AS target_node_uuid,"
        " e.group_id AS group_id, e.name AS name, e.fact AS fact, e.episodes AS episodes,"
        f" {_NAMES}, " + ", ".join(f"toString(e.{t}) AS {t}" for t in _TIMES)
    )

    shared = "_pps"

    def __init__(self, settings: Settings):
        super().__init__(settings)
        self._share: dict[str, float] = {}  # entity -> its share of the nearest, last seen

    def connect(self) -> Any:
        from graphiti_core.driver.neo4j_driver import Neo4jDriver
        from neo4j import AsyncGraphDatabase

        if not self.settings.graph_url:
            raise ValueError("GRAPH_BACKEND=neo4j needs GRAPH_URL (neo4j://user:pass@host)")
        uri, user, password = _split_credentials(self.settings.graph_url)
        secret = self.settings.neo4j_password
        user = user or self.settings.neo4j_user
        password = password or (secret.get_secret_value() if secret else None)
        # Neo4j reports a warning on every query that names a property no node has yet
        # (fact_embedding, episodes... on a fresh database): Graphiti's queries do,
        # and the driver logs each one with the query in full. Errors still show.
        logging.getLogger("neo4j.notifications").setLevel(logging.ERROR)
        driver = Neo4jDriver(uri, user, password)
        # Graphiti's driver passes no settings to Neo4j's: swap in a client whose retries
        # end in seconds, so that a request made while Neo4j is down is answered (503)
        # before the caller gives up, not after the default 30 s of retries.
        unused, driver.client = (
            driver.client,
            AsyncGraphDatabase.driver(uri, auth=(user or "", password or ""), **_NEO4J_CLIENT),
        )
        asyncio.run(unused.close())  # never connected; closed so that it does not warn
        return driver

    async def close(self, client: Any) -> None:
        await client.close()

    async def ping(self, client: Any) -> None:
        await client.client.verify_connectivity()

    def driver(self, client: Any, entity: str) -> GraphDriver:
        return client

    def index_key(self, entity: str) -> str:
        return "*"

    async def await_indexes(self, graph) -> None:
        await graph.driver.execute_query(f"CALL db.awaitIndexes({int(_READ_TIMEOUT_S)})")

    async def indexes_made(self, graph) -> bool:
        # One query, where asking for the 31 indexes again takes seconds (a schema
        # transaction each) and would hold up every start.
        queries = get_range_indices(GraphProvider.NEO4J) + get_fulltext_indices(GraphProvider.NEO4J)
        named = [re.search(r"INDEX (\w+) IF NOT EXISTS", q) for q in queries]
        if not all(named):  # a Graphiti that words them otherwise: make them
            return False
        records, *_ = await graph.driver.execute_query(
            "SHOW INDEXES YIELD name, state WHERE state = 'ONLINE' RETURN name"
        )
        wanted = {n.group(1) for n in named} | {_NEO4J_VECTOR_INDEX}
        return wanted <= {r["name"] for r in records}

    async def matching_edges(self, graph, entity, query, limit) -> list[EntityEdge]:
        # Graphiti's edge_fulltext_search, less the embeddings it returns (properties(e)):
        # half the time of the word side at 10k facts.
        words = fulltext_query(query, [entity], graph.driver)  # group_id:"entity" AND (...)
        if not words:
            return []
        records, *_ = await graph.driver.execute_query(
            "CALL db.index.fulltext.queryRelationships('edge_name_and_fact', $query,"
            " {limit: $limit}) YIELD relationship AS e, score"
            " WITH e, score, startNode(e) AS n, endNode(e) AS m"
            " WHERE e.group_id = $group_id AND n:Entity AND m:Entity"
            f" RETURN {self._FIELDS} ORDER BY score DESC",
            query=words,
            group_id=entity,
            limit=limit,
            routing_="r",
        )
        return [self._edge(r) for r in records]

    async def similar_edges(self, graph, entity, vector, limit) -> list[EntityEdge] | None:
        if not await self._vector_index_ready(graph, entity):
            return None
        k = self._nearest_wanted(entity, limit)
        while True:
            # One round trip: the k nearest, the entity's kept (and counted) by the server,
            # their fields read there; a row of nulls stands for none kept.
            records, *_ = await graph.driver.execute_query(
                "CALL db.index.vector.queryRelationships($index, $k, $vector)"
                " YIELD relationship AS e, score WITH collect({e: e, score: score}) AS hits"
                " WITH size(hits) AS found, last(hits).score AS lowest,"
                " [h IN hits WHERE h.e.group_id = $group_id] AS theirs"
                " WITH found, lowest, size(theirs) AS owned, [h IN theirs"
                " WHERE h.score >= $min_score AND 'Entity' IN labels(startNode(h.e))"
                " AND 'Entity' IN labels(endNode(h.e))][..$limit] AS kept"
                " UNWIND CASE kept WHEN [] THEN [null] ELSE kept END AS hit"
                " WITH found, lowest, owned, hit.e AS e, startNode(hit.e) AS n,"
                f" endNode(hit.e) AS m RETURN found, lowest, owned, {self._FIELDS}",
                index=_NEO4J_VECTOR_INDEX,
                k=k,
                vector=vector,
                group_id=entity,
                min_score=DEFAULT_MIN_SCORE,
                limit=limit,
                routing_="r",
            )
            found, lowest, owned = (records[0][f] for f in ("found", "lowest", "owned"))
            mine = [self._edge(r) for r in records if r["uuid"] is not None]
            self._share[entity] = max(owned, 1) / max(found, 1)
            if len(mine) >= limit or found < k or lowest < DEFAULT_MIN_SCORE:
                return mine  # enough, or every fact above the minimum score seen
            if k >= _NEO4J_MAX_K:
                return None
            k = min(_NEO4J_MAX_K, max(2 * k, self._nearest_wanted(entity, limit)))

    @classmethod
    def _edge(cls, record) -> EntityEdge:
        fields = dict(record)
        for name in cls._TIMES:  # 2024-03-31T03:30:00.5+02:00, maybe then [Europe/Berlin]
            if fields[name] is not None:
                fields[name] = datetime.fromisoformat(fields[name].split("[")[0])
        return get_entity_edge_from_record(fields, GraphProvider.NEO4J)

    def _nearest_wanted(self, entity: str, limit: int) -> int:
        """Twice the limit, over the entity's share of the nearest facts last time (the
        other entities' facts come back too, and are dropped)."""
        return min(_NEO4J_MAX_K, round(2 * limit / self._share.get(entity, 1.0)))

    async def vector_index_state(self, graph) -> str:
        records, *_ = await graph.driver.execute_query(
            "SHOW VECTOR INDEXES YIELD name, state WHERE name = $name RETURN state",
            name=_NEO4J_VECTOR_INDEX,
        )
        if records:
            return "ready" if records[0]["state"] == "ONLINE" else records[0]["state"]
        try:
            await graph.driver.execute_query(
                f"CREATE VECTOR INDEX {_NEO4J_VECTOR_INDEX} IF NOT EXISTS"
                " FOR ()-[e:RELATES_TO]-() ON (e.fact_embedding) OPTIONS {indexConfig: {"
                f" `vector.dimensions`: {await self._dimension()},"
                " `vector.similarity_function`: 'cosine'}}"
            )
        except Neo4jClientError as exc:  # made at the same moment by another caller
            if exc.code != "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists":
                raise
        return "created"


class _NoReranker(CrossEncoderClient):
    """Searches here use RRF recipes; a cross-encoder call would be a wiring mistake."""

    async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
        raise RuntimeError("no cross-encoder is configured: use an RRF search recipe")


def _node(node: EntityNode) -> Node:
    return Node(uuid=node.uuid, name=node.name, summary=node.summary, labels=list(node.labels))


def _stamp(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return timestamps.from_datetime(moment)


def _any_stamp(value) -> str | None:
    """A time as a query returns it: a datetime, Neo4j's DateTime or FalkorDB's text."""
    if value is None or value == "":
        return None
    if hasattr(value, "to_native"):
        value = value.to_native()
    if isinstance(value, datetime):
        return _stamp(value)
    try:
        return timestamps.normalise(value)
    except (ValueError, TypeError):
        return str(value)


def _when(edge: EntityEdge) -> str | None:
    """When a fact was true: valid_at, else the time of the episode it came from (what
    since/until compare)."""
    return _stamp(edge.valid_at or edge.reference_time or edge.created_at)


def _within(when: str | None, since: str | None, until: str | None) -> bool:
    if when is None:
        return False
    return (since is None or when >= since) and (until is None or when <= until)


def _split_credentials(url: str) -> tuple[str, str | None, str | None]:
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return parts._replace(netloc=netloc).geturl(), parts.username, parts.password


_UNREACHABLE = {"ConnectionError", "ServiceUnavailable", "SessionExpired", "BusyLoadingError"}


def _unreachable(exc: BaseException) -> bool:
    return bool({type(e).__name__ for e in _chain(exc)} & _UNREACHABLE)


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__
