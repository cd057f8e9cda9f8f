"""`pps mcp --profile NAME`: relay MCP's stdio transport to the running service's profile.

Clients such as Claude Code spawn a command at session start and wait for its answer to
`initialize`, so this must start in a fraction of a second: it imports only the standard
library and httpx, holds no tool definitions, and passes each JSON-RPC message as it is
to the profile's streamable HTTP endpoint with the entity's token. The profiles run
stateless with JSON responses, so every message is one POST that stands alone.

What the relay adds is only what a person or a model can act on, always as one line:
a refused token (`401: the token is not valid for <url>`) and a service that does not
answer. If the service is down at `initialize`, the relay answers it itself so the client
starts, with `tools.listChanged`; every later request is forwarded again, and fails with a
readable line until the service is back. Meanwhile the relay asks the service now and then
(`tools/list`, at most PROBE_MAX_S apart); once it answers, the relay sends the client
`notifications/tools/list_changed`, so it fetches the tools again (Claude Code does, since
2.1). The service's own JSON-RPC errors pass through unchanged.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO

import httpx

from engine.kernel import backoff
from engine.kernel.labels import CLIENT_HEADER
from ingest.http import service_client

RELAY_LABEL = "stdio-relay"
"""How the relay names itself to the service (with its host's MCP clientInfo name)."""
TOKEN_REFUSED = -32001
"""JSON-RPC error code for a token the service refuses."""
NOT_ANSWERING = -32000
"""JSON-RPC error code for a service that is down or answers something that is not MCP."""
IN_FLIGHT = 16
"""Most requests forwarded at once; more wait for one to finish."""
CALL_TIMEOUT = httpx.Timeout(120.0, connect=5.0)
INITIALIZE_TIMEOUT = httpx.Timeout(5.0)
"""A client waits for `initialize` only so long; past this the relay answers it itself."""
PROBE_FIRST_S = 0.5
PROBE_MAX_S = 5.0
"""While the service is down after `initialize`, it is asked again after PROBE_FIRST_S,
then twice as long each time, up to PROBE_MAX_S between two asks."""
LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}


class Unanswered(Exception):
    """The service gave no MCP answer; the message is the one line to show. `down`: it did
    not answer at all (as against answering something that is not MCP)."""

    def __init__(self, line: str, *, down: bool = False):
        super().__init__(line)
        self.down = down


