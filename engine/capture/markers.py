"""Markers: events that say something happened to a conversation (a session started or
ended, the context was compacted, a message was deleted), not something said in it.

Raw capture stores a marker like any event: it is history, and it closes a graph window.
But it is not a turn: it gets no search row, it is never recalled as a past turn or as
news from another channel, and it is not counted or listed as unsummarized. Event types
are open (clients name their own), so the markers are the list and every other type is
conversation: message, edit, longform, note, ...

migrations/0007_markers.sql dropped the search rows of the markers already indexed; a
type added here later needs a migration that does the same for its rows.

A turn an edit replaced or a deletion removed (`replaced_by`, `deleted_at`: see
engine.capture.versions.supersede) is no turn any more either: `turns_only` leaves it out,
`superseded` finds it.
"""

from __future__ import annotations

MARKER_TYPES = ("session_start", "session_end", "pre_compact", "delete")
_LISTED = ", ".join(f"'{name}'" for name in MARKER_TYPES)


def is_marker(event_type: str | None) -> bool:
    return event_type in MARKER_TYPES


def turns_only(alias: str = "") -> str:
    """An SQL condition: the event (its columns prefixed with `alias`) is a turn, and a
    current one (not replaced by an edit, not deleted: engine.capture.versions.supersede)."""
    return f"({alias}event_type NOT IN ({_LISTED}) AND {current(alias)})"


def superseded(alias: str = "") -> str:
    """An SQL condition: the event was a turn until an edit replaced it or it was deleted
    (migrations/0008's index events_gone serves it)."""
    gone = f"({alias}replaced_by IS NOT NULL OR {alias}deleted_at IS NOT NULL)"
    return f"{alias}event_type NOT IN ({_LISTED}) AND {gone}"


def current(alias: str = "") -> str:
    """An SQL condition: the event was neither replaced by an edit nor deleted."""
    return f"{alias}replaced_by IS NULL AND {alias}deleted_at IS NULL"


def markers_only(alias: str = "") -> str:
    """An SQL condition: the event is a marker (the index events_by_type serves it)."""
    return f"{alias}event_type IN ({_LISTED})"
