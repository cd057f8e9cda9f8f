"""The memory page's forms as FastAPI form models built from the engine's request models
(`page_form`): each form is the request model REST takes (its fields, limits and checks),
read as a browser posts it. A field left empty is the form's empty value (text "", a
number 0, an optional field not given, `cleared` ones ""); a list is comma-separated
text (`tags=a, b`); a field the form does not post keeps the model's default, and what
else comes with the form (its CSRF token) is left out."""

from __future__ import annotations

from types import NoneType, UnionType
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, model_validator

from pps.web.render import blank

M = TypeVar("M", bound=BaseModel)


def page_form(model: type[M], *posted: str, cleared: tuple[str, ...] = ()) -> type[M]:
    """The form model of a page posting the `posted` fields of `model`; `cleared`: its
    optional text fields that an empty input sets to "" (an empty description clears
    it) rather than leaving unset."""
    unknown = set(posted) - set(model.model_fields)
    assert not unknown, f"{model.__name__} has no {sorted(unknown)}"

    class Posted(model):  # type: ignore[valid-type, misc]  # a model made at run time
        model_config = ConfigDict(extra="ignore")

        @model_validator(mode="before")
        @classmethod
        def _as_posted(cls, data: Any) -> Any:
            if not isinstance(data, dict):
                return data
            return {name: _read(model, name, data.get(name), cleared) for name in posted}

    Posted.__name__ = Posted.__qualname__ = f"{model.__name__}Form"
    return Posted


def _read(model: type[BaseModel], name: str, value: Any, cleared: tuple[str, ...]) -> Any:
    annotation = model.model_fields[name].annotation
    union = get_origin(annotation) in (Union, UnionType)
    kinds = [k for k in (get_args(annotation) if union else (annotation,)) if k is not NoneType]
    optional = union and len(kinds) < len(get_args(annotation))
    if any(get_origin(kind) is list for kind in kinds):
        given = value if isinstance(value, list) else [] if value is None else [value]
        return [tag.strip() for item in given for tag in str(item).split(",") if tag.strip()]
    if optional:
        return (value or "") if name in cleared else blank(value)
    if value is None:
        return 0 if int in kinds else ""
    return value
