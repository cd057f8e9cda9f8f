"""The client every channel sends through: Claude Code hooks, the Discord adapter, importers.

`send` appends the events to the spool (see ingest.spool) and then flushes: the spool goes
to `POST /v1/events` in order, in batches. What the service cannot take now (it is down,
hung, answers 5xx or 429, or refuses the token) stays in the spool for the next send or
`pps ingest flush`; so a caller returns at once and nothing it handed over is lost, even
if the process is killed between spooling and sending. What the service refuses as
invalid (4xx) is isolated by halving the batch and kept in the rejected file with the
service's answer, and the rest goes through. A duplicate on a resend is harmless: every
event carries a stable event_uid (one is given to events without).
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from engine.kernel.config import ClientSettings
from engine.kernel.labels import CLIENT_HEADER
from ingest.hook import identity
from ingest.http import service_client
from ingest.spool import Spool

_STOP = "stop"
_ISOLATE = "isolate"


Answer = tuple[int | None, Any, str | None]
"""(status or None, JSON body or None, a problem a person can act on)."""

DEFAULT_LABEL = "pps-client"
"""The label of a client that gives none (`pps ingest`, an importer). The Discord adapter
gives its client DISCORD_LABEL; the hook runners pass their host's name (`claude-code`)."""
DISCORD_LABEL = "discord"


class ClientConfigError(Exception):
    """The client cannot know where to send or as whom: a person has to fix a setting."""


@dataclass
class Flushed:
    """What one send or flush did. `error` says why it stopped early, if it did."""

    stored: int = 0
    duplicates: int = 0
    rejected: int = 0
    pending: int = 0
    error: str | None = None
    acked: dict[str, bool] = field(default_factory=dict)
    """event_uid -> duplicate, for every event the service acknowledged in this call (as
    first acknowledged: a uid sent twice in one flush is new if its first send was)."""


class Client:
    def __init__(
        self,
        url: str,
        token: str,
        spool: Spool,
        *,
        timeout: float = 30.0,
        batch: int = 500,
        label: str = DEFAULT_LABEL,
    ):
        self.url = url.rstrip("/")
        self.identity = identity(self.url, token)
        self.spool = spool
        if spool.service is None:
            spool.service = self.url
        self.timeout = timeout
        self.batch = batch
        self.refused: str | None = None
        """The problem of the last 401 the service answered this client (its token is
        unknown or revoked there), None when it took the token every time."""
        self._http = service_client(
            self.url, token, base_url=self.url, headers={CLIENT_HEADER: label}
        )

    @classmethod
    def from_settings(cls, settings: ClientSettings, label: str = DEFAULT_LABEL) -> Client:
        url, token = service_url(settings), read_token(settings)
        return cls(
            url,
            token,
            Spool(spool_path(settings, identity(url, token)), service=url),
            timeout=settings.client_timeout_s,
            batch=settings.client_batch,
            label=label,
        )

    @property
    def label(self) -> str:
        """How the client names itself to the service (the X-PPS-Client header), for the
        record of who called: the Clients page, `pps hooks status`."""
        return self._http.headers[CLIENT_HEADER]

    @label.setter
    def label(self, label: str) -> None:
        self._http.headers[CLIENT_HEADER] = label

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(
        self, events: list[dict[str, Any]], *, deadline: float | None = None, wait: bool = False
    ) -> Flushed:
        """Spool `events` (durably), then flush until done or `deadline` (time.monotonic).
        With `wait`, wait for a flush running elsewhere rather than leave them spooled."""
        for event in events:
            event.setdefault("event_uid", uuid.uuid4().hex)
        self.spool.append(events)
        return self.flush(deadline=deadline, wait=wait)

    def flush(self, *, deadline: float | None = None, wait: bool = True) -> Flushed:
        """Send the spool in order until it is empty, the service fails, or the deadline."""
        result = Flushed()
        with self.spool.flushing(wait=wait, deadline=deadline) as holding:
            if not holding:
                result.error = "another flush is sending the spool"
            else:
                while result.error is None and self.spool.next_file():
                    self._send_file(result, deadline)
        result.pending = self.spool.pending()
        return result

    def _send_file(self, result: Flushed, deadline: float | None) -> None:
        for batch in self.spool.batches(self.batch):
            for line, problem in batch.unreadable:
                self.spool.reject(line.decode(errors="replace"), None, f"unreadable: {problem}")
                result.rejected += 1
            if batch.events and not self._deliver(batch.events, result, deadline):
                return
            self.spool.commit(batch)
        self.spool.finish_file()

    def _deliver(
        self, events: list[dict[str, Any]], result: Flushed, deadline: float | None
    ) -> bool:
        """POST `events`; True when each is acknowledged or rejected, False to stop."""
        status, body, problem = self._post("/v1/events", events, deadline)
        if status == 200 and isinstance(body, dict):
            result.stored += body.get("stored", 0)
            result.duplicates += body.get("duplicates", 0)
            for ack in body.get("events", []):
                result.acked.setdefault(ack["event_uid"], ack["duplicate"])
            return True
        if _verdict(status) == _STOP:
            result.error = problem
            return False
        if len(events) > 1:
            half = len(events) // 2
            return self._deliver(events[:half], result, deadline) and self._deliver(
                events[half:], result, deadline
            )
        self.spool.reject(events[0], status, problem)
        result.rejected += 1
        return True

    def check(self) -> str | None:
        """Whether the service answers and takes the token: None, or the problem (for a
        flush with nothing to send, which would otherwise never ask)."""
        status, _, problem = self._request("GET", "/v1/events", None, params={"limit": 1})
        return None if status == 200 else problem

    def recall(
        self, request: dict[str, Any], *, deadline: float | None = None
    ) -> tuple[str | None, str | None]:
        """(the formatted context block of `POST /v1/recall` or None, why not when the
        service refused the request). None without a reason: the service has none to give
        (down, slow, no such endpoint, or an answer without one)."""
        status, body, problem = self._post("/v1/recall", request, deadline)
        if status != 200 or not isinstance(body, dict):
            refused = status is not None and 400 <= status < 500 and status != 404
            return None, problem if refused else None
        text = body.get("context")
        return (text if isinstance(text, str) and text.strip() else None), None

    def _post(self, path: str, payload: Any, deadline: float | None) -> Answer:
        return self._request("POST", path, deadline, json=payload)

    def _request(self, method: str, path: str, deadline: float | None, **options: Any) -> Answer:
        """(status or None, JSON body or None, a problem a person can act on)."""
        timeout = self.timeout
        if deadline is not None:
            timeout = min(timeout, deadline - time.monotonic())
            if timeout <= 0.01:
                return None, None, "out of time; the rest waits in the spool"
        try:
            response = self._http.request(method, path, timeout=timeout, **options)
        except httpx.HTTPError as exc:
            return None, None, f"service unreachable at {self.url}: {exc or type(exc).__name__}"
        try:
            body = response.json()
        except ValueError:
            body = None
        message = body.get("message") if isinstance(body, dict) else None
        problem = f"HTTP {response.status_code} from {self.url}{path}: {message or response.text}"
        if response.status_code == 401:
            self.refused = problem[:1000]
        return response.status_code, body, problem[:1000]


