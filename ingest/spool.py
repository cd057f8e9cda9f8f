"""The spool: events a client has taken on but the service has not yet acknowledged.

Why a file: a hook must never lose a turn and never wait on the service, which may be
down, restarting or hung. So a client appends every event here first (one JSON line per
event, fsynced, 0600) and only then sends; the file is the client's own write-ahead log.

Layout, next to `path`:
- `path`             the live spool; appends go here, under `path.lock` (held for a write).
- `path.sending`     the part a flush is sending. A flush renames the live spool to it
                     (under the same lock, so no append is lost in between) and sends it
                     in order; `path.sending.offset` records how far the service has
                     acknowledged, so a flush killed half way resumes there (what it had
                     sent but not recorded is sent again: harmless, event_uids are stable).
- `path.flush.lock`  one flush at a time.
- `path.rejected.jsonl`  events the service refused as invalid (4xx), with its answer:
                     never silently dropped, never retried forever.
- `path.service`     the URL of the service the spool is for (never the token), written
                     with the first append, so `pps ingest flush` can say where events
                     that wait in another spool were headed.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.kernel import private, timestamps
from engine.kernel.files import ensure_private_dir
from ingest.hook import ends_without_newline, locked, write_all

MAX_BATCH_BYTES = 4 * 1024 * 1024
"""Most JSON bytes in one request (the service refuses bodies over PPS_MAX_REQUEST_BYTES)."""


@dataclass
class Batch:
    """Consecutive lines of the file being sent: the events, the lines that were not
    JSON objects, and the offset just past the last line."""

    events: list[dict[str, Any]] = field(default_factory=list)
    unreadable: list[tuple[bytes, str]] = field(default_factory=list)
    end: int = 0
    size: int = 0


class Spool:
    def __init__(self, path: Path, service: str | None = None):
        self.path = Path(path)
        self.service = service
        """The service the events are for; noted beside the spool at the first append."""
        self.service_path = self._beside(".service")
        self.sending = self._beside(".sending")
        self.offset_path = self._beside(".sending.offset")
        self.rejected_path = self._beside(".rejected.jsonl")
        self._append_lock = self._beside(".lock")
        self._flush_lock = self._beside(".flush.lock")

    def _beside(self, suffix: str) -> Path:
        return self.path.with_name(self.path.name + suffix)

    def append(self, events: list[dict[str, Any]]) -> None:
        """Append events durably (fsynced) before returning; safe from many processes.
        Private text is stripped first (engine.kernel.private): it is never written here
        nor sent, and an event that is only private text is not taken on at all."""
        events = [event for event in map(_without_private, events) if event is not None]
        if not events:
            return
        data = b"".join(_line(event) for event in events)
        ensure_private_dir(self.path.parent)
        with locked(self._append_lock):
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                if ends_without_newline(fd):
                    data = b"\n" + data  # a writer killed mid-line must not swallow ours
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            if self.service is not None and not self.service_path.exists():
                self._note_service()

    def noted_service(self) -> str | None:
        """The service this spool's events are for, as noted at its first append."""
        try:
            return self.service_path.read_text().strip() or None
        except (OSError, UnicodeDecodeError):
            return None

    def _note_service(self) -> None:
        fd = os.open(self.service_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            write_all(fd, f"{self.service}\n".encode())
        finally:
            os.close(fd)

    def pending(self) -> int:
        """Events waiting: in the live spool and, past its offset, in the file being sent.
        Counted under the append lock, which a flush holds to rename the live spool to the
        file it sends (else an event could be counted in both); not under the flush lock:
        a flush may finish the file meanwhile (then it counts as empty)."""
        if not self.path.parent.is_dir():
            return 0
        with locked(self._append_lock):
            return _count_lines(self.path) + _count_lines(self.sending, start=self._offset())

    @contextmanager
    def flushing(self, *, wait: bool, deadline: float | None) -> Iterator[bool]:
        """Hold the flush lock (True), or yield False when another flush holds it and
        `wait` is false or the deadline passes first."""
        ensure_private_dir(self.path.parent)
        fd = os.open(self._flush_lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not wait or (deadline is not None and time.monotonic() >= deadline):
                        yield False
                        return
                    time.sleep(0.05)
            yield True
        finally:
            os.close(fd)

    def next_file(self) -> bool:
        """(Under the flush lock) make sure there is a file to send: the one a killed flush
        left, else the live spool, renamed. False when there is nothing to send."""
        if self.sending.exists():
            return True
        with locked(self._append_lock):
            if not self.path.exists() or self.path.stat().st_size == 0:
                return False
            os.replace(self.path, self.sending)
            _fsync_dir(self.path.parent)
        self._set_offset(0)
        return True

    def batches(self, max_events: int, max_bytes: int = MAX_BATCH_BYTES) -> Iterator[Batch]:
        """(Under the flush lock) the file being sent, from its offset, in batches."""
        with open(self.sending, "rb") as file:
            file.seek(self._offset())
            batch = Batch(end=file.tell())
            for raw in file:  # a last line without its newline was torn by a killed writer
                batch.end += len(raw)
                line = raw.strip()
                if line:
                    try:
                        event = json.loads(line)
                        if not isinstance(event, dict):
                            raise ValueError("not a JSON object")
                        batch.events.append(event)
                        batch.size += len(line)
                    except ValueError as exc:
                        batch.unreadable.append((line, str(exc)))
                if len(batch.events) >= max_events or batch.size >= max_bytes:
                    yield batch
                    batch = Batch(end=batch.end)
            if batch.events or batch.unreadable:
                yield batch

    def commit(self, batch: Batch) -> None:
        """Record that everything up to the end of `batch` is acknowledged or rejected."""
        self._set_offset(batch.end)

    def finish_file(self) -> None:
        """The file being sent is done: every line acknowledged or rejected."""
        self.sending.unlink(missing_ok=True)
        self.offset_path.unlink(missing_ok=True)

    def reject(self, event: Any, status: int | None, problem: str | None) -> None:
        """Keep a refused event, with why, where `pps ingest flush` points to."""
        record = {"at": timestamps.now(), "status": status, "problem": problem, "event": event}
        fd = os.open(self.rejected_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            write_all(fd, _line(record))
            os.fsync(fd)
        finally:
            os.close(fd)

    def rejected_count(self) -> int:
        return _count_lines(self.rejected_path)

    def _offset(self) -> int:
        try:
            offset = int(self.offset_path.read_text().strip() or 0)
        except (FileNotFoundError, ValueError):
            return 0
        try:
            size = self.sending.stat().st_size
        except FileNotFoundError:  # finished by a flush meanwhile
            return 0
        return offset if 0 <= offset <= size else 0

    def _set_offset(self, offset: int) -> None:
        temporary = self._beside(".sending.offset.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            write_all(fd, str(offset).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, self.offset_path)


def _without_private(event: Any) -> Any:
    """The event without its private text; None when that was all of its content. (What
    is no event the service takes is kept as it is: the service refuses it, and says why.)"""
    content = event.get("content") if isinstance(event, dict) else None
    if not isinstance(content, str) or "private" not in content.lower():
        return event
    kept = private.strip(content)
    return {**event, "content": kept} if kept.strip() else None


def _line(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _count_lines(path: Path, start: int = 0) -> int:
    try:
        with open(path, "rb") as file:
            file.seek(start)
            return sum(chunk.count(b"\n") for chunk in iter(lambda: file.read(1 << 20), b""))
    except FileNotFoundError:
        return 0
