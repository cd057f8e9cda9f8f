"""`pps hook <event>` as Claude Code runs it: the hook's JSON piped into a child process,
against a real server. Each hook captures what it should, once; none ever breaks or
stalls the session (exit 0, nothing on stdout but context to inject) when the service
is down, hung, or the input is garbage.

What SessionStart and UserPromptSubmit inject is recall as the session sees it: never the
prompt being answered, no news from its own session, no markers as turns, every author
told the same way, and no more than PPS_HOOK_MAX_CHARS characters, the most important
first (issue 12, "The first hour")."""

from __future__ import annotations

import json
import signal
import time

import httpx
import pytest

from engine.kernel import timestamps
from ingest.claude_code import user_turn_uid
from pps.process import ServerProcess
from tests.conftest import NO_GRAPH, AppServer, create_entity, settings_env, wait_for
from tests.fixtures_ingest import Transcript, all_events, client_env, pps, run_hook, token_of


@pytest.fixture
def session(make_client, server, tmp_path, processes):
    """A new entity, its client environment, and a transcript for one session. The hook
    budget is generous here so a busy test machine cannot turn a recall into silence;
    the budget itself is tested with a hung service below."""
    api = make_client()
    env = client_env(server.url, token_of(api), tmp_path, PPS_HOOK_BUDGET_S="20")
    return api, env, Transcript(tmp_path / "session.jsonl")


def hook(event: str, transcript: Transcript, env: dict, **fields):
    done = run_hook(event, env=env, stdin=transcript.payload(event, **fields))
    assert done.returncode == 0, done.stderr
    return done


def recall_context(api: httpx.Client, context: str) -> str | None:
    """What recall answers on this server (None: no recall endpoint yet, or no context)."""
    answer = api.post("/v1/recall", json={"context": context})
    if answer.status_code != 200:
        return None
    text = answer.json().get("context")
    return text if isinstance(text, str) and text.strip() else None


def assert_recall_block(printed: str | None, expected: str | None) -> None:
    """The hook printed a recall block when the service has one to give, else nothing.
    (Not byte for byte: the hook's recall runs while its own event is being sent.)"""
    if expected is None:
        assert printed is None
    else:
        assert printed is not None, "the service had a recall to give; the hook printed none"
        assert printed.startswith("# Memory (ambient recall") and "The comfy robe" in printed


def injected(done) -> str | None:
    if not done.stdout.strip():
        return None
    output = json.loads(done.stdout)["hookSpecificOutput"]
    return output["additionalContext"]


def test_session_start_records_the_start_and_injects_startup_recall(session):
    api, env, transcript = session
    api.post("/v1/anchors", json={"title": "Robe", "content": "The comfy robe, a gift."})
    done = hook("SessionStart", transcript, env, source="startup", model="claude-sonnet-4-5")
    [start] = all_events(api)
    assert start["event_type"] == "session_start" and start["session_id"] == transcript.session
    assert start["metadata"]["start_source"] == "startup"
    assert start["metadata"]["cwd"] == transcript.cwd
    expected = recall_context(api, "startup")
    assert_recall_block(injected(done), expected)


def test_user_prompt_submit_captures_the_prompt_and_injects_its_recall(session):
    api, env, transcript = session
    api.post("/v1/anchors", json={"title": "Robe", "content": "The comfy robe, a gift."})
    prompt = "Why don't you go pull on that comfy robe of yours?"
    done = hook("UserPromptSubmit", transcript, env, prompt=prompt)
    [turn] = all_events(api)
    assert (turn["role"], turn["content"], turn["channel"]) == ("user", prompt, "terminal:claude")
    assert turn["session_id"] == transcript.session
    expected = recall_context(api, prompt)
    assert_recall_block(injected(done), expected)


