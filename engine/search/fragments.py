"""Word Walker's `store`: a memory written as a dated markdown fragment in the entity's
own bank, `.brain/fragments/<category>/<YYYY-MM>/<date>_<slug>.md`, and indexed before
the call returns, so the next search finds it.

The file is the memory: category, tags and date are in its front matter, the text is
the body, and the index can be rebuilt from it at any time.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import yaml
from pydantic import BaseModel, Field

from engine.kernel import private, timestamps
from engine.kernel.errors import InputError
from engine.kernel.requests import NON_BLANK, SPACES, Request, is_blank
from engine.search import homes
from engine.search.hybrid import Tag, normalise_tags
from engine.search.index import Index

CATEGORY_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
CATEGORY_INPUT = f"^[{SPACES}]*[A-Za-z0-9\\u212a][A-Za-z0-9_\\u212a-]{{0,63}}[{SPACES}]*$"
"""A category as sent: what is CATEGORY_PATTERN once blanks around it are off and it is
lowercased (the Kelvin sign K, U+212A, lowercases to k)."""


class FragmentIn(Request):
    text: str = Field(
        description="The memory, markdown; write it so it can be found.",
        json_schema_extra=NON_BLANK,
    )
    category: str = Field(
        description="One bucket: work, relationship, learning, doctrine, ...",
        json_schema_extra={"pattern": CATEGORY_INPUT},
    )
    tags: list[Tag] = Field(
        description="Required: the handles a search will find it by.",
        json_schema_extra={"minItems": 1},
    )


class Stored(BaseModel):
    path: str
    category: str
    tags: list[str]
    date: str


def store(index: Index, entity: str, fragment: FragmentIn) -> Stored:
    settings = index.settings
    text = check_text("text", fragment.text, settings.search_max_text_bytes)
    category = fragment.category.strip().lower()
    if not re.fullmatch(CATEGORY_PATTERN, category):
        raise InputError.of(
            "category", "1-64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit"
        )
    if settings.fragment_categories and category not in settings.fragment_categories:
        known = ", ".join(settings.fragment_categories)
        raise InputError.of("category", f"unknown category {category!r}; known: {known}")
    tags = checked_tags(fragment.tags, required=True)
    now = datetime.now(UTC)
    day = now.date().isoformat()
    header = {"category": category, "tags": tags, "date": day, "created_at": timestamps.now()}
    folder = f"{homes.FRAGMENTS}/{category}/{now:%Y-%m}"
    home = index.home(entity)
    path = homes.write_new(home, folder, f"{day}_{slug(text)}", with_front_matter(header, text))
    index.sync_file(entity, path)
    return Stored(path=path, category=category, tags=tags, date=day)


def check_text(field: str, text: str, max_bytes: int) -> str:
    if is_blank(text):
        raise InputError.of(field, "empty; write the memory")
    size = len(text.encode())
    if size > max_bytes:
        raise InputError.of(field, f"{size} bytes; the maximum is {max_bytes} bytes")
    return text


def checked_tags(tags: list[str], required: bool) -> list[str]:
    try:
        cleaned = normalise_tags(tags)
    except ValueError as exc:
        raise InputError.of("tags", str(exc)) from None
    if required and not cleaned:
        raise InputError.of("tags", "required: at least one tag (the handles search finds it by)")
    if len(cleaned) > 32:
        raise InputError.of("tags", f"{len(cleaned)} tags; the maximum is 32")
    return cleaned


def slug(text: str, words: int = 6) -> str:
    """A memorable file name from the first words: `robe-by-the-fire`; never from private
    text (engine.kernel.private), which listings, backups and exports would show."""
    found = re.findall(r"[a-z0-9]+", private.strip(text).lower())[:words]
    return "-".join(found)[:60].strip("-") or "memory"


def with_front_matter(header: dict, body: str) -> str:
    front = yaml.safe_dump(header, sort_keys=False, allow_unicode=True, default_flow_style=None)
    return f"---\n{front}---\n\n{body.rstrip()}\n"
