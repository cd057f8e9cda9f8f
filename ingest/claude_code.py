"""Claude Code: the hooks (`pps hook <event>`) and the reading of its session transcripts.

The formats, from the Claude Code hooks reference (code.claude.com/docs/en/hooks):
every hook gets one JSON object on stdin with `session_id`, `transcript_path`, `cwd`,
`permission_mode` and `hook_event_name`, plus `source` (startup|resume|clear|compact) for
SessionStart, `prompt` for UserPromptSubmit, `stop_hook_active` for Stop, `trigger`
(manual|auto) and `custom_instructions` for PreCompact, `reason` for SessionEnd. On exit 0,
SessionStart and UserPromptSubmit add context to the conversation; we print it as
`{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`, which cannot be
mistaken for anything else whatever the context says. Any hook's `systemMessage` is a line
Claude Code shows the user: ours says the service refused the token (a 401).
A transcript is JSONL: one record a line with `type` (user, assistant, and others that
are not turns), `uuid`, `sessionId`, `timestamp`, `cwd`, `gitBranch`, `isSidechain`,
`isMeta`, and `message` whose `content` is a string or a list of blocks (`text`,
`tool_use`, `tool_result`, `thinking`, ...).

What each hook does (all of them within PPS_HOOK_BUDGET_S, exit 0, whatever happens):
- SessionStart: records a `session_start` event; prints recall("startup").
- UserPromptSubmit: captures the prompt; prints recall(prompt), which never returns the
  prompt itself (it names the prompt's event as the one it is answering).
Both recalls say where they are (channel `terminal:claude`, the session), so this session's turns
are not "news from other channels", and ask for at most PPS_HOOK_MAX_CHARS characters.
The `session_start`, `pre_compact` and `session_end` events are markers: stored, never
recalled as turns (engine.capture.markers).
- Stop: captures the turns written to the transcript since the last capture; the position
  is kept per session, so each line is read once.
- PreCompact, SessionEnd: the same, then an event that closes the episode window.
Everything captured is spooled before anything is sent (see ingest.client). Text wrapped
in `<private>…</private>` is stripped from the prompt and from every transcript turn
before anything is derived from it (engine.kernel.private): never stored, spooled or sent.

Uids: an assistant turn is `cc:<line uuid>`. A user turn is `cc:<session>:u:<hash of the
text>:<n>` (its n-th occurrence in the session), because the prompt hook sees the text
before the transcript line exists; the Stop hook and the importer derive the same uid from
the transcript, so a prompt is stored once however it arrives.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import select
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.kernel import limits, private, timestamps
from engine.kernel.config import ClientSettings
from engine.kernel.errors import InputError
from engine.kernel.files import ensure_private_dir
from engine.kernel.requests import is_blank
from ingest import events as ev
from ingest.client import Client, client_dir

CHANNEL = "terminal:claude"
SOURCE = "claude-code"
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd")
SESSION_MAX = 256
"""Longest session id taken (what events and recall take)."""
MAX_READ = 64 * 1024 * 1024
"""Most transcript bytes one hook reads; the rest waits for the next hook."""
_PLUMBING = ("<command-", "<local-command-")
"""User lines that are slash-command plumbing written by Claude Code, not what was typed."""


def canonical(event: str) -> str | None:
    """`SessionStart`, `session-start` and `session_start` all name SessionStart."""
    wanted = event.replace("-", "").replace("_", "").lower()
    return next((name for name in EVENTS if name.lower() == wanted), None)


# --- transcripts ---------------------------------------------------------------------------


def user_turn_uid(session: str, text: str, occurrence: int) -> str:
    digest = hashlib.sha256(text.strip().encode()).hexdigest()[:16]
    return ev.uid("cc", session, "u", digest, occurrence)


@dataclass
class Occurrences:
    """How often each user text has been seen in each session (for user-turn uids)."""

    seen: dict[str, dict[str, int]] = field(default_factory=dict)

    def next(self, session: str, text: str) -> int:
        counts = self.seen.setdefault(session, {})
        key = hashlib.sha256(text.strip().encode()).hexdigest()[:16]
        counts[key] = counts.get(key, 0) + 1
        return counts[key] - 1


def turn_events(
    record: Any, occurrences: Occurrences, *, session: str | None, max_bytes: int
) -> list[dict[str, Any]]:
    """The events one transcript record holds: none for lines that are not turns (tool
    results, system lines, sidechains, meta), else the turn, cut to `max_bytes` parts.
    Raises ValueError naming what is wrong with a record that should be a turn."""
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    kind = record.get("type")
    if kind not in ("user", "assistant"):
        return []
    if record.get("isSidechain") or record.get("isMeta") or record.get("isCompactSummary"):
        return []
    message = record.get("message")
    if not isinstance(message, dict):
        raise ValueError("missing field message")
    text = private.strip(_text(message.get("content")))  # before the uid is derived from it
    if not text.strip() or (kind == "user" and text.lstrip().startswith(_PLUMBING)):
        return []
    line_uuid = record.get("uuid")
    if not isinstance(line_uuid, str) or not line_uuid:
        raise ValueError("missing field uuid")
    session = record.get("sessionId") or session
    if not isinstance(session, str) or not session:
        raise ValueError("missing field sessionId")
    moment = record.get("timestamp")
    created_at = timestamps.normalise(moment) if moment is not None else None
    metadata = {"source": SOURCE, "transcript_uuid": line_uuid}
    for key, name in (("cwd", "cwd"), ("gitBranch", "git_branch")):
        if isinstance(record.get(key), str) and record[key]:
            metadata[name] = record[key]
    if kind == "assistant":
        uid = ev.uid("cc", line_uuid)
        if isinstance(message.get("model"), str):
            metadata["model"] = message["model"]
    else:
        uid = user_turn_uid(session, text, occurrences.next(session, text))
    event = {
        "event_uid": uid,
        "channel": CHANNEL,
        "event_type": "message",
        "role": kind,
        "content": text,
        "session_id": session,
        "created_at": created_at,
        "metadata": metadata,
    }
    return ev.split(event, max_bytes)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ]
        return "\n\n".join(texts)
    if content is None:
        raise ValueError("missing field message.content")
    raise ValueError("message.content is neither text nor a list of blocks")


# --- per-session state ---------------------------------------------------------------------


@dataclass
class SessionState:
    """Where the last capture of a session's transcript stopped, and the occurrence counts
    of user texts from the transcript (`lines`) and from the prompt hook (`prompts`).
    (ingest.letta_code keeps a working directory's state here too: `transcript` the
    conversation of its last prompt, `asked` that of each recent prompt, by its digest.)"""

    transcript: str | None = None
    offset: int = 0
    lines: dict[str, dict[str, int]] = field(default_factory=dict)
    prompts: dict[str, dict[str, int]] = field(default_factory=dict)
    asked: dict[str, str] = field(default_factory=dict)


class Sessions:
    """Session states, one small 0600 JSON file each, written atomically."""

    def __init__(self, directory: Path):
        self.directory = directory

    def path(self, session: str) -> Path:
        name = hashlib.sha256(session.encode()).hexdigest()[:32]
        return self.directory / f"{name}.json"

    @contextlib.contextmanager
    def edit(self, session: str) -> Iterator[SessionState]:
        """Read, change and write back one session's state under a lock."""
        ensure_private_dir(self.directory)
        path = self.path(session)
        fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                state = SessionState(**json.loads(path.read_text()))
            except (FileNotFoundError, ValueError, TypeError):
                state = SessionState()
            yield state
            temporary = path.with_suffix(".tmp")
            temporary.write_text(json.dumps(state.__dict__))
            temporary.chmod(0o600)
            os.replace(temporary, path)
        finally:
            os.close(fd)


