"""Errors the engine raises for callers to act on, and the one table (`ANSWERS`) from
which every face (REST, the web face, MCP, the CLI) derives its answer to each."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from pydantic import BaseModel, Field


@dataclass(frozen=True)
class FieldProblem:
    field: str
    problem: str

    def __str__(self) -> str:
        return f"{self.field}: {self.problem}"


class ProblemOut(BaseModel):
    field: str = Field(description="The input at fault: `events[1].content`, `Authorization`.")
    problem: str = Field(description="What is wrong with it, for a person to act on.")


class Problem(BaseModel):
    """The one error shape every HTTP face answers with (REST and the MCP endpoints)."""

    error: str = Field(description="`invalid_input`, `unauthorized`, `not_found`, ...")
    message: str = Field(description="Every problem on one line.")
    problems: list[ProblemOut]


def problem_body(error: str, problems: list[FieldProblem]) -> dict[str, Any]:
    """The one error shape (`Problem`): `{"error", "message", "problems": [{"field",
    "problem"}]}`."""
    return Problem(
        error=error,
        message="; ".join(str(p) for p in problems),
        problems=[ProblemOut(field=p.field, problem=p.problem) for p in problems],
    ).model_dump()


def bearer_challenge(problem: str | None = None) -> str:
    """The `WWW-Authenticate` header of a 401 (RFC 6750): a bare `Bearer` when no bearer
    token came; `error="invalid_token"` and what is wrong with it (`problem`, plain
    ASCII without quotes) when one came and is not an entity's."""
    if problem is None:
        return "Bearer"
    return f'Bearer error="invalid_token", error_description="{problem}"'


class EngineError(Exception):
    """What the engine refuses or cannot do, for the caller to act on; nothing was
    changed. `problems` names each input at fault (or the component, for one that is
    down or answered unusably); how each face answers is `ANSWERS` below."""

    problems: list[FieldProblem]
    component: str | None = None


class InputError(EngineError, ValueError):
    """The caller sent something we will not store; nothing was changed."""

    def __init__(self, problems: list[FieldProblem] | FieldProblem):
        self.problems = problems if isinstance(problems, list) else [problems]
        super().__init__("; ".join(str(p) for p in self.problems))

    @classmethod
    def of(cls, field: str, problem: str) -> InputError:
        return cls(FieldProblem(field, problem))


class NotFound(EngineError, LookupError):
    """The thing asked for does not exist (for this entity). `field` names the input that
    asked for it (`entity_name`, `uuid`); by default the request's path."""

    def __init__(self, problem: str, field: str = "path"):
        self.field = field
        self.problems = [FieldProblem(field, problem)]
        super().__init__(problem)


class Forbidden(EngineError, PermissionError):
    """The caller may see the thing but not do this to it (a memory another member
    wrote, an operator's act with an entity's token)."""

    def __init__(self, problem: str, field: str = "id"):
        self.field = field
        self.problems = [FieldProblem(field, problem)]
        super().__init__(problem)


class Conflict(EngineError, ValueError):
    """The request clashes with what is already stored. `field` names the input that
    clashes (`name`); by default the request's body."""

    def __init__(self, problem: str, field: str = "body"):
        self.field = field
        self.problems = [FieldProblem(field, problem)]
        super().__init__(problem)


class BadUpstream(EngineError, RuntimeError):
    """A component the request needs (the LLM, say) answered, but unusably; nothing was
    changed."""

    def __init__(self, component: str, problem: str):
        self.component = component
        self.problems = [FieldProblem(component, problem)]
        super().__init__(problem)


class Unavailable(EngineError, RuntimeError):
    """A component the request needs (the graph, say) is down now; nothing was changed,
    and the same request may succeed later."""

    def __init__(self, component: str, problem: str):
        self.component = component
        self.problems = [FieldProblem(component, problem)]
        super().__init__(problem)


class Answer(NamedTuple):
    """How every face answers one kind of error: REST, the web face's JSON and pages,
    and the MCP endpoints with `status`; REST's body with `code` (the one error shape's
    `error`); an MCP tool error begins with `said`; the OpenAPI description says `when`
    for the status. The CLI says the error's message (exit 1)."""

    status: int
    code: str
    said: str
    when: str
    retry_after: str | None = None
    """Seconds (the `Retry-After` header) where the same request may succeed later."""


ANSWERS: dict[type[EngineError], Answer] = {
    InputError: Answer(
        422,
        "invalid_input",
        "invalid input",
        "Something in the request is invalid (each field and its problem)",
    ),
    Forbidden: Answer(
        403,
        "forbidden",
        "forbidden",
        "Not yours to do (an operator's act with an entity's token, another member's memory)",
    ),
    NotFound: Answer(
        404, "not_found", "not found", "The thing named does not exist (for this caller)"
    ),
    Conflict: Answer(409, "conflict", "conflict", "A clash with what is stored"),
    BadUpstream: Answer(
        502,
        "bad_upstream",
        "failed",
        "A part the request needs answered unusably; nothing was changed",
    ),
    Unavailable: Answer(
        503,
        "unavailable",
        "unavailable",
        "A part the request needs is down (the database on a full disk, the graph, the LLM);"
        " nothing was changed (with `Retry-After`)",
        retry_after="10",
    ),
}
"""The one error table: every face derives its answer to an engine error from here."""


def answer(error: EngineError) -> Answer:
    """The table's row for an error (a subclass answers as the class it refines)."""
    return next(ANSWERS[kind] for kind in type(error).__mro__ if kind in ANSWERS)


def field_path(loc: Sequence[Any]) -> str:
    """`("events", 0, "content")` -> `events[0].content`."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def describe(err: Mapping[str, Any]) -> str:
    """A pydantic validation error as a problem a person can act on."""
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required"
    if kind == "json_invalid":
        return f"invalid JSON: {(err.get('ctx') or {}).get('error', 'malformed')}"
    return str(err["msg"]).removeprefix("Value error, ")


def from_validation(
    errors: Sequence[Mapping[str, Any]], prefix: tuple[Any, ...] = ()
) -> InputError:
    """Pydantic errors as one InputError; `prefix` is prepended to each location."""
    problems = []
    for err in errors:
        loc = () if err["type"] == "json_invalid" else (*prefix, *err["loc"])
        problems.append(FieldProblem(field_path(loc) or "body", describe(err)))
    return InputError(problems)