def test_stop_captures_new_turns_once_and_tracks_its_position(session):
    api, env, transcript = session
    transcript.noise()
    prompt = "how is the nightly backup?"
    hook("UserPromptSubmit", transcript, env, prompt=prompt)
    transcript.user(prompt)
    transcript.tool_round()
    line = transcript.assistant("The backup finished at 03:10; nothing failed.")
    transcript.assistant("I also checked the logs.")
    assert hook("Stop", transcript, env, stop_hook_active=False).stdout == ""

    stored = all_events(api)
    assert [(e["role"], e["content"]) for e in stored] == transcript.turns
    assert all(e["session_id"] == transcript.session for e in stored)
    assistant = stored[1]
    assert assistant["created_at"] == timestamps.normalise(transcript.records[line]["timestamp"])
    assert assistant["metadata"]["model"] == "claude-sonnet-4-5-20250929"
    assert assistant["metadata"]["git_branch"] == "main"

    hook("Stop", transcript, env, stop_hook_active=True)
    assert len(all_events(api)) == 3  # nothing read twice

    transcript.user("yes")
    transcript.assistant("Done.")
    transcript.user("yes")  # the same words again are a new turn
    transcript.assistant("Done again.")
    hook("Stop", transcript, env, stop_hook_active=False)
    assert [(e["role"], e["content"]) for e in all_events(api)] == transcript.turns


def test_a_prompt_repeated_in_a_session_is_two_turns(session):
    api, env, transcript = session
    for _ in range(2):
        hook("UserPromptSubmit", transcript, env, prompt="continue")
        transcript.user("continue")
        transcript.assistant("Continuing.")
        hook("Stop", transcript, env, stop_hook_active=False)
    contents = [e["content"] for e in all_events(api)]
    assert contents == ["continue", "Continuing.", "continue", "Continuing."]


@pytest.mark.parametrize(
    ("event", "fields", "event_type", "why"),
    [
        ("PreCompact", {"trigger": "auto", "custom_instructions": ""}, "pre_compact", "auto"),
        ("SessionEnd", {"reason": "prompt_input_exit"}, "session_end", "prompt_input_exit"),
    ],
)
def test_pre_compact_and_session_end_capture_the_rest_and_close_the_window(
    session, event, fields, event_type, why
):
    api, env, transcript = session
    transcript.user("one last thing: water the plants")
    transcript.assistant("Noted: the plants, tomorrow morning.")
    done = hook(event, transcript, env, **fields)
    assert done.stdout == ""
    *turns, marker = all_events(api)
    assert [(e["role"], e["content"]) for e in turns] == transcript.turns
    assert marker["event_type"] == event_type
    assert marker["metadata"]["closes_window"] is True
    assert why in marker["content"]
    hook(event, transcript, env, **fields)  # fired twice at the same point: marked once
    assert len(all_events(api)) == 3


def test_a_session_that_never_began_is_not_ended(session, tmp_path):
    """`claude mcp list` fires SessionEnd for a session it never started, whose transcript
    was never written: nothing is stored (it used to store "Claude Code session ended"),
    and nothing is said in hooks.log (it said the transcript was missing)."""
    api, env, transcript = session
    assert not transcript.path.exists()
    done = hook("SessionEnd", transcript, env, reason="other")
    assert done.stdout == ""
    assert all_events(api) == []
    assert not (tmp_path / "client" / "hooks.log").exists()
    hook("SessionStart", transcript, env, source="startup")  # a session that began, ends
    hook("SessionEnd", transcript, env, reason="other")
    assert [e["event_type"] for e in all_events(api)] == ["session_start", "session_end"]


def test_prompt_captured_by_the_hook_is_not_stored_again_from_the_transcript(session):
    api, env, transcript = session
    hook("UserPromptSubmit", transcript, env, prompt="  what's in my wardrobe?\n")
    transcript.user("  what's in my wardrobe?\n")
    transcript.assistant("A robe, mostly.")
    hook("SessionEnd", transcript, env, reason="logout")
    contents = [e["content"] for e in all_events(api) if e["event_type"] == "message"]
    assert contents == ["  what's in my wardrobe?\n", "A robe, mostly."]


