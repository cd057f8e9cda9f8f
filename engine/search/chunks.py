"""Markdown into chunks: the units the index ranks and a search returns.

A file is split at its headings; a section longer than the room of a chunk is split
between paragraphs, then between lines, and a single line longer than the room at word
boundaries. The room is a number of characters and, where the embedding model is known,
the number of its tokens it reads (past them it would cut the text off). Every chunk is
a piece of the file exactly as it is on disk, with the lines it spans, so a result can be
checked against the file and read around with memory_get. Front matter (a `---` block at
the top) is metadata: title, date, tags, category, superseded. It is never ranked as text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from itertools import accumulate

import yaml

_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_FRONT_END = ("---", "...")


@dataclass(frozen=True)
class Chunk:
    text: str
    start_line: int  # 1-based, inclusive
    end_line: int
    headings: tuple[str, ...] = ()  # the heading trail above it, outermost first


@dataclass
class Document:
    meta: dict = field(default_factory=dict)
    chunks: list[Chunk] = field(default_factory=list)


@dataclass(frozen=True)
class Room:
    """How much text one chunk holds: at most `chars` characters and, where a model's
    length is known, at most `tokens` of its tokens. `count` gives the tokens of each of
    a list of lines (a text's tokens are its lines' summed), `cut` how many characters
    at the start of a text hold a number of tokens."""

    chars: int
    tokens: int | None = None
    count: Callable[[list[str]], list[int]] | None = None
    cut: Callable[[str, int], int] | None = None


def split(text: str, room: Room | int) -> Document:
    """The front matter and the chunks of a markdown text (`room` a Room, or characters)."""
    lines = text.splitlines()
    meta, body_start = front_matter(lines)
    sizes = _Sizes(lines, room if isinstance(room, Room) else Room(room))
    chunks: list[Chunk] = []
    for trail, first, last in _sections(lines, body_start):
        chunks.extend(_split_section(sizes, first, last, trail))
    return Document(meta=meta, chunks=chunks)


class _Sizes:
    """The lines of a text and how much of a chunk's room any run of them takes (each
    line measured once)."""

    def __init__(self, lines: list[str], room: Room):
        self.lines, self.room = lines, room
        self._chars = list(accumulate((len(line) + 1 for line in lines), initial=0))
        self._tokens = None
        if room.tokens is not None and room.count is not None:
            self._tokens = list(accumulate(room.count(lines), initial=0))

    def fits(self, first: int, last: int) -> bool:
        """Whether lines first..last (inclusive), joined, fit one chunk."""
        if self._chars[last + 1] - self._chars[first] - 1 > self.room.chars:
            return False
        if self._tokens is None or self.room.tokens is None:  # no model: characters alone
            return True
        return self._tokens[last + 1] - self._tokens[first] <= self.room.tokens

    def text(self, first: int, last: int) -> str:
        return "\n".join(self.lines[first : last + 1])

    def prefix(self, text: str, start: int) -> int:
        """How many characters of `text` from `start` on fit one chunk (at least one)."""
        piece = text[start : start + self.room.chars]
        size = len(piece)
        tokens, cut = self.room.tokens, self.room.cut
        if self._tokens is not None and tokens is not None and cut is not None:
            size = min(size, cut(piece, tokens))
        return max(1, size)


FRONT_MATTER_MAX_CHARS = 16_384
"""Front matter past this is not read as metadata (the block still is not text)."""


class _NoAliases(yaml.SafeLoader):
    """YAML without aliases. Front matter needs none, and files in a home are untrusted: a
    few hundred bytes of nested aliases expand to gigabytes once the value is used."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("aliases are not read in front matter")
        return super().compose_node(parent, index)


def front_matter(lines: list[str]) -> tuple[dict, int]:
    """(metadata, index of the first body line). A block that is not a YAML mapping, is
    too long or uses aliases still counts as front matter (it is not text), with no
    metadata from it."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    for index in range(1, len(lines)):
        if lines[index].strip() in _FRONT_END:
            block = "\n".join(lines[1:index])
            try:
                data = (
                    yaml.load(block, Loader=_NoAliases)
                    if len(block) <= FRONT_MATTER_MAX_CHARS
                    else None
                )
            except yaml.YAMLError:
                data = None
            return (data if isinstance(data, dict) else {}), index + 1
    return {}, 0


def meta_tags(meta: dict) -> list[str]:
    """Tags from front matter: a list, or one comma-separated string."""
    raw = meta.get("tags") or meta.get("keywords") or []
    if isinstance(raw, str):
        raw = raw.split(",")
    if not isinstance(raw, list):
        return []
    tags = (str(tag).strip().lower() for tag in raw if tag is not None)
    return list(dict.fromkeys(tag for tag in tags if tag))


def meta_date(meta: dict) -> str | None:
    """The front matter's date as YYYY-MM-DD, if it has one that parses."""
    value = meta.get("date") or meta.get("created") or meta.get("created_at")
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        match = re.match(r"\s*(\d{4}-\d{2}-\d{2})", value)
        if match:
            try:
                return date.fromisoformat(match[1]).isoformat()
            except ValueError:
                return None
    return None


