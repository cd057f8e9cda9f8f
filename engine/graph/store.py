"""Graphiti over FalkorDB or Neo4j: what the graph reads and writes. Everything else calls
the plain (blocking) methods of `GraphStore`, the one way in to Graphiti and the graph
drivers. It stands on two modules of its own:
- engine.graph.entity_graphs: Graphiti per entity (group_id = the entity's name), run on
  the process's one event loop, one connection, the indexes made before the first query;
- engine.graph.dialects: what differs between the two servers (connecting, indexes, the
  word and vector searches), behind one small interface; the rest is written once for
  both. On FalkorDB each group_id is a graph of its own, so reads and deletes can only
  see that entity's graph (Graphiti's `remove_episode` ignores group_id there); on Neo4j
  the entities share one database and every query here filters on group_id as well.

How it works, and why:
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
from dataclasses import dataclass, field
from datetime import datetime

from graphiti_core import Graphiti
from graphiti_core.edges import EntityEdge
from graphiti_core.errors import EdgeNotFoundError, NodeNotFoundError
from graphiti_core.nodes import EntityNode, EpisodeType, EpisodicNode
from graphiti_core.search.search_filters import SearchFilters
from graphiti_core.search.search_utils import (
    RELEVANT_SCHEMA_LIMIT,
    edge_similarity_search,
    rrf,
)
from graphiti_core.utils.datetime_utils import utc_now
from graphiti_core.utils.maintenance.graph_data_operations import clear_data

from engine.graph import vectors
from engine.graph.dialects import Dialect, FalkorDBDialect, Neo4jDialect
from engine.graph.embedder import LocalEmbedder
from engine.graph.entity_graphs import EntityGraphs
from engine.graph.episodes import Episode
from engine.graph.facts import DELETABLE, Fact, Node
from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.llm import budget
from engine.llm import client as llm

log = logging.getLogger("pps.graph.store")


class IncompleteEpisode(RuntimeError):
    """Graphiti finished the episode, but some of its LLM calls failed on the way."""


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
        self._dialect: Dialect = (
            Neo4jDialect(settings)
            if self.backend == "neo4j"
            else FalkorDBDialect(settings, falkordb)
        )
        self._embedder = LocalEmbedder(settings)
        self._graphs = EntityGraphs(settings, self._dialect, self._embedder, self._first_search)

    # --- lifecycle ---

    def start(self) -> GraphStore:
        self._graphs.start()
        return self

    def stop(self) -> None:
        self._graphs.stop()

    # --- writing ---

    def add_episode(self, episode: Episode, usage: budget.Usage | None = None) -> Added:
        """Add the episode once (see the module docstring); the LLM calls it makes are
        counted into `usage`, even when it fails."""
        graph = self._graphs.graph(episode.entity)
        return self._graphs.call(self._add(graph, episode, usage or budget.Usage()), timeout=None)

    async def _add(self, graph: Graphiti, episode: Episode, usage: budget.Usage) -> Added:
        llm.count_into(usage)
        entity = episode.entity
        await self._graphs.ensure_indices(entity, graph)
        async with self._graphs.lock(entity):
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

    def delete(self, entity: str, uuid: str, kinds: tuple[str, ...] = DELETABLE) -> str | None:
        """Delete a fact, an entity node or an episode of this entity (of `kinds` only);
        return which, or None if this entity's graph has no such uuid of those kinds."""
        graph = self._graphs.graph(entity)
        return self._graphs.call(self._delete(graph, entity, uuid, kinds))

    async def _delete(
        self, graph: Graphiti, entity: str, uuid: str, kinds: tuple[str, ...]
    ) -> str | None:
        driver = graph.driver
        for kind, model in (
            ("fact", EntityEdge),
            ("entity", EntityNode),
            ("episode", EpisodicNode),
        ):
            if kind not in kinds:
                continue
            try:
                found = await model.get_by_uuid(driver, uuid)
            except (EdgeNotFoundError, NodeNotFoundError):
                continue
            if found.group_id != entity:
                continue  # Neo4j: another entity's (uuids are global there)
            async with self._graphs.lock(entity):
                if kind == "episode":
                    await graph.remove_episode(uuid)
                else:
                    await found.delete(driver)
            return kind
        return None

    def import_facts(self, entity: str, facts: list[tuple[str, str, str, str]]) -> int:
        """Write (source, relationship, target, fact) rows as given: no LLM, no dedupe
        beyond one node per name. For benchmarks and seeding a graph; returns the count."""
        graph = self._graphs.graph(entity)
        return self._graphs.call(self._import_facts(graph, entity, facts), timeout=None)

    async def _import_facts(self, graph: Graphiti, entity: str, facts) -> int:
        from graphiti_core.edges import create_entity_edge_embeddings
        from graphiti_core.nodes import create_entity_node_embeddings
        from graphiti_core.utils.bulk_utils import add_nodes_and_edges_bulk

        await self._graphs.ensure_indices(entity, graph)
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
        graph = self._graphs.graph(entity)
        self._graphs.call(clear_data(graph.driver, [entity]))
        self._graphs.forget(entity)  # its indexes made again before use

    # --- reading ---

    def search(
        self,
        entity: str,
        query: str,
        limit: int,
        since: str | None,
        until: str | None,
        vector: list[float] | None = None,
        *,
        by_meaning: bool = True,
    ) -> list[Fact]:
        """Facts by BM25 + cosine, fused by RRF (Graphiti's EDGE_HYBRID_SEARCH_RRF recipe,
        with the cosine side on an index; see `_similar_edges`). `vector`: the query
        already embedded with the same model, after its query prefix (recall embeds its
        context once). Not `by_meaning`: by the words alone (BM25; the graph's vectors
        are of another model, engine.graph.reembed)."""
        graph = self._graphs.graph(entity)
        return self._graphs.call(
            self._search(graph, entity, query, limit, since, until, vector, by_meaning)
        )

    async def _search(
        self, graph, entity, query, limit, since, until, vector, by_meaning=True
    ) -> list[Fact]:
        await self._graphs.ensure_indices(entity, graph)
        return await self._find(graph, entity, query, limit, since, until, vector, by_meaning)

    async def _find(
        self, graph, entity, query, limit, since, until, vector, by_meaning=True
    ) -> list[Fact]:
        windowed = since is not None or until is not None
        wanted = min(limit * 5, 500) if windowed else limit
        if vector is None and by_meaning:
            vector = await self._embedder.query(query.replace("\n", " "))
        matching, similar = await asyncio.gather(
            self._dialect.matching_edges(graph, entity, query, 2 * wanted),
            self._similar_edges(graph, entity, vector, 2 * wanted) if by_meaning else _none(),
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
        found = await self._dialect.similar_edges(graph, entity, vector, limit)
        if found is not None:
            return found
        return await edge_similarity_search(
            graph.driver, vector, None, None, SearchFilters(), [entity], limit
        )

    def explore(self, entity: str, name: str, depth: int, limit: int) -> Exploration:
        graph = self._graphs.graph(entity)
        return self._graphs.call(self._explore(graph, entity, name, depth, limit))

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
        graph = self._graphs.graph(entity)
        return self._graphs.call(self._list_facts(graph, entity, limit, offset, contains, state))

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
        graph = self._graphs.graph(entity)
        return self._graphs.call(self._episode_facts(graph, entity, episode_uuids))

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
        graph = self._graphs.graph(entity)
        return self._graphs.call(self._counts(graph, entity))

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
        graph = self._graphs.graph(entity)
        records, *_ = self._graphs.call(
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
        graph = self._graphs.graph(entity)
        records, *_ = self._graphs.call(
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
        graph = self._graphs.graph(entity)
        return self._graphs.call(self._entity_nodes(graph, entity), timeout=None)

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
        graph = self._graphs.graph(entity)
        return self._graphs.call(self._merge_nodes(graph, entity, keep, others), timeout=None)

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
        async with self._graphs.lock(entity):
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

    # --- the vectors (engine.graph.reembed; engine.graph.vectors does the work) ---

    def vector_counts(self, entity: str, model: str, base: str | None) -> tuple[int, int]:
        """(this entity's nodes and facts whose vectors are `model`'s, all of them); see
        `vectors.count`."""
        return self._vectors(entity, lambda graph: vectors.count(graph, entity, model, base))

    def stored_vectors(self, entity: str) -> list[tuple[str, str, list[float] | None]]:
        """Every node and fact of the entity's graph: (kind, text, vector stored)."""
        return self._vectors(entity, lambda graph: vectors.stored(graph, entity))

    def vectors_agree(self, entity: str, sample: int = 16) -> bool | None:
        """Whether the graph's vectors are the configured model's, on a sample (see
        `vectors.agree`); None where it holds none."""
        embedder = self._embedder
        return self._vectors(entity, lambda graph: vectors.agree(graph, embedder, entity, sample))

    def reembed_page(
        self, entity: str, kind: str, model: str, base: str | None, size: int
    ) -> vectors.Page:
        """The next `size` of the entity's nodes or facts not yet of `model`, made again
        with it (`vectors.page`), under the entity's graph lock."""
        dialect, embedder, asked = self._dialect, self._embedder, (kind, model, base, size)
        return self._vectors(
            entity,
            lambda graph: vectors.page(graph, dialect, embedder, entity, *asked),
            locked=True,
        )

    def _vectors(self, entity: str, work, locked: bool = False):
        graph = self._graphs.graph(entity)

        async def run():
            await self._graphs.ensure_indices(entity, graph)
            if not locked:
                return await work(graph)
            async with self._graphs.lock(entity):
                return await work(graph)

        return self._graphs.call(run(), timeout=None)

    def prepare(self, entity: str | None = None) -> None:
        """Make the indexes the entity's graph needs (None: those all entities share,
        where the server has one database for all), once; see the module docstring."""
        self._graphs.prepare(entity)

    def prepared(self, entity: str | None = None) -> bool:
        return self._graphs.prepared(entity)

    def ping(self) -> None:
        """Raise GraphUnavailable unless the graph server answers."""
        self._graphs.ping()

    # --- plumbing ---

    async def _first_search(self, graph: Graphiti, entity: str) -> None:
        """The search run once the graph's indexes are made (see the module docstring)."""
        vector = await self._embedder.query("the first search")
        await self._find(graph, entity, "the first search", 1, None, None, vector)

    async def _facts(self, graph: Graphiti, edges: list[EntityEdge]) -> list[Fact]:
        if not edges:
            return []
        names = {}
        for e in edges:  # read with the edge where the dialect asked for them
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


async def _none() -> list[EntityEdge]:
    return []


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