@pytest.mark.parametrize(
    "stdin", [b"", b"not json at all", b"[1, 2, 3]", b'{"hook_event_name": "Stop"}', b"\xff\xfe"]
)
def test_garbage_input_never_breaks_the_session(session, stdin):
    _, env, _ = session
    for event in ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"):
        done = run_hook(event, env=env, stdin=stdin)
        assert (done.returncode, done.stdout) == (0, ""), (event, done.stderr)


def test_unknown_event_or_missing_token_exits_0_and_says_why_in_the_log(session, tmp_path):
    _, env, transcript = session
    done = run_hook("NotAnEvent", env=env, stdin=transcript.payload("NotAnEvent"))
    assert (done.returncode, done.stdout) == (0, "")
    del env["PPS_TOKEN_FILE"]
    done = run_hook("Stop", env=env, stdin=transcript.payload("Stop"))
    assert (done.returncode, done.stdout) == (0, "")
    log = (tmp_path / "client" / "hooks.log").read_text()
    assert "unknown hook event 'NotAnEvent'" in log and "PPS_TOKEN_FILE" in log
    assert (tmp_path / "client" / "hooks.log").stat().st_mode & 0o777 == 0o600


def test_a_refused_token_is_a_line_claude_code_shows_the_user(server, tmp_path, processes):
    """A revoked or wrong token (issue 27): every hook used to print nothing and say it only
    in hooks.log, so nothing was injected and nobody knew why. Each hook now answers
    Claude Code's `systemMessage` (shown to the user) naming the token file and the 401;
    what it captured waits in the spool, and it still exits 0."""
    env = client_env(server.url, "pps_not_a_token", tmp_path, PPS_HOOK_BUDGET_S="20")
    transcript = Transcript(tmp_path / "refused.jsonl")
    for event, fields in [
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {"prompt": "are you there?"}),
        ("Stop", {"stop_hook_active": False}),
    ]:
        output = json.loads(hook(event, transcript, env, **fields).stdout)
        assert set(output) == {"systemMessage"}, (event, output)
        line = output["systemMessage"]
        assert f"refused the token from {env['PPS_TOKEN_FILE']}" in line, line
        assert "HTTP 401" in line and "unknown or revoked token" in line
    assert "3 hook calls wait in the spool" in line  # the start, the prompt, the Stop: kept


def test_hooks_with_the_service_stopped_spool_and_exit_0_then_flush_delivers_once(
    tmp_path, processes
):
    server = AppServer(tmp_path / "data").start()
    try:
        token = create_entity(server.data_dir, "lyra")
        env = client_env(server.url, token, tmp_path)
        transcript = Transcript(tmp_path / "down.jsonl")
        server.stop()

        hook("SessionStart", transcript, env, source="startup")
        for n in range(3):
            prompt = f"message {n} while pps is down"
            done = hook("UserPromptSubmit", transcript, env, prompt=prompt)
            assert done.stdout == ""
            transcript.user(prompt)
            transcript.assistant(f"answer {n}")
            hook("Stop", transcript, env, stop_hook_active=False)
        hook("SessionEnd", transcript, env, reason="logout")
        spools = list((tmp_path / "client").glob("hooks-*.jsonl"))
        assert len(spools) == 1 and spools[0].stat().st_mode & 0o777 == 0o600

        server.start()
        flushed = pps("ingest", "flush", env=env)
        assert flushed.returncode == 0, flushed.stderr
        assert "0 waiting" in flushed.stdout
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}) as api:
            stored = all_events(api)
        turns = [(e["role"], e["content"]) for e in stored if e["event_type"] == "message"]
        assert sorted(turns) == sorted(transcript.turns)  # each once
        kinds = [e["event_type"] for e in stored]
        assert kinds.count("session_start") == 1 and kinds.count("session_end") == 1
    finally:
        server.stop()