def meta_flag(meta: dict, name: str) -> bool:
    value = meta.get(name)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1")
    return bool(value)


def _sections(lines: list[str], start: int):
    """(heading trail, first line index, last line index) for each heading section.
    A heading is part of its own section; headings inside code fences are not headings."""
    trail: list[tuple[int, str]] = []
    first, fenced = start, False
    current: tuple[str, ...] = ()
    for index in range(start, len(lines)):
        line = lines[index]
        if _FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match is None:
            continue
        if index > first:
            yield current, first, index - 1
        level = len(match[1])
        trail = [(lvl, title) for lvl, title in trail if lvl < level] + [(level, match[2])]
        current = tuple(title for _, title in trail)
        first = index
    if first < len(lines):
        yield current, first, len(lines) - 1


def _split_section(sizes: _Sizes, first: int, last: int, trail) -> list[Chunk]:
    lines = sizes.lines
    while first <= last and not lines[first].strip():
        first += 1
    while last >= first and not lines[last].strip():
        last -= 1
    if first > last:
        return []
    if _is_heading_only(lines[first : last + 1]):
        return []
    if sizes.fits(first, last):
        return [Chunk(sizes.text(first, last), first + 1, last + 1, trail)]
    chunks = []
    for p_first, p_last in _pack(_paragraphs(lines, first, last), sizes):
        if sizes.fits(p_first, p_last):
            chunks.append(Chunk(sizes.text(p_first, p_last), p_first + 1, p_last + 1, trail))
            continue
        for l_first, l_last in _pack([(i, i) for i in range(p_first, p_last + 1)], sizes):
            if sizes.fits(l_first, l_last):
                chunks.append(Chunk(sizes.text(l_first, l_last), l_first + 1, l_last + 1, trail))
                continue
            for words in _word_pieces(lines[l_first], sizes):
                chunks.append(Chunk(words, l_first + 1, l_first + 1, trail))
    return [c for c in chunks if c.text.strip() and not _is_heading_only(c.text.splitlines())]


def _is_heading_only(lines: list[str]) -> bool:
    """Headings alone say nothing the trail of the next chunk does not."""
    return all(_HEADING.match(line) or not line.strip() for line in lines)


def _paragraphs(lines, first, last):
    """Runs of non-blank lines (a code fence is one paragraph, blank lines and all)."""
    runs, start, fenced = [], None, False
    for index in range(first, last + 1):
        line = lines[index]
        if _FENCE.match(line):
            fenced = not fenced
        blank = not line.strip() and not fenced
        if blank and start is not None:
            runs.append((start, index - 1))
            start = None
        elif not blank and start is None:
            start = index
    if start is not None:
        runs.append((start, last))
    return runs


def _pack(runs, sizes: _Sizes):
    """Greedily join consecutive runs while the joined text fits one chunk."""
    packed: list[tuple[int, int]] = []
    for run_first, run_last in runs:
        if packed and sizes.fits(packed[-1][0], run_last):
            packed[-1] = (packed[-1][0], run_last)
            continue
        packed.append((run_first, run_last))
    return packed


def _word_pieces(line: str, sizes: _Sizes) -> list[str]:
    """Pieces of one long line, each fitting a chunk, cut between words (a single word
    longer than a chunk's room is cut where the room ends). Each piece is a substring of
    the line."""
    pieces, start = [], 0
    while start < len(line):
        while start < len(line) and line[start].isspace():
            start += 1
        if start >= len(line):
            break
        end = start + sizes.prefix(line, start)
        if end < len(line):
            cut = line.rfind(" ", start + 1, end + 1)
            if cut > start:
                end = cut
        pieces.append(line[start:end].rstrip())
        start = end
    return [p for p in pieces if p]