class Relay:
    """One client's stdio and one profile URL; the HTTP connections are shared by the
    threads that forward messages, so a call does not pay for a new connection."""

    def __init__(self, url: str, token: str, name: str, version: str):
        self.url = url
        self.name = name
        self.version = version
        self.http = service_client(
            url,
            token,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                CLIENT_HEADER: RELAY_LABEL,
            },
            timeout=CALL_TIMEOUT,
        )
        self._write_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(IN_FLIGHT)
        self._closed = False
        self._initialized = threading.Event()
        """The client said `notifications/initialized`: it may be sent notifications."""
        self._ended = threading.Event()
        """stdin ended: the probe stops."""
        self._prober: threading.Thread | None = None

    # --- stdio ---

    def run(self, stdin: BinaryIO) -> None:
        """Read messages until EOF; each is forwarded on its own thread, so a ping is not
        queued behind a long tool call. Answers to requests already read are still
        written after EOF."""
        workers: list[threading.Thread] = []
        while line := stdin.readline():
            if not line.strip():
                continue
            self._slots.acquire()
            worker = threading.Thread(target=self._handle, args=(line,), daemon=True)
            worker.start()
            workers = [w for w in workers if w.is_alive()] + [worker]
        for worker in workers:
            worker.join()
        self._ended.set()
        if self._prober is not None:
            self._prober.join()
        self.http.close()

    def write(self, message: Any) -> None:
        """One message, one line on stdout, written whole. Past a closed stdout (the
        client went away) nothing more is written."""
        data = (json.dumps(message, ensure_ascii=False) + "\n").encode()
        with self._write_lock:
            if self._closed:
                return
            try:
                while data:
                    data = data[os.write(sys.stdout.fileno(), data) :]
            except OSError:
                self._closed = True

    # --- one message ---

    def _handle(self, line: bytes) -> None:
        try:
            try:
                message = json.loads(line)
            except ValueError:
                self.write(_error(None, -32700, "Parse error: a line that is not JSON"))
                return
            self._forward(message)
        except Exception as exc:  # a thread's traceback would reach stderr; say it in one line
            self._fail(_request_in(line), f"the pps relay failed: {type(exc).__name__}: {exc}")
        finally:
            self._slots.release()

    def _forward(self, message: Any) -> None:
        if isinstance(message, dict) and message.get("method") == "notifications/initialized":
            self._initialized.set()
        request_id = message.get("id") if _is_request(message) else None
        initialize = _is_request(message) and message["method"] == "initialize"
        try:
            answered = self._post(message, request_id, initialize)
        except Unanswered as exc:
            if initialize and exc.down:
                _warn(f"{exc}; calls will say so until it answers")
                self.write(self._local_initialize(message))
                self._probe_until_up()
                return
            if initialize:
                _warn(str(exc))
            self._fail(message, str(exc))  # a notification has nobody waiting: nothing
            return
        if request_id is not None and not answered:
            self._fail(message, f"the pps service at {self.url} ended without an answer")

    def _post(self, message: Any, request_id: Any, initialize: bool) -> bool:
        """POST one message; write what comes back. True once the request's answer was
        written. Raises Unanswered when there is nothing MCP to pass on."""
        timeout = INITIALIZE_TIMEOUT if initialize else CALL_TIMEOUT
        body = json.dumps(message).encode()
        answered = False
        try:
            with self.http.stream("POST", self.url, content=body, timeout=timeout) as response:
                if response.status_code == 401:
                    raise Unanswered(f"401: the token is not valid for {self.url}")
                if response.status_code in (502, 503, 504):
                    raise Unanswered(self._down(f" ({_status(response)})"), down=True)
                for reply in self._replies(response):
                    if _is_response(reply):
                        # Errors of the transport itself carry no id; this POST held one request.
                        if reply.get("id") is None and request_id is not None:
                            reply = {**reply, "id": request_id}
                        if initialize and "result" in reply:
                            self._negotiated(reply["result"])
                        answered |= reply.get("id") == request_id
                    self.write(reply)
        except httpx.TimeoutException:
            if answered:
                return True
            raise Unanswered(
                self._down(f" (no answer within {timeout.read:.0f} s)"), down=True
            ) from None
        except httpx.TransportError:
            if answered:
                return True
            raise Unanswered(self._down(), down=True) from None
        return answered

    def _replies(self, response: httpx.Response) -> Iterator[Any]:
        """The JSON-RPC messages in a response, as they arrive: a JSON body, or the `data:`
        of each event of an event stream. Nothing for 202 (a notification). Raises
        Unanswered for a body that is not JSON-RPC (a proxy's page, a problem document)."""
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            data: list[str] = []
            for line in itertools.chain(response.iter_lines(), [""]):
                if line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
                elif not line and data:
                    yield self._jsonrpc("\n".join(data).encode(), response)
                    data = []
        elif raw := response.read().strip():
            yield self._jsonrpc(raw, response)
        elif not response.is_success:
            raise Unanswered(f"the pps service at {self.url} answered {_status(response)}")

    def _jsonrpc(self, raw: bytes, response: httpx.Response) -> Any:
        try:
            reply = json.loads(raw)
        except ValueError:
            reply = None
        if (isinstance(reply, list) and all(map(_is_jsonrpc, reply))) or _is_jsonrpc(reply):
            return reply
        raise Unanswered(
            f"the pps service at {self.url} answered {_status(response)}"
            " with something that is not JSON-RPC"
        )

    def _negotiated(self, result: Any) -> None:
        """Later requests carry the protocol version the service chose, as MCP asks."""
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(version, str):
            self.http.headers["mcp-protocol-version"] = version

    def _local_initialize(self, message: dict[str, Any]) -> dict[str, Any]:
        """The answer to `initialize` while the service is down: the client's own protocol
        version (no header is sent for it, so the service will assume its default)."""
        params = message.get("params") or {}
        return {
            "jsonrpc": "2.0",
            "id": message["id"],
            "result": {
                "protocolVersion": params.get("protocolVersion", "2025-03-26"),
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": self.name, "version": self.version},
            },
        }

    def _probe_until_up(self) -> None:
        """Ask the service, on a thread of its own, until it lists its tools; then tell the
        client (once it is initialized) that the list changed. A refused token is said on
        stderr and ends the asking (the client hears it at its next call)."""
        if self._prober is not None:
            return

        def probe() -> None:
            waits = backoff.waits(PROBE_FIRST_S, PROBE_MAX_S)
            while not self._ended.wait(next(waits)):
                try:
                    if not self._lists_tools():
                        continue
                except Unanswered as refused:
                    _warn(str(refused))
                    return
                while not self._initialized.is_set():
                    if self._ended.wait(PROBE_FIRST_S):
                        return
                self.write(LIST_CHANGED)
                return

        self._prober = threading.Thread(target=probe, name="pps-relay-probe", daemon=True)
        self._prober.start()

    def _lists_tools(self) -> bool:
        """Whether the service answers `tools/list` now. Raises Unanswered for a refused
        token (the service is up, and will not list them for this one)."""
        body = json.dumps({"jsonrpc": "2.0", "id": "pps-relay-probe", "method": "tools/list"})
        try:
            with self.http.stream(
                "POST", self.url, content=body.encode(), timeout=INITIALIZE_TIMEOUT
            ) as response:
                status = response.status_code
                listed = response.is_success and any(
                    _is_response(reply) and "result" in reply for reply in self._replies(response)
                )
        except (httpx.HTTPError, Unanswered):  # down, or something that is not MCP yet
            return False
        if status == 401:
            raise Unanswered(f"401: the token is not valid for {self.url}")
        return listed

    def _fail(self, message: Any, line: str) -> None:
        """Tell the client a request failed: a tool call gets a tool error, which the model
        reads; any other request gets a JSON-RPC error with the same line."""
        if not _is_request(message):
            return
        if message["method"] == "tools/call":
            result = {"content": [{"type": "text", "text": line}], "isError": True}
            self.write({"jsonrpc": "2.0", "id": message["id"], "result": result})
        else:
            code = TOKEN_REFUSED if line.startswith("401") else NOT_ANSWERING
            self.write(_error(message["id"], code, line))

    def _down(self, why: str = "") -> str:
        return f"the pps service at {self.url} is not answering{why}"


def relay(url: str, token: str, name: str, version: str) -> None:
    """Relay stdin/stdout to the profile at `url` until stdin ends. Ctrl-C ends it quietly
    (SIGTERM's default already does: it prints nothing)."""
    with contextlib.suppress(KeyboardInterrupt):
        Relay(url, token, name, version).run(sys.stdin.buffer)


def _is_request(message: Any) -> bool:
    return isinstance(message, dict) and "method" in message and message.get("id") is not None


def _is_response(message: Any) -> bool:
    return isinstance(message, dict) and ("result" in message or "error" in message)


def _is_jsonrpc(message: Any) -> bool:
    return isinstance(message, dict) and message.get("jsonrpc") == "2.0"


def _request_in(line: bytes) -> Any:
    """The message in `line` if it is a request (to answer it after a failure), else None."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if _is_request(message) else None


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _status(response: httpx.Response) -> str:
    return f"{response.status_code} {response.reason_phrase}".strip()


def _warn(line: str) -> None:
    sys.stderr.write(f"pps mcp: {line}\n")
    sys.stderr.flush()
