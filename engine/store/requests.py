"""What a caller sends the engine, on any face: the base of every request model.

JSON keeps numbers and true/false apart; Python (and so pydantic, unless strict) does
not: `True` is 1, and 1 is true. A request field declared a whole number, a number or a
flag takes only that JSON kind, and a whole number fits SQLite's 64-bit integers, so a
`limit: true` or an `offset` of 2**63 is a 422 naming the field rather than a 1 or a
500. Strict mode is not the answer: query strings arrive as text ("20", "true") and are
read as numbers and flags the ordinary way. MCP tools declare the same kinds in their
input schemas and refuse by the same rule (`kind_problem`), before the SDK converts
their arguments (mcp_bridge/caller.py).
"""

from __future__ import annotations

from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_WORDS = {"integer": "a whole number", "number": "a number", "boolean": "true or false"}
_KINDS = {int: "integer", float: "number", bool: "boolean"}


def kind_problem(kind: str | None, value: Any) -> str | None:
    """Why `value` may not stand where a JSON `kind` (integer, number, boolean) is
    declared, or None if it may (or if it is text, to be parsed as usual)."""
    if kind in ("integer", "number") and isinstance(value, bool):
        return f"must be {_WORDS[kind]}, not true or false"
    if kind == "boolean" and isinstance(value, int | float) and not isinstance(value, bool):
        return "must be true or false, not a number"
    if kind == "integer" and isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        return f"must be a 64-bit integer ({INT64_MIN}..{INT64_MAX})"
    return None


def _json_kind(annotation: Any) -> str | None:
    """The JSON kind a field's type declares (`int | None` -> integer), if just one."""
    union = get_origin(annotation) in (Union, UnionType)
    members = [m for m in (get_args(annotation) if union else (annotation,)) if m is not NoneType]
    kinds = {next((k for t, k in _KINDS.items() if m is t), None) for m in members}
    return kinds.pop() if len(kinds) == 1 else None


class Request(BaseModel):
    """Unknown fields are refused, and numbers and flags are JSON's (see above)."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="wrap")
    @classmethod
    def _json_kinds(cls, value: Any, handler, info: ValidationInfo) -> Any:
        kind = _json_kind(cls.model_fields[info.field_name].annotation)
        if kind is None:
            return handler(value)
        problem = kind_problem(kind, value)
        if problem is None:
            value = handler(value)  # text is parsed here: "9223372036854775808" too
            problem = kind_problem(kind, value)
        if problem is not None:
            raise ValueError(problem)
        return value
