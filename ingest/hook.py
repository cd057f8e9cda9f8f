"""The hook client: what Claude Code, Codex and Letta Code run for a hook (`python -I -S
ingest/hook.py EVENT --host HOST`, written by `pps hooks install`).

It starts in tens of milliseconds: the standard library only, and of pps the one module
that strips private text (engine.kernel.private), with no site-packages read (`-S`) and
nothing from the environment's PYTHON* variables (`-I`). The service does the hook's work
(POST /v1/hooks/<host>, pps.rest.hooks): the client sends the host's payload, adds what
only it can read (for Claude Code's Stop, PreCompact and SessionEnd the transcript's lines
written since it last sent, which the service may not be able to read: it may run in a
container), and prints the answer for the host.

It reads PPS_URL, PPS_TOKEN_FILE (else PPS_TOKEN), PPS_CLIENT_DIR, PPS_HOOK_BUDGET_S,
PPS_HOOK_MAX_CHARS and, for Letta Code, PPS_LETTA_AGENT from its environment, as the
installer writes them into the command; no `.env` file.

Whatever happens it exits 0 within PPS_HOOK_BUDGET_S, counted from the process's start.
When the service is down, slow or refuses the token, the call is written to the spool
(`hooks-<id>.jsonl` in the client dir: 0600, fsynced, without private text) and sent,
in order, before the next call gets through (or by `pps ingest flush`); the service
knows a call sent again by its id, so each is stored once. A call the service refuses
as invalid is kept in `hooks-<id>.jsonl.rejected.jsonl` with the answer. What went wrong
goes to hooks.log in the client dir; a refused token is also a line for the user.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import select
import signal
import socket
import sys
import time
from urllib.parse import SplitResult, urlencode, urlsplit

if __name__ == "__main__":  # run as a script (`-I -S`): pps's own tree is two folders up
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.kernel import private  # stdlib only: re

TYPE_CHECKING = False  # typing itself is ~3 ms of the start: only the type checker reads it
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

HOSTS = ("claude-code", "codex", "letta-code")
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd")
TRANSCRIPT_EVENTS = ("Stop", "PreCompact", "SessionEnd")
"""Claude Code's hooks whose work is in the transcript, which only the client's machine
can read (ingest.claude_code)."""
ROUTE = "/v1/hooks/"
CLIENT_HEADER = "X-PPS-Client"
OFFSET_HEADER = "X-PPS-Transcript-Offset"
PROBLEMS_HEADER = "X-PPS-Problems"
"""The service's headers (pps.rest.hooks)."""
SEND_MAX = 16 * 1024 * 1024
"""Most transcript bytes one call sends; the rest goes with the next hook."""
DEFAULT_BUDGET_S = 2.0
LOG_MAX = 1 << 20


class Setup:
    """Where the service is, as whom, where this client keeps its files, its budget,
    and why no call can be made (no token), for hooks.log."""

    def __init__(self, url: str, token: str | None, client_dir: str, budget_s: float):
        self.url, self.token, self.client_dir, self.budget_s = url, token, client_dir, budget_s
        self.agent: str | None = None
        self.max_chars: int | None = None
        self.source = "PPS_TOKEN"
        """Where the token came from, for what a refused token says."""
        self.problem: str | None = None

    @property
    def identity(self) -> str:
        return identity(self.url, self.token or "")


def setup(environ: dict[str, str]) -> Setup:
    """The client's settings from its environment, as the installer writes them."""
    port = environ.get("PPS_PORT") or "8000"
    url = (environ.get("PPS_URL") or f"http://127.0.0.1:{port}").rstrip("/")
    state = environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local/state")
    folder = os.path.expanduser(environ.get("PPS_CLIENT_DIR") or os.path.join(state, "pps"))
    try:
        budget = float(environ.get("PPS_HOOK_BUDGET_S") or DEFAULT_BUDGET_S)
    except ValueError:
        budget = DEFAULT_BUDGET_S
    found = Setup(url, None, folder, budget if budget > 0 else DEFAULT_BUDGET_S)
    found.agent = environ.get("PPS_LETTA_AGENT") or None
    chars = environ.get("PPS_HOOK_MAX_CHARS") or ""
    found.max_chars = int(chars) if chars.isdigit() else None
    named = environ.get("PPS_TOKEN_FILE")
    if named:
        found.source = named
        try:
            with open(os.path.expanduser(named)) as file:
                found.token = file.read().strip() or None
            found.problem = None if found.token else f"the token file {named} is empty"
        except OSError as exc:
            found.problem = f"cannot read the token file {named}: {exc.strerror}"
    else:
        found.token = (environ.get("PPS_TOKEN") or "").strip() or None
        found.problem = None if found.token else "no entity token: set PPS_TOKEN_FILE"
    return found


