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
import platform
import re
import shutil
import signal
import socket
import ssl
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


# --- markers (pyproject.toml names them), derived from what a test takes ---------------
# What a test needs beyond this process follows from its fixtures (those it takes, and
# those they take): `graph` (graph_target, falkordb), `neo4j` (neo4j_server, or
# graph_target's Neo4j), `browser` (browser_context), `process` (processes). The container
# tests mark their files (pytestmark), and so do the few files that are all one kind.
# `slow`: its cases are generated (hypothesis, schemathesis), dozens to hundreds a test;
# or it wraps a key with a passphrase (passphrase: scrypt, slow on purpose).
# `quick`: none of these, the quick loop (`make quick`; README.md, "Run and test").
# A test that starts a process while it may not fails (`_ProcessWatch`), so a test cannot
# sit in the quick loop by mistake.

BY_FIXTURE = {
    "graph_target": "graph",
    "falkordb": "graph",
    "neo4j_server": "neo4j",
    "browser_context": "browser",
    "processes": "process",
    "passphrase": "slow",
}
BEYOND = ("graph", "neo4j", "browser", "process", "containers")
"""The markers of a test that needs more than this process: it may start processes."""
NOT_QUICK = (*BEYOND, "slow")
MAY_START = {name for name, mark in BY_FIXTURE.items() if mark in BEYOND}
"""The fixtures that let a test start processes."""


def _marks(item: pytest.Item) -> set[str]:
    marks = {mark for name, mark in BY_FIXTURE.items() if name in item.fixturenames}
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("graph_target") == "neo4j":
        marks.add("neo4j")
    if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
        marks.add("slow")
    return marks


def pytest_collection_finish(session) -> None:
    """Two tests with one node id would be run as one by `make test`'s processes
    (pytest-xdist), the other dropped without a word: refuse the run instead."""
    ids = Counter(item.nodeid for item in session.items)
    twice = sorted(nodeid for nodeid, n in ids.items() if n > 1)
    if twice:
        raise pytest.UsageError(f"tests sharing a node id: {', '.join(twice[:5])}")


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        for mark in sorted(_marks(item)):
            item.add_marker(mark)
        if not any(item.get_closest_marker(mark) for mark in NOT_QUICK):
            item.add_marker("quick")


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(collector, name, obj):
    """A test function that a plugin turns into a collector of generated cases
    (schemathesis's OpenAPI cases, built as they are collected: some 15 CPU-seconds) is
    `slow`: where the run takes only quick tests, it is not collected at all."""
    made = yield
    generated = isinstance(made, pytest.Collector) and collector.istestfunction(obj, name)
    if generated and _only_quick(collector.config):
        return None
    return made


def _only_quick(config: pytest.Config) -> bool:
    """Whether the run's `-m` expression can select only tests marked `quick`."""
    text = config.option.markexpr
    if not text or "quick" not in text:
        return False
    from _pytest.mark.expression import Expression  # the parser `-m` itself uses

    expression = Expression.compile(text)
    names = sorted(set(re.findall(r"[A-Za-z_]\w*", text)) - {"and", "or", "not", "quick"})
    others = itertools.chain.from_iterable(
        itertools.combinations(names, n) for n in range(len(names) + 1)
    )
    return not any(expression.evaluate(_marked_with(set(marks))) for marks in others)


def _marked_with(marks: set[str]) -> Callable[..., bool]:
    return lambda name, /, **_: name in marks


class _ProcessWatch:
    """The processes started while a test that may not start one runs (an audit hook
    sees every start: subprocess, os.system, spawn, exec, fork)."""

    EVENTS = frozenset(("subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn"))
    EVENTS |= {"os.exec", "os.fork", "os.forkpty"}

    def __init__(self) -> None:
        self.test: str | None = None
        """The node id of the running test, where it may start no process."""
        self.started: list[str] = []

    def __call__(self, event: str, args: tuple) -> None:
        if event in self.EVENTS and self.test is not None:
            self.started.append(f"{event} {args!r:.200}")


_process_watch = _ProcessWatch()


def pytest_configure(config) -> None:
    # Python's platform module runs `uname -p` the first time it is asked for the
    # processor (the LLM SDKs ask, in the app's threads): asked here, it runs it no more.
    platform.processor()
    sys.addaudithook(_process_watch)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    may_start = any(item.get_closest_marker(mark) for mark in BEYOND)
    _process_watch.test = None if may_start else item.nodeid
    _process_watch.started = []
    try:
        return (yield)
    finally:
        _process_watch.test = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if call.when == "teardown" and _process_watch.started and report.passed:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} started a process but takes none of the fixtures that may"
            f" ({', '.join(sorted(MAY_START))}): take `processes`, or the fixture of what"
            " it needs, so that its marker keeps it out of the quick loop. Started: "
            + "; ".join(_process_watch.started)
        )
    return report


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


@pytest.fixture(scope="session")
def processes() -> None:
    """Taken by a test, or by a fixture of it, that starts a process of its own: `pps
    serve`, a `pps` command, the hook client as an agent host runs it, another Python.
    It gives nothing: taking it marks the test `process`, out of the quick loop, and a
    test that starts a process without it fails."""


@pytest.fixture(scope="session")
def falkordb():
    """Taken by a test, or by a fixture of it, that runs a FalkorDB of its own (the
    embedded one, rather than each backend in turn as with `graph_target`): it marks the
    test `graph`. The backend's helpers (tests/graphs.py)."""
    from tests import graphs  # graphiti_core: only where a graph test runs

    return graphs.Falkor()


def create_entity(data_dir: Path, name: str) -> str:
    """Create an entity in a data dir (as `pps entity create` does); return its token."""
    db = Database.open(Settings(data_dir=data_dir))
    try:
        return entities.create(db, name)
    finally:
        db.close()


TLS = ssl.create_default_context()
"""One TLS context for the tests' HTTP clients: without it httpx makes one for each
client, reading the CA bundle again: 27 ms a client, 11 CPU-seconds of the quick loop."""


def connect(server, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30, verify=TLS)


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
