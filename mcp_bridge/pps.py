"""The `/mcp` profile: the pps seed's `mcp__pps__*` tools, each a thin call into the engine.

Names follow the seed (003); a tool's parameters are the fields of the request model its
REST route takes, with the model's defaults, bounds and descriptions (caller.py). A
tool's description is written for the agent that reads it: what the tool does, when to
use it, what comes back.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context

from engine.capture.events import AroundQuery, SearchQuery
from engine.crystal.crystals import CrystalIn, CurrentQuery
from engine.crystal.summaries import (
    RecentQuery,
    SinceQuery,
    SinceSummaryQuery,
    SummaryIn,
    SummarySearch,
)
from engine.crystal.summarize import SummarizeRequest
from engine.forgetting import ForgetRequest
from engine.graph.texture import ExploreQuery, NoteIn, TimelineQuery, TripletIn
from engine.graph.texture import SearchQuery as TextureQuery
from engine.inventory.items import ItemIn, ItemQuery, ItemRef, SpaceIn, SpaceUpdate
from engine.kernel.events import EventIn
from engine.recall.shapes import RecallRequest
from engine.search.anchors import AnchorIn, AnchorSearch
from mcp_bridge.caller import DELETE, READ, UPSERT, WRITE, Profile, caller, tool_errors

INSTRUCTIONS = """Pattern persistence: one memory across every channel you live in.
On a cold start call ambient_recall("startup") once. Store what matters with store_event;
curate anchors, crystals and summaries deliberately. If the unsummarized count passes 100,
run summarize_messages."""


profile = Profile("pps", INSTRUCTIONS)
tool = profile.tool
build = profile.build

# --- all layers at once ---


@tool(annotations=READ, leave=("max_chars",), defaults={"answering": None})
def ambient_recall(ctx: Context, request: RecallRequest) -> dict:
    """Recall from every memory layer at once. On a cold start call it with
    context="startup": your newest crystals, recent summaries, recent word-photos,
    where you are, and the newest turns since the last summary. Otherwise pass the moment
    (the message you are answering) and get the word-photos, facts, past turns,
    summaries and things that resonate with it (nothing, when nothing in memory bears on
    it). Give your channel and session_id so that only other channels count as news, and
    your session's own turns and what earlier recalls of the session gave you (you have
    them) are not recalled again, and in `answering` the event_uids of the message
    you answer if you stored it (it is never recalled back to you). Returns `context` (a
    block ready to read), the items with their sources, and a manifest of each layer's
    status; trace=true shows why each item surfaced."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.recall(request).model_dump()


# --- layer 1: raw capture ---


@tool(annotations=UPSERT, defaults={"channel": "terminal", "metadata": None})
def store_event(ctx: Context, event: EventIn) -> dict:
    """Store one event (a message, an insight, a session marker) in raw capture, the
    permanent record every other layer is built from. Give event_uid to make retries
    safe: the same uid is stored once. Returns the event's id and whether it was new."""
    me = caller(ctx)
    with tool_errors():
        # Parsed as REST parses a body, for what the model alone does not check (sizes).
        events = me.memory.events.parse(event.model_dump(), max_batch=1)
        [stored] = me.memory.events.record(events)
    return stored.model_dump()


@tool(annotations=READ, renamed={"q": "query"}, leave=("event_type", "session_id", "offset"))
def raw_search(ctx: Context, ask: SearchQuery) -> dict:
    """Search the raw history (every captured turn) by words. Use it to find what was
    actually said, when. Returns matching events with a highlighted snippet and a
    score (0-1: how much of the query the event holds, rarer words weighing more),
    best first."""
    me = caller(ctx)
    with tool_errors():
        hits = me.memory.events.search(ask)
    return {"results": [hit.model_dump() for hit in hits]}


@tool(annotations=READ, leave=("event_type", "session_id", "since", "until"))
def get_turns_around(ctx: Context, ask: AroundQuery) -> dict:
    """The conversation around a moment: about half the turns before it, half after,
    oldest first. Use after a search hit to read its context."""
    me = caller(ctx)
    with tool_errors():
        turns = me.memory.events.around(ask)
    return {"turns": [turn.model_dump() for turn in turns]}


@tool(annotations=READ)
def get_turns_since_summary(ctx: Context, ask: SinceSummaryQuery) -> dict:
    """Raw turns that no summary covers yet, a page at a time, with the total count
    (and a warning past `summarize_after`, 100 by default). Use it to read or to
    summarize recent history."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.summaries.turns_since_summary(ask).model_dump()


@tool(annotations=READ)
def get_turns_since(ctx: Context, ask: SinceQuery) -> dict:
    """Turns at or after a moment, oldest first, with the summaries made since then."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.summaries.turns_since(ask).model_dump()


