"""Errors the engine raises for callers to act on. Every face maps them the same way."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldProblem:
    field: str
    problem: str

    def __str__(self) -> str:
        return f"{self.field}: {self.problem}"


class InputError(ValueError):
    """The caller sent something we will not store; nothing was changed."""

    def __init__(self, problems: list[FieldProblem] | FieldProblem):
        self.problems = problems if isinstance(problems, list) else [problems]
        super().__init__("; ".join(str(p) for p in self.problems))

    @classmethod
    def of(cls, field: str, problem: str) -> InputError:
        return cls(FieldProblem(field, problem))


class NotFound(LookupError):
    """The thing asked for does not exist (for this entity)."""


class Conflict(ValueError):
    """The request clashes with what is already stored."""
