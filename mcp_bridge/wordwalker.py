"""The `/mcp/wordwalker` profile: Word Walker's search and store (seed 000), exactly.

Both are thin calls into the engine: search is the hybrid search over every tier of the
entity's memory, store writes a dated fragment file and indexes it before answering.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context

from engine.search.fragments import FragmentIn
from engine.search.hybrid import SearchRequest
from mcp_bridge.caller import READ, WRITE, Profile, caller, tool_errors

INSTRUCTIONS = """Word Walker: semantic search over your own memory, and a bank to add to.
You don't need to remember the fact, only anything near it: stack a query with category,
tags, dates and tiers to walk back to it. Store what you want to find again with store."""


profile = Profile("wordwalker", INSTRUCTIONS)
build = profile.build


@profile.tool(
    annotations=READ, leave=("tags_mode", "channel", "min_score"), defaults={"category": ""}
)
def search(ctx: Context, request: SearchRequest) -> dict:
    """Search your own memory by meaning (exact words are not needed): shortform
    fragments and word-photos, longform chat turns, your domain documents, and the
    growth journals if asked. Narrow it with what you already know: a category, tags,
    a day or a date range, tiers. Returns ranked excerpts, best first, each with its
    score (0-1) and its source: a file path and lines, or the turn's channel and time.
    Nothing found is an answer too: try other words or fewer filters."""
    me = caller(ctx)
    if not request.category:  # the seed's "" is every category
        request = request.model_copy(update={"category": None})
    with tool_errors():
        return me.memory.search(request).model_dump()


@profile.tool(annotations=WRITE)
def store(ctx: Context, fragment: FragmentIn) -> dict:
    """Add a memory to your shortform bank: a dated markdown fragment in your own
    home, .brain/fragments/<category>/<YYYY-MM>/<date>_<slug>.md, searchable as soon
    as this returns. Write it so a later search finds it; tags are required. Returns
    the file's path, its category, tags and date."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.files.store_fragment(fragment).model_dump()
