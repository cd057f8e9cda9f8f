"""One timestamp format for everything stored: UTC ISO-8601 with microseconds and `Z`.

Fixed width, so comparing the text compares the time. What callers may send is one
grammar, `PATTERN` (the OpenAPI description gives it, and `normalise` refuses what it
does not match), or epoch seconds as a number:

- a day `YYYY-MM-DD` (a real one: 0001-01-01..9999-12-31), optionally followed by `T`
  (or a space) and `HH:MM`, `HH:MM:SS` or `HH:MM:SS.fraction` (1-9 digits), and then
  optionally `Z` or an offset `+HH:MM` / `-HH:MM`. Without an offset it is UTC (that is
  what SQLite's CURRENT_TIMESTAMP writes). An instant the offset takes past the calendar
  in UTC (`9999-12-31T23:00:00-05:00`, `0001-01-01T00:00:00+10:00`) is the calendar's
  last or first instant: a `since` past the end of time finds nothing;
- epoch seconds 0..253402300799 (9999-12-31T23:59:59Z), as a JSON number or as decimal
  text (`1767528000`, `1767528000.25`). More is refused, not clamped: it is most likely
  milliseconds.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated

from pydantic import BeforeValidator, WithJsonSchema

from engine.kernel.requests import up_to

FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
EPOCH_MAX = 253402300799  # 9999-12-31T23:59:59Z
FIRST = "0001-01-01T00:00:00.000000Z"
LAST = "9999-12-31T23:59:59.999999Z"


_MONTH_DAY = (
    "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))"
)
_LEAP_YEAR = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
DAY = f"(?!0000)(?:[0-9]{{4}}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"
"""A calendar day, YYYY-MM-DD, in 0001..9999 (a regex, unanchored)."""
_TIME = "[Tt ](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\\.[0-9]{1,9})?)?"
_OFFSET = "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
_EPOCH = f"(?:{up_to(EPOCH_MAX - 1)}(?:\\.[0-9]+)?|{EPOCH_MAX}(?:\\.0+)?)"
PATTERN = f"^(?:{DAY}(?:{_TIME}{_OFFSET}?)?|{_EPOCH})$"
"""Every timestamp a caller may send as text (JSON Schema `pattern`, Python `re` alike)."""
DAY_PATTERN = f"^{DAY}$"

_TIMESTAMP = re.compile(PATTERN)
_EPOCH_TEXT = re.compile(f"^{_EPOCH}$")
_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]*)?|-?\.[0-9]+")
_HELP = "use ISO-8601 (2026-01-04, 2026-01-04T12:00:00Z, or with an offset) or epoch seconds"


def now() -> str:
    return datetime.now(UTC).strftime(FORMAT)


def normalise(value: str | int | float) -> str:
    """Return `value` as a stored timestamp; raise ValueError saying what is wrong."""
    if isinstance(value, bool):
        raise ValueError("expected an ISO-8601 timestamp or epoch seconds, got a boolean")
    if isinstance(value, int | float):
        return _from_epoch(value)
    if not isinstance(value, str):
        raise ValueError(
            f"expected an ISO-8601 timestamp or epoch seconds, got {type(value).__name__}"
        )
    if not value:
        raise ValueError("empty timestamp")
    if not _TIMESTAMP.fullmatch(value):
        if _DECIMAL.fullmatch(value):  # out of range (then say so), or spelled otherwise
            _from_epoch(float(value))
        raise ValueError(f"unparseable timestamp {value!r}: {_HELP}")
    if _EPOCH_TEXT.fullmatch(value):
        return _from_epoch(float(value))
    return from_datetime(datetime.fromisoformat(value))


def from_datetime(moment: datetime) -> str:
    """A datetime as a stored timestamp: naive is UTC, and an instant past the calendar
    in UTC is its first or last instant."""
    if moment.tzinfo is not None:
        try:
            moment = moment.astimezone(UTC)
        except OverflowError:  # within a day of year 1 or 9999, its offset leaves the calendar
            return FIRST if moment.year == 1 else LAST
    return f"{moment.year:04}" + moment.strftime(FORMAT.removeprefix("%Y"))  # %Y: 45, not 0045


def parse(stamp: str) -> datetime:
    """A stored timestamp read back: the instant, aware, in UTC. Every module reads them
    with this (or `seconds_between`). Reads `FORMAT`, and any ISO-8601 text besides: a time
    without a fraction, a space for `T`, no zone (UTC: what SQLite's CURRENT_TIMESTAMP
    writes) or another offset (given back in UTC). Raises ValueError on anything else."""
    moment = datetime.fromisoformat(stamp)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment if moment.tzinfo is UTC else moment.astimezone(UTC)


def seconds_between(earlier: str, later: str) -> float:
    """Seconds from one stored timestamp to another; negative when `later` is earlier."""
    return (parse(later) - parse(earlier)).total_seconds()


def _from_epoch(seconds: float) -> str:
    if seconds != seconds or not 0 <= seconds <= EPOCH_MAX:
        raise ValueError(
            f"epoch seconds {seconds!r} out of range (0..{EPOCH_MAX}); "
            "milliseconds are not accepted"
        )
    return datetime.fromtimestamp(seconds, UTC).strftime(FORMAT)


_TEXT = {"type": "string", "pattern": PATTERN}
_NUMBER = {"type": "number", "minimum": 0, "maximum": EPOCH_MAX}

# Typed as what the field holds, the stored text: `normalise` reads every form given.
Moment = Annotated[
    str,
    BeforeValidator(normalise),
    WithJsonSchema({"anyOf": [_TEXT, _NUMBER]}),
]
"""A timestamp in a JSON body: text (`PATTERN`) or epoch seconds as a number; stored
normalised. Checked before any coercion, so `false` is refused rather than read as 0."""

MomentText = Annotated[str, BeforeValidator(normalise), WithJsonSchema(_TEXT)]
"""A timestamp in a query string, where everything is text: `PATTERN`."""
