"""What a Claude Code hook injects: the share of its characters that are memory text (the
items' own text: a turn as when, where and who said what; a word-photo's lines; a
summary) rather than headings, source references and the foot. Against a real `pps
serve` (no graph) holding past sessions, another channel and word-photos, it sends
Claude Code's own payloads to the http hook (`POST /v1/hooks/claude-code`): a SessionStart
and `--prompts` prompts of a session whose turns are stored as it goes. For each, the
same recall the hook asks for (its body from ingest.claude_code) gives the items; the
share is their characters over the block's. Prints each hook's share and the total
(goal: at least 90%). Bounded: a few dozen requests.

    python bench/injected.py [--prompts 6] [--past 120]
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run by path: bench/ingest.py must not shadow `ingest`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import tempfile
import time
import uuid

import httpx

from ingest.claude_code import recall_request, user_turn_uid
from pps.process import ServerProcess

MAX_CHARS = 10_000  # PPS_HOOK_MAX_CHARS's default
TOPICS = [
    (
        "the greenhouse sensor",
        "reads two degrees high after rain",
        "recalibrate it against the"
        " reference thermometer at dawn, when the glass is dry, and log both readings",
    ),
    (
        "the nightly backup",
        "failed twice on the full disk",
        "prune the snapshots older than"
        " thirty days first, then move the job to half past two so it misses the index rebuild",
    ),
    (
        "the sourdough starter",
        "smelled of acetone",
        "it is hungry, not spoiled: feed it equal"
        " weights of flour and water twice a day for three days and keep it off the radiator",
    ),
    (
        "the release notes",
        "still miss the migration step",
        "add it under upgrading with the"
        " exact command, and say that the old data folder is kept until the first start succeeds",
    ),
    (
        "the flaky login test",
        "races the token clock",
        "freeze the clock in the fixture instead"
        " of sleeping, and assert on the expiry the server reports rather than on wall time",
    ),
    (
        "the kitchen lights",
        "flicker on the dimmer",
        "the bulbs are not dimmable: swap them for"
        " dimmable LEDs of the same fitting, or bypass the dimmer until the new ones come",
    ),
]
"""(subject, what the user saw, what was decided): a conversation's worth of topics."""
PROMPTS = [
    "What did we decide about the greenhouse sensor?",
    "Is the nightly backup healthy again?",
    "Remind me what to do with the sourdough starter.",
    "Where are we with the release notes?",
    "Why does the flaky login test fail?",
    "Anything about the kitchen lights?",
]


def past_turns(count: int) -> list[dict]:
    """Earlier sessions' turns as Claude Code's are (a short prompt, a longer answer; a
    session each ten turns) and Discord's (a message from Jeff)."""
    events = []
    for n in range(count):
        subject, seen, decided = TOPICS[(n // 2) % len(TOPICS)]  # a prompt, then its answer
        moment = f"2026-11-{1 + n % 28:02d}T{8 + n % 12:02d}:{n % 60:02d}:00Z"
        if n % 5 == 4:
            turn = {"channel": "discord", "author": "jeff"}
            text = f"heads up: {subject} {seen} again this morning ({n})"
        elif n % 2:
            turn = {"channel": "terminal", "role": "user", "session_id": f"past-{n // 10}"}
            text = f"{subject} {seen} again, what now? ({n})"
        else:
            turn = {"channel": "terminal", "role": "assistant", "session_id": f"past-{n // 10}"}
            text = (
                f"Looking at {subject}: it {seen}, which matches what the logs show. The fix"
                f" is to {decided}. I made that change and noted it for the next review ({n})."
            )
        events.append({**turn, "content": text, "created_at": moment})
    return events


def payload(session: str, event: str, **fields) -> dict:
    """A hook's JSON as Claude Code sends it."""
    return {
        "session_id": session,
        "transcript_path": f"~/.claude/projects/-srv-pps/{session}.jsonl",
        "cwd": "/srv/pps",
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def share(api: httpx.Client, url: str, body: dict, hook: dict) -> tuple[int, int, str]:
    """(memory characters, block characters, the block) of one hook's injection."""
    answered = api.post(f"{url}/v1/hooks/claude-code", json=hook).json()
    injected = answered.get("hookSpecificOutput", {}).get("additionalContext", "")
    recall = api.post(f"{url}/v1/recall", json=body).json()
    memory = sum(len(item["text"].strip()) for item in recall["items"])
    if abs(len(recall["context"]) - len(injected)) > len(injected) // 10:
        raise RuntimeError("the hook's block and its recall differ; the share would not hold")
    return memory, len(recall["context"]), injected


def wait_indexed(api: httpx.Client, url: str, query: str) -> None:
    """Turns get vectors from a background job: wait (bounded) until search uses them."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = api.post(f"{url}/v1/search", json={"query": query, "tiers": "longform"}).json()
        if found.get("results") and found.get("fallback") is None:
            return
        time.sleep(0.5)
    print("(vectors not ready after 120 s: recall ranks by words)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompts", type=int, default=len(PROMPTS))
    parser.add_argument("--past", type=int, default=120)
    parser.add_argument("--show", action="store_true", help="print the last prompt's block")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        server = ServerProcess(Path(root) / "data", env={"GRAPH_BACKEND": "none"})
        with server.start(timeout=300):
            token = server.pps("entity", "create", "bench").strip()
            headers = {"Authorization": f"Bearer {token}"}
            with httpx.Client(headers=headers, timeout=60) as api:
                url = server.url
                api.post(f"{url}/v1/events", json=past_turns(args.past)).raise_for_status()
                for subject, seen, decided in TOPICS[:3]:
                    text = f"Jeff and I on {subject}: it {seen}; we agreed to {decided}."
                    api.post(
                        f"{url}/v1/anchors", json={"title": subject, "content": text}
                    ).raise_for_status()
                wait_indexed(api, url, TOPICS[-1][2])
                session = str(uuid.uuid4())
                body = recall_request({"session_id": session}, "startup", MAX_CHARS)
                hooks = [("SessionStart", *share(api, url, body, payload(session, "SessionStart")))]
                for n, prompt in enumerate((PROMPTS * 2)[: args.prompts]):
                    uid = user_turn_uid(session, prompt, 0)
                    body = recall_request(
                        {"session_id": session}, prompt, MAX_CHARS, answering=[uid]
                    )
                    hook = payload(session, "UserPromptSubmit", prompt=prompt)
                    hooks.append((f"prompt {n + 1}", *share(api, url, body, hook)))
                    subject, seen, decided = TOPICS[n % len(TOPICS)]
                    reply = f"On {subject}: it {seen}, so as agreed we {decided}."
                    turn = {"channel": "terminal", "session_id": session, "role": "assistant"}
                    api.post(f"{url}/v1/events", json={**turn, "content": reply})
    if args.show:
        print(hooks[-1][3], end="\n\n")
    for name, memory, block, _ in hooks:
        print(f"{name:14} {block:6,} characters, {memory / max(block, 1):6.1%} memory text")
    memory, block = sum(h[1] for h in hooks), sum(h[2] for h in hooks)
    print(f"{'all':14} {block:6,} characters, {memory / max(block, 1):6.1%} memory text")


if __name__ == "__main__":
    main()
