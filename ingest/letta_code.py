"""Letta Code: the hooks (`pps hook <event> --host letta-code`).

The formats, from Letta Code's own source (the `letta` 0.34 package, `src/hooks/`): every
command hook gets one JSON object on stdin with `event_type` and `working_directory`;
SessionStart adds `is_new_session`, `agent_id`, `agent_name` and `conversation_id`;
UserPromptSubmit `prompt`, `is_command`, `agent_id` and `conversation_id`; Stop
`stop_reason`, `assistant_message` and `user_message` (no agent and no conversation);
PreCompact `context_length`, `agent_id` and `conversation_id`; SessionEnd `duration_ms`,
`agent_id` and `conversation_id`. What SessionStart and UserPromptSubmit print on stdout
(exit 0) is given to the agent as it is, in a system reminder: we print the recalled
memory text, not JSON. Letta Code has no line for the user: a refused token or a hook
fired for another agent is said as the first line of what is injected, in hooks.log, and
by `pps hooks status`.

One agent, one entity: the hooks serve the agent named at install (`--agent ID_OR_NAME`,
written into each command as PPS_LETTA_AGENT), else the first agent they see, which they
remember (`agent.json` in the client dir, per token). A hook fired for any other agent
captures nothing and recalls nothing, so two Letta agents never write into one entity by
accident; install the hooks with another token (`--project DIR`) for the other agent.

What each hook does, through ingest.claude_code's pieces (the spool-first client, the
per-session state, the recall request), in channel `terminal:letta`, the session being
the Letta conversation (the agent id when there is none):
- SessionStart: a `session_start` marker; prints recall("startup").
- UserPromptSubmit: captures the prompt (without its `<private>` text; not a /command);
  prints recall(prompt), which names the prompt's event as the one it answers.
- Stop: captures `assistant_message`, the answer, in the conversation its
  `user_message` was asked in (Stop's payload names none): of the last 20 prompts in this
  working directory, the newest with that text, else the conversation of the last one.
- PreCompact, SessionEnd: a marker that closes the episode window.

Uids: the prompt is `lc:<conversation>:u:<hash>:<n>`, the answer
`lc:<conversation>:a:<hash>:<n>` (the n-th time the same text is seen in it).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from engine.kernel import private
from engine.kernel.config import ClientSettings
from engine.kernel.errors import InputError
from engine.kernel.files import ensure_private_dir
from engine.kernel.requests import is_blank
from ingest import claude_code as cc
from ingest import events as ev
from ingest.client import Client, client_dir

HOST = "letta-code"
CHANNEL = "terminal:letta"
SOURCE = "letta-code"
AGENT_ENV = "PPS_LETTA_AGENT"
"""The agent (id or name) the installed hooks serve."""
ASKED_KEPT = 20
"""How many recent prompts of a working directory are remembered with their conversation
(Stop names no conversation: its `user_message` finds the one it answers)."""
EVENTS = cc.EVENTS
TEXT_FIELDS = (
    "working_directory",
    "prompt",
    "agent_id",
    "agent_name",
    "conversation_id",
    "assistant_message",
    "user_message",
    "stop_reason",
)
"""Letta Code's payload fields we read: text when present (null allowed)."""


def check_payload(payload: Any, event: str | None = None) -> str:
    """The event a Letta Code hook payload is for: `event`, else its `event_type`.
    Raises InputError naming the field that makes it no Letta Code hook payload."""
    if not isinstance(payload, dict):
        raise InputError.of("body", "a Letta Code hook sends a JSON object")
    for name in TEXT_FIELDS:
        value = payload.get(name)
        if value is not None and not isinstance(value, str):
            raise InputError.of(name, f"{type(value).__name__}; expected text")
    named = payload.get("event_type") if event is None else cc.canonical(event)
    if named not in EVENTS:
        raise InputError.of("event_type", f"{named!r} is none of {', '.join(EVENTS)}")
    for name in ("agent_id", "conversation_id"):
        value = payload.get(name)
        if isinstance(value, str) and len(value) > cc.SESSION_MAX:
            raise InputError.of(name, f"{len(value)} characters; at most {cc.SESSION_MAX}")
    return named


