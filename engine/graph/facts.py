"""What the graph holds, as pps reads it: facts (edges) and entity nodes. Here, apart from
the store, so that services and recall can name them without importing Graphiti."""

from __future__ import annotations

from pydantic import BaseModel, Field

DELETABLE = ("fact", "entity", "episode")
"""What can be deleted from an entity's graph by its uuid (`GraphStore.delete`)."""


class Fact(BaseModel):
    """A fact (an edge between two entities) as the store reads it; engine.graph.texture's
    answers extend it with the events it came from. Here, not in the store, so that
    the services can name it without importing Graphiti."""

    uuid: str
    fact: str
    name: str = Field(description="The relationship, e.g. WORKS_AT.")
    valid_at: str | None = Field(description="When it became true, if known.")
    invalid_at: str | None = Field(description="When it stopped being true, if it did.")
    created_at: str | None
    source: str = Field(description="The entity it is about.")
    target: str
    episodes: list[str] = Field(description="The graph episodes it was extracted from.")


class Node(BaseModel):
    """An entity node of the graph (a person, place, thing)."""

    uuid: str
    name: str
    summary: str
    labels: list[str]
