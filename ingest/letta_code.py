"""Letta Code: its hooks' payloads, and what each hook stores and recalls (the hook client
runs `EVENT --host letta-code`).

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
by `pps hooks status`. In Letta Code 0.34 only the interactive TUI runs hooks: a headless
`letta -p` turn is neither given memory nor captured.

One agent, one entity: the hooks serve the agent named at install (`--agent ID_OR_NAME`,
written into each command as PPS_LETTA_AGENT, which the hook client sends along), else the
first agent they see, which the service remembers for the entity. A hook fired for any
other agent captures nothing and recalls nothing, so two Letta agents never write into one
entity by accident; install the hooks with another token (`--project DIR`) for the other
agent.

The service does each hook's work (POST /v1/hooks/letta-code, pps.rest.hooks; the hook
client ingest.hook sends the payload), through ingest.claude_code's pieces (the call, the
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
from typing import Any

from engine.kernel import private
from engine.kernel.errors import InputError
from engine.kernel.requests import is_blank
from ingest import claude_code as cc
from ingest import events as ev
from ingest import hook

HOST = "letta-code"
CHANNEL = "terminal:letta"
SOURCE = "letta-code"
AGENT_ENV = "PPS_LETTA_AGENT"
"""The agent (id or name) the installed hooks serve."""
ASKED_KEPT = 20
"""How many recent prompts of a working directory are remembered with their conversation
(Stop names no conversation: its `user_message` finds the one it answers)."""
EVENTS = hook.EVENTS
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


def check_call(payload: Any, event: str | None = None) -> str:
    """The event a Letta Code hook payload is for: `event`, else its `event_type`.
    Raises InputError naming the field that makes it no Letta Code hook payload."""
    if not isinstance(payload, dict):
        raise InputError.of("body", "a Letta Code hook sends a JSON object")
    for name in TEXT_FIELDS:
        value = payload.get(name)
        if value is not None and not isinstance(value, str):
            raise InputError.of(name, f"{type(value).__name__}; expected text")
    named = cc.event_named(payload, "event_type", event)
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


AGENT_KEY = "agent"
"""The state (per entity) that remembers the agent the hooks serve."""


def other_agent(call: cc.Call) -> str | None:
    """Why this hook must not capture (the agent it fired for is not the one these hooks
    serve), or None. With no agent named at install, the first one seen is remembered."""
    agent_id, name = _text(call.payload, "agent_id"), _text(call.payload, "agent_name")
    if agent_id is None:
        return None  # Stop names no agent: its conversation was checked at the prompt
    wanted = call.sent.agent
    if wanted is None:
        served = call.state(AGENT_KEY)
        if served.agent is None:
            served.agent = agent_id
            return None
        wanted = served.agent
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


def session_start(call: cc.Call) -> None:
    event = cc.start_marker(call.payload, call.sent)
    event["event_uid"] = ev.uid("lc", call.session, "start", call.sent.stamp)
    event["content"] = f"Letta Code session started ({call.payload.get('agent_name') or 'agent'})"
    call.events.append(ours(event, call.payload))
    _ask(call, "startup")


def user_prompt_submit(call: cc.Call) -> None:
    prompt = cc.prompt_text(call.payload)
    if prompt is None or call.payload.get("is_command") is True:
        return
    remembered = call.state(_folder_key(call.payload.get("working_directory")))
    remembered.transcript = call.session  # the conversation Stop's answer belongs to
    key = _digest(prompt)
    asked = {k: v for k, v in remembered.asked.items() if k != key}
    asked[key] = call.session
    remembered.asked = dict(list(asked.items())[-ASKED_KEPT:])
    call.state(call.session).agent = _text(call.payload, "agent_id")
    parts = _turn(call, "user", prompt)
    _ask(call, prompt, answering=cc.answering(parts))


def _digest(prompt: str) -> str:
    """A prompt, as UserPromptSubmit and Stop's `user_message` both give it, as a key."""
    return hashlib.sha256(private.strip(prompt).strip().encode()).hexdigest()[:16]


def stop(call: cc.Call) -> None:
    answer = call.payload.get("assistant_message")
    answer = private.strip(answer) if isinstance(answer, str) else ""
    if answer.strip():
        _turn(call, "assistant", answer)


def _turn(call: cc.Call, role: str, text: str) -> list[dict[str, Any]]:
    state = call.state(call.session)
    n = cc.occurrence(state, call.session, f"{role}:{text}", call.sent.call)
    uid = turn_uid(call.session, role, text, n)
    event = ours(call.marker("message", uid, text), call.payload)
    event["role"] = role
    parts = ev.split(event, call.max_bytes)
    call.events += parts
    return parts


def _close_window(call: cc.Call, event_type: str, tag: str, text: str) -> None:
    uid = ev.uid("lc", call.session, tag, call.sent.stamp)
    event = call.marker(event_type, uid, text, closes_window=True)
    call.events.append(ours(event, call.payload))


def pre_compact(call: cc.Call) -> None:
    _close_window(call, "pre_compact", "compact", "Context compaction")


def session_end(call: cc.Call) -> None:
    _close_window(call, "session_end", "end", "Letta Code session ended")


def _ask(call: cc.Call, context: str, **fields: Any) -> None:
    call.ask(context, **fields)
    if call.recall is not None:
        call.recall["channel"] = CHANNEL


HANDLERS = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt_submit,
    "Stop": stop,
    "PreCompact": pre_compact,
    "SessionEnd": session_end,
}


def handle(call: cc.Call) -> None:
    """Do the hook for the agent these hooks serve (another's: a line instead of recall),
    in the conversation it belongs to (Stop's: the one its `user_message` was asked in)."""
    refused = other_agent(call)
    if refused is not None:
        call.problems.append(refused)
        if call.event in ("SessionStart", "UserPromptSubmit"):
            call.instead = refused
        return
    remembered = call.state(_folder_key(call.payload.get("working_directory")))
    conversation = remembered.transcript
    answered = _text(call.payload, "user_message")  # Stop's: the prompt it answers
    if answered is not None:
        conversation = remembered.asked.get(_digest(answered), conversation)
    known = {"conversation": conversation} if conversation else {}
    call.payload = claude_shaped(call.payload, known)
    if _text(call.payload, "agent_id") is None:  # Stop's: the agent its prompt was asked
        agent = call.state(call.session).agent
        call.payload.update({"agent_id": agent} if agent else {})
    HANDLERS[call.event](call)


def answer(call: cc.Call, context: str | None) -> str:
    """What Letta Code gives the agent: the memory text (led by a line when the hook
    fired for another agent)."""
    return "\n\n".join(line for line in (call.instead, context) if line)
