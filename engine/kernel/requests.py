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

import re
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt
from pydantic import (
    BaseModel,
    ConfigDict,
    JsonValue,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
)

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

SPACES = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
"""Python's whitespace (`str.isspace`, what `str.strip` takes off), as the inside of a regex
class spelled out, so that JSON Schema (ECMA-262) and Python read a pattern alike."""
BLANKS = SPACES + r"\ufeff"
"""Blank to either: JSON Schema's whitespace (`\\s`) adds U+FEFF to Python's."""
NOT_BLANK = f"^(?=[\\s\\S]*[^{BLANKS}])"
"""The pattern of text that is not only blanks (JSON Schema `pattern`, Python `re`). A
lookahead, not a bare class, which a tool could read as "only such characters" once it
folds minLength and maxLength into a pattern (schemathesis does)."""
_NOT_BLANK = re.compile(NOT_BLANK)


def is_blank(text: str) -> bool:
    """Whether `text` is empty or only blanks (`NOT_BLANK` does not match it)."""
    return _NOT_BLANK.match(text) is None


NON_BLANK: dict[str, JsonValue] = {"pattern": NOT_BLANK}
"""`json_schema_extra` of a text field that refuses blank text with its own message."""


def up_to(limit: int) -> str:
    """A regex for the whole numbers 0..limit written without leading zeros."""
    digits = str(limit)
    shorter = f"|[1-9][0-9]{{0,{len(digits) - 2}}}" if len(digits) > 1 else ""
    same_length = []
    for at, digit in enumerate(digits):
        low = "1" if at == 0 else "0"
        high = int(digit) - 1
        if high >= int(low):
            rest = len(digits) - at - 1
            span = low if int(low) == high else f"[{low}-{high}]"
            same_length.append(digits[:at] + span + (f"[0-9]{{{rest}}}" if rest else ""))
    same_length.append(digits)
    return f"(?:0{shorter}|{'|'.join(same_length)})"


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
    """Unknown fields are refused, and numbers and flags are JSON's (see above). The JSON
    Schema says so too: a whole number's field without bounds of its own gets the 64-bit
    ones."""

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        bounded = False
        for field in cls.model_fields.values():
            if _json_kind(field.annotation) != "integer":
                continue
            bounds = {}
            if not any(isinstance(m, Ge | Gt) for m in field.metadata):
                bounds["minimum"] = INT64_MIN
            if not any(isinstance(m, Le | Lt) for m in field.metadata):
                bounds["maximum"] = INT64_MAX
            if bounds and not callable(field.json_schema_extra):
                field.json_schema_extra = {**bounds, **(field.json_schema_extra or {})}
                bounded = True
        if bounded:
            cls.model_rebuild(force=True)

    @field_validator("*", mode="wrap")
    @classmethod
    def _json_kinds(
        cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Any:
        kind = _json_kind(cls.model_fields[str(info.field_name)].annotation)
        if kind is None:
            return handler(value)
        problem = kind_problem(kind, value)
        if problem is None:
            value = handler(value)  # text is parsed here: "9223372036854775808" too
            problem = kind_problem(kind, value)
        if problem is not None:
            raise ValueError(problem)
        return value
