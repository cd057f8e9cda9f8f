"""What the search tests share: an entity's home on disk and a search call (they wait for
the index to catch up with a change made behind its back with `tests.conftest.wait_for`)."""

from __future__ import annotations

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
