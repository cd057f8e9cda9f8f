"""The agent hosts' hooks: POST /v1/hooks/{claude-code,codex,letta-code} takes a hook's JSON
as the host sends it and answers what the host reads back, so every hook's work is done
here and what the host runs stays thin.

Two clients call it. Claude Code's own http hook (UserPromptSubmit) posts its payload as
it is. The hook client (ingest.hook, the command every other hook runs) posts the payload
with a `pps` object added (ingest.claude_code.Sent): the call's id, when the host fired
it, for Claude Code's transcript hooks the transcript's new lines (only the client's
machine can read them), for Letta Code the agent its hooks serve. The token decides the
entity. The answer is the host's own output: Claude Code's and Codex's JSON, Letta Code's
text. What the service could not read of a call (a transcript line that is no record) is
named in the X-PPS-Problems header, which the hook client writes to hooks.log.
"""

import dataclasses
import json
import threading
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from engine.api import Memory
from engine.capture.events import Captured
from engine.kernel.config import Settings
from engine.kernel.requests import NOT_BLANK
from engine.recall.shapes import RecallRequest
from ingest import claude_code, codex, hook, letta_code
from ingest.claude_code import Call, SessionState, TranscriptGap
from pps.http.deps import AppSettings, CurrentMemory
from pps.http.errors import engine_error_response

router = APIRouter(prefix="/v1/hooks", tags=["hooks"])

HOSTS = {"claude-code": claude_code, "codex": codex, "letta-code": letta_code}
"""Each host's hooks: `check_call`, `handle`, `answer`."""
Event = Literal["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"]
OFFSET_HEADER = "X-PPS-Transcript-Offset"
"""On a 409 for a transcript's lines: the byte the service has the transcript up to."""
PROBLEMS_HEADER = "X-PPS-Problems"
"""What the service could not read of a call, as a JSON list of lines (the first
PROBLEMS_KEPT)."""
PROBLEMS_KEPT = 20

_states = threading.Lock()
"""Held while a call reads the session states, stores its events and writes the states
back: two calls of one session at once must still count its turns one after the other."""


