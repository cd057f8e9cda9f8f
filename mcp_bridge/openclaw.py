"""The `/mcp/openclaw` profile: OpenClaw's memory_search and memory_get (seed 001), exactly.

memory_search ranks the entity's memory files (MEMORY.md, memory/**/*.md) and its
session transcripts (raw turns) together; every hit is a path and a line range, a turn's
path being its transcript, `sessions/<channel>/<YYYY-MM-DD>.md` (engine/contracts/transcripts.py).
memory_get reads lines of either, inside the entity's home only.
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from engine.kernel.limits import MAX_READ_LINES
from engine.search.hybrid import SearchRequest
from mcp_bridge.caller import READ, Profile, caller, tool_errors

INSTRUCTIONS = """Your memory files: MEMORY.md (curated long-term memory), memory/*.md (daily
notes) and your session transcripts. Before answering about prior conversations,
decisions, preferences, dates, people or todos, call memory_search; pull more context with
memory_get. If you searched and found nothing, say so."""

KINDS = ("memory", "turn")


profile = Profile("openclaw", INSTRUCTIONS)
build = profile.build


@profile.tool(
    annotations=READ,
    only=("query", "limit", "min_score"),
    renamed={"limit": "maxResults", "min_score": "minScore"},
    defaults={"limit": 6, "min_score": None, "tiers": "shortform,longform"},
)
def memory_search(ctx: Context, request: SearchRequest) -> dict:
    """Semantic search over your memory files (MEMORY.md, memory/*.md) and your
    session transcripts. Use it before answering about prior conversations,
    decisions, preferences, dates, people, projects or todos. Returns results, best
    first, each with snippet (the matching text), path and startLine/endLine (read
    around it with memory_get), score (0-1) and citation (e.g. MEMORY.md#L3-L7) to
    cite in direct chats, and reranked: how many of the first candidates were read
    closely in the time there was ("12 of 30"). Be specific; if nothing useful comes
    back, rephrase."""
    me = caller(ctx)
    with tool_errors():
        found = me.memory.search(request, kinds=KINDS)
        turns = [r.event_uid for r in found.results if r.event_uid is not None]
        places = me.memory.transcript_places(turns)
    results = []
    for result in found.results:
        path: str | None
        start: int | None
        end: int | None
        if result.event_uid is not None:
            place = places.get(result.event_uid)
            if place is None:
                continue  # deleted since it was ranked
            path, start, end, source = place.path, place.start_line, place.end_line, "sessions"
        else:
            path, start, end, source = result.path, result.start_line, result.end_line, "memory"
        assert path is not None and start is not None and end is not None  # a file's chunk
        results.append(
            {
                "snippet": result.text,
                "path": path,
                "startLine": start,
                "endLine": end,
                "score": result.score,
                "citation": citation(path, start, end),
                "source": source,
            }
        )
    answer: dict[str, Any] = {"results": results}
    if found.fallback:
        answer["fallback"] = found.fallback
    if found.reranked:
        answer["reranked"] = found.reranked
    return answer


def memory_get(ctx: Context, path: str, lines: int | None = None, **window) -> dict:
    """Read lines of one of your memory files, by path and line range: use it after
    memory_search to pull the context around a result (from=startLine). Without
    from/lines it reads the file from the top (at most 2000 lines). Paths are
    relative to your workspace: MEMORY.md, memory/2026-02-07.md, or a transcript's
    sessions/<channel>/<YYYY-MM-DD>.md from memory_search. Returns path, from, to,
    total_lines and text; past the end, text is empty."""
    me = caller(ctx)
    start = window.get("from") or 1
    with tool_errors():
        found = me.memory.read(path, start, lines)
    return found.model_dump(by_alias=True)


# mypy knows no __signature__ on a function: inspect (and so MCP's tool schema) reads it.
memory_get.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Context),
        inspect.Parameter(
            "path",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[
                str,
                Field(
                    min_length=1,
                    max_length=1024,
                    description="Relative to your workspace, e.g. MEMORY.md.",
                ),
            ],
        ),
        # The seed's `from` is a Python keyword: the argument model names it `start`
        # with the alias `from`, and the call hands it over as `from` in **window.
        inspect.Parameter(
            "start",
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[
                int | None,
                Field(alias="from", ge=1, description="First line to read, 1-based."),
            ],
        ),
        inspect.Parameter(
            "lines",
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[
                int | None,
                Field(
                    ge=1,
                    le=MAX_READ_LINES,
                    description=f"How many lines, 1-{MAX_READ_LINES}.",
                ),
            ],
        ),
    ],
    return_annotation=dict,
)
profile.tool(annotations=READ)(memory_get)


def citation(path: str, start: int, end: int) -> str:
    """`MEMORY.md#L3-L7`, or `MEMORY.md#L3` for one line."""
    return f"{path}#L{start}" if start == end else f"{path}#L{start}-L{end}"
