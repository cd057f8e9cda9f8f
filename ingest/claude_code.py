"""Claude Code: its hooks' payloads, what each hook stores and recalls, and the reading of
its session transcripts.

The formats, from the Claude Code hooks reference (code.claude.com/docs/en/hooks):
every hook gets one JSON object on stdin with `session_id`, `transcript_path`, `cwd`,
`permission_mode` and `hook_event_name`, plus `source` (startup|resume|clear|compact) for
SessionStart, `prompt` for UserPromptSubmit, `stop_hook_active` for Stop, `trigger`
(manual|auto) and `custom_instructions` for PreCompact, `reason` for SessionEnd. On exit 0,
SessionStart and UserPromptSubmit add context to the conversation; we answer
`{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`, which cannot be
mistaken for anything else whatever the context says. Any hook's `systemMessage` is a line
Claude Code shows the user: ours says the service refused the token (a 401).
A transcript is JSONL: one record a line with `type` (user, assistant, and others that
are not turns), `uuid`, `sessionId`, `timestamp`, `cwd`, `gitBranch`, `isSidechain`,
`isMeta`, and `message` whose `content` is a string or a list of blocks (`text`,
`tool_use`, `tool_result`, `thinking`, ...).

The service does each hook's work (POST /v1/hooks/claude-code, pps.rest.hooks), from the
payload and what the hook client (ingest.hook) adds to it: the transcript's lines written
since the last capture (only the client's machine can read the transcript), a call id and
the moment the host fired the hook. What each hook does:
- SessionStart: records a `session_start` event; answers recall("startup").
- UserPromptSubmit: captures the prompt; answers recall(prompt), which never returns the
  prompt itself (it names the prompt's event as the one it is answering).
Both recalls say where they are (channel `terminal:claude`, the session), so this session's turns
are not "news from other channels", and ask for at most PPS_HOOK_MAX_CHARS characters.
The `session_start`, `pre_compact` and `session_end` events are markers: stored, never
recalled as turns (engine.capture.markers).
- Stop: captures the turns in the transcript lines the client sent; the service keeps the
  position per session, so each line is stored once however often it is sent.
- PreCompact, SessionEnd: the same, then an event that closes the episode window (none
  for a session nothing was ever stored of: `claude mcp list` ends sessions it never
  started).
Text wrapped in `<private>…</private>` is stripped from the prompt and from every
transcript turn before anything is derived from it (engine.kernel.private): never stored.

Uids: an assistant turn is `cc:<line uuid>`. A user turn is `cc:<session>:u:<hash of the
text>:<n>` (its n-th occurrence in the session), because the prompt hook sees the text
before the transcript line exists; the transcript sweep and the importer derive the same
uid from the transcript, so a prompt is stored once however it arrives. A call the client
sends again (from its spool) gets the uids it got the first time.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, ValidationError, model_validator

from engine.kernel import limits, private, timestamps
from engine.kernel.errors import Conflict, InputError, from_validation
from engine.kernel.requests import Request, is_blank
from engine.kernel.timestamps import Moment
from ingest import events as ev
from ingest.hook import EVENTS, TRANSCRIPT_EVENTS, canonical

CALL_ID = r"^[A-Za-z0-9_-]{1,64}$"
"""A hook call's id, as the hook client makes it."""
CHANNEL = "terminal:claude"
SOURCE = "claude-code"
SESSION_MAX = 256
"""Longest session id taken (what events and recall take)."""
_PLUMBING = ("<command-", "<local-command-")
"""User lines that are slash-command plumbing written by Claude Code, not what was typed."""


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


# --- per-session state (kept by the service: engine.capture.hook_sessions) ---------------


HANDLED_KEPT = 64
"""How many recent calls of a session remember the occurrence they were given."""


