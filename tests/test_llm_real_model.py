"""A real model fills the graph: llama-cpp-python's OpenAI-compatible server, started here
as a user without an API key starts it (`python -m llama_cpp.server --model FILE
--n_ctx 8192`, with one thread: THREADS), with Qwen2.5-Coder 0.5B Instruct (GGUF, Q4_K_M), both
made by tests/llama/setup (`make test` runs it; they are kept in the user's cache).

One short episode goes through the queue's workers, under the default settings (no
response-format setting: the server refuses `json_schema` with a 500 naming `text` and
`json_object`, and pps learns that), into a real FalkorDB with the real embedding model.
What a small model extracts is not judged here (bench/ measures that), only the shape:
the episode is in the graph, its facts are traced to its events, no job is dead, the
dialect was learned. Skipped where setup has not run, except under PPS_REQUIRE_LLAMA=1
(CI), where it fails instead."""

from __future__ import annotations

import contextlib
import ctypes
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from engine.capture import entities
from engine.capture import events as capture
from engine.graph import episodes, texture
from engine.graph.backend import Graph
from engine.graph.server import FalkorServer
from engine.kernel.config import Settings
from engine.llm import budget, dialect
from engine.runtime import CAPTURE_LISTENERS
from engine.store import queue
from engine.store.db import Database
from tests.conftest import unless_required, wait_for

pytestmark = [pytest.mark.graph, pytest.mark.process]

SETUP = Path(__file__).resolve().parent / "llama" / "setup"
ALIAS = "qwen2.5-coder-0.5b-instruct"
TURNS = [
    "My sister Lyra moved to Denver last spring.",
    "Lyra works at the Denver public library now.",
]
EPISODE_S = 900
"""Longest wait for the episode: a minute or two on two quiet cores, many more on busy
ones (docs/settings.md, "A real model in the suite")."""


THREADS = 1
"""The server's threads, for the reply and for reading the prompt. On two cores shared
with the suite's other worker (and, here, with other people's work), two llama.cpp
threads wait for each other at every step; measured side by side on this machine, a
token took 0.6 to 1.8 s with two threads and 75 ms with one, and a 934-token prompt
25 to 33 s with two and 16 s with one."""


def _dies_with_us() -> None:
    """In the server's process: Linux SIGTERMs it when the test's process dies, however
    it dies (a pytest-timeout included)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _made() -> tuple[dict[str, str] | None, str | None]:
    done = subprocess.run([str(SETUP), "check"], capture_output=True, text=True)
    if done.returncode != 0:
        return None, done.stderr.strip() or "tests/llama/setup check failed"
    return dict(line.split("=", 1) for line in done.stdout.split()), None


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """The server's base URL (ending in /v1), started on a free port and stopped after."""
    made, problem = _made()
    unless_required(problem, "PPS_REQUIRE_LLAMA")
    assert made is not None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [
                made["python"],
                "-m",
                "llama_cpp.server",
                "--model",
                made["model"],
                "--model_alias",
                ALIAS,
                "--n_ctx",
                "8192",
                "--n_threads",
                str(THREADS),
                "--n_threads_batch",  # the prompt's (by default as many as the cores)
                str(THREADS),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_dies_with_us,
        )
    url = f"http://127.0.0.1:{port}/v1"

    def up() -> bool:
        if server.poll() is not None:
            raise AssertionError(f"the llama server exited: {log.read_text()[-2000:]}")
        try:
            return httpx.get(f"{url}/models", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, 180, "the llama server to answer /v1/models")
        yield url
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.mark.timeout(EPISODE_S + 300)
def test_a_real_model_fills_the_graph_under_the_default_settings(llama, tmp_path):
    with FalkorServer(tmp_path / "graph") as falkor:
        settings = Settings(
            data_dir=tmp_path / "data",
            graph_backend="falkordb",
            graph_url=f"unix://{falkor.socket_path}",
            llm_provider="openai_compatible",
            llm_base_url=llama,
            llm_model=ALIAS,
            llm_timeout_s=EPISODE_S,
        )
        assert settings.llm_response_format == "auto"
        db = Database.open(settings)
        graph = Graph(settings, db).start(sweep=False)
        workers = queue.Workers(db, queue.Policy(poll_s=0.1, max_attempts=2))
        workers.add(episodes.JOB_KIND, texture.handler(graph, db, settings))
        try:
            entities.create(db, "lyra")
            workers.start()
            events = [{"channel": "terminal", "author": "Jeff", "content": t} for t in TURNS]
            parsed = capture.parse_events(events, max_batch=50, max_content_bytes=10**5)
            capture.Capture(db, CAPTURE_LISTENERS).record("lyra", parsed)
            started = time.monotonic()
            (uuid,) = episodes.close_windows(db, episodes.Window(), force=True)

            def state() -> str:
                row = db.conn.execute("SELECT state FROM jobs WHERE key = ?", (uuid,)).fetchone()
                return row[0]

            wait_for(lambda: state() in ("done", "dead"), EPISODE_S, "the episode's job to end")
            took = time.monotonic() - started
            status = queue.status(db, "lyra")
            assert state() == "done" and not status.dead, [d.last_error for d in status.dead]

            # The episode is in the graph, with what the model found in it.
            assert graph.store.episode_uuids("lyra") == [uuid]
            counts = graph.store.counts("lyra")
            assert counts["entities"] >= 1 and counts["facts"] >= 1, counts

            # Every fact found is traced to this episode and its events.
            uids = [r[0] for r in db.conn.execute("SELECT event_uid FROM events ORDER BY id")]
            found = texture.search(graph, db, "lyra", texture.SearchQuery(query="Lyra Denver"))
            assert found.status == "ok" and found.facts, found
            for fact in found.facts:
                assert fact.episodes == [uuid] and fact.event_uids == uids, fact

            # The server's refusal of json_schema was read, and is remembered.
            learned = dialect.remembered(settings)
            assert learned is not None and learned.dialect == "json_object_schema", learned
            assert "json_object" in learned.evidence
            row = db.conn.execute("SELECT dialect FROM llm_dialects").fetchone()
            assert row[0] == "json_object_schema"

            used = budget.usage_today(db, "lyra")
            assert used["calls"] >= 2 and used["tokens"] > 0, used
            print(f"real model: episode in {took:.0f} s, {used['calls']} calls, {used}, {counts}")
        finally:
            workers.stop()
            graph.stop()
            db.close()