def _verdict(status: int | None) -> str:
    """Whether a failed answer is about these events (isolate and reject the bad ones) or
    about the service or our credentials (stop; everything stays spooled)."""
    if status is not None and 400 <= status < 500 and status not in (401, 403, 404, 408, 429):
        return _ISOLATE
    return _STOP


def answers_token(url: str, token: str, timeout: float) -> int | None:
    """What the service at `url` answers a read as `token` (`GET /v1/events?limit=1`: 200,
    401 when it does not take it), None when it does not answer."""
    try:
        with service_client(url, token, base_url=url, timeout=timeout) as http:
            return http.get("/v1/events", params={"limit": 1}).status_code
    except httpx.HTTPError:
        return None


def service_url(settings: ClientSettings) -> str:
    return (settings.url or f"http://127.0.0.1:{settings.port}").rstrip("/")


def read_token(settings: ClientSettings) -> str:
    """The entity token: from the token file when one is named (PPS_TOKEN_FILE, or
    `--token-file`), else PPS_TOKEN. A named file wins, so a hook installed with its
    token file keeps its entity whatever token a shell exports."""
    if settings.token_file is not None:
        path = settings.token_file.expanduser()
        try:
            token = path.read_text().strip()
        except OSError as exc:
            raise ClientConfigError(f"cannot read the token file {path}: {exc.strerror}") from None
        if token:
            return token
        raise ClientConfigError(f"the token file {path} is empty")
    if settings.token is not None and settings.token.get_secret_value().strip():
        return settings.token.get_secret_value().strip()
    raise ClientConfigError(
        "no entity token: set PPS_TOKEN_FILE to a file holding it (or PPS_TOKEN)"
    )


def client_dir(settings: ClientSettings) -> Path:
    return settings.client_dir.expanduser()


def spool_path(settings: ClientSettings, of: str) -> Path:
    """The spool for the identity `of` (see `identity`), unless PPS_SPOOL_PATH names one."""
    if settings.spool_path is not None:
        return settings.spool_path.expanduser()
    return client_dir(settings) / f"spool-{of}.jsonl"


@dataclass(frozen=True)
class Waiting:
    """A spool other than the one a command uses, with events in it."""

    path: Path
    pending: int
    service: str | None


_SPOOL_NAME = re.compile(r"^(spool-[0-9a-f]{16}\.jsonl)")


def other_spools(settings: ClientSettings, but: Path) -> list[Waiting]:
    """The spools under the client directory, other than `but`, that hold events: those
    written for another service (another URL, even one naming the same service
    differently: localhost and 127.0.0.1) or another token."""
    folder = client_dir(settings)
    try:
        names = {m[1] for p in folder.iterdir() if (m := _SPOOL_NAME.match(p.name))}
    except OSError:
        return []
    found = []
    for name in sorted(names):
        spool = Spool(folder / name)
        if spool.path.absolute() == but.absolute():
            continue
        try:
            pending = spool.pending()
        except OSError:
            continue
        if pending:
            found.append(Waiting(spool.path, pending, spool.noted_service()))
    return found
