"""One timestamp format for everything stored: UTC ISO-8601 with microseconds and `Z`.

Fixed width, so comparing the text compares the time. Inputs may carry any UTC
offset, `Z`, or be epoch seconds; a timestamp without an offset is taken as UTC
(that is what SQLite's CURRENT_TIMESTAMP writes).
"""

from __future__ import annotations

from datetime import UTC, datetime

FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_EPOCH_MAX = 253402300799  # 9999-12-31T23:59:59Z


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
    text = value.strip()
    if not text:
        raise ValueError("empty timestamp")
    try:
        return _from_epoch(float(text))
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"unparseable timestamp {value!r}: use ISO-8601 "
            "(2026-01-04T12:00:00Z, or with an offset) or epoch seconds"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC).strftime(FORMAT)
    except OverflowError:  # within a day of year 1 or 9999, its offset leaves the calendar
        raise ValueError(f"timestamp {value!r} is outside 0001-01-01..9999-12-31 in UTC") from None


def _from_epoch(seconds: float) -> str:
    if seconds != seconds or not 0 <= seconds <= _EPOCH_MAX:
        raise ValueError(
            f"epoch seconds {seconds!r} out of range (0..{_EPOCH_MAX}); "
            "milliseconds are not accepted"
        )
    return datetime.fromtimestamp(seconds, UTC).strftime(FORMAT)
