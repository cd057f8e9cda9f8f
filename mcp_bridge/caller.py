"""Who is calling a tool, and how engine errors reach the agent.

Every MCP request passes through `BearerEntity` (mount.py), which puts the token's
entity on the request. A tool asks `caller(ctx)` for it; there is no parameter through
which a tool could name another entity.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from engine.config import Settings
from engine.db import Database
from engine.errors import Conflict, InputError, NotFound, from_validation


@dataclass(frozen=True)
class Caller:
    db: Database
    settings: Settings
    entity: str


def caller(ctx: Context) -> Caller:
    request = ctx.request_context.request
    state = request.app.state
    return Caller(db=state.db, settings=state.settings, entity=request.state.entity)


@contextmanager
def tool_errors() -> Iterator[None]:
    """Engine errors become tool errors whose message tells the agent what to fix."""
    try:
        yield
    except ValidationError as exc:
        raise ToolError(str(from_validation(exc.errors()))) from None
    except InputError as exc:
        raise ToolError(f"invalid input: {exc}") from None
    except NotFound as exc:
        raise ToolError(f"not found: {exc}") from None
    except Conflict as exc:
        raise ToolError(f"conflict: {exc}") from None
