"""What every profile shares: its tools declared at module level, who is calling a tool,
and how engine errors reach the agent.

Every MCP request passes through `BearerEntity` (mount.py), which puts the token's
entity on the request. A tool asks `caller(ctx)` for it; there is no parameter through
which a tool could name another entity.

A tool whose arguments are a request model takes that model, and its arguments are
the model's fields, written once: what REST takes in a body or a query, MCP takes as
arguments, with the same types, defaults, bounds and descriptions (`Profile.tool`).
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from types import NoneType, UnionType
from typing import Annotated, Any, Union

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, ValidationError
from pydantic.fields import FieldInfo
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

    def tool(
        self,
        annotations: ToolAnnotations,
        *,
        only: Collection[str] | None = None,
        leave: Collection[str] = (),
        renamed: Mapping[str, str] | None = None,
        defaults: Mapping[str, Any] | None = None,
    ) -> Callable[[Callable], Callable]:
        """Register a tool. A parameter typed with a request model (a pydantic model)
        stands for the model's fields: the tool is served with one argument per field,
        of the field's type, default, bounds and description, and the function gets the
        model, validated. Where a seed's tool differs from the model: `only` (the
        fields it takes) or `leave` (those it does not; they keep the model's default),
        `renamed` (field -> the seed's argument name) and `defaults` (field -> the
        seed's default; for a field the tool does not take, the value it sends; None
        for a field that takes no None means the argument may be null, for the model's
        own default). Other parameters (the context, a name, a store) are the tool's."""

        def register(fn: Callable) -> Callable:
            served = _taking_models(fn, only, leave, renamed or {}, defaults or {})
            self.tools.append((served, annotations))
            return fn

        return register

    def build(self) -> MCPServer:
        server = _Server(self.name, instructions=self.instructions, version=version("pps"))
        for fn, marks in self.tools:
            server.add_tool(fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=marks)
        return server


def _taking_models(
    fn: Callable,
    only: Collection[str] | None,
    leave: Collection[str],
    renamed: Mapping[str, str],
    defaults: Mapping[str, Any],
) -> Callable:
    """`fn` as the SDK serves it: each parameter typed with a request model replaced by
    the model's fields (`Profile.tool`); `fn` itself when none is."""
    hints = typing.get_type_hints(fn, include_extras=True)
    own = list(inspect.signature(fn).parameters.values())
    models = {
        p.name: _Arguments(hints[p.name], only, leave, renamed, defaults)
        for p in own
        if _is_request(hints.get(p.name))
    }
    if not models:
        assert only is None and not (leave or renamed or defaults), fn.__name__
        return fn
    parameters = []
    for p in own:
        if p.name in models:
            parameters += models[p.name].parameters()
        else:
            parameters.append(
                p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints[p.name])
            )
    names = [p.name for p in parameters]
    assert len(names) == len(set(names)), f"{fn.__name__}: an argument named twice"

    def served(**given: Any) -> Any:
        for name, arguments in models.items():
            given[name] = arguments.request({a: given.pop(a) for a in arguments.published})
        return fn(**given)

    served.__name__, served.__qualname__ = fn.__name__, fn.__qualname__
    served.__module__, served.__doc__ = fn.__module__, fn.__doc__
    # The SDK reads the arguments from the signature and finds the context by its type.
    signature = inspect.Signature(parameters, return_annotation=hints.get("return", Any))
    served.__signature__ = signature  # type: ignore[attr-defined]
    served.__annotations__ = {p.name: p.annotation for p in parameters}
    served.__annotations__["return"] = signature.return_annotation
    return served


def _is_request(kind: Any) -> bool:
    """Whether a parameter's type is a request model (the SDK's context is a model too)."""
    return isinstance(kind, type) and issubclass(kind, BaseModel) and not issubclass(kind, Context)


class _Arguments:
    """A request model's fields as a tool's arguments, and the model built from them."""

    def __init__(
        self,
        model: type[BaseModel],
        only: Collection[str] | None,
        leave: Collection[str],
        renamed: Mapping[str, str],
        defaults: Mapping[str, Any],
    ):
        fields = model.model_fields
        unknown = {*(only or ()), *leave, *renamed, *defaults} - set(fields)
        assert not unknown, f"{model.__name__} has no {', '.join(sorted(unknown))}"
        taken = [f for f in fields if (only is None or f in only) and f not in leave]
        self.model, self.defaults = model, defaults
        # Each argument's name, and the field it gives.
        self.published = {renamed.get(f, f): f for f in taken}
        # What the tool sends for a field it does not take.
        self.sent = {f: value for f, value in defaults.items() if f not in taken}
        # The fields whose argument may be null, for the model's own default.
        self.null_is_default = {
            f for f in taken if f in defaults and defaults[f] is None and not _takes_none(fields[f])
        }

    def parameters(self) -> list[inspect.Parameter]:
        return [
            self._parameter(name, f, self.model.model_fields[f])
            for name, f in self.published.items()
        ]

    def _parameter(self, name: str, f: str, info: FieldInfo) -> inspect.Parameter:
        kind: Any = info.annotation
        if info.metadata:  # the bounds, patterns and validators of the field
            kind = Annotated[(kind, *info.metadata)]
        if f in self.null_is_default:
            kind = kind | None
        about: dict[str, Any] = {
            key: value
            for key, value in (
                ("title", info.title),
                ("description", info.description),
                ("examples", info.examples),
                ("json_schema_extra", info.json_schema_extra),
            )
            if value is not None
        }
        default: Any = inspect.Parameter.empty
        if f in self.defaults:
            default = self.defaults[f]
        elif info.default_factory is not None:
            about["default_factory"] = info.default_factory
        elif not info.is_required():
            default = info.default
        kind = Annotated[kind, Field(**about)]
        return inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind
        )

    def request(self, given: dict[str, Any]) -> BaseModel:
        """The model, from the arguments the SDK has checked against the parameters; a
        problem only the model sees (its validators) is named by the argument's name."""
        values = dict(self.sent)
        for name, f in self.published.items():
            if not (given[name] is None and f in self.null_is_default):
                values[f] = given[name]
        with tool_errors():
            try:
                return self.model.model_validate(values)
            except ValidationError as exc:
                back = {f: name for name, f in self.published.items() if name != f}
                raise InputError(
                    [
                        FieldProblem(_rename(p.field, back), p.problem)
                        for p in argument_problems(exc).problems
                    ]
                ) from None


def _takes_none(info: FieldInfo) -> bool:
    kind = info.annotation
    union = typing.get_origin(kind) in (Union, UnionType)
    return kind is None or (union and NoneType in typing.get_args(kind))


def _rename(path: str, back: Mapping[str, str]) -> str:
    """`limit` -> `maxResults`, `tags[0]` -> `labels[0]`: a field's path in the model as
    the argument's path."""
    head = re.match(r"[^.\[]*", path)
    assert head is not None
    return back.get(head.group(), head.group()) + path[head.end() :]


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
