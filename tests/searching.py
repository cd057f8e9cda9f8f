"""What the search tests share: an entity's home on disk, a search call, and waiting for
the index to catch up with a change made behind its back."""

from __future__ import annotations

import time
from pathlib import Path


def home(server, client) -> Path:
    """The entity's default home, as a person editing its files sees it."""
    return server.data_dir / "entities" / client.entity


def write(server, client, relative: str, text: str) -> Path:
    path = home(server, client) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def search(client, query: str, **options) -> dict:
    response = client.post("/v1/search", json={"query": query, **options})
    assert response.status_code == 200, response.text
    return response.json()


def texts(body: dict) -> list[str]:
    return [r["text"] for r in body["results"]]


def wait_for(predicate, timeout: float = 15.0, interval: float = 0.1):
    """Poll until `predicate()` is truthy; return its value, or fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s")
        time.sleep(interval)
