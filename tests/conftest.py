"""Fixtures: a real `pps serve` on a free port with its own data dir, and entities on it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import httpx
import pytest

from pps.process import ServerProcess
from tests.stub_llm import StubLLM

_names = itertools.count()


# Most modules test layers that do not need the graph; the graph's own tests (and recall's)
# start servers with it. Starting a FalkorDB child per module would only cost time.
NO_GRAPH = {"GRAPH_BACKEND": "none"}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("pps") / "data", env=NO_GRAPH) as proc:
        yield proc


@pytest.fixture(scope="module")
def stub():
    """The stand-in extraction LLM on the OpenAI wire (tests/stub_llm.py), one per module."""
    with StubLLM() as llm:
        yield llm


def connect(server: ServerProcess, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


@pytest.fixture
def make_client(server):
    """make_client() -> an httpx client for a brand-new entity on `server`."""
    clients = []

    def make(name: str | None = None) -> httpx.Client:
        name = name or f"entity-{next(_names)}"
        token = server.pps("entity", "create", name).strip()
        client = connect(server, token)
        client.entity = name
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def client(make_client) -> httpx.Client:
    return make_client()
