"""One timestamp codec: every stored timestamp is written by `engine.kernel.timestamps`
(`now`, `normalise`, `from_datetime`) and read back by it (`parse`, `seconds_between`),
so no module reads one back its own way.

The source is read (every call named `strptime` or `fromisoformat`, on whatever it is
called), so a new way to read a stored timestamp back fails here. What is parsed outside
the kernel and is not a stored timestamp is listed below, by file, with the reason.
"""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine.kernel import timestamps

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "pps", "mcp_bridge", "ingest")
CODEC = "engine/kernel/timestamps.py"
PARSERS = {"strptime", "fromisoformat"}

# (file, call) -> why what it parses is not a stored timestamp.
NOT_STORED = {
    ("engine/graph/dialects.py", "datetime.fromisoformat"): (
        "Neo4j's own datetime as its driver hands it over: an offset, maybe then a zone name"
    ),
    ("engine/search/chunks.py", "date.fromisoformat"): "a memory file's front-matter day",
    ("engine/search/index.py", "date.fromisoformat"): "the day in a memory file's name",
    ("engine/contracts/transcripts.py", "Date.fromisoformat"): "the day in a transcript path",
    ("pps/web/memories.py", "date.fromisoformat"): "a day typed into the memories page filter",
}


def _parses() -> list[tuple[str, str, int]]:
    """Every call of a parser named in `PARSERS` outside the codec: (file, call, line)."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name == CODEC:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in PARSERS:
                    found.append((name, ast.unparse(func), node.lineno))
                elif isinstance(func, ast.Name) and func.id in PARSERS:
                    found.append((name, func.id, node.lineno))
    return found


def test_stored_timestamps_are_read_back_only_by_the_codec():
    strays = [
        f"{name}:{line}: {call}(...)"
        for name, call, line in _parses()
        if (name, call) not in NOT_STORED
    ]
    assert not strays, (
        "read a stored timestamp with timestamps.parse (or seconds_between); "
        f"if it is something else, say so in NOT_STORED: {strays}"
    )


def test_every_exception_still_parses_what_it_is_listed_for():
    # The list shrinks with the code: an exception left behind would let a new parse
    # of a stored timestamp into that file unnoticed.
    seen = {(name, call) for name, call, _ in _parses()}
    assert sorted(set(NOT_STORED) - seen) == []


def test_now_reads_back_as_the_same_instant_in_utc():
    before = datetime.now(UTC)
    stamp = timestamps.now()
    after = datetime.now(UTC)
    moment = timestamps.parse(stamp)
    assert moment.tzinfo is UTC
    assert before - timedelta(microseconds=1) <= moment <= after + timedelta(microseconds=1)
    assert timestamps.from_datetime(moment) == stamp


@pytest.mark.parametrize(
    "stamp",
    [
        "2026-01-04T12:00:00.250000Z",
        timestamps.FIRST,
        timestamps.LAST,
        "0045-03-15T00:00:00.000000Z",
    ],
)
def test_a_stored_stamp_round_trips_exactly(stamp):
    assert timestamps.from_datetime(timestamps.parse(stamp)) == stamp


@pytest.mark.parametrize(
    ("text", "meaning"),
    [
        # What is stored: FORMAT, always with microseconds.
        ("2026-01-04T12:00:00.250000Z", datetime(2026, 1, 4, 12, 0, 0, 250000, UTC)),
        # Shown by the same codec (the web's `when`): a file's time, whole seconds.
        ("2026-01-04T12:00:00Z", datetime(2026, 1, 4, 12, tzinfo=UTC)),
        # SQLite's CURRENT_TIMESTAMP: a space, no zone, which is UTC.
        ("2026-01-04 12:00:00", datetime(2026, 1, 4, 12, tzinfo=UTC)),
        # Another offset is the same instant, given in UTC.
        ("2026-01-04T13:30:00+01:30", datetime(2026, 1, 4, 12, tzinfo=UTC)),
    ],
)
def test_parse_gives_the_instant_in_utc(text, meaning):
    moment = timestamps.parse(text)
    assert moment == meaning
    assert moment.tzinfo is UTC
    assert moment.utcoffset() == timedelta(0)


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-01T00:00:00.000000Z", "1767528000"])
def test_parse_refuses_what_is_not_a_timestamp(text):
    with pytest.raises(ValueError):
        timestamps.parse(text)


def test_seconds_between_two_stored_stamps():
    a, b = "2026-01-04T23:59:59.750000Z", "2026-01-05T00:00:01.000000Z"
    assert timestamps.seconds_between(a, b) == 1.25
    assert timestamps.seconds_between(b, a) == -1.25
    assert timestamps.seconds_between(a, a) == 0.0
