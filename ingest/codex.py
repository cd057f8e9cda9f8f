"""Codex CLI: the hooks (`pps hook <event> --host codex`).

The formats, from the JSON schemas the `codex` binary (codex-cli 0.171) carries for its
command hooks: every hook gets one JSON object on stdin with `session_id`, `cwd`,
`hook_event_name`, `transcript_path` (the rollout file, or null) and, for most events,
`model` and `permission_mode`. SessionStart adds `source` (startup|resume|clear|compact|
fork); UserPromptSubmit `prompt` and `turn_id`; Stop `turn_id`, `stop_hook_active` and
`last_assistant_message` (text or null); PreCompact `turn_id` and `trigger` (manual|auto);
SessionEnd `reason`. The answers are Claude Code's: SessionStart and UserPromptSubmit add
context with `{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`,
and any hook's `systemMessage` is a line Codex shows the user.

What each hook does (within PPS_HOOK_BUDGET_S, exit 0, whatever happens), through
ingest.claude_code's pieces (the spool-first client, per-session state, recall request,
output), in channel `terminal:codex`:
- SessionStart: records a `session_start` marker; prints recall("startup").
- UserPromptSubmit: captures the prompt (without its `<private>` text); prints
  recall(prompt), which names the prompt's event as the one it answers.
- Stop: captures `last_assistant_message`, the turn's answer. The payload carries the
  whole turn, so the rollout file is not read.
- PreCompact, SessionEnd: a marker that closes the episode window.

Uids: the prompt is `cx:<session>:<turn id>:u`, the answer `cx:<session>:<turn id>:a`, so a
hook Codex runs twice for one turn stores it once.
"""

from __future__ import annotations

import json
import time
from typing import Any

from engine.kernel import private
from engine.kernel.config import ClientSettings
from engine.kernel.errors import InputError
from ingest import claude_code as cc
from ingest import events as ev
from ingest.client import Client, client_dir

CHANNEL = "terminal:codex"
SOURCE = "codex"
EVENTS = cc.EVENTS
"""The hooks we install; Codex has more (PreToolUse, PostToolUse, ...) that we leave alone."""
TEXT_FIELDS = ("turn_id", "last_assistant_message")
"""Codex's own payload fields we read: text when present (null allowed)."""


def check_payload(payload: Any, event: str | None = None) -> str:
    """The event a Codex hook payload is for (Claude Code's checks, then Codex's fields).
    Raises InputError naming the field that makes it no Codex hook payload."""
    name = cc.check_payload(payload, event)
    for field in TEXT_FIELDS:
        value = payload.get(field)
        if value is not None and not isinstance(value, str):
            raise InputError.of(field, f"{type(value).__name__}; expected text")
    return name


def ours(event: dict[str, Any]) -> dict[str, Any]:
    """An event built by ingest.claude_code, in Codex's channel and with its source."""
    event["channel"] = CHANNEL
    event["metadata"] = {**event.get("metadata", {}), "source": SOURCE}
    return event


def turn_id(payload: dict[str, Any]) -> str:
    value = payload.get("turn_id")
    return value if isinstance(value, str) and value else f"t{time.time_ns() // 1_000_000}"


def turn_events(
    payload: dict[str, Any], role: str, text: str, max_bytes: int
) -> list[dict[str, Any]]:
    """One turn of the session (the prompt, `role` user, or the answer, assistant), in
    parts when long."""
    session = cc.session_of(payload)
    turn = turn_id(payload)
    hook = "UserPromptSubmit" if role == "user" else "Stop"
    extra = {"turn_id": turn}
    if isinstance(payload.get("model"), str):
        extra["model"] = payload["model"]
    uid = ev.uid("cx", session, turn, role[0])
    event = ours(cc.marker(payload, hook, "message", uid, text, **extra))
    event["role"] = role
    return ev.split(event, max_bytes)


def start_marker(payload: dict[str, Any]) -> dict[str, Any]:
    event = ours(cc.start_marker(payload))
    source = event["metadata"]["start_source"]
    event["event_uid"] = ev.uid("cx", cc.session_of(payload), "start", source, time.time_ns())
    event["content"] = f"Codex session started ({source})"
    return event


def recall_request(
    payload: dict[str, Any], context: str, max_chars: int, **fields: Any
) -> dict[str, Any]:
    return {**cc.recall_request(payload, context, max_chars, **fields), "channel": CHANNEL}


# --- the hooks -----------------------------------------------------------------------------


def session_start(hook: cc.Hook) -> str | None:
    hook.client.spool.append([start_marker(hook.payload)])
    request = recall_request(hook.payload, "startup", hook.settings.hook_max_chars)
    return cc._recall_while_flushing(hook, request)


def user_prompt_submit(hook: cc.Hook) -> str | None:
    prompt = cc.prompt_text(hook.payload)
    if prompt is None:
        cc._flush(hook)
        return None
    parts = turn_events(hook.payload, "user", prompt, hook.settings.max_content_bytes)
    hook.client.spool.append(parts)
    request = recall_request(
        hook.payload, prompt, hook.settings.hook_max_chars, answering=cc.answering(parts)
    )
    return cc._recall_while_flushing(hook, request)


def stop(hook: cc.Hook) -> None:
    answer = hook.payload.get("last_assistant_message")
    answer = private.strip(answer) if isinstance(answer, str) else ""
    if answer.strip():
        parts = turn_events(hook.payload, "assistant", answer, hook.settings.max_content_bytes)
        hook.client.spool.append(parts)
    cc._flush(hook)


def _close_window(hook: cc.Hook, event_type: str, tag: str, text: str, detail: str) -> None:
    why = hook.payload.get(detail)
    why = why if isinstance(why, str) and why else "other"
    uid = ev.uid("cx", hook.session, tag, why, turn_id(hook.payload))
    event = cc.marker(
        hook.payload, hook.event, event_type, uid, f"{text} ({why})", closes_window=True
    )
    event["metadata"][detail] = why
    hook.client.spool.append([ours(event)])
    cc._flush(hook)


def pre_compact(hook: cc.Hook) -> None:
    _close_window(hook, "pre_compact", "compact", "Context compaction", "trigger")


def session_end(hook: cc.Hook) -> None:
    _close_window(hook, "session_end", "end", "Codex session ended", "reason")


HANDLERS = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt_submit,
    "Stop": stop,
    "PreCompact": pre_compact,
    "SessionEnd": session_end,
}


def run(event: str, stdin: bytes, settings: ClientSettings, deadline: float) -> str | None:
    """Run one Codex hook; return what to print (None: nothing). Raises on any failure:
    the caller logs it and still exits 0."""
    name, payload = cc.read_payload(event, stdin, check_payload, "a Codex hook's")
    with Client.from_settings(settings, label=SOURCE) as client:
        sessions = cc.Sessions(client_dir(settings) / f"codex-{client.identity}")
        hook = cc.Hook(name, payload, settings, client, sessions, deadline)
        context = cc.handle(hook, HANDLERS, f"codex {name}")
        warning = cc.refused_warning(client, settings)
        output = cc.hook_output(name, context, warning)
        return json.dumps(output, ensure_ascii=False) if output else None
