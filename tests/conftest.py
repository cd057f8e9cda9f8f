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
import os
import shutil
import socket
import threading
import time
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
        return self.app.state.db

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
            wait_for(self.app.state.runtime.loaded, timeout, "the models and the graph to load")
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
    missing = _neo4j_missing()
    if missing:
        if os.environ.get("PPS_REQUIRE_NEO4J") == "1":
            pytest.fail(f"PPS_REQUIRE_NEO4J=1 but {missing}")
        pytest.skip(missing)
    server = Neo4jServer(tmp_path_factory.mktemp("neo4j"))
    try:
        yield server.start()
    finally:
        server.stop()