@dataclass
class SessionState:
    """Where the transcript capture of a session stopped (`transcript`, `offset`), the
    occurrence counts of user texts from the transcript (`lines`) and from the prompt hook
    (`prompts`), and the occurrence each recent call was given (`handled`, by call id).
    (ingest.letta_code keeps a working directory's state here too: `transcript` the
    conversation of its last prompt, `asked` that of each recent prompt, by its digest.)"""

    transcript: str | None = None
    offset: int = 0
    lines: dict[str, dict[str, int]] = field(default_factory=dict)
    prompts: dict[str, dict[str, int]] = field(default_factory=dict)
    asked: dict[str, str] = field(default_factory=dict)
    handled: dict[str, int] = field(default_factory=dict)
    agent: str | None = None
    """Letta Code: the agent a conversation's prompts were asked of; under the key
    `agent`, the one the hooks serve."""

    @classmethod
    def of(cls, stored: Mapping[str, Any]) -> SessionState:
        known = {name: stored[name] for name in cls.__dataclass_fields__ if name in stored}
        return cls(**known)


def occurrence(state: SessionState, session: str, text: str, call: str | None) -> int:
    """The n of a prompt's uid: how often the session's prompts held this text before.
    A call handled before (its id in `handled`) gets the n it got then."""
    if call is not None and call in state.handled:
        return state.handled[call]
    n = Occurrences(state.prompts).next(session, text)
    if call is not None:
        state.handled[call] = n
        state.handled = dict(list(state.handled.items())[-HANDLED_KEPT:])
    return n


class Chunk(Request):
    """Transcript lines a hook client read: from byte `start` of the file, each line with
    the byte it ends at (its private text already stripped by the client, so a line's
    text is not always its bytes), and the file's size then."""

    path: str = Field(min_length=1, description="The transcript's path on the client.")
    start: int = Field(ge=0, description="The byte the first line starts at.")
    size: int = Field(ge=0, description="The file's size when it was read.")
    lines: list[tuple[Annotated[int, Field(ge=0)], str]] = Field(
        description="[end byte, line] each, each line ending past the one before."
    )

    @model_validator(mode="after")
    def _in_order(self) -> Chunk:
        ends = [self.start, *(end for end, _ in self.lines)]
        if any(later <= earlier for earlier, later in itertools.pairwise(ends)):
            raise ValueError("each line ends past the one before it")
        return self


class TranscriptGap(Conflict):
    """The client sent lines from past where the service stopped (`offset`): it sends
    again from there, so that no line is skipped and every count stays right."""

    def __init__(self, offset: int):
        self.offset = offset
        super().__init__(
            f"the service has this transcript up to byte {offset}: send it from there",
            field="pps.transcript.start",
        )


def read_new_turns(
    state: SessionState, chunk: Chunk, session: str, max_bytes: int
) -> tuple[list[dict[str, Any]], list[str]]:
    """The turns in the lines of `chunk` past `state.offset` (advanced past them), and the
    problems of lines that could not be read (skipped, never retried). A transcript other
    than the state's, or one shorter than its offset, is read from its start. Raises
    TranscriptGap for lines past the offset."""
    if state.transcript != chunk.path or state.offset > chunk.size:
        state.transcript, state.offset, state.lines = chunk.path, 0, {}
    occurrences = Occurrences(state.lines)
    found, problems = [], []
    name, start = Path(chunk.path).name, chunk.start
    for number, (end, text) in enumerate(chunk.lines, 1):
        line_start, start = start, end
        if end <= state.offset:
            continue  # sent before (again, from the client's spool)
        if line_start > state.offset:
            raise TranscriptGap(state.offset)
        state.offset = end
        if not text.strip():
            continue
        try:
            found += turn_events(
                json.loads(text), occurrences, session=session, max_bytes=max_bytes
            )
        except ValueError as exc:
            problems.append(f"{name} (+{number} lines): {exc}")
    return found, problems


# --- what a hook takes and answers ----------------------------------------------------------


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
    return event_named(payload, "hook_event_name", event)


def event_named(payload: dict[str, Any], field: str, event: str | None) -> str:
    """The event a call is for: `event` (as the command names it, a name `canonical`
    knows), else the payload's `field`; either, where given, one of EVENTS."""
    given = payload.get(field)
    if given is not None and given not in EVENTS:
        raise InputError.of(field, f"{given!r} is none of {', '.join(EVENTS)}")
    named = given if event is None else canonical(event)
    if named not in EVENTS:
        raise InputError.of(field, f"{named!r} is none of {', '.join(EVENTS)}")
    return named