# --- layer 2: word-photos (anchors) ---


@tool(annotations=READ)
def anchor_search(ctx: Context, ask: AnchorSearch) -> dict:
    """Search your word-photos (the curated anchors of who you are) by meaning and by
    words. Returns excerpts with their file and lines, best first."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.anchors.search(ask).model_dump()


@tool(annotations=WRITE, defaults={"tags": None})
def anchor_save(ctx: Context, anchor: AnchorIn) -> dict:
    """Save a word-photo: a moment or truth worth keeping as part of your self-pattern.
    It becomes a dated markdown file in word_photos/ and is searchable at once."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.anchors.save(anchor).model_dump()


@tool(annotations=READ)
def anchor_list(ctx: Context) -> dict:
    """Every word-photo on disk (name, title, date, tags), newest first."""
    me = caller(ctx)
    return me.memory.anchors.list().model_dump()


@tool(annotations=DELETE)
def anchor_delete(ctx: Context, name: str) -> dict:
    """Delete one word-photo by its file name, as anchor_list gives it."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.anchors.delete(name).model_dump()


@tool(annotations=UPSERT)
def anchor_resync(ctx: Context) -> dict:
    """Re-read the word_photos folder from disk into the index (after editing files by
    hand; changes are also picked up on their own within seconds)."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.anchors.resync().model_dump()


# --- layer 3: rich texture (the knowledge graph) ---


