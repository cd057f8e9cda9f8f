"""Graphiti's embedder over the same fastembed model as the search index
(engine.search.embeddings), so facts, entity names and queries share one vector space and the
model is loaded once per process. The model runs in a thread (Graphiti awaits it), and
it is loaded on first use, not when the server starts.

Which texts get the model's query prefix (bge's "Represent this sentence for searching
relevant passages: "; the bundled MiniLM has none): only a search's query, asked for
through `query`. Every text Graphiti 0.31 hands to `create` and `create_batch` is of the
stored kind: an entity's name (`name_embedding`), a fact (`fact_embedding`), and, when
it looks for duplicates while extracting, an extracted name compared with the stored
names and an extracted fact with the stored facts: like with like, which bge reads
without its prefix. Graphiti's own `search()` would embed its query through `create`
too, but pps searches facts itself (engine.graph.store) and never calls it without a
query vector.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from graphiti_core.embedder.client import EmbedderClient

from engine.kernel.config import Settings


class LocalEmbedder(EmbedderClient):
    def __init__(self, settings: Settings):
        self.settings = settings

    async def create(self, input_data: str | list[str] | Iterable) -> list[float]:
        """One text as it is stored (a name, a fact), without the query prefix; ahead of
        any bulk work on the model."""
        text = input_data if isinstance(input_data, str) else next(iter(input_data))
        return await asyncio.to_thread(lambda: self._model().embed_one(str(text)).tolist())

    async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
        if not input_data_list:
            return []
        texts = list(input_data_list)
        return await asyncio.to_thread(lambda: self._model().embed(texts).tolist())

    async def query(self, text: str) -> list[float]:
        """A search's query, after the model's query prefix (as the search index embeds
        its queries, so recall's one vector serves both)."""
        return await asyncio.to_thread(lambda: self._model().embed_query(text).tolist())

    def _model(self):
        from engine.search import embeddings

        return embeddings.get(self.settings)
