"""What every profile shares: its tools declared at module level, who is calling a tool,
and how engine errors reach the agent.

Every MCP request passes through `BearerEntity` (mount.py), which puts the token's
entity on the request. A tool asks `caller(ctx)` for it; there is no parameter through
which a tool could name another entity.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import ValidationError

from engine.runtime import Runtime
from engine.store.config import Settings
from engine.store.db import Database
from engine.store.errors import (
    BadUpstream,
    Conflict,
    InputError,
    NotFound,
    Unavailable,
    from_validation,
)

# What a tool does to memory, for the client to show and to ask before.
READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
UPSERT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)


@dataclass
class Profile:
    """One MCP profile: a seed's exact tool contract. Tools are plain module-level
    functions registered with `@profile.tool(annotations)`; `build()` serves them, each
    described by its docstring (dedented) and named by its function."""

    name: str
    instructions: str
    tools: list[tuple[Callable, ToolAnnotations]] = field(default_factory=list)

    def tool(self, annotations: ToolAnnotations) -> Callable[[Callable], Callable]:
        def register(fn: Callable) -> Callable:
            self.tools.append((fn, annotations))
            return fn

        return register

    def build(self) -> MCPServer:
        server = MCPServer(self.name, instructions=self.instructions, version=version("pps"))
        for fn, marks in self.tools:
            server.add_tool(fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=marks)
        return server


@dataclass(frozen=True)
class Caller:
    runtime: Runtime
    entity: str

    @property
    def db(self) -> Database:
        return self.runtime.db

    @property
    def settings(self) -> Settings:
        return self.runtime.settings


def caller(ctx: Context) -> Caller:
    request = ctx.request_context.request
    return Caller(runtime=request.app.state.runtime, entity=request.state.entity)


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
    except Unavailable as exc:
        raise ToolError(f"unavailable ({exc.component}): {exc}") from None
    except BadUpstream as exc:
        raise ToolError(f"failed ({exc.component}): {exc}") from None