def session_of(payload: dict[str, Any]) -> str:
    value = payload.get("session_id")
    return value if isinstance(value, str) and value else "unknown-session"


def marker(
    payload: dict[str, Any],
    hook: str,
    event_type: str,
    uid: str,
    content: str,
    sent: Sent,
    **metadata: Any,
) -> dict[str, Any]:
    """An event of this session that the hook `hook` records (a marker, or the prompt),
    at the moment the host fired the hook when the client says when (a call sent again
    from its spool keeps its time), else now."""
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
        "created_at": sent.at or timestamps.now(),
        "metadata": metadata,
    }


def start_marker(payload: dict[str, Any], sent: Sent) -> dict[str, Any]:
    """The `session_start` event of a SessionStart payload."""
    source = str(payload.get("source") or "startup")
    session = session_of(payload)
    model = payload.get("model")
    return marker(
        payload,
        "SessionStart",
        "session_start",
        ev.uid("cc", session, "start", source, sent.stamp),
        f"Claude Code session started ({source})",
        sent,
        start_source=source,
        **({"model": model} if isinstance(model, str) else {}),
    )


def prompt_text(payload: dict[str, Any]) -> str | None:
    """The prompt of a UserPromptSubmit payload without its private text (never stored,
    nor recalled for), None when there is nothing left to capture."""
    prompt = payload.get("prompt")
    prompt = private.strip(prompt) if isinstance(prompt, str) else None
    return prompt if prompt is not None and prompt.strip() else None


def prompt_events(
    payload: dict[str, Any], occurrence: int, max_bytes: int, sent: Sent
) -> list[dict[str, Any]]:
    """The prompt's event (in parts when long): its uid is the one the transcript sweep
    derives for the prompt's `occurrence`-th time in the session (`user_turn_uid`)."""
    prompt = prompt_text(payload)
    if prompt is None:  # the callers ask prompt_text first
        raise ValueError("a UserPromptSubmit payload without a prompt to capture")
    session = session_of(payload)
    uid = user_turn_uid(session, prompt, occurrence)
    event = marker(payload, "UserPromptSubmit", "message", uid, prompt, sent)
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


# --- the hooks, as the service does them ----------------------------------------------------