def test_a_hung_service_does_not_stall_the_hook(tmp_path, processes):
    server = ServerProcess(tmp_path / "data", env=settings_env(**NO_GRAPH)).start()
    try:
        token = create_entity(server.data_dir, "lyra")
        env = client_env(server.url, token, tmp_path, PPS_HOOK_BUDGET_S="1")
        transcript = Transcript(tmp_path / "hung.jsonl")
        server.proc.send_signal(signal.SIGSTOP)
        for event, fields in [("SessionStart", {"source": "resume"}), ("UserPromptSubmit", {})]:
            started = time.monotonic()
            done = hook(event, transcript, env, prompt="are you there?", **fields)
            took = time.monotonic() - started
            assert done.stdout == ""
            assert took < 8, f"{event} took {took:.1f}s with a 1s budget"
        server.proc.send_signal(signal.SIGCONT)
        assert pps("ingest", "flush", env=env).returncode == 0
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}) as api:
            kinds = sorted(e["event_type"] for e in all_events(api))
        assert kinds == ["message", "session_start"]
    finally:
        server.proc.send_signal(signal.SIGCONT)
        server.stop()


# --- what the hooks inject (issue 12, "The first hour") ------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # Recall's per-layer budgets are a safety net for a stuck layer; a busy test machine
    # must not trip them, or a layer these tests look at would be skipped.
    data_dir = tmp_path_factory.mktemp("pps") / "data"
    with AppServer(data_dir, recall_budget_ms=20000, recall_startup_budget_ms=20000) as app:
        yield app


def section(block: str | None, title: str) -> list[str]:
    """The items of one `## title` section of an injected block."""
    found, inside = [], False
    for line in (block or "").splitlines():
        if line.startswith("## "):
            inside = line[3:].startswith(title)
        elif inside and line.startswith("- "):
            found.append(line)
    return found


def test_a_prompt_never_comes_back_as_its_own_past_turn(session):
    """The prompt's own event may reach the service before its recall runs (the hook
    sends it while it asks): here it has, every time. Recall still leaves it out."""
    api, env, transcript = session
    api.post(
        "/v1/events",
        json={
            "channel": "terminal:claude",
            "role": "user",
            "content": "the greenhouse heater broke again last winter",
            "created_at": "2026-01-04T12:00:00Z",
        },
    )
    prompt = "did we ever fix the greenhouse heater?"
    answered = api.post(
        "/v1/events",
        json={
            "event_uid": user_turn_uid(transcript.session, prompt, 0),
            "channel": "terminal:claude",
            "role": "user",
            "content": prompt,
            "session_id": transcript.session,
        },
    )
    assert answered.status_code == 200, answered.text
    block = injected(hook("UserPromptSubmit", transcript, env, prompt=prompt))
    past = section(block, "Past turns")
    assert any("greenhouse heater broke" in line for line in past), block  # the layer ran
    assert prompt not in block


def test_news_from_other_channels_is_not_this_session(session):
    api, env, transcript = session
    hook("UserPromptSubmit", transcript, env, prompt="let's look at the flaky backup test")
    transcript.user("let's look at the flaky backup test")
    transcript.assistant("The backup test races the clock; I pinned it.")
    hook("Stop", transcript, env, stop_hook_active=False)
    dinner = ["Dinner is at eight tonight.", "Soup for dinner?", "Dinner: bring bread."]
    api.post(
        "/v1/events",
        json=[{"channel": "discord", "author": "nexus", "content": text} for text in dinner],
    )
    block = injected(hook("UserPromptSubmit", transcript, env, prompt="any news about dinner?"))
    assert "Dinner is at eight" in block, block
    news = section(block, "Meanwhile in other channels")
    assert not any("terminal" in line for line in news), news


