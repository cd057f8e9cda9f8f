"""The `/mcp/shared-memory` profile: the shared-memory seed's five tools (seed 004),
exactly, over the entity's own memory (engine/contracts/shared_memory.py says what the store is).
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from engine.contracts import shared_memory as memories
from mcp_bridge.caller import DELETE, READ, UPSERT, WRITE, Profile, caller, tool_errors

INSTRUCTIONS = """Semantic memory you search on demand: "what did we decide about X?" returns
the relevant past chunk. memory_search first; memory_add what is worth keeping;
memory_update corrects a memory in place; memory_forget is a dry run unless you say
dry_run=false. Every memory here is yours: agent is always your own name."""


profile = Profile("shared-memory", INSTRUCTIONS)
build = profile.build


@profile.tool(annotations=READ)
def memory_search(
    ctx: Context,
    query: Annotated[str, Field(description="What you want to recall, in words.")],
    top_k: Annotated[int, Field(description="How many chunks, 1-100.")] = 5,
    agent_filter: Annotated[
        str | None, Field(description="Only this agent's chunks: yours are all of them.")
    ] = None,
    source_filter: Annotated[
        str | None,
        Field(
            description="Only this source: sessions (raw turns), markdown (files), or a"
            " fragment category such as manual."
        ),
    ] = None,
    since: Annotated[
        str | None, Field(description="ISO timestamp or date: only chunks from then on.")
    ] = None,
) -> dict:
    """Search your memory by meaning: notes and fragments, your files (word-photos,
    MEMORY.md, documents) and your conversation turns, one ranking. Filters apply
    before ranking, so a narrow window still finds what is inside it. Returns
    results [{id, text, metadata, score}], best first; metadata has agent (you),
    source, kind, timestamp. Ids of memories you added can be passed to
    memory_update and memory_forget; `file:` and `turn:` ids are read-only. An
    agent_filter naming another agent matches nothing: no other agent's memory is
    reachable here."""
    me = caller(ctx)
    with tool_errors():
        found = memories.search_memories(
            me.runtime.index, me.entity, query, top_k, agent_filter, source_filter, since
        )
    return {"results": [memory.model_dump() for memory in found]}


@profile.tool(annotations=WRITE)
def memory_add(
    ctx: Context,
    text: Annotated[str, Field(description="The memory, markdown; write it findable.")],
    metadata: Annotated[
        dict[str, Any] | None,
        Field(
            description="Optional fields kept with it: source (its bucket, default"
            " manual), timestamp (ISO, default now), tags (list), kind (note, doc, ...),"
            " superseded (true ranks it lower), and any others you want back."
        ),
    ] = None,
) -> dict:
    """Add a memory: a new markdown file in your own home
    (.brain/fragments/<source>/<YYYY-MM>/...), searchable as soon as this returns.
    Use it for something new; to change an existing memory use memory_update.
    Returns the new memory's id (keep it to update or forget it), its path and its
    metadata."""
    me = caller(ctx)
    with tool_errors():
        return memories.add(me.runtime.index, me.entity, text, metadata).model_dump()


@profile.tool(annotations=UPSERT)
def memory_update(
    ctx: Context,
    id: Annotated[str, Field(description="The memory's id, from memory_search or memory_add.")],
    text: Annotated[str | None, Field(description="New text; leave out to keep the text.")] = None,
    metadata: Annotated[
        dict[str, Any] | None,
        Field(
            description="Fields to change, merged into the metadata (a field set to null"
            " is removed); source cannot change."
        ),
    ] = None,
    replace_metadata: Annotated[
        bool, Field(description="Replace your metadata fields wholesale instead of merging.")
    ] = False,
) -> dict:
    """Correct an existing memory in place: its file is rewritten and re-indexed, and
    the id is kept, so references to it stay valid. An unknown id is an error, never
    a new memory. Returns {id, changed, metadata}; changed is false when nothing
    differed. Only memories kept as fragments (ids without `file:` or `turn:`) change
    here."""
    me = caller(ctx)
    with tool_errors():
        updated = memories.update(me.runtime.index, me.entity, id, text, metadata, replace_metadata)
    return updated.model_dump()


@profile.tool(annotations=DELETE)
def memory_forget(
    ctx: Context,
    ids: Annotated[
        list[str] | None, Field(description="Memories to delete (memory_search gives ids).")
    ] = None,
    agent_filter: Annotated[
        str | None, Field(description="Everything of this agent (only you are here).")
    ] = None,
    source_filter: Annotated[
        str | None, Field(description="Everything of this source (a fragment category).")
    ] = None,
    dry_run: Annotated[
        bool, Field(description="True (default): only report what would be deleted.")
    ] = True,
    expect_count: Annotated[
        int | None,
        Field(description="Required to delete by filter: the number of matches you expect."),
    ] = None,
) -> dict:
    """Delete memories by id or by agent/source filter. Deletion is irreversible (the
    files are removed), so there are safety catches: dry_run is on by default and
    only reports; deleting by filter needs expect_count equal to the number of
    matches (a wrong count deletes nothing); a call with no ids and no filter is
    refused; an unknown id fails the whole call. Your raw turns and your other files
    (word-photos, MEMORY.md, documents) are never deleted here. Returns {matched,
    deleted, dry_run, sample}."""
    me = caller(ctx)
    with tool_errors():
        forgotten = memories.forget(
            me.runtime.index, me.entity, ids, agent_filter, source_filter, dry_run, expect_count
        )
    return forgotten.model_dump()


@profile.tool(annotations=READ)
def memory_stats(ctx: Context) -> dict:
    """How big your memory is: total chunks search ranks, by agent (you) and by
    source (sessions, markdown, and each fragment category), plus the collection
    (your name) and the backend."""
    me = caller(ctx)
    return memories.stats(me.runtime.index, me.entity).model_dump()
