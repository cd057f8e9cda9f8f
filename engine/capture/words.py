"""How free text becomes an FTS5 query, for every full-text index we keep (raw events,
summaries, the search index): its words, lowercased, once each, stopwords dropped unless
nothing else is left, each quoted so no query syntax ever reaches FTS5."""

from __future__ import annotations

import re
import sys
from functools import cache
from typing import Any

MAX_QUERY_TERMS = 32

_STOPWORDS = """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves"""
STOPWORDS = frozenset(_STOPWORDS.split())


@cache
def word_pattern() -> str:
    """The pattern (JSON Schema's and Python's alike) of text that holds a word to search
    for: a letter or digit of any script, or '_', which is what `\\w` matches here, so just
    the text `keywords` finds a word in (stopwords count: alone, they are kept). Spelled
    out character by character, from Python's Unicode database: a `\\p{L}` would be read
    by other Unicode tables (or, by schemathesis, as Latin letters only)."""
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    spans = (match.span() for match in re.finditer(r"\w+", every))
    ranges = "".join(every[a] if b - a == 1 else f"{every[a]}-{every[b - 1]}" for a, b in spans)
    return f"^(?=[\\s\\S]*[{ranges}])"


def searchable(schema: dict[str, Any]) -> None:
    """`json_schema_extra` of a query refused when `keywords` finds no word in it (built
    when a schema is, not when this module is imported: it takes a third of a second)."""
    schema["pattern"] = word_pattern()


def keywords(text: str) -> list[str]:
    """The words worth matching, in order."""
    words = list(dict.fromkeys(re.findall(r"\w+", text.lower())))
    return ([w for w in words if w not in STOPWORDS] or words)[:MAX_QUERY_TERMS]


def any_of(words: list[str]) -> str | None:
    """An FTS5 query matching any of the words (None: nothing to match)."""
    return " OR ".join(f'"{word}"' for word in words) or None


def fts_query(text: str) -> str | None:
    """A safe FTS5 query for free text: any of its keywords may match."""
    return any_of(keywords(text))
