"""The `/mcp/shared-memory` profile: the shared-memory seed's five tools (seed 004),
exactly, over a shared store the caller's entity is a member of
(engine/contracts/stores.py and shared_memory.py say what a store is). Never the
entity's private memory: that stays behind /mcp.

Which store: the one the path names (`/mcp/shared-memory/STORE`), else the `store`
argument, else the entity's only one.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from engine.api.shared import SharedStore
from engine.contracts.shared_memory import AddIn, ForgetIn, SearchIn, UpdateIn
from engine.kernel.errors import InputError
from mcp_bridge.caller import DELETE, READ, UPSERT, WRITE, Caller, Profile, caller, tool_errors

INSTRUCTIONS = """Semantic memory shared by several agents: "what did we decide about X?"
returns the relevant past chunk, whoever wrote it. memory_search first; memory_add what
is worth keeping; memory_update corrects a memory you wrote, in place; memory_forget is a
dry run unless you say dry_run=false. Each memory records who wrote it."""

Store = Annotated[
    str | None,
    Field(
        description="Which shared store, when you are a member of several (or use the path"
        " /mcp/shared-memory/STORE)."
    ),
]

profile = Profile("shared-memory", INSTRUCTIONS)
build = profile.build


def _shared(me: Caller, store: str | None) -> SharedStore:
    if store is not None and me.store is not None and store != me.store:
        raise InputError.of("store", f"the path names the store {me.store!r}; leave store out")
    return me.memory.shared(store or me.store)


@profile.tool(annotations=READ)
def memory_search(ctx: Context, ask: SearchIn, store: Store = None) -> list[dict]:
    """Search the shared store by meaning and by words, one ranking (exact identifiers
    such as ABC-123 count extra). Filters apply before ranking, so a narrow window
    still finds what is inside it. Returns [{id, text, metadata, score}], best first;
    metadata has agent (a label), source, kind, timestamp, tags and written_by (the
    member who wrote it, recorded from its token: what agent_filter chooses)."""
    me = caller(ctx)
    with tool_errors():
        found = _shared(me, store).search(ask)
    return [memory.model_dump() for memory in found]


@profile.tool(annotations=WRITE)
def memory_add(ctx: Context, new: AddIn, store: Store = None) -> str:
    """Add an ad-hoc memory chunk to the shared store, searchable by every member as
    soon as this returns, recorded as written by you. Use it for something new; to
    change an existing memory use memory_update. Returns the new chunk's id (keep it
    to update or forget it); a text you added to this store already is not stored
    twice: the answer is that memory's id."""
    me = caller(ctx)
    with tool_errors():
        return _shared(me, store).add(new).id


@profile.tool(annotations=UPSERT)
def memory_update(ctx: Context, change: UpdateIn, store: Store = None) -> dict:
    """Update an existing memory chunk in place; the id is kept, so references to it
    stay valid. An unknown id raises, so a typo never silently turns into a new chunk.
    Only the member who wrote a memory changes it (every member, in a store created
    with --members-edit). Returns {id, changed, metadata}."""
    me = caller(ctx)
    with tool_errors():
        updated = _shared(me, store).update(change)
    return updated.model_dump()


@profile.tool(annotations=DELETE)
def memory_forget(ctx: Context, ask: ForgetIn, store: Store = None) -> dict:
    """Delete memory chunks by explicit ids or by agent/source filter.

    Deletion is irreversible, so there are two safety catches: dry_run is on by
    default, and deleting by filter requires expect_count equal to the number of
    matches, so an over-broad filter cannot wipe the collection by mistake. A call
    with no ids and no filters is refused; an unknown id, or one another member
    wrote, fails the whole call. A filter matches only the memories you may delete:
    yours (every one in a store created with --members-edit). Returns {matched,
    deleted, dry_run, sample}."""
    me = caller(ctx)
    with tool_errors():
        forgotten = _shared(me, store).forget(ask)
    return forgotten.model_dump()


@profile.tool(annotations=READ)
def memory_stats(ctx: Context, store: Store = None) -> dict:
    """Return collection statistics: total memories, by agent (the member who wrote
    them, recorded from its token; `operator` for the folder indexer) and by source, the
    collection (the store's name), the backend, the members, and members_edit
    (whether members may change each other's memories)."""
    me = caller(ctx)
    with tool_errors():
        return _shared(me, store).stats().model_dump()