def _inlined(schema: Any, defs: dict[str, Any]) -> Any:
    """`schema` with each `$ref` to one of `defs` replaced by what it names."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _inlined(defs[schema["$ref"].rsplit("/", 1)[1]], defs)
        return {key: _inlined(value, defs) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_inlined(value, defs) for value in schema]
    return schema


_sent = claude_code.Sent.model_json_schema()
SENT = {"anyOf": [_inlined(_sent, _sent.pop("$defs", {})), {"type": "null"}]}
"""The hook client's `pps` object (ingest.claude_code.Sent), as the body's own part."""
TEXT = {"type": ["string", "null"]}
SESSION = {
    "type": "string",
    "minLength": 1,
    "maxLength": claude_code.SESSION_MAX,
    "pattern": NOT_BLANK,
}
EVENT = {
    "type": ["string", "null"],
    "enum": [*hook.EVENTS, None],
    "description": "The event (the `event` query names it instead, for the hook client).",
}
BODIES: dict[str, dict[str, Any]] = {
    "claude-code": {
        "required": ["session_id"],
        "properties": {
            "session_id": SESSION,
            "hook_event_name": EVENT,
            **{name: TEXT for name in claude_code.TEXT_FIELDS},
        },
    },
    "codex": {
        "required": ["session_id"],
        "properties": {
            "session_id": SESSION,
            "hook_event_name": EVENT,
            **{name: TEXT for name in (*claude_code.TEXT_FIELDS, *codex.TEXT_FIELDS)},
        },
    },
    "letta-code": {
        "properties": {
            "event_type": EVENT,
            **{name: TEXT for name in letta_code.TEXT_FIELDS},
            "agent_id": {"type": ["string", "null"], "maxLength": claude_code.SESSION_MAX},
            "conversation_id": {"type": ["string", "null"], "maxLength": claude_code.SESSION_MAX},
        },
    },
}
"""What each route reads of a host's payload (it checks it itself, to name what is wrong
in the host's terms); the hosts' other fields are taken and ignored."""

ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "What the host reads back: for Claude Code and Codex `{}` or"
        ' `{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`;'
        " for Letta Code the memory text.",
        "content": {"application/json": {}, "text/plain": {}},
    },
    409: {"description": "Transcript lines from past where the service has the transcript"},
}
EXAMPLES = {
    "claude-code": {
        "session_id": "0b5d7a2e-8c1f-4b7e-9a51-3f0c2d9e6a14",
        "transcript_path": "~/.claude/projects/-srv-pps/0b5d7a2e.jsonl",
        "cwd": "/srv/pps",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "where did we leave the robe?",
    },
    "codex": {
        "session_id": "019a7c2e-4b1f-7d20-9c5e-2f8a6b3d1e04",
        "transcript_path": None,
        "cwd": "/srv/pps",
        "hook_event_name": "UserPromptSubmit",
        "model": "gpt-5.5",
        "turn_id": "turn-3",
        "prompt": "where did we leave the robe?",
    },
    "letta-code": {
        "event_type": "UserPromptSubmit",
        "working_directory": "/srv/pps",
        "prompt": "where did we leave the robe?",
        "is_command": False,
        "agent_id": "agent-1234",
        "conversation_id": "conv-5678",
    },
}
TITLES = {"claude-code": "Claude Code", "codex": "Codex", "letta-code": "Letta Code"}


def _route(host: str) -> None:
    """POST /v1/hooks/<host>: its own body's description, one handler for all three.
    (The handler is made here for each host, so its annotations must be values FastAPI
    can read as they are: this module does without `from __future__ import annotations`.)"""
    body = {
        "type": "object",
        **BODIES[host],
        "additionalProperties": True,
    }
    body["properties"] = {**body["properties"], claude_code.SENT_KEY: SENT}

    def one_hook(
        payload: Annotated[
            Any,
            Body(
                description=f"The hook's JSON as {TITLES[host]} sends it (what a command hook"
                " reads on stdin), and the hook client's `pps` object.",
                examples=[EXAMPLES[host]],
            ),
        ],
        memory: CurrentMemory,
        settings: AppSettings,
        event: Annotated[
            Event | None,
            Query(description="The hook's event, when the command names it."),
        ] = None,
    ) -> Response:
        return host_hook(host, payload, event, memory, settings)

    router.add_api_route(
        f"/{host}",
        one_hook,
        methods=["POST"],
        name=f"{host}_hook",
        summary=f"A {TITLES[host]} hook: capture, and what {TITLES[host]} reads back",
        responses=ANSWERS,
        openapi_extra={"requestBody": {"content": {"application/json": {"schema": body}}}},
    )


def host_hook(
    host: str,
    payload: Any,
    event: str | None,
    memory: Memory,
    settings: Settings,
) -> Response:
    """Do one hook of `host` for `memory`'s entity; the host's answer."""
    served = HOSTS[host]
    name = served.check_call(payload, event)
    sent = claude_code.sent(payload)
    with _states:
        sessions = memory.events.hook_sessions(host)
        states: dict[str, SessionState] = {}
        read: dict[str, dict[str, Any]] = {}

        def state(key: str) -> SessionState:
            if key not in states:
                states[key] = SessionState.of(sessions.read(key))
                read[key] = dataclasses.asdict(states[key])
            return states[key]

        call = Call(
            name,
            payload,
            sent,
            state,
            memory.events.in_session,
            settings.max_content_bytes,
            sent.max_chars or settings.hook_max_chars,
        )
        try:
            served.handle(call)
        except TranscriptGap as gap:
            refused = engine_error_response(gap)
            refused.headers[OFFSET_HEADER] = str(gap.offset)
            return refused
        changed = {
            key: after
            for key, one in states.items()
            if (after := dataclasses.asdict(one)) != read[key]
        }

        def save(batch: Captured) -> None:  # with the new events
            sessions.save(changed, batch.conn)
            changed.clear()

        if call.events:
            parsed = memory.events.parse(call.events, max_batch=len(call.events))
            memory.events.record(parsed, also=[save])
        if changed:  # no new event stored them: the states alone
            sessions.save(changed)
    context = None
    if call.recall is not None:
        found = memory.recall(RecallRequest(**call.recall)).context
        context = found[: call.max_chars] if found.strip() else None
    answer = served.answer(call, context)
    said = json.dumps(call.problems[:PROBLEMS_KEPT])[:4000]
    headers = {PROBLEMS_HEADER: said} if call.problems else None
    if isinstance(answer, str):
        return PlainTextResponse(answer, headers=headers)
    return JSONResponse(answer, headers=headers)


for _host in HOSTS:
    _route(_host)