def read_new_turns(
    state: SessionState, transcript: Path, session: str, max_bytes: int
) -> tuple[list[dict[str, Any]], list[str]]:
    """The turns in complete lines written since `state.offset` (advanced past them), and
    the problems of lines that could not be read (skipped, never retried)."""
    if state.transcript != str(transcript) or state.offset > transcript.stat().st_size:
        state.transcript, state.offset, state.lines = str(transcript), 0, {}
    with open(transcript, "rb") as file:
        file.seek(state.offset)
        data = file.read(MAX_READ)
    complete = data[: data.rfind(b"\n") + 1]
    occurrences = Occurrences(state.lines)
    found, problems = [], []
    for number, raw in enumerate(complete.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            found += turn_events(json.loads(raw), occurrences, session=session, max_bytes=max_bytes)
        except ValueError as exc:
            problems.append(f"{transcript.name} (+{number} lines): {exc}")
    state.offset += len(complete)
    return found, problems


# --- what a hook takes and answers, wherever it runs ---------------------------------------
# The command hook (below) and the service's route for Claude Code's http hooks
# (pps.rest.hooks) build the same events and answer in the same shape from these.


TEXT_FIELDS = ("transcript_path", "cwd", "prompt", "source", "model")
"""Payload fields we read: text when present (null is absent: Codex sends a null
transcript_path)."""


def check_payload(payload: Any, event: str | None = None) -> str:
    """The event a Claude Code hook payload is for: `event` (a name `canonical` knows),
    else its `hook_event_name`, exactly as Claude Code writes it. Raises InputError
    naming the field that makes it no Claude Code hook payload."""
    if not isinstance(payload, dict):
        raise InputError.of("body", "a Claude Code hook sends a JSON object")
    session = payload.get("session_id")
    if not isinstance(session, str) or is_blank(session):
        raise InputError.of("session_id", "missing; a Claude Code hook payload names its session")
    if len(session) > SESSION_MAX:
        raise InputError.of("session_id", f"{len(session)} characters; at most {SESSION_MAX}")
    for name in TEXT_FIELDS:
        if payload.get(name) is not None and not isinstance(payload[name], str):
            raise InputError.of(name, f"{type(payload[name]).__name__}; expected text")
    named = payload.get("hook_event_name") if event is None else canonical(event)
    if named not in EVENTS:
        raise InputError.of("hook_event_name", f"{named!r} is none of {', '.join(EVENTS)}")
    return named


def session_of(payload: dict[str, Any]) -> str:
    value = payload.get("session_id")
    return value if isinstance(value, str) and value else "unknown-session"


def marker(
    payload: dict[str, Any], hook: str, event_type: str, uid: str, content: str, **metadata: Any
) -> dict[str, Any]:
    """An event of this session that the hook `hook` records (a marker, or the prompt)."""
    metadata = {"source": SOURCE, "hook": hook, **metadata}
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd:
        metadata["cwd"] = cwd
    return {
        "event_uid": uid,
        "channel": CHANNEL,
        "event_type": event_type,
        "content": content,
        "session_id": session_of(payload),
        "created_at": timestamps.now(),
        "metadata": metadata,
    }


def start_marker(payload: dict[str, Any]) -> dict[str, Any]:
    """The `session_start` event of a SessionStart payload."""
    source = str(payload.get("source") or "startup")
    session = session_of(payload)
    model = payload.get("model")
    return marker(
        payload,
        "SessionStart",
        "session_start",
        ev.uid("cc", session, "start", source, time.time_ns() // 1_000_000),
        f"Claude Code session started ({source})",
        start_source=source,
        **({"model": model} if isinstance(model, str) else {}),
    )


def prompt_text(payload: dict[str, Any]) -> str | None:
    """The prompt of a UserPromptSubmit payload without its private text (never stored,
    nor recalled for), None when there is nothing left to capture."""
    prompt = payload.get("prompt")
    prompt = private.strip(prompt) if isinstance(prompt, str) else None
    return prompt if prompt is not None and prompt.strip() else None


def prompt_events(payload: dict[str, Any], occurrence: int, max_bytes: int) -> list[dict[str, Any]]:
    """The prompt's event (in parts when long): its uid is the one the transcript sweep
    derives for the prompt's `occurrence`-th time in the session (`user_turn_uid`)."""
    prompt = prompt_text(payload)
    if prompt is None:  # the callers ask prompt_text first
        raise ValueError("a UserPromptSubmit payload without a prompt to capture")
    session = session_of(payload)
    event = marker(
        payload, "UserPromptSubmit", "message", user_turn_uid(session, prompt, occurrence), prompt
    )
    event["role"] = "user"
    return ev.split(event, max_bytes)


def recall_request(
    payload: dict[str, Any], context: str, max_chars: int, **fields: Any
) -> dict[str, Any]:
    """The body of POST /v1/recall for this session: where the hook is (so its session
    is not news from elsewhere) and how much it may inject; `answering` for a prompt."""
    return {
        "context": context[: limits.CONTEXT_MAX_CHARS],
        "channel": CHANNEL,
        "session_id": session_of(payload),
        "max_chars": max_chars,
        **fields,
    }


def answering(parts: list[dict[str, Any]]) -> list[str]:
    """The uids a prompt's recall must not return: every part of the prompt."""
    return [part["event_uid"] for part in parts][: limits.ANSWERING_MAX]


def hook_output(event: str, context: str | None, warning: str | None = None) -> dict[str, Any]:
    """What a hook answers: the context to add (SessionStart, UserPromptSubmit), in the
    one shape that cannot be mistaken for anything else whatever the context says, and a
    `warning` Claude Code shows the user (`systemMessage`); `{}` when there is neither."""
    output: dict[str, Any] = {}
    if context is not None:
        output["hookSpecificOutput"] = {"hookEventName": event, "additionalContext": context}
    if warning is not None:
        output["systemMessage"] = warning
    return output


def token_refused(problem: str, source: str, pending: int) -> str:
    """The line Claude Code shows the user when the service refuses the hook's token."""
    waiting = f"; {pending} events wait in the spool for a token it takes" if pending else ""
    return (
        f"pps: the service refused the token from {source} ({problem}): nothing is recalled"
        f"{waiting}. Install the hooks again with a valid --token-file (`pps doctor` checks"
        " each installed hook's token)."
    )


# --- the command hooks ---------------------------------------------------------------------


@dataclass
class Hook:
    event: str
    payload: dict[str, Any]
    settings: ClientSettings
    client: Client
    sessions: Sessions
    deadline: float
    problems: list[str] = field(default_factory=list)

    @property
    def session(self) -> str:
        return session_of(self.payload)

    def marker(self, event_type: str, uid: str, content: str, **metadata: Any) -> dict[str, Any]:
        return marker(self.payload, self.event, event_type, uid, content, **metadata)

    def transcript_turns(self) -> tuple[list[dict[str, Any]], int]:
        """New turns from the transcript, and the offset after them."""
        path = self.payload.get("transcript_path")
        if not isinstance(path, str) or not path:
            return [], 0
        transcript = Path(path).expanduser()
        if not transcript.is_file():
            self.problems.append(f"transcript {transcript} not found")
            return [], 0
        with self.sessions.edit(self.session) as state:
            found, problems = read_new_turns(
                state, transcript, self.session, self.settings.max_content_bytes
            )
            self.client.spool.append(found)  # before the state moves past them
            offset = state.offset
        self.problems += problems
        return found, offset


def session_start(hook: Hook) -> str | None:
    hook.client.spool.append([start_marker(hook.payload)])
    return _recall_while_flushing(hook, _recall_request(hook, "startup"))


def user_prompt_submit(hook: Hook) -> str | None:
    prompt = prompt_text(hook.payload)
    if prompt is None:
        _flush(hook)
        return None
    with hook.sessions.edit(hook.session) as state:
        occurrence = Occurrences(state.prompts).next(hook.session, prompt)
        parts = prompt_events(hook.payload, occurrence, hook.settings.max_content_bytes)
        hook.client.spool.append(parts)
    request = _recall_request(hook, prompt, answering=answering(parts))
    return _recall_while_flushing(hook, request)


def stop(hook: Hook) -> None:
    hook.transcript_turns()
    _flush(hook)


def pre_compact(hook: Hook) -> None:
    _close_window(hook, "pre_compact", "compact", "Context compaction", "trigger")


def session_end(hook: Hook) -> None:
    _close_window(hook, "session_end", "end", "Claude Code session ended", "reason")


def _close_window(hook: Hook, event_type: str, tag: str, text: str, detail: str) -> None:
    """Capture what remains, then mark the end of the episode window (the uid is tied to
    the transcript position, so a hook that fires twice there marks it once)."""
    _, offset = hook.transcript_turns()
    why = hook.payload.get(detail)
    why = why if isinstance(why, str) and why else "other"
    metadata = {detail: why, "closes_window": True}
    instructions = private.strip(str(hook.payload.get("custom_instructions") or ""))
    if event_type == "pre_compact" and instructions.strip():  # what the user typed
        metadata["custom_instructions"] = instructions
    marker = hook.marker(
        event_type, ev.uid("cc", hook.session, tag, why, offset), f"{text} ({why})", **metadata
    )
    hook.client.spool.append([marker])
    _flush(hook)


HANDLERS = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt_submit,
    "Stop": stop,
    "PreCompact": pre_compact,
    "SessionEnd": session_end,
}


def _flush(hook: Hook) -> None:
    try:
        result = hook.client.flush(deadline=hook.deadline, wait=False)
    except Exception as exc:  # in a thread too: report it, never print it
        hook.problems.append(f"flush failed: {type(exc).__name__}: {exc}")
        return
    if result.error and result.pending:
        hook.problems.append(f"{result.pending} events wait in the spool: {result.error}")


def _recall_request(hook: Hook, context: str, **fields: Any) -> dict[str, Any]:
    return recall_request(hook.payload, context, hook.settings.hook_max_chars, **fields)


def _recall_while_flushing(hook: Hook, request: dict[str, Any]) -> str | None:
    """Ask for recall while the spool is sent: both share the budget, neither waits on
    the other. The context to add, or None."""
    flusher = threading.Thread(target=_flush, args=(hook,), daemon=True)
    flusher.start()
    text = _recall(hook, request)
    flusher.join(max(0.0, hook.deadline - time.monotonic()))
    return text


def _recall(hook: Hook, request: dict[str, Any]) -> str | None:
    """The block recall formats, or None (no recall endpoint, down, slow, refused). The
    service keeps it within max_chars; cutting it here too holds the promise against a
    service that does not."""
    text, refused = hook.client.recall(request, deadline=hook.deadline)
    if refused is not None:
        hook.problems.append(f"recall refused: {refused}")
    return None if text is None else text[: hook.settings.hook_max_chars]


# --- the command ---------------------------------------------------------------------------


HttpHookCheck = Callable[[dict[str, Any], str, float], str | None]
"""(payload, this hook's client identity, deadline) -> the line to show about an
installed http hook whose token the service refuses, or None (ingest.claude_settings
reads the settings files; `pps hook` hands it in)."""


def read_payload(
    event: str, stdin: bytes, check: Callable[[Any, str], str], what: str
) -> tuple[str, dict[str, Any]]:
    """The event a hook's stdin is for, and its payload, read by a host's `check`
    (`check_payload` here). Raises ValueError naming what is wrong."""
    if canonical(event) is None:
        raise ValueError(f"unknown hook event {event!r}; known: {', '.join(EVENTS)}")
    payload = json.loads(stdin)
    try:
        return check(payload, event), payload
    except ValueError as exc:
        raise ValueError(f"the hook input is not {what} JSON ({exc})") from None


def handle(
    hook: Hook, handlers: Mapping[str, Callable[[Hook], str | None]], tag: str
) -> str | None:
    """Run the hook's handler; what it could not do goes to hooks.log under `tag`."""
    try:
        return handlers[hook.event](hook)
    finally:
        if hook.problems:
            log(hook.settings, tag, "; ".join(hook.problems))


def refused_warning(client: Client, settings: ClientSettings) -> str | None:
    """The line to show when the service refused the hook's token, else None."""
    if client.refused is None:
        return None
    source = str(settings.token_file) if settings.token_file else "PPS_TOKEN"
    return token_refused(client.refused, source, client.spool.pending())


def run(
    event: str,
    stdin: bytes,
    settings: ClientSettings,
    deadline: float,
    check_http_hook: HttpHookCheck | None = None,
) -> str | None:
    """Run one hook; return what to print (None: nothing). SessionStart also asks
    `check_http_hook`, unless its own token was refused. Raises on any failure: the
    caller logs it and still exits 0."""
    name, payload = read_payload(event, stdin, check_payload, "a Claude Code hook's")
    with Client.from_settings(settings, label=SOURCE) as client:
        sessions = Sessions(client_dir(settings) / f"claude-code-{client.identity}")
        hook = Hook(name, payload, settings, client, sessions, deadline)
        context = handle(hook, HANDLERS, name)
        warning = refused_warning(client, settings)
        if warning is None and name == "SessionStart" and check_http_hook is not None:
            try:
                warning = check_http_hook(payload, client.identity, deadline)
            except Exception as exc:  # the context to add still goes out
                log(settings, name, f"checking the http hook: {type(exc).__name__}: {exc}")
        output = hook_output(name, context, warning)
        return json.dumps(output, ensure_ascii=False) if output else None


Runner = Callable[[str, bytes, ClientSettings, float], str | None]
"""(event, stdin, settings, deadline) -> what to print: one host's hook (`run` here,
Claude Code's; ingest.codex and ingest.letta_code have theirs)."""


def main(
    event: str,
    settings: ClientSettings,
    check_http_hook: HttpHookCheck | None = None,
    runner: Runner | None = None,
) -> None:
    """`pps hook <event>`: never blocks or breaks the session. A watchdog ends the process
    at the budget (everything taken on is in the spool by then, or was never acknowledged
    to anyone); any failure is logged to <client dir>/hooks.log, and stdout carries only
    the context to inject and, for a refused token, the line Claude Code shows the user."""
    budget = settings.hook_budget_s
    started = time.monotonic()
    watchdog = threading.Timer(budget, os._exit, args=(0,))
    watchdog.daemon = True
    watchdog.start()
    deadline = started + budget * 0.9
    try:
        stdin = read_stdin(deadline)
        if runner is None:
            output = run(event, stdin, settings, deadline, check_http_hook)
        else:
            output = runner(event, stdin, settings, deadline)
    except Exception as exc:
        log(settings, event, f"{type(exc).__name__}: {exc}")
        return
    if output:
        sys.stdout.write(output + "\n")
        sys.stdout.flush()


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


def log(settings: ClientSettings, event: str, message: str) -> None:
    """One line in <client dir>/hooks.log (0600; the previous log is kept as hooks.log.1
    past 1 MB). Never raises: a hook's last resort must not fail."""
    try:
        directory = ensure_private_dir(client_dir(settings))
        path = directory / "hooks.log"
        if path.exists() and path.stat().st_size > 1 << 20:
            os.replace(path, directory / "hooks.log.1")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{timestamps.now()} {event}: {message}\n".encode())
        finally:
            os.close(fd)
    except OSError:
        pass
