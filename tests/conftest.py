"""Fixtures: the real app served over real HTTP with its own data dir, entities on it, and
the one way tests wait for something to become true.

`server` is the real `pps.app.create_app` run by a real `uvicorn.Server` on a free
127.0.0.1 port, in a thread of the test process (`AppServer`): REST and the MCP SDK's
clients talk to it over HTTP exactly as to `pps serve`, without the seconds a child
process costs to start. Tests about the process itself (SIGKILL, SIGSTOP, a restart
after a crash, the `pps` command, hooks run as Claude Code runs them) still start a
`pps serve` child (`pps.process.ServerProcess`).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import uvicorn
from typer.testing import CliRunner

from engine.capture import entities
from engine.kernel.config import Settings, settings_env
from engine.store.db import Database
from tests.neo4j_server import Neo4jServer
from tests.stub_llm import StubLLM

_names = itertools.count()
T = TypeVar("T")

# Started in the background of a shell without job control (`make test &`), the suite and
# every process it starts would ignore SIGINT; the processes the tests start get Ctrl-C
# as a terminal gives it (a handler here is SIG_DFL again in them).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def unless_required(problem: str | None, setting: str) -> None:
    """Skip the test for `problem` (what it needs is missing here), or fail it where
    `setting` (PPS_REQUIRE_NEO4J, ...) is 1, as CI sets them: there it must run."""
    if problem is None:
        return
    if os.environ.get(setting) == "1":
        pytest.fail(f"{setting}=1 but {problem}")
    pytest.skip(problem)


def script_answer(script: str, *args: str, env: dict | None = None) -> tuple[Any, str]:
    """Run `script` in a fresh Python from the repository's root with `args` (a process of
    its own: what it imports or connects to is the test); the JSON of its last line of
    output, and what it wrote to stderr."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def wait_for(condition: Callable[[], T], timeout: float = 15.0, what: str = "the condition") -> T:
    """Poll `condition()` until it is truthy and return its value; fail after `timeout`
    seconds. The only way a test waits for something done in the background."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


class Clock:
    """A clock for the queue's leases and the episode windows' idle gap that moves only
    when the test says: it starts at the real now; `advance(s)` is s seconds later."""

    def __init__(self):
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


# Most modules test layers that do not need the graph; the graph's own tests (and recall's)
# start servers with it. Starting a FalkorDB per module would only cost time.
NO_GRAPH = {"graph_backend": "none"}


class AppServer:
    """The real app on a real uvicorn server in a thread of this process, with its own
    data dir: `.url`, `.port`, `.data_dir`, `.db` (the app's open Database), `.pps(...)`.
    `stop()` and `start()` again serve the same data dir on the same port, as a restarted
    `pps serve` would (a fresh app: the database opened again, the workers started)."""

    def __init__(self, data_dir: Path, **settings: Any):
        self.data_dir = Path(data_dir)
        self.overrides = {**NO_GRAPH, **settings}
        self._socket = _listening_socket(0)
        self.port = self._socket.getsockname()[1]
        self.settings = Settings(data_dir=self.data_dir, port=self.port, **self.overrides)
        self.app = None
        self.requests: list[str] = []
        """Each HTTP request the server was sent, as "METHOD /path"."""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def db(self) -> Database:
        return self.app.state.service.db

    wait_loaded = True
    """`start` returns once the slow parts have loaded too, as most tests want them."""

    def start(self, timeout: float = 60) -> AppServer:
        from pps.app import create_app

        if self._socket is None:
            self._socket = _listening_socket(self.port)
        self.app = create_app(self.settings)
        config = uvicorn.Config(
            _Recorded(self.app, self.requests),
            log_config=None,  # the test's logging, as pytest captures it
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
        )
        server = self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [self._socket]}, name="app-server", daemon=True
        )
        self._thread.start()
        thread = self._thread
        wait_for(lambda: server.started or not thread.is_alive(), timeout, "the app to start")
        if not server.started:
            self.stop()
            raise RuntimeError("the app did not start (its lifespan failed: see the log)")
        if self.wait_loaded:  # the models and the graph load after the start (engine.runtime)
            wait_for(self.app.state.service.loaded, timeout, "the models and the graph to load")
        return self

    def stop(self) -> None:
        """What SIGTERM does to `pps serve`: requests finish, the lifespan shuts down."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(30)
            assert not self._thread.is_alive(), "the app did not shut down within 30 s"
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None

    def pps(self, *args: str) -> str:
        """Run a `pps` command against this server's data dir and settings, in process;
        return its stdout (raises if it exits non-zero, as `check=True` would)."""
        from pps.cli import app

        umask = os.umask(0o077)  # the command sets it for its process; put it back after
        try:
            result = CliRunner().invoke(
                app, [*args, "--data-dir", str(self.data_dir)], env=settings_env(**self.overrides)
            )
        finally:
            os.umask(umask)
        if result.exit_code != 0:
            raise AssertionError(
                f"pps {' '.join(args)} exited {result.exit_code}: {result.stderr}"
            ) from result.exception
        return result.stdout

    def __enter__(self) -> AppServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class _Recorded:
    """The app, noting each HTTP request it is sent in `seen`."""

    def __init__(self, app, seen: list[str]):
        self.app = app
        self.seen = seen

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            self.seen.append(f"{scope['method']} {scope['path']}")
        await self.app(scope, receive, send)


def _listening_socket(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


# --- markers (pyproject.toml names them): what a test needs beyond this process ---
# `pytest -m "not graph and not neo4j and not browser and not process and not containers"`
# is the quick loop (README.md, "Run and test"). A test is marked by the fixtures it takes,
# and by this map for what no fixture shows: a module (every test in it) or one test of a
# module. The container tests mark themselves (pytestmark).

BY_FIXTURE = {"graph_target": "graph", "neo4j_server": "neo4j", "browser_context": "browser"}
MARKED = {
    # the knowledge graph: an embedded FalkorDB, Graphiti, the stub LLM extracting
    "test_graph_curator.py": {"graph"},
    "test_graph_first_query.py": {"graph"},
    "test_graph_http.py": {"graph", "process"},
    "test_graph_ingest.py": {"graph"},
    "test_graph_neo4j.py": {"graph", "neo4j"},
    "test_graph_server.py": {"graph"},
    "test_graph_server.py::test_the_server_dies_with_the_engine": {"process"},
    "test_llm_wires.py": {"graph"},
    "test_ui_graph.py": {"graph"},
    "test_check.py::test_a_fact_that_traces_to_no_event_is_found_when_the_graph_is_up": {"graph"},
    # `pps serve`, a `pps` command or another Python started as a process
    "test_cli.py": {"process"},
    "test_crash_safety.py": {"process"},
    "test_fast_start.py": {"process", "graph"},
    "test_first_hour.py": {"process"},
    "test_first_start.py": {"process"},
    "test_install.py": {"process"},
    "test_readme.py": {"process"},
    "test_stdio_relay.py": {"process"},
    "test_telemetry.py": {"process"},
    "test_disk_full.py::test_home_files_on_a_full_disk_answer_503_and_leave_nothing": {"process"},
    "test_hooks_claude_code.py": {"process"},  # the hook as Claude Code runs it: `pps hook`
    "test_hooks_install.py": {"process"},
    "test_import_discord_db.py": {"process"},
    "test_import_journals.py": {"process"},
    "test_hooks_http.py::"
    "test_a_repeated_prompt_is_two_turns_and_the_transcript_sweep_stores_neither_again": {
        "process"
    },
    "test_hooks_http.py::"
    "test_three_prompts_while_the_service_is_down_are_each_stored_once_when_it_is_back": {
        "process"
    },
    "test_ingest_client.py::test_stopped_service_spools_and_the_next_flush_sends_in_order_once": {
        "process"
    },
    "test_ingest_client.py::test_a_hung_service_does_not_hold_the_caller_past_its_deadline": {
        "process"
    },
    "test_ingest_client.py::test_sigkill_between_spool_and_flush_loses_nothing": {"process"},
    "test_ingest_client.py::test_sigkill_mid_flush_then_flush_again_stores_each_event_once": {
        "process"
    },
    "test_ingest_client.py::test_flush_command_reports_service_down": {"process"},
    "test_ingest_client.py::test_flush_without_a_token_names_the_setting": {"process"},
    "test_ingest_client.py::test_flush_and_import_take_the_token_file_option": {"process"},
    "test_ingest_client.py::test_flush_says_which_service_and_spool_and_where_other_events_wait": {
        "process"
    },
    "test_ingest_client.py::test_flush_with_a_token_the_service_refuses_says_so": {"process"},
    "test_layers.py::test_the_client_side_loads_nothing_heavy": {"process"},
    "test_layers.py::test_serve_refuses_a_remote_host_before_loading_the_engine": {"process"},
    "test_queue.py::test_worker_process_killed_mid_job_is_reclaimed_and_finishes_once": {"process"},
    "test_search_fallback.py::test_without_the_reranker_search_still_ranks_and_health_says_why": {
        "process"
    },
    "test_search_files.py::test_reindex_rebuilds_the_index_from_disk": {"process"},
}


def pytest_collection_finish(session) -> None:
    """Two tests with one node id would be run as one by `make test`'s processes
    (pytest-xdist), the other dropped without a word: refuse the run instead."""
    ids = Counter(item.nodeid for item in session.items)
    twice = sorted(nodeid for nodeid, n in ids.items() if n > 1)
    if twice:
        raise pytest.UsageError(f"tests sharing a node id: {', '.join(twice[:5])}")


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        module = item.path.name
        marks = {mark for name, mark in BY_FIXTURE.items() if name in item.fixturenames}
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("graph_target") == "neo4j":
            marks.add("neo4j")
        marks |= MARKED.get(module, set()) | MARKED.get(f"{module}::{item.originalname}", set())
        for mark in sorted(marks):
            item.add_marker(mark)


@pytest.fixture(scope="session", autouse=True)
def _no_user_config(tmp_path_factory) -> Iterator[None]:
    """The settings of whoever runs the tests (their ~/.config/pps/.env) are not the
    tests': every test, and every process it starts, sees an empty config folder."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
        yield


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[AppServer]:
    with AppServer(tmp_path_factory.mktemp("pps") / "data") as app:
        yield app


@pytest.fixture(scope="module")
def stub():
    """The stand-in extraction LLM on the OpenAI wire (tests/stub_llm.py), one per module."""
    with StubLLM() as llm:
        yield llm


def create_entity(data_dir: Path, name: str) -> str:
    """Create an entity in a data dir (as `pps entity create` does); return its token."""
    db = Database.open(Settings(data_dir=data_dir))
    try:
        return entities.create(db, name)
    finally:
        db.close()


def connect(server, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


@pytest.fixture
def make_client(server):
    """make_client() -> an httpx client for a brand-new entity on `server`."""
    clients = []

    def make(name: str | None = None) -> httpx.Client:
        name = name or f"entity-{next(_names)}"
        client = connect(server, entities.create(server.db, name))
        client.entity = name
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def client(make_client) -> httpx.Client:
    return make_client()


# --- a real Neo4j 5, without Docker (tests/neo4j_server.py) ---


def _neo4j_missing() -> str | None:
    tools = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    return f"no {' or '.join(tools)} on PATH to build and run tests/neo4j" if tools else None


@pytest.fixture(scope="module", params=["falkordb", "neo4j"])
def graph_target(request):
    """Each graph test module runs once per backend (tests/graphs.py)."""
    from tests import graphs  # graphiti_core: only where a graph test runs

    if request.param == "neo4j":
        return graphs.Neo4j(request.getfixturevalue("neo4j_server"))
    return graphs.Falkor()


@pytest.fixture(scope="session")
def neo4j_server(tmp_path_factory) -> Iterator[Neo4jServer]:
    """A Neo4j 5.26 on a free 127.0.0.1 port, for the session; tests that reuse entity
    names `wipe()` it first. Skipped where java or mvn is missing, unless
    PPS_REQUIRE_NEO4J=1 (CI sets it) makes that a failure."""
    unless_required(_neo4j_missing(), "PPS_REQUIRE_NEO4J")
    server = Neo4jServer(tmp_path_factory.mktemp("neo4j"))
    try:
        yield server.start()
    finally:
        server.stop()