def identity(url: str, token: str) -> str:
    """Names what belongs to one service and one token (a spool is sent with the token
    it was written for, never another entity's)."""
    return hashlib.sha256(f"{url}\n{token}".encode()).hexdigest()[:16]


def since_start() -> float:
    """Seconds since this process started (the interpreter's own start included), as
    the kernel counts them; 0 where it cannot be read."""
    try:
        with open("/proc/self/stat", "rb") as stat, open("/proc/uptime", "rb") as uptime:
            ticks = int(stat.read().rsplit(b")", 1)[1].split()[19])
            return max(0.0, float(uptime.read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


# --- talking to the service -----------------------------------------------------------------


class Answer:
    """The service's answer: status None when it did not answer (down, slow)."""

    def __init__(
        self,
        status: int | None,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        problem: str | None = None,
    ):
        self.status, self.body, self.headers, self.problem = status, body, headers or {}, problem


def request(
    found: Setup, method: str, path: str, body: bytes | None, deadline: float, host: str
) -> Answer:
    """One request to the service, within the deadline."""
    timeout = deadline - time.monotonic()
    if timeout <= 0.01:
        return Answer(None, problem="out of time")
    parts = urlsplit(found.url)
    headers = {CLIENT_HEADER: host, "Content-Type": "application/json"}
    if found.token:
        headers["Authorization"] = f"Bearer {found.token}"
    try:
        status, said, data = exchange(
            parts, method, parts.path.rstrip("/") + path, body or b"", headers, deadline
        )
    except (OSError, ValueError, IndexError) as exc:  # no answer, or no HTTP one
        why = f"{exc}" or type(exc).__name__
        return Answer(None, problem=f"service unreachable at {found.url}: {why}")
    answer = Answer(status, data, said)
    if status != 200:
        answer.problem = f"HTTP {status} from {found.url}: {_message(data)}"
    return answer


def exchange(
    parts: SplitResult,
    method: str,
    target: str,
    body: bytes,
    headers: dict[str, str],
    deadline: float,
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers by lower-case name, body) of one HTTP/1.1 exchange, the
    connection closed after it. Plain HTTP is spoken here over a socket (http.client's
    imports would be a third of the hook's start); https goes through http.client."""
    host, port = parts.hostname or "127.0.0.1", parts.port
    if parts.scheme == "https":
        from http import client

        connection = client.HTTPSConnection(host, port, timeout=deadline - time.monotonic())
        try:
            connection.request(method, target, body, headers)
            response = connection.getresponse()
            return (
                response.status,
                {k.lower(): v for k, v in response.getheaders()},
                response.read(),
            )
        finally:
            connection.close()
    port = port or 80
    lines = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc}", "Connection: close"]
    lines += [f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in headers.items())]
    with socket.create_connection((host, port), timeout=deadline - time.monotonic()) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        received = bytearray()
        while True:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            received += chunk
    head, _, data = bytes(received).partition(b"\r\n\r\n")
    status_line, *fields = head.decode("latin-1").split("\r\n")
    said = {}
    for line in fields:
        name, _, value = line.partition(":")
        said[name.strip().lower()] = value.strip()
    if said.get("transfer-encoding", "").lower() == "chunked":
        data = _dechunk(data)
    return int(status_line.split()[1]), said, data


def _dechunk(data: bytes) -> bytes:
    out, position = bytearray(), 0
    while True:
        end = data.index(b"\r\n", position)
        size = int(data[position:end].split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += data[end + 2 : end + 2 + size]
        position = end + 2 + size + 2


def _message(data: bytes) -> str:
    try:
        return str(json.loads(data).get("message"))[:500]
    except (ValueError, AttributeError):
        return data[:500].decode(errors="replace")


def hook_path(host: str, event: str) -> str:
    return ROUTE + host + "?" + urlencode({"event": event})


def deliver(found: Setup, entry: dict[str, Any], deadline: float, log: list[str]) -> Answer:
    """Send one call; a transcript the service has only up to an earlier byte (409) is
    read again from there and sent once more."""
    body = entry["body"]
    path = hook_path(entry["host"], entry["event"])
    answer = request(found, "POST", path, _json(body), deadline, entry["host"])
    offset = answer.headers.get(OFFSET_HEADER.lower())
    sent = body.get("pps", {}).get("transcript")
    if answer.status == 409 and offset is not None and sent is not None:
        try:
            sent.update(read_lines(sent["path"], int(offset)))
        except OSError as exc:  # gone: what the service lacks cannot be sent any more
            log.append(f"transcript {sent['path']} from byte {offset}: {exc.strerror}")
            sent.update(start=int(offset), lines=[])
        answer = request(found, "POST", path, _json(body), deadline, entry["host"])
    if answer.status == 200 and sent:
        remember_offset(found, sent["path"], sent["lines"][-1][0] if sent["lines"] else None)
    said = answer.headers.get(PROBLEMS_HEADER.lower())
    if said:
        try:
            log += [str(line) for line in json.loads(said)]
        except ValueError:
            log.append(said)
    return answer


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


# --- the transcript -------------------------------------------------------------------------


def _offsets(found: Setup, path: str) -> str:
    name = hashlib.sha256(path.encode()).hexdigest()[:32]
    return os.path.join(found.client_dir, f"transcripts-{found.identity}", name)


def known_offset(found: Setup, path: str) -> int:
    """How far this client has sent the transcript at `path` (0: never)."""
    try:
        with open(_offsets(found, path)) as file:
            return int(file.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def remember_offset(found: Setup, path: str, offset: int | None) -> None:
    if offset is None:
        return
    target = _offsets(found, path)
    private_dir(os.path.dirname(target))
    temporary = target + ".tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, str(offset).encode())
    finally:
        os.close(fd)
    os.replace(temporary, target)


def read_lines(path: str, offset: int) -> dict[str, Any]:
    """The transcript's whole lines from `offset` (from its start when it is shorter), at
    most SEND_MAX bytes, each with the byte it ends at and without its private text."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        offset = offset if offset <= size else 0
        file.seek(offset)
        data = file.read(SEND_MAX)
    complete = data[: data.rfind(b"\n") + 1]
    if not complete and len(data) == SEND_MAX:  # one line longer than a call takes: no turn
        skipped = _line_end(path, offset + len(data))
        return {"path": path, "start": offset, "size": size, "lines": [[skipped, ""]]}
    lines, end = [], offset
    for raw in complete.splitlines(keepends=True):
        end += len(raw)
        lines.append([end, _without_private_line(raw.rstrip(b"\r\n").decode(errors="replace"))])
    return {"path": path, "start": offset, "size": size, "lines": lines}


def _line_end(path: str, offset: int) -> int:
    with open(path, "rb") as file:
        file.seek(offset)
        while chunk := file.read(1 << 20):
            if (newline := chunk.find(b"\n")) != -1:
                return offset + newline + 1
            offset += len(chunk)
    return offset


def _without_private_line(line: str) -> str:
    if "private" not in line.lower():
        return line
    try:
        return json.dumps(_without_private(json.loads(line)), ensure_ascii=False)
    except ValueError:
        return private.strip(line)


def _without_private(value: Any) -> Any:
    """Every text in `value` without its private spans."""
    if isinstance(value, str):
        return private.strip(value)
    if isinstance(value, list):
        return [_without_private(item) for item in value]
    if isinstance(value, dict):
        return {key: _without_private(item) for key, item in value.items()}
    return value


# --- the spool ------------------------------------------------------------------------------


class Spool:
    """Calls the service has not taken yet, one JSON line each, in the order they came."""

    def __init__(self, found: Setup):
        self.path = os.path.join(found.client_dir, f"hooks-{found.identity}.jsonl")
        self.rejected = self.path + ".rejected.jsonl"

    def append(self, entry: dict[str, Any]) -> None:
        private_dir(os.path.dirname(self.path))
        with locked(self.path + ".lock"):
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                torn = ends_without_newline(fd)  # ours must not be swallowed by it
                write_all(fd, (b"\n" if torn else b"") + _json(entry) + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)

    def pending(self) -> int:
        return self.count(self.path)

    @staticmethod
    def count(path: str | os.PathLike[str]) -> int:
        """The calls waiting in the spool file at `path`."""
        try:
            with open(path, "rb") as file:
                return sum(1 for line in file if line.strip())
        except OSError:
            return 0

    def flush(self, found: Setup, deadline: float, log: list[str]) -> tuple[bool, Answer | None]:
        """Send the spool in order until it is empty (True), the service fails, or the
        deadline; and the last answer. Another process flushing it: False."""
        if not os.path.exists(self.path):
            return True, None
        private_dir(os.path.dirname(self.path))
        fd = os.open(self.path + ".flush.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False, None
            with open(self.path, "rb") as file:
                lines = file.readlines()
            done, last = 0, None
            for raw in lines:
                last = self._send(found, raw, deadline, log)
                if last.status != 200:
                    break
                done += 1
            self._drop(done)
            return done == len(lines), last
        finally:
            os.close(fd)

    def _send(self, found: Setup, raw: bytes, deadline: float, log: list[str]) -> Answer:
        """One spooled call, sent again: 200 when it is done with (taken, or refused and
        kept aside), else the answer that stops the flush."""
        try:
            entry = json.loads(raw)
            entry["body"].setdefault("pps", {})["replay"] = True
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            if raw.strip():
                self.reject(raw.decode(errors="replace"), Answer(None, problem=str(exc)), log)
            return Answer(200)
        answer = deliver(found, entry, deadline, log)
        if invalid(answer):
            self.reject(entry, answer, log)
            return Answer(200)
        return answer

    def _drop(self, done: int) -> None:
        """Remove the first `done` lines (sent), keeping what was appended meanwhile."""
        if not done:
            return
        with locked(self.path + ".lock"):
            with open(self.path, "rb") as file:
                rest = file.readlines()[done:]
            if not any(line.strip() for line in rest):
                os.unlink(self.path)
                return
            temporary = self.path + ".tmp"
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                write_all(fd, b"".join(rest))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, self.path)

    def reject(self, entry: Any, answer: Answer, log: list[str]) -> None:
        """Keep a call the service refused as invalid, with why, never to be sent again."""
        log.append(f"refused, kept in {self.rejected}: {answer.problem}")
        record = {"at": time.time(), "status": answer.status, "problem": answer.problem}
        record["call"] = entry
        fd = os.open(self.rejected, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            write_all(fd, _json(record) + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)


def invalid(answer: Answer) -> bool:
    """Whether the service refused the call itself (4xx), not the token or for now."""
    status = answer.status
    return status is not None and 400 <= status < 500 and status not in (401, 404, 408, 429)


@contextlib.contextmanager
def locked(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive lock on the file at `path` (made 0600) for the block."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def ends_without_newline(fd: int) -> bool:
    """Whether the file ends in a line a writer killed mid-way left without its newline."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def private_dir(path: str) -> None:
    """`path` a folder of this user's alone (0700), and so each folder made on the way."""
    if not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent and parent != path and not os.path.isdir(parent):
            private_dir(parent)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
    if os.stat(path).st_mode & 0o777 != 0o700:
        os.chmod(path, 0o700)


def write_log(found: Setup, event: str, lines: list[str]) -> None:
    """Lines in <client dir>/hooks.log (0600; the previous log kept as hooks.log.1 past
    1 MB). Never raises: a hook's last resort must not fail."""
    if not lines:
        return
    try:
        private_dir(found.client_dir)
        path = os.path.join(found.client_dir, "hooks.log")
        if os.path.exists(path) and os.path.getsize(path) > LOG_MAX:
            os.replace(path, path + ".1")
        moment = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            write_all(fd, "".join(f"{moment} {event}: {line}\n" for line in lines).encode())
        finally:
            os.close(fd)
    except OSError:
        pass


# --- one hook -------------------------------------------------------------------------------


def read_stdin(deadline: float) -> bytes:
    """All of stdin, or what arrived before the deadline (a hook run by hand at a
    terminal must not wait for input forever)."""
    chunks = []
    fd = sys.stdin.fileno()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def canonical(event: str) -> str | None:
    """`SessionStart`, `session-start` and `session_start` all name SessionStart."""
    wanted = event.replace("-", "").replace("_", "").lower()
    return next((name for name in EVENTS if name.lower() == wanted), None)


def call_entry(
    found: Setup, host: str, event: str, payload: dict[str, Any], log: list[str]
) -> dict[str, Any]:
    """The call as it is sent and spooled: the payload without private text, and what
    the service needs beside it (ingest.claude_code.Sent)."""
    body = _without_private(payload)
    sent: dict[str, Any] = {"call": os.urandom(12).hex(), "at": round(time.time(), 3)}
    if found.agent and host == "letta-code":
        sent["agent"] = found.agent
    if found.max_chars is not None:
        sent["max_chars"] = found.max_chars
    path = payload.get("transcript_path")
    if host == "claude-code" and event in TRANSCRIPT_EVENTS and isinstance(path, str) and path:
        path = os.path.expanduser(path)
        if os.path.isfile(path):
            sent["transcript"] = read_lines(path, known_offset(found, path))
        elif event != "SessionEnd":  # `claude mcp list` ends a session it never began
            log.append(f"transcript {path} not found")
    body["pps"] = sent
    return {"host": host, "event": event, "body": body}


def run(host: str, event: str, stdin: bytes, found: Setup, deadline: float) -> str | None:
    """Do one hook; what to print (None: nothing). Problems go to hooks.log."""
    log: list[str] = []
    try:
        return _run(host, event, stdin, found, deadline, log)
    finally:
        write_log(found, f"{host} {event}", log)


def _run(
    host: str, event: str, stdin: bytes, found: Setup, deadline: float, log: list[str]
) -> str | None:
    if host not in HOSTS or canonical(event) is None:
        log.append(
            f"unknown hook event {event!r} or host {host!r}; known: {', '.join(EVENTS)};"
            f" {', '.join(HOSTS)}"
        )
        return None
    event = canonical(event) or event
    try:
        payload = json.loads(stdin)
    except ValueError as exc:
        log.append(f"the hook input is not JSON ({exc})")
        return None
    if not isinstance(payload, dict):
        log.append("the hook input is not a JSON object")
        return None
    if found.problem is not None:
        log.append(found.problem)
        return None
    entry = call_entry(found, host, event, payload, log)
    spool = Spool(found)
    emptied, answer = spool.flush(found, deadline, log)
    if emptied:
        answer = deliver(found, entry, deadline, log)
        if answer.status == 200:
            out = answer.body.decode(errors="replace").strip()
            if host == "claude-code" and event == "SessionStart":
                out = _with_http_hook_check(out, payload, found, deadline)
            return out if out and out != "{}" else None
        if invalid(answer):
            spool.reject(entry, answer, log)
            return None
    spool.append(entry)
    sent = entry["body"]["pps"].get("transcript")
    if sent and sent["lines"]:
        remember_offset(found, sent["path"], sent["lines"][-1][0])  # the spool has them now
    why = answer.problem if answer is not None else "another hook is sending the spool"
    log.append(f"{waiting(spool.pending())} in the spool: {why}")
    if answer is not None and answer.status == 401:
        return refused(host, found, spool.pending(), answer.problem or "HTTP 401")
    return None


def waiting(calls: int) -> str:
    return "1 hook call waits" if calls == 1 else f"{calls} hook calls wait"


def refused(host: str, found: Setup, pending: int, problem: str) -> str:
    """What the host shows when the service refuses the token (Letta Code: the first
    line the agent gets)."""
    kept = f"; {waiting(pending)} in the spool for a token it takes" if pending else ""
    line = (
        f"pps: the service refused the token from {found.source} ({problem}): nothing is"
        f" recalled{kept}."
        " Install the hooks again with a valid --token-file (`pps doctor` checks each"
        " installed hook's token)."
    )
    return line if host == "letta-code" else json.dumps({"systemMessage": line})


def _with_http_hook_check(out: str, payload: dict[str, Any], found: Setup, deadline: float) -> str:
    """Claude Code's SessionStart: the line to show when an installed http hook (the
    user's settings, or the session's project's) sends a token other than ours and the
    service refuses it: every prompt's hook is then a 401 Claude Code shows nobody (a
    token rotated into the token file leaves the header written at install behind)."""
    home = os.path.expanduser("~")
    paths = [os.path.join(home, ".claude", "settings.json")]
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd:
        paths.append(os.path.join(cwd, ".claude", "settings.local.json"))
    for path in paths:
        for url, token, events in _http_hooks(path):
            if token == found.token:
                continue
            other = Setup(url, token, found.client_dir, found.budget_s)
            answer = request(other, "GET", "/v1/events?limit=1", None, deadline, "claude-code")
            if answer.status == 401:
                line = (
                    f"pps: the service at {url} refuses the token in the {', '.join(events)}"
                    f" http hook of {path} (401): prompts get no recall. Install the hooks"
                    " again (`pps hooks install claude-code --token-file FILE`)."
                )
                shown = json.loads(out) if out else {}
                return json.dumps({**shown, "systemMessage": line})
    return out


def _http_hooks(path: str) -> list[tuple[str, str, list[str]]]:
    """Our http hooks in a Claude Code settings file: (service, token, events)."""
    try:
        with open(path) as file:
            hooks = json.load(file).get("hooks")
    except (OSError, ValueError, AttributeError):
        return []
    found: dict[tuple[str, str], list[str]] = {}
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            for hook in group.get("hooks", []) if isinstance(group, dict) else ():
                if not isinstance(hook, dict) or hook.get("type") != "http":
                    continue
                url, headers = str(hook.get("url", "")), hook.get("headers")
                bearer = (
                    (headers or {}).get("Authorization", "") if isinstance(headers, dict) else ""
                )
                if urlsplit(url).path.rstrip("/").endswith(ROUTE + "claude-code") and bearer:
                    base = url.rstrip("/").removesuffix(ROUTE + "claude-code")
                    token = str(bearer).removeprefix("Bearer ").strip()
                    found.setdefault((base, token), []).append(event)
    return [(url, token, events) for (url, token), events in found.items()]


def main(argv: list[str] | None = None) -> None:
    """`hook.py EVENT [--host HOST]`: never blocks or breaks the host's session. An alarm
    ends the process at the budget (everything taken on is in the spool by then, or was
    never acknowledged to anyone); stdout carries only what the host reads."""
    args = sys.argv[1:] if argv is None else argv
    found = setup(dict(os.environ))
    remaining = found.budget_s - since_start()
    deadline = time.monotonic() + max(0.1, remaining * 0.9)
    signal.signal(signal.SIGALRM, lambda *_: os._exit(0))
    signal.setitimer(signal.ITIMER_REAL, max(0.1, remaining))
    event = args[0] if args else ""
    host = args[args.index("--host") + 1] if "--host" in args[:-1] else "claude-code"
    try:
        out = run(host, event, read_stdin(deadline), found, deadline)
    except Exception as exc:  # never break the session: say it in hooks.log
        write_log(found, f"{host} {event}", [f"{type(exc).__name__}: {exc}"])
        out = None
    signal.setitimer(signal.ITIMER_REAL, 0)
    if out:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
