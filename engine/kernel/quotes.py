"""Where a text is quoted in another: what forgetting looks for in the crystals, the
word-photos and the memory files (engine.forgetting). A quote is the text whole
(whitespace and case aside), or QUOTE_WORDS of its words in a row, whatever lies between
them (spaces, punctuation, line breaks); a text of fewer words is only found whole."""

from __future__ import annotations

import re
from collections.abc import Iterable

QUOTE_WORDS = 6
FORGOTTEN = "[forgotten]"
_WORD = re.compile(r"\w+")


def _plain(text: str) -> str:
    return " ".join(text.split()).casefold()


def _key(words: Iterable[str]) -> tuple[str, ...]:
    """The two longest of these words (one, if they are all one word), lowered."""
    distinct = sorted({w.casefold() for w in words}, key=lambda w: (-len(w), w))
    return tuple(distinct[:2])


class Quotes:
    """The quotes of some texts, to find and cut out of others."""

    def __init__(self, texts: Iterable[str]):
        texts = [t for t in texts if t.strip()]
        self.whole = {_plain(t) for t in texts}
        runs = set()
        for text in texts:
            words = _WORD.findall(text)
            runs |= {tuple(words[i : i + QUOTE_WORDS]) for i in range(len(words) - QUOTE_WORDS + 1)}
        # Every run holds its two longest words: a text without both of some run's is
        # passed over without the pattern.
        self._keys = {_key(run) for run in runs}
        self._runs = None
        if runs:
            each = (r"\b" + r"\W+".join(re.escape(w) for w in run) + r"\b" for run in sorted(runs))
            self._runs = re.compile(f"(?=({'|'.join(each)}))", re.IGNORECASE)

    def __bool__(self) -> bool:
        return bool(self.whole)

    def _spans(self, text: str) -> list[tuple[int, int]]:
        """Where runs of the texts' words lie in `text`, overlapping runs joined."""
        if self._runs is None:
            return []
        folded = text.casefold()
        if not any(all(word in folded for word in key) for key in self._keys):
            return []
        spans: list[tuple[int, int]] = []
        for found in self._runs.finditer(text):
            start, end = found.start(1), found.end(1)
            if spans and start <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
            else:
                spans.append((start, end))
        return spans

    def found_in(self, text: str) -> bool:
        return _plain(text) in self.whole or bool(self._spans(text))

    def cut(self, text: str) -> str:
        """`text` with each quote replaced by FORGOTTEN (all of it, when it is one whole)."""
        if _plain(text) in self.whole:
            return FORGOTTEN
        spans = self._spans(text)
        for start, end in reversed(spans):
            text = text[:start] + FORGOTTEN + text[end:]
        return text