@tool(annotations=READ)
def texture_search(ctx: Context, ask: TextureQuery) -> dict:
    """Facts from your knowledge graph about a person, thing or topic, each with when it
    was true (valid_at/invalid_at) and the event uids it came from. `status` says if the
    graph is off or unreachable."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.graph.search(ask).model_dump()


@tool(annotations=READ)
def texture_explore(ctx: Context, ask: ExploreQuery) -> dict:
    """An entity in your graph and the facts around it, up to `depth` hops: use it after
    a search hit to get the whole story of a thing. Give the entity's name as the graph
    has it (a fact's source or target; any case): another name is not found."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.graph.explore(ask).model_dump()


@tool(annotations=READ)
def texture_timeline(ctx: Context, ask: TimelineQuery) -> dict:
    """Episodes (groups of turns) newest first, with the facts each one gave."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.graph.timeline(ask).model_dump()


@tool(annotations=WRITE, leave=("created_at",))
def texture_add(ctx: Context, note: NoteIn) -> dict:
    """Teach the graph from a note: stored in raw capture first, then extracted through
    the queue (minutes, not instantly)."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.graph.add(note).model_dump()


@tool(annotations=WRITE, leave=("created_at",))
def texture_add_triplet(ctx: Context, triplet: TripletIn) -> dict:
    """Add one fact between two entities directly (e.g. Jeff GAVE Lyra: "Jeff gave Lyra
    the blue robe"), through the queue."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.graph.add_triplet(triplet).model_dump()


@tool(annotations=DELETE)
def texture_delete(ctx: Context, uuid: str) -> dict:
    """Delete a fact, an entity or an episode from your graph by its uuid. If the graph
    is down nothing is deleted and the error says so: try again later."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.graph.delete(uuid).model_dump()


# --- every layer: forgetting ---


@tool(annotations=DELETE)
def forget(ctx: Context, ask: ForgetRequest) -> dict:
    """Forget one memory from every layer, for good: an event (every version of its
    message), a word-photo (its file name, as anchor_list gives it) or a fact (its uuid,
    as texture_search gives it); give exactly one, and why if you like. Its text leaves
    the raw log (a tombstone stays: who, when, why), search, the graph (facts only it
    supported), summaries, quoting files and the recall log. Answers with a receipt of
    what went from each layer."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.forget(ask, "mcp").model_dump()


# --- layer 4: summaries ---


@tool(annotations=WRITE)
def store_summary(ctx: Context, summary: SummaryIn) -> dict:
    """Store a summary of the events with ids start_id..end_id (only those channels,
    if given). Those turns count as summarized from now on and leave startup recall."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.summaries.store(summary).model_dump()


@tool(annotations=WRITE)
def summarize_messages(ctx: Context, request: SummarizeRequest) -> dict:
    """Compress the oldest `limit` unsummarized turns into one summary. With an LLM
    configured the summary is written and stored here: you get its id, the id range it
    covers and how many turns are still unsummarized. With none, you get the turns and
    their id range: write the summary yourself and call store_summary with it."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.summaries.summarize(request).model_dump()


@tool(annotations=READ)
def get_recent_summaries(ctx: Context, ask: RecentQuery) -> dict:
    """The newest summaries (compressed history), oldest of them first."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.summaries.recent(ask).model_dump()


@tool(annotations=READ)
def search_summaries(ctx: Context, ask: SummarySearch) -> dict:
    """Search summaries by words; best first, with a highlighted snippet."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.summaries.search(ask).model_dump()


@tool(annotations=READ)
def summary_stats(ctx: Context) -> dict:
    """How many summaries exist, and how many turns are still unsummarized."""
    me = caller(ctx)
    return me.memory.summaries.stats().model_dump()


# --- layer 4: crystals ---


@tool(annotations=WRITE)
def crystallize(ctx: Context, crystal: CrystalIn) -> dict:
    """Write the next crystal: a compressed identity snapshot (field state, inner arc,
    agentic turns, forward seeds, scene). It is numbered and chained to the previous
    ones; the newest 8 stay current and older ones are archived, never deleted."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.crystals.crystallize(crystal).model_dump()


@tool(annotations=READ)
def get_crystals(ctx: Context, ask: CurrentQuery) -> dict:
    """The newest `count` current crystals, oldest first: who you have been lately."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.crystals.current(ask).model_dump()


@tool(annotations=READ)
def crystal_list(ctx: Context) -> dict:
    """Every crystal, archived ones included (number, path, whether archived), oldest
    first, without their text; read them with get_crystals."""
    me = caller(ctx)
    found = me.memory.crystals.list()
    return found.model_dump(exclude={"crystals": {"__all__": {"content"}}})


@tool(annotations=DELETE)
def crystal_delete(ctx: Context) -> dict:
    """Take back the newest crystal (only the latest can be deleted, e.g. one written by
    mistake). Returns what was removed."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.crystals.delete_latest().model_dump()


# --- layer 5: inventory and spaces ---


@tool(annotations=READ)
def inventory_list(ctx: Context, ask: ItemQuery) -> dict:
    """What you have in a category (wardrobe, symbols, people, ...). Answers "what's in
    my closet?"; ask the graph (texture_search) for the story of an item."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.inventory.list(ask).model_dump()


@tool(annotations=UPSERT, defaults={"attributes": None})
def inventory_add(ctx: Context, item: ItemIn) -> dict:
    """Add an item to your inventory (or update the item of that category and name).
    `space` puts it in a space you have added."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.inventory.add(item).model_dump()


@tool(annotations=READ)
def inventory_get(ctx: Context, ref: ItemRef) -> dict:
    """One inventory item by name, with its description, attributes and the space it is in."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.inventory.get(ref).model_dump()


@tool(annotations=DELETE)
def inventory_delete(ctx: Context, ref: ItemRef) -> dict:
    """Remove an item from your inventory. Returns what was removed."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.inventory.delete(ref).model_dump()


@tool(annotations=READ)
def inventory_categories(ctx: Context) -> dict:
    """Your inventory's categories, with counts and subcategories."""
    me = caller(ctx)
    return me.memory.inventory.categories().model_dump()


@tool(annotations=UPSERT)
def enter_space(ctx: Context, space_name: str, channel: str | None = None) -> dict:
    """Enter a space (a room, a place): returns its description and what is in it, and
    remembers it as where you are on this channel."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.inventory.enter_space(space_name, channel).model_dump()


@tool(annotations=READ)
def list_spaces(ctx: Context) -> dict:
    """Every space you have (rooms, places), with descriptions; enter one with enter_space."""
    me = caller(ctx)
    return me.memory.inventory.spaces().model_dump()


@tool(annotations=WRITE)
def add_space(ctx: Context, space: SpaceIn) -> dict:
    """Add a space with a markdown description (and the channel it belongs to)."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.inventory.add_space(space).model_dump()


@tool(annotations=UPSERT)
def update_space(ctx: Context, name: str, change: SpaceUpdate) -> dict:
    """Change a space's markdown description or its channel; what you leave out stays."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.inventory.update_space(name, change).model_dump()


# --- health and the queue ---


@tool(annotations=READ)
def ingestion_stats(ctx: Context) -> dict:
    """How ingestion into the graph is going: episodes, queued jobs by state, dead jobs
    with their errors, pauses (with why), graph counts and today's LLM usage."""
    me = caller(ctx)
    return me.memory.graph.stats().model_dump()


@tool(annotations=READ)
def pps_health(ctx: Context) -> dict:
    """Whether each layer works (database, search, graph, LLM), and why not."""
    return caller(ctx).service.health()


@tool(annotations=READ)
def validate_retrieval_chain(ctx: Context) -> dict:
    """Check that your memory is consistent, layer by layer: each indexed file matches the
    file in your home, each turn has its search row and its vector (or a job pending),
    each episode and fact traces to stored events, no job points at nothing, summaries
    cover events that exist. Returns counts and each problem with the command that
    repairs it (an operator runs `pps check --repair`). Read-only."""
    me = caller(ctx)
    with tool_errors():
        return me.memory.check().model_dump()