class Sent(Request):
    """What the hook client (ingest.hook) adds to a host's payload, under its `pps` key.
    Claude Code's own http hook adds nothing."""

    call: str | None = Field(
        None,
        pattern=CALL_ID,
        description="The call's id: a call sent again (from the spool) is the same call.",
    )
    at: Moment | None = Field(None, description="When the host fired the hook.")
    replay: bool | None = Field(None, description="Sent again: nobody waits, no recall.")
    transcript: Chunk | None = Field(None, description="The transcript's new lines.")
    agent: str | None = Field(
        None, min_length=1, max_length=SESSION_MAX, description="The Letta agent served."
    )
    max_chars: int | None = Field(
        None,
        ge=limits.MAX_CHARS_MIN,
        le=limits.MAX_CHARS_MAX,
        description="PPS_HOOK_MAX_CHARS as the client has it, else the service's.",
    )

    @property
    def stamp(self) -> str:
        """What makes a marker's uid this call's: its id, else the time now."""
        return self.call or str(time.time_ns() // 1_000_000)


def sent(payload: dict[str, Any]) -> Sent:
    """The hook client's additions to `payload` (removed from it). Raises InputError
    naming the field that is wrong."""
    given = payload.pop(SENT_KEY, None)
    try:
        return Sent.model_validate({} if given is None else given)
    except ValidationError as exc:
        raise from_validation(exc.errors(), prefix=(SENT_KEY,)) from None


SENT_KEY = "pps"


@dataclass
class Call:
    """One hook call as the service handles it: the host's event and payload, what the
    client sent beside it, the session states it reads and changes (`state(key)`, kept by
    the service), and what the hook decides: the events to store, the recall to answer
    with, the problems to tell the client (it writes them to hooks.log), and for Letta
    Code a line that takes the recall's place."""

    event: str
    payload: dict[str, Any]
    sent: Sent
    state: Callable[[str], SessionState]
    stored_any: Callable[[str], bool]
    """Whether the entity has stored anything of a session (by its id)."""
    max_bytes: int
    max_chars: int
    events: list[dict[str, Any]] = field(default_factory=list)
    recall: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    instead: str | None = None

    @property
    def session(self) -> str:
        return session_of(self.payload)

    def marker(self, event_type: str, uid: str, content: str, **metadata: Any) -> dict[str, Any]:
        return marker(self.payload, self.event, event_type, uid, content, self.sent, **metadata)

    def ask(self, context: str, **fields: Any) -> None:
        """Answer with recall for `context` (unless the call is sent again: nobody waits)."""
        if not self.sent.replay:
            self.recall = recall_request(self.payload, context, self.max_chars, **fields)

    def transcript_turns(self) -> int:
        """Take the transcript's new turns; the offset after them."""
        chunk = self.sent.transcript
        state = self.state(self.session)
        if chunk is None:
            return state.offset
        found, problems = read_new_turns(state, chunk, self.session, self.max_bytes)
        self.events += found
        self.problems += problems
        return state.offset


def check_call(payload: Any, event: str | None) -> str:
    """A Claude Code hook call: the payload's checks, and a transcript hook only from the
    hook client (Claude Code's own http hook sends no transcript)."""
    name = check_payload(payload, event)
    if name in TRANSCRIPT_EVENTS and SENT_KEY not in payload:
        raise InputError.of(
            "hook_event_name",
            f"{name} reads the session's transcript, on the client's machine: it runs as the"
            " command hook (`pps hooks install claude-code` puts it there)",
        )
    return name


def session_start(call: Call) -> None:
    call.events.append(start_marker(call.payload, call.sent))
    call.ask("startup")


def user_prompt_submit(call: Call) -> None:
    prompt = prompt_text(call.payload)
    if prompt is None:
        return
    n = occurrence(call.state(call.session), call.session, prompt, call.sent.call)
    parts = prompt_events(call.payload, n, call.max_bytes, call.sent)
    call.events += parts
    call.ask(prompt, answering=answering(parts))


def stop(call: Call) -> None:
    call.transcript_turns()


def pre_compact(call: Call) -> None:
    _close_window(call, "pre_compact", "compact", "Context compaction", "trigger")


def session_end(call: Call) -> None:
    _close_window(call, "session_end", "end", "Claude Code session ended", "reason")


def _close_window(call: Call, event_type: str, tag: str, text: str, detail: str) -> None:
    """Capture what remains, then mark the end of the episode window (the uid is tied to
    the transcript position, so a hook that fires twice there marks it once), unless
    nothing of the session was ever stored."""
    offset = call.transcript_turns()
    if not call.events and not call.stored_any(call.session):
        return
    why = call.payload.get(detail)
    why = why if isinstance(why, str) and why else "other"
    metadata = {detail: why, "closes_window": True}
    instructions = private.strip(str(call.payload.get("custom_instructions") or ""))
    if event_type == "pre_compact" and instructions.strip():  # what the user typed
        metadata["custom_instructions"] = instructions
    uid = ev.uid("cc", call.session, tag, why, offset)
    call.events.append(call.marker(event_type, uid, f"{text} ({why})", **metadata))


HANDLERS: dict[str, Callable[[Call], None]] = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt_submit,
    "Stop": stop,
    "PreCompact": pre_compact,
    "SessionEnd": session_end,
}


def handle(call: Call) -> None:
    HANDLERS[call.event](call)


def answer(call: Call, context: str | None) -> dict[str, Any]:
    """What Claude Code reads back: the context to add (SessionStart, UserPromptSubmit), in
    the one shape that cannot be mistaken for anything else whatever the context says;
    `{}` when there is none. (A refused token's `systemMessage`, the line Claude Code shows
    the user, is the hook client's: the service never answers that call.)"""
    if context is None:
        return {}
    return {"hookSpecificOutput": {"hookEventName": call.event, "additionalContext": context}}
