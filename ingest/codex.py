"""Codex CLI: its hooks' payloads, and what each hook stores and recalls (the hook client
runs `EVENT --host codex`).

The formats, from the JSON schemas the `codex` binary (codex-cli 0.171) carries for its
command hooks: every hook gets one JSON object on stdin with `session_id`, `cwd`,
`hook_event_name`, `transcript_path` (the rollout file, or null) and, for most events,
`model` and `permission_mode`. SessionStart adds `source` (startup|resume|clear|compact|
fork); UserPromptSubmit `prompt` and `turn_id`; Stop `turn_id`, `stop_hook_active` and
`last_assistant_message` (text or null); PreCompact `turn_id` and `trigger` (manual|auto);
SessionEnd `reason`. The answers are Claude Code's: SessionStart and UserPromptSubmit add
context with `{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`,
and any hook's `systemMessage` is a line Codex shows the user.

The service does each hook's work (POST /v1/hooks/codex, pps.rest.hooks; the hook client
ingest.hook sends the payload), through ingest.claude_code's pieces (the call, the recall
request, the output), in channel `terminal:codex`:
- SessionStart: records a `session_start` marker; prints recall("startup").
- UserPromptSubmit: captures the prompt (without its `<private>` text); prints
  recall(prompt), which names the prompt's event as the one it answers.
- Stop: captures `last_assistant_message`, the turn's answer. The payload carries the
  whole turn, so the rollout file is not read.
- PreCompact, SessionEnd: a marker that closes the episode window.

Uids: the prompt is `cx:<session>:<turn id>:u`, the answer `cx:<session>:<turn id>:a`, so a
hook Codex runs twice for one turn stores it once (a payload without a turn id: the call's
id, the same when the client sends the call again).
"""

from __future__ import annotations

from typing import Any

from engine.kernel import private
from engine.kernel.errors import InputError
from ingest import claude_code as cc
from ingest import events as ev
from ingest import hook

CHANNEL = "terminal:codex"
SOURCE = "codex"
EVENTS = hook.EVENTS
"""The hooks we install; Codex has more (PreToolUse, PostToolUse, ...) that we leave alone."""
TEXT_FIELDS = ("turn_id", "last_assistant_message")
"""Codex's own payload fields we read: text when present (null allowed)."""


def check_call(payload: Any, event: str | None = None) -> str:
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


def turn_id(call: cc.Call) -> str:
    value = call.payload.get("turn_id")
    return value if isinstance(value, str) and value else f"t{call.sent.stamp}"


def turn_events(call: cc.Call, role: str, text: str) -> list[dict[str, Any]]:
    """One turn of the session (the prompt, `role` user, or the answer, assistant), in
    parts when long."""
    turn = turn_id(call)
    extra = {"turn_id": turn}
    if isinstance(call.payload.get("model"), str):
        extra["model"] = call.payload["model"]
    uid = ev.uid("cx", call.session, turn, role[0])
    event = ours(call.marker("message", uid, text, **extra))
    event["role"] = role
    return ev.split(event, call.max_bytes)


def ask(call: cc.Call, context: str, **fields: Any) -> None:
    call.ask(context, **fields)
    if call.recall is not None:
        call.recall["channel"] = CHANNEL


# --- the hooks -----------------------------------------------------------------------------


def session_start(call: cc.Call) -> None:
    event = ours(cc.start_marker(call.payload, call.sent))
    source = event["metadata"]["start_source"]
    event["event_uid"] = ev.uid("cx", call.session, "start", source, call.sent.stamp)
    event["content"] = f"Codex session started ({source})"
    call.events.append(event)
    ask(call, "startup")


def user_prompt_submit(call: cc.Call) -> None:
    prompt = cc.prompt_text(call.payload)
    if prompt is None:
        return
    parts = turn_events(call, "user", prompt)
    call.events += parts
    ask(call, prompt, answering=cc.answering(parts))


def stop(call: cc.Call) -> None:
    answer = call.payload.get("last_assistant_message")
    answer = private.strip(answer) if isinstance(answer, str) else ""
    if answer.strip():
        call.events += turn_events(call, "assistant", answer)


def _close_window(call: cc.Call, event_type: str, tag: str, text: str, detail: str) -> None:
    why = call.payload.get(detail)
    why = why if isinstance(why, str) and why else "other"
    uid = ev.uid("cx", call.session, tag, why, turn_id(call))
    event = call.marker(event_type, uid, f"{text} ({why})", closes_window=True)
    event["metadata"][detail] = why
    call.events.append(ours(event))


def pre_compact(call: cc.Call) -> None:
    _close_window(call, "pre_compact", "compact", "Context compaction", "trigger")


def session_end(call: cc.Call) -> None:
    _close_window(call, "session_end", "end", "Codex session ended", "reason")


HANDLERS = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt_submit,
    "Stop": stop,
    "PreCompact": pre_compact,
    "SessionEnd": session_end,
}


def handle(call: cc.Call) -> None:
    HANDLERS[call.event](call)


answer = cc.answer
"""Codex reads Claude Code's hook output."""
