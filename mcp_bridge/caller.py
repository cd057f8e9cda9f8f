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
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import ToolAnnotations
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from engine.api import Memory, Service
from engine.kernel.config import Settings
from engine.kernel.errors import (
    ANSWERS,
    EngineError,
    FieldProblem,
    InputError,
    answer,
    describe,
    field_path,
)
from engine.kernel.requests import kind_problem
from engine.runtime import Runtime
from engine.store.db import Database

# What a tool does to memory, for the client to show and to ask before.
READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
UPSERT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

INVALID = ANSWERS[InputError].said
"""How a tool error for bad arguments begins: "invalid input: limit: ..."."""


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
        server = _Server(self.name, instructions=self.instructions, version=version("pps"))
        for fn, marks in self.tools:
            server.add_tool(fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=marks)
        return server


class _Server(MCPServer):
    """An MCPServer whose tools refuse bad arguments as tool errors in the words of
    `tool_errors()`: "invalid input: limit: must be a whole number, not a string".

    The SDK validates a call's arguments against the tool's argument model inside
    `Tool.run` and raises a ToolError whose `__cause__` is the pydantic ValidationError
    (its text: the model's name, pydantic's wording, links to pydantic's documentation).
    `call_tool` is where every call passes, so that error is rewritten here, keeping the
    cause (the SDK logs the names of the refused fields from it). Arguments the tool does
    not take are refused too, rather than silently ignored (a misspelt `limt` would
    otherwise change nothing and say nothing), and so are numbers and flags not of the
    JSON kind the tool's schema declares, before the SDK would convert them."""

    _schemas: dict[str, dict[str, dict]] | None = None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> Any:
        declared = await self._arguments_of(name)
        if declared is not None:
            self._refuse_undeclared(name, declared, arguments)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(
                f"Error executing tool {name}: {INVALID}: {argument_problems(cause)}"
            ) from cause

    @staticmethod
    def _refuse_undeclared(name: str, declared: dict[str, dict], arguments: dict) -> None:
        """Refuse arguments the tool does not declare, and values not of the JSON kind
        its schema declares (engine/kernel/requests.py: the SDK would read `true` as 1)."""
        unknown = sorted(set(arguments) - set(declared))
        if unknown:
            taken = ", ".join(sorted(declared)) or "no arguments"
            problems = InputError([FieldProblem(u, "unknown argument") for u in unknown])
            raise ToolError(
                f"Error executing tool {name}: {INVALID}: {problems} ({name} takes {taken})"
            )
        wrong = [
            FieldProblem(argument, problem)
            for argument, value in arguments.items()
            if (problem := kind_problem(_schema_kind(declared[argument]), value))
        ]
        if wrong:
            raise ToolError(f"Error executing tool {name}: {INVALID}: {InputError(wrong)}")

    async def _arguments_of(self, name: str) -> dict[str, dict] | None:
        """The arguments the tool's input schema declares, each with its schema (None
        for a tool this server does not have: the SDK answers that itself)."""
        if self._schemas is None:
            self._schemas = {
                tool.name: (tool.input_schema or {}).get("properties", {})
                for tool in await self.list_tools()
            }
        return self._schemas.get(name)


def _schema_kind(schema: dict) -> str | None:
    """The one JSON type an argument's schema declares (`anyOf` with null included)."""
    kinds = {option.get("type") for option in schema.get("anyOf", [schema])} - {"null"}
    return kinds.pop() if len(kinds) == 1 else None


_JSON_KINDS = {
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "str": "a string",
    "dict": "a JSON object",
    "list": "a list",
}


def argument_problems(exc: ValidationError) -> InputError:
    """A ValidationError (of a tool's arguments or of the engine request they build) as
    one InputError, a problem per argument."""
    problems = []
    for err in exc.errors():
        problem = FieldProblem(field_path(err["loc"]) or "arguments", _argument_problem(err))
        if problem not in problems:
            problems.append(problem)
    return InputError(problems)


def _argument_problem(err: ErrorDetails) -> str:
    """One pydantic error on a tool argument, in plain words: what the argument must be
    and what was given, without pydantic's type codes or links."""
    kind = err["type"]
    if kind == "missing":
        return "required"
    if kind == "int_from_float":
        return "must be a whole number, not a fraction"
    stem = kind.removesuffix("_parsing").removesuffix("_type")
    wanted = _JSON_KINDS.get(stem)
    if wanted is not None and kind.endswith(("_parsing", "_type")):
        return f"must be {wanted}, not {_given(err.get('input'))}"
    return describe(err).replace("Input should be", "must be", 1)


def _given(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a JSON object"
    return type(value).__name__


@dataclass(frozen=True)
class Caller:
    service: Service
    entity: str
    store: str | None = None  # the shared store the path names (/mcp/shared-memory/STORE)

    @property
    def memory(self) -> Memory:
        """The calling entity's memory: the only one a tool reaches."""
        return self.service.memory(self.entity)

    @property
    def settings(self) -> Settings:
        return self.service.settings

    # TRANSITION: the tools move onto `memory`; these go once none uses them.
    @property
    def runtime(self) -> Runtime:
        assert self.service.runtime is not None
        return self.service.runtime

    @property
    def db(self) -> Database:
        return self.service.db


def caller(ctx: Context) -> Caller:
    request = ctx.request_context.request
    assert request is not None  # the tools are served over HTTP alone (mcp_bridge.mount)
    return Caller(
        service=request.app.state.service,
        entity=request.state.entity,
        store=request.path_params.get("store"),
    )


@contextmanager
def tool_errors() -> Iterator[None]:
    """Engine errors become tool errors whose message tells the agent what to fix: the
    word the engine's error table gives each kind ("not found: ..."), then what is wrong
    (and the component at fault, where one is: "unavailable (graph): ...")."""
    try:
        yield
    except ValidationError as exc:
        raise ToolError(f"{INVALID}: {argument_problems(exc)}") from None
    except EngineError as exc:
        said = answer(exc).said
        if exc.component:
            said = f"{said} ({exc.component})"
        raise ToolError(f"{said}: {exc}") from None