def test_a_prompt_never_brings_back_its_own_sessions_turns(session):
    """The host has this session's turns in its context already: the second prompt's
    recall gives none of them back (it gave 2 of 5 turn lines), only other sessions'."""
    api, env, transcript = session
    api.post(
        "/v1/events",
        json={
            "channel": "terminal:claude",
            "role": "user",
            "session_id": "an-earlier-session",
            "content": "the sourdough starter smelled of acetone last week",
        },
    )
    first = "how do I feed the sourdough starter?"
    before = injected(hook("UserPromptSubmit", transcript, env, prompt=first))
    transcript.user(first)
    transcript.assistant("Feed the sourdough starter equal weights of flour and water daily.")
    hook("Stop", transcript, env, stop_hook_active=False)
    wait_for(
        lambda: (
            len(api.post("/v1/search", json={"query": "sourdough starter"}).json()["results"]) >= 3
        ),
        30,
        "the three sourdough turns to become searchable",
    )
    block = injected(hook("UserPromptSubmit", transcript, env, prompt="and the sourdough starter?"))
    # the turns layer ran, and found the other session's turn, once: the session holds it
    assert ("acetone" in before) != ("acetone" in block), (before, block)
    assert "equal weights" not in block and first not in block, block
    woken = injected(hook("SessionStart", transcript, env, source="resume"))
    assert "acetone" in woken and "equal weights" not in woken, woken


def test_private_text_never_leaves_the_machine_nor_touches_its_disk(session, tmp_path):
    """What the user wraps in <private>…</private> is stripped from the prompt and from
    the transcript before anything is derived from it: the prompt is stored once, without
    it, and no file the hooks write (spool, session state, log) holds it."""
    api, env, transcript = session
    prompt = "deploy with the key <private>sk-live-9f8e7d</private> to staging"
    hook("UserPromptSubmit", transcript, env, prompt=prompt)
    transcript.user(prompt)
    transcript.assistant("Deployed to staging.<private> The key was sk-live-9f8e7d.</private>")
    hook("Stop", transcript, env, stop_hook_active=False)
    contents = sorted(e["content"] for e in all_events(api))
    assert contents == ["Deployed to staging.", "deploy with the key  to staging"]
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "session.jsonl"]
    assert written and not [p for p in written if b"sk-live" in p.read_bytes()]
    only = injected(hook("UserPromptSubmit", transcript, env, prompt="<private>x</private>"))
    assert only is None and len(all_events(api)) == 2  # nothing to capture nor recall for
    typed = "keep the deploy notes <private>and sk-live-9f8e7d</private>"
    hook("PreCompact", transcript, env, trigger="manual", custom_instructions=typed)
    [compact] = [e for e in all_events(api) if e["event_type"] == "pre_compact"]
    assert compact["metadata"]["custom_instructions"] == "keep the deploy notes "


def test_what_the_hook_client_writes_is_the_users_alone(session, tmp_path):
    """Its client dir, made by the first Stop (the transcript's position, a folder down)
    was 0755 until a log or a spool was written: every folder it makes is 0700 and every
    file 0600."""
    _, env, transcript = session
    client = tmp_path / "client"
    assert not client.exists()
    transcript.user("water the plants")
    transcript.assistant("Tomorrow morning.")
    hook("Stop", transcript, env, stop_hook_active=False)
    made = [client, *client.rglob("*")]
    assert len(made) >= 3  # the dir, the positions' folder, a position
    assert {p: p.stat().st_mode & 0o777 for p in made} == {
        p: 0o700 if p.is_dir() else 0o600 for p in made
    }