def _text(payload: dict[str, Any], name: str) -> str | None:
    value = payload.get(name)
    return value if isinstance(value, str) and not is_blank(value) else None


def claude_shaped(payload: dict[str, Any], remembered: dict[str, str]) -> dict[str, Any]:
    """The payload as ingest.claude_code's pieces read one: `session_id` the conversation
    (else the agent; for Stop, the conversation `remembered` for its working directory),
    `cwd` the working directory, and Letta's own fields kept."""
    conversation = _text(payload, "conversation_id")
    if conversation == "default":  # each agent's own default conversation
        conversation = f"{_text(payload, 'agent_id') or 'agent'}:default"
    session = (
        conversation
        or _text(payload, "agent_id")
        or remembered.get("conversation")
        or "unknown-session"
    )
    shaped = {**payload, "session_id": session}
    cwd = _text(payload, "working_directory")
    if cwd is not None:
        shaped["cwd"] = cwd
    return shaped


def ours(event: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """An event built by ingest.claude_code, in Letta's channel, with the agent."""
    event["channel"] = CHANNEL
    metadata = {**event.get("metadata", {}), "source": SOURCE}
    for name in ("agent_id", "agent_name", "conversation_id"):
        if _text(payload, name):
            metadata[name] = payload[name]
    event["metadata"] = metadata
    return event


def turn_uid(session: str, role: str, text: str, occurrence: int) -> str:
    digest = hashlib.sha256(text.strip().encode()).hexdigest()[:16]
    return ev.uid("lc", session, role[0], digest, occurrence)


# --- one agent, one entity -----------------------------------------------------------------


def other_agent(payload: dict[str, Any], state: Path) -> str | None:
    """Why this hook must not capture (the agent it fired for is not the one these hooks
    serve), or None. With no agent named at install, the first one seen is remembered."""
    agent_id, name = _text(payload, "agent_id"), _text(payload, "agent_name")
    if agent_id is None:
        return None  # Stop names no agent: its conversation was checked at the prompt
    wanted = os.environ.get(AGENT_ENV) or None
    if wanted is None:
        path = state / "agent.json"
        try:
            wanted = json.loads(path.read_text())["agent_id"]
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            ensure_private_dir(state)
            temporary = path.with_suffix(".tmp")
            temporary.write_text(json.dumps({"agent_id": agent_id, "agent_name": name}))
            temporary.chmod(0o600)
            os.replace(temporary, path)
            return None
    if wanted in (agent_id, name):
        return None
    return (
        f"pps: these hooks serve the Letta agent {wanted}, not {name or agent_id}: nothing"
        " of this conversation is captured or recalled. Install the hooks for this agent"
        " with its own token (`pps hooks install letta-code --project DIR --agent"
        f" {agent_id} --token-file FILE`)."
    )


# --- the hooks -----------------------------------------------------------------------------


def _folder_key(working_directory: Any) -> str:
    """The state of a working directory (its prompts' conversations), by this key."""
    return "cwd:" + str(working_directory or "")


def session_start(hook: cc.Hook) -> str | None:
    event = cc.start_marker(hook.payload)
    event["event_uid"] = ev.uid("lc", hook.session, "start", event["event_uid"].split(":")[-1])
    event["content"] = f"Letta Code session started ({hook.payload.get('agent_name') or 'agent'})"
    hook.client.spool.append([ours(event, hook.payload)])
    return cc._recall_while_flushing(hook, _request(hook, "startup"))


def user_prompt_submit(hook: cc.Hook) -> str | None:
    prompt = cc.prompt_text(hook.payload)
    if prompt is None or hook.payload.get("is_command") is True:
        cc._flush(hook)
        return None
    with hook.sessions.edit(_folder_key(hook.payload.get("working_directory"))) as remembered:
        remembered.transcript = hook.session  # the conversation Stop's answer belongs to
        key = _digest(prompt)
        asked = {k: v for k, v in remembered.asked.items() if k != key}
        asked[key] = hook.session
        remembered.asked = dict(list(asked.items())[-ASKED_KEPT:])
    parts = _turn(hook, "user", prompt)
    return cc._recall_while_flushing(hook, _request(hook, prompt, answering=cc.answering(parts)))


def _digest(prompt: str) -> str:
    """A prompt, as UserPromptSubmit and Stop's `user_message` both give it, as a key."""
    return hashlib.sha256(private.strip(prompt).strip().encode()).hexdigest()[:16]


def stop(hook: cc.Hook) -> None:
    answer = hook.payload.get("assistant_message")
    answer = private.strip(answer) if isinstance(answer, str) else ""
    if answer.strip():
        _turn(hook, "assistant", answer)
    cc._flush(hook)


def _turn(hook: cc.Hook, role: str, text: str) -> list[dict[str, Any]]:
    with hook.sessions.edit(hook.session) as state:
        occurrence = cc.Occurrences(state.prompts).next(hook.session, f"{role}:{text}")
        uid = turn_uid(hook.session, role, text, occurrence)
        event = ours(cc.marker(hook.payload, hook.event, "message", uid, text), hook.payload)
        event["role"] = role
        parts = ev.split(event, hook.settings.max_content_bytes)
        hook.client.spool.append(parts)
    return parts


def _close_window(hook: cc.Hook, event_type: str, tag: str, text: str) -> None:
    uid = ev.uid("lc", hook.session, tag, time.time_ns() // 1_000_000)
    event = cc.marker(hook.payload, hook.event, event_type, uid, text, closes_window=True)
    hook.client.spool.append([ours(event, hook.payload)])
    cc._flush(hook)


def pre_compact(hook: cc.Hook) -> None:
    _close_window(hook, "pre_compact", "compact", "Context compaction")


def session_end(hook: cc.Hook) -> None:
    _close_window(hook, "session_end", "end", "Letta Code session ended")


def _request(hook: cc.Hook, context: str, **fields: Any) -> dict[str, Any]:
    request = cc.recall_request(hook.payload, context, hook.settings.hook_max_chars, **fields)
    return {**request, "channel": CHANNEL}


HANDLERS = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt_submit,
    "Stop": stop,
    "PreCompact": pre_compact,
    "SessionEnd": session_end,
}


def run(event: str, stdin: bytes, settings: ClientSettings, deadline: float) -> str | None:
    """Run one Letta Code hook; return what to print (None: nothing): the memory text to
    inject, led by a line when the service refused the token or the agent is another's.
    Raises on any failure: the caller logs it and still exits 0."""
    name, payload = cc.read_payload(event, stdin, check_payload, "a Letta Code hook's")
    with Client.from_settings(settings, label=HOST) as client:
        state = client_dir(settings) / f"letta-code-{client.identity}"
        sessions = cc.Sessions(state)
        refused = other_agent(payload, state)
        if refused is not None:
            cc.log(settings, f"letta-code {name}", refused)
            return refused if name in ("SessionStart", "UserPromptSubmit") else None
        with sessions.edit(_folder_key(payload.get("working_directory"))) as remembered:
            conversation = remembered.transcript
            answered = _text(payload, "user_message")  # Stop's: the prompt it answers
            if answered is not None:
                conversation = remembered.asked.get(_digest(answered), conversation)
        known = {"conversation": conversation} if conversation else {}
        hook = cc.Hook(name, claude_shaped(payload, known), settings, client, sessions, deadline)
        context = cc.handle(hook, HANDLERS, f"letta-code {name}")
        lines = [line for line in (cc.refused_warning(client, settings), context) if line]
        return "\n\n".join(lines) or None
