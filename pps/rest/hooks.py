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

from __future__ import annotations

import dataclasses
import json
import threading
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from engine.capture import events as capture
from engine.capture.hook_sessions import HookSessions
from engine.recall import ambient as recall
from engine.recall.shapes import RecallRequest
from ingest import claude_code, codex, letta_code
from ingest.claude_code import Call, SessionState, TranscriptGap
from pps.http.deps import DB, AppRuntime, AppSettings, CurrentEntity
from pps.http.errors import engine_error_response

router = APIRouter(prefix="/v1/hooks", tags=["hooks"])

HOSTS = {"claude-code": claude_code, "codex": codex, "letta-code": letta_code}
"""Each host's hooks: `check_call`, `handle`, `answer`."""
Host = Literal["claude-code", "codex", "letta-code"]
OFFSET_HEADER = "X-PPS-Transcript-Offset"
"""On a 409 for a transcript's lines: the byte the service has the transcript up to."""
PROBLEMS_HEADER = "X-PPS-Problems"
"""What the service could not read of a call, as a JSON list of lines (the first
PROBLEMS_KEPT)."""
PROBLEMS_KEPT = 20

_states = threading.Lock()
"""Held while a call reads the session states, stores its events and writes the states
back: two calls of one session at once must still count its turns one after the other."""


BODY = {
    "type": "object",
    "properties": {
        "session_id": {"type": "string", "maxLength": claude_code.SESSION_MAX},
        "hook_event_name": {"type": "string", "enum": list(claude_code.EVENTS)},
        **{name: {"type": ["string", "null"]} for name in claude_code.TEXT_FIELDS},
        claude_code.SENT_KEY: {
            "type": "object",
            "description": "What the pps hook client adds: call (its id), at (when the"
            " host fired the hook), replay (sent again from the spool: no recall),"
            " transcript ({path, start, size, text}: the new lines), agent (Letta Code).",
        },
    },
    "additionalProperties": True,
}
"""What the route reads of a payload (it checks it itself, to name what is wrong in the
host's terms); the hosts' other fields are taken and ignored."""

ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "What the host reads back: for Claude Code and Codex `{}` or"
        ' `{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`;'
        " for Letta Code the memory text.",
        "content": {"application/json": {}, "text/plain": {}},
    },
    409: {"description": "Transcript lines from past where the service has the transcript"},
}


@router.post(
    "/{host}",
    summary="An agent host's hook (Claude Code, Codex, Letta Code): capture, and what the"
    " host reads back",
    responses=ANSWERS,
    openapi_extra={"requestBody": {"content": {"application/json": {"schema": BODY}}}},
)
def host_hook(
    host: Host,
    payload: Annotated[
        Any,
        Body(
            description="The hook's JSON as the host sends it (what a command hook reads on"
            " stdin): for Claude Code session_id, transcript_path, cwd, hook_event_name,"
            " prompt, source, ...",
            examples=[
                {
                    "session_id": "0b5d7a2e-8c1f-4b7e-9a51-3f0c2d9e6a14",
                    "transcript_path": "~/.claude/projects/-srv-pps/0b5d7a2e.jsonl",
                    "cwd": "/srv/pps",
                    "permission_mode": "default",
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": "where did we leave the robe?",
                }
            ],
        ),
    ],
    entity: CurrentEntity,
    db: DB,
    settings: AppSettings,
    runtime: AppRuntime,
    event: Annotated[
        str | None,
        Query(description="The hook's event, when the command names it (`Stop`, `stop`)."),
    ] = None,
) -> Response:
    served = HOSTS[host]
    name = served.check_call(payload, event)
    sent = claude_code.sent(payload)
    with _states:
        sessions = HookSessions(db, entity, host)
        states: dict[str, SessionState] = {}

        def state(key: str) -> SessionState:
            if key not in states:
                states[key] = SessionState.of(sessions.read(key))
            return states[key]

        call = Call(
            name,
            payload,
            sent,
            state,
            lambda session: capture.in_session(db, entity, session),
            settings.max_content_bytes,
            sent.max_chars or settings.hook_max_chars,
        )
        try:
            served.handle(call)
        except TranscriptGap as gap:
            refused = engine_error_response(gap)
            refused.headers[OFFSET_HEADER] = str(gap.offset)
            return refused
        if call.events:
            parsed = capture.parse_events(
                call.events,
                max_batch=len(call.events),
                max_content_bytes=settings.max_content_bytes,
            )
            capture.record(db, entity, parsed, runtime.announce)
        sessions.save({key: dataclasses.asdict(one) for key, one in states.items()})
    context = None
    if call.recall is not None:
        found = recall.recall(runtime, entity, RecallRequest(**call.recall)).context
        context = found[: call.max_chars] if found.strip() else None
    answer = served.answer(call, context)
    said = json.dumps(call.problems[:PROBLEMS_KEPT])[:4000]
    headers = {PROBLEMS_HEADER: said} if call.problems else None
    if isinstance(answer, str):
        return PlainTextResponse(answer, headers=headers)
    return JSONResponse(answer, headers=headers)