def test_session_markers_are_stored_but_never_recalled_as_turns_or_counted(session, tmp_path):
    api, env, transcript = session
    hook("SessionStart", transcript, env, source="startup")
    hook("UserPromptSubmit", transcript, env, prompt="water the plants tomorrow")
    transcript.user("water the plants tomorrow")
    transcript.assistant("Noted: the plants, tomorrow morning.")
    hook("PreCompact", transcript, env, trigger="manual", custom_instructions="")
    hook("SessionEnd", transcript, env, reason="logout")

    kinds = [e["event_type"] for e in all_events(api)]  # stored, every one
    assert sorted(kinds) == ["message", "message", "pre_compact", "session_end", "session_start"]
    since = api.get("/v1/turns/since-summary").json()
    assert since["unsummarized"] == 2
    assert [t["content"] for t in since["turns"]] == [c for _, c in transcript.turns]

    following = Transcript(tmp_path / "following.jsonl")  # the next session wakes up
    resumed = injected(hook("SessionStart", following, env, source="startup"))
    assert "Noted: the plants" in resumed and "Unsummarized turns: 2" in resumed
    asked = injected(
        hook("UserPromptSubmit", following, env, prompt="when did the session start and end?")
    )
    for block in (resumed, asked):
        for marker in ("session started", "Context compaction", "session ended"):
            assert marker not in block, block


def test_an_author_reads_the_same_in_startup_and_prompt_recall(session):
    _, env, transcript = session
    hook("UserPromptSubmit", transcript, env, prompt="how did the nightly backup go?")
    transcript.user("how did the nightly backup go?")
    transcript.assistant("The nightly backup finished at 03:10; nothing failed.")
    hook("Stop", transcript, env, stop_hook_active=False)

    other = Transcript(transcript.path.with_name("other.jsonl"))
    startup = injected(hook("SessionStart", other, env, source="startup"))
    third = Transcript(transcript.path.with_name("third.jsonl"))  # holds nothing yet
    prompt = injected(hook("UserPromptSubmit", third, env, prompt="the nightly backup"))
    said = "assistant: The nightly backup finished at 03:10"
    assert any(said in line for line in section(startup, "Turns since the last summary"))
    assert any(said in line for line in section(prompt, "Past turns")), prompt
    assert "?:" not in startup + prompt


def test_session_start_injects_at_most_the_cap_most_important_first(session, tmp_path):
    api, env, transcript = session
    api.post("/v1/crystals", json={"content": "Crystal: steady, curious, at home."})
    api.post("/v1/spaces", json={"name": "workshop", "description": "Sawdust and lamplight."})
    api.post("/v1/spaces/workshop/enter", json={"channel": "terminal:claude"})
    first = api.post(
        "/v1/events", json={"channel": "terminal:claude", "content": "the very first turn"}
    )
    api.post(
        "/v1/summaries",
        json={
            "summary_text": "Summary: we built a bench.",
            "start_id": first.json()["events"][0]["id"],
            "end_id": first.json()["events"][0]["id"],
        },
    )
    for n in range(3):
        api.post("/v1/anchors", json={"title": f"Photo {n}", "content": "A long look. " * 40})
    turns = [
        {"channel": "discord", "author": "jeff", "content": f"turn {n:03}: " + "words " * 15}
        for n in range(300)
    ]
    assert api.post("/v1/events", json=turns).status_code == 200

    block = injected(hook("SessionStart", transcript, env, source="startup"))
    assert len(block) <= 10_000
    assert "Crystal: steady" in block and "workshop: Sawdust" in block
    assert "Summary: we built a bench." in block
    shown = section(block, "Turns since the last summary")
    assert shown and "turn 299:" in shown[-1]  # the newest, in reading order
    assert f"({300 - len(shown)} older unsummarized turns not shown: get_turns_since_summary)" in (
        block
    )
    assert "Unsummarized turns: 300" in block

    tight = client_env(
        env["PPS_URL"],
        token_of(api),
        tmp_path / "tight",
        PPS_HOOK_BUDGET_S="20",
        PPS_HOOK_MAX_CHARS="2500",
    )
    small = injected(hook("SessionStart", transcript, tight, source="resume"))
    assert len(small) <= 2_500
    assert "Crystal: steady" in small and "Summary: we built a bench." in small
    assert "word-photos not shown" in small and "A long look" not in small
