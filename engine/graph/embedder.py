"""Graphiti's embedder over the same fastembed model as the search index
(engine.search.embeddings), so facts, entity names and queries share one vector space and the
model is loaded once per process. The model runs in a thread (Graphiti awaits it), and
it is loaded on first use, not when the server starts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from graphiti_core.embedder.client import EmbedderClient

from engine.kernel.config import Settings


class LocalEmbedder(EmbedderClient):
    def __init__(self, settings: Settings):
        self.settings = settings

    async def create(self, input_data: str | list[str] | Iterable) -> list[float]:
        """One text (a query, mostly): ahead of any bulk work on the model."""
        text = input_data if isinstance(input_data, str) else next(iter(input_data))
        return await asyncio.to_thread(lambda: self._model().embed_one(str(text)).tolist())

    async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
        if not input_data_list:
            return []
        texts = list(input_data_list)
        return await asyncio.to_thread(lambda: self._model().embed(texts).tolist())

    def _model(self):
        from engine.search import embeddings

        return embeddings.get(self.settings)
