"""Claude Code's http hooks: POST /v1/hooks/claude-code takes a hook's JSON as Claude Code
posts it and answers in Claude Code's own output shape, so a prompt costs what recall
costs, with no process started. The token decides the entity.

It serves the hooks whose work is the payload itself: UserPromptSubmit (the prompt is
captured, and recall for it is the context to add) and SessionStart (its marker, and the
startup recall; Claude Code itself runs only command hooks on SessionStart). The others
read the session's transcript, which is on the client's machine, never the service's:
they stay command hooks (`pps hook <Event>`), which is also what sends, later, a prompt
this route never received (ingest.claude_code builds the same uids both ways).
"""

from __future__ import annotations

import threading
from typing import Annotated, Any

from fastapi import APIRouter, Body
from pydantic import BaseModel

from engine.capture import events as capture
from engine.kernel.config import Settings
from engine.kernel.errors import InputError
from engine.kernel.requests import NOT_BLANK
from engine.recall import ambient as recall
from engine.recall.shapes import RecallRequest
from engine.runtime import Runtime
from engine.store.db import Database
from ingest import claude_code
from pps.http.deps import DB, AppRuntime, AppSettings, CurrentEntity

router = APIRouter(prefix="/v1/hooks", tags=["hooks"])

SERVED = ("SessionStart", "UserPromptSubmit")

_numbering = threading.Lock()
"""Held while a prompt's occurrence is counted and its event stored: the same text sent
twice at once must still be two turns."""


BODY = {
    "type": "object",
    "required": ["session_id", "hook_event_name"],
    "properties": {
        "session_id": {
            "type": "string",
            "minLength": 1,
            "maxLength": claude_code.SESSION_MAX,
            "pattern": NOT_BLANK,
        },
        "hook_event_name": {"type": "string", "enum": list(SERVED)},
        **{name: {"type": ["string", "null"]} for name in claude_code.TEXT_FIELDS},
    },
    "additionalProperties": True,
}
"""What the route reads of a payload (it checks it itself, to name what is wrong in the
host's terms); Claude Code's other fields are taken and ignored."""


class HookSpecificOutput(BaseModel):
    hookEventName: str
    additionalContext: str


class HookAnswer(BaseModel):
    """Claude Code's hook output: `{}`, or the context to add to the conversation."""

    hookSpecificOutput: HookSpecificOutput | None = None


@router.post(
    "/claude-code",
    summary="A Claude Code http hook (UserPromptSubmit, SessionStart): capture, and the"
    " context to add",
    response_model_exclude_none=True,
    openapi_extra={"requestBody": {"content": {"application/json": {"schema": BODY}}}},
)
def claude_code_hook(
    payload: Annotated[
        Any,
        Body(
            description="The hook's JSON as Claude Code sends it (what a command hook reads on"
            " stdin): session_id, transcript_path, cwd, hook_event_name, prompt, source, ...",
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
) -> HookAnswer:
    event = claude_code.check_payload(payload)
    if event not in SERVED:
        raise InputError.of(
            "hook_event_name",
            f"{event} reads the session's transcript, on the client's machine: it runs as the"
            f" command hook `pps hook {event}` (`pps hooks install claude-code` puts it there)",
        )
    if event == "SessionStart":
        _record(db, entity, settings, runtime, [claude_code.start_marker(payload)])
        context = "startup"
        fields: dict[str, Any] = {}
    else:
        prompt = claude_code.prompt_text(payload)
        if prompt is None:
            return HookAnswer()
        with _numbering:
            parts = claude_code.prompt_events(
                payload, _occurrence(db, entity, payload, prompt), settings.max_content_bytes
            )
            _record(db, entity, settings, runtime, parts)
        context, fields = prompt, {"answering": claude_code.answering(parts)}
    request = claude_code.recall_request(payload, context, settings.hook_max_chars, **fields)
    found = recall.recall(runtime, entity, RecallRequest(**request)).context
    text = found[: settings.hook_max_chars] if found.strip() else None
    return HookAnswer.model_validate(claude_code.hook_output(event, text))


def _occurrence(db: Database, entity: str, payload: dict, prompt: str) -> int:
    """How many times the session's stored prompts held this text: the n of its uid, as
    the transcript sweep counts the session's lines. A prompt this route never got is sent
    later by the sweep; if the same words came here meanwhile, the two number them in
    another order, and each is still stored once (the words are the same)."""
    session = claude_code.session_of(payload)
    n = 0
    while capture.exists(db, entity, claude_code.user_turn_uid(session, prompt, n)):
        n += 1
    return n


def _record(
    db: Database, entity: str, settings: Settings, runtime: Runtime, events: list[dict]
) -> None:
    parsed = capture.parse_events(
        events, max_batch=settings.max_batch, max_content_bytes=settings.max_content_bytes
    )
    capture.record(db, entity, parsed, runtime.announce)
