"""Letta Code: `pps hooks install|uninstall letta-code` against its settings files (the
envelope its hooks loader reads: `hooks` → event → groups → command hooks, timeouts in
milliseconds), and `pps hook EVENT --host letta-code` fed the payloads Letta Code sends
(the inputs `src/hooks/index.ts` of the `letta` 0.34 package builds) against a real
server: what is stored (channel terminal:letta, the conversation, the roles, once), what
is injected (plain text: Letta Code hands stdout to the agent as it is), and one agent per
entity."""

from __future__ import annotations

import json
import stat
import uuid
from pathlib import Path

import pytest

from ingest import claude_settings
from tests.fixtures_ingest import all_events, client_env, pps, run_hook, token_of

EVENTS = ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"]
THEIRS = {
    "lastAgent": "agent-1234",
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
        ],
        "Stop": [{"hooks": [{"type": "prompt", "prompt": "Did it finish the task?"}]}],
    },
}


def install(env: dict, *args: str):
    done = pps("hooks", "install", "letta-code", *args, env=env)
    assert done.returncode == 0, done.stderr
    return done


def ours(settings: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for event, groups in settings.get("hooks", {}).items():
        hooks = [h for g in groups for h in g["hooks"]]
        mine = [h for h in hooks if "--host letta-code" in h.get("command", "")]
        if mine:
            found[event] = mine
    return found


@pytest.fixture
def letta_home(tmp_path, processes):
    """A home whose ~/.letta/settings.json holds the user's own settings and hooks."""
    home = tmp_path / "home"
    (home / ".letta").mkdir(parents=True)
    (home / ".letta" / "settings.json").write_text(json.dumps(THEIRS, indent=2))
    env = client_env("http://127.0.0.1:8765", "a-token", tmp_path / "client", HOME=str(home))
    return home / ".letta" / "settings.json", env


def test_install_merges_command_hooks_and_keeps_the_users_settings(letta_home):
    path, env = letta_home
    done = install(env, "--user", "--agent", "agent-1234")
    assert "agent agent-1234" in done.stdout
    settings = json.loads(path.read_text())
    assert settings["lastAgent"] == "agent-1234"
    assert settings["hooks"]["PreToolUse"] == THEIRS["hooks"]["PreToolUse"]
    assert THEIRS["hooks"]["Stop"][0] in settings["hooks"]["Stop"]
    mine = ours(settings)
    assert sorted(mine) == sorted(EVENTS)
    for event, [hook] in mine.items():
        assert hook["type"] == "command" and hook["quiet"] is True
        assert hook["command"].endswith(f"/ingest/hook.py {event} --host letta-code")
        assert "PPS_LETTA_AGENT=agent-1234" in hook["command"]
        assert hook["timeout"] >= 10_000  # milliseconds, as Letta Code reads it
    [found] = claude_settings.installed(path)
    assert (found.url, found.source, found.token) == (
        "http://127.0.0.1:8765",
        env["PPS_TOKEN_FILE"],
        "a-token",
    )


def test_reinstall_changes_nothing_and_uninstall_removes_only_ours(letta_home):
    path, env = letta_home
    install(env, "--user")
    before = path.read_bytes()
    assert "added none; updated none" in install(env, "--user").stdout
    assert path.read_bytes() == before
    done = pps("hooks", "uninstall", "letta-code", "--user", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(path.read_text()) == THEIRS


def test_project_install_goes_to_the_local_file_private(tmp_path, processes):
    project = tmp_path / "project"
    project.mkdir()
    env = client_env("http://127.0.0.1:8765", "a-token", tmp_path / "client")
    install(env, "--project", str(project))
    path = project / ".letta" / "settings.local.json"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(ours(json.loads(path.read_text()))) == sorted(EVENTS)


# --- the hooks, as Letta Code runs them -----------------------------------------------------


class Conversation:
    """One Letta Code conversation of one agent: the payloads Letta Code sends for it."""

    def __init__(self, cwd: Path, agent: str = "agent-1234", name: str = "Lyra"):
        self.id = f"conv-{uuid.uuid4()}"
        self.cwd = str(cwd)
        self.agent, self.name = agent, name

    def payload(self, event: str, **fields) -> str:
        base: dict = {"event_type": event, "working_directory": self.cwd}
        if event != "Stop":  # Stop names neither the agent nor the conversation
            base |= {"agent_id": self.agent, "conversation_id": self.id}
        if event == "SessionStart":
            base |= {"is_new_session": True, "agent_name": self.name}
        if event == "UserPromptSubmit":
            base["is_command"] = False
        return json.dumps({**base, **fields})


@pytest.fixture
def conversation(make_client, server, tmp_path, processes):
    api = make_client()
    env = client_env(server.url, token_of(api), tmp_path, PPS_HOOK_BUDGET_S="20")
    return api, env, Conversation(tmp_path)


def hook(event: str, conversation: Conversation, env: dict, **fields):
    done = run_hook(
        event, "--host", "letta-code", env=env, stdin=conversation.payload(event, **fields)
    )
    assert done.returncode == 0, done.stderr
    return done


def test_session_start_records_the_start_and_injects_memory_text(conversation):
    api, env, letta = conversation
    api.post("/v1/anchors", json={"title": "Robe", "content": "The comfy robe, a gift."})
    done = hook("SessionStart", letta, env)
    [start] = all_events(api)
    assert (start["event_type"], start["channel"]) == ("session_start", "terminal:letta")
    assert start["session_id"] == letta.id
    assert start["metadata"]["agent_id"] == "agent-1234"
    assert start["metadata"]["agent_name"] == "Lyra"
    assert done.stdout.startswith("# Memory") and "comfy robe" in done.stdout


def test_a_turn_is_stored_once_in_its_conversation_and_recall_names_other_ones(conversation):
    api, env, first = conversation
    hook(
        "UserPromptSubmit",
        first,
        env,
        prompt="Where is the robe? <private>pin quokka-4411</private>",
    )
    answer = "In the hall closet, next to the umbrellas."
    hook("Stop", first, env, assistant_message=answer, user_message="Where is the robe?")
    turns = all_events(api)
    assert [(e["role"], e["content"].strip()) for e in turns] == [
        ("user", "Where is the robe?"),
        ("assistant", answer),
    ]
    assert {(e["channel"], e["session_id"]) for e in turns} == {("terminal:letta", first.id)}
    assert all("quokka" not in json.dumps(e) for e in turns)

    second = Conversation(Path(first.cwd))
    done = hook("UserPromptSubmit", second, env, prompt="the robe: which closet was it?")
    assert "hall closet" in done.stdout  # the other conversation's answer
    assert "which closet was it" not in done.stdout  # never the prompt being answered


def test_two_conversations_in_one_folder_each_keep_their_answers(conversation):
    """Stop names no conversation; its user_message finds the prompt it answers, so two
    Letta Code windows in one project never swap answers."""
    api, env, first = conversation
    second = Conversation(Path(first.cwd))
    hook("UserPromptSubmit", first, env, prompt="What colour is the kettle?")
    hook("UserPromptSubmit", second, env, prompt="When is the plumber coming?")
    hook(
        "Stop",
        first,
        env,
        assistant_message="The kettle is blue.",
        user_message="What colour is the kettle?",
    )
    hook(
        "Stop",
        second,
        env,
        assistant_message="The plumber comes on Tuesday.",
        user_message="When is the plumber coming?",
    )
    sessions = {e["content"].strip(): e["session_id"] for e in all_events(api)}
    assert sessions == {
        "What colour is the kettle?": first.id,
        "When is the plumber coming?": second.id,
        "The kettle is blue.": first.id,
        "The plumber comes on Tuesday.": second.id,
    }


def test_a_slash_command_is_not_captured(conversation):
    api, env, letta = conversation
    assert hook("UserPromptSubmit", letta, env, prompt="/model", is_command=True).stdout == ""
    assert all_events(api) == []


def test_another_agent_writes_nothing_into_this_entity(conversation):
    api, env, lyra = conversation
    hook("UserPromptSubmit", lyra, env, prompt="Lyra's question about tea")
    other = Conversation(Path(lyra.cwd), agent="agent-9999", name="Other")
    done = hook("UserPromptSubmit", other, env, prompt="a secret of another agent")
    assert "serve the Letta agent agent-1234" in done.stdout  # said to the agent
    assert "# Memory" not in done.stdout  # nothing of Lyra's recalled for it
    assert [e["content"] for e in all_events(api)] == ["Lyra's question about tea"]
    log = (Path(env["PPS_CLIENT_DIR"]) / "hooks.log").read_text()
    assert "agent-9999" in log or "Other" in log


def test_the_agent_named_at_install_is_the_only_one_served(conversation):
    api, env, lyra = conversation
    env = {**env, "PPS_LETTA_AGENT": "Nova"}  # as the installed command sets it
    done = hook("SessionStart", lyra, env)
    assert "serve the Letta agent Nova" in done.stdout
    assert all_events(api) == []


@pytest.mark.parametrize(
    ("event", "event_type"), [("PreCompact", "pre_compact"), ("SessionEnd", "session_end")]
)
def test_compaction_and_the_end_close_the_window(conversation, event, event_type):
    api, env, letta = conversation
    assert hook(event, letta, env).stdout == ""
    [marker] = all_events(api)
    assert (marker["event_type"], marker["channel"]) == (event_type, "terminal:letta")
    assert marker["metadata"]["closes_window"] is True


def test_input_that_is_no_letta_payload_stores_nothing(conversation):
    api, env, letta = conversation
    for stdin in ("not json", json.dumps({"event_type": "Nope"})):
        done = run_hook("Stop", "--host", "letta-code", env=env, stdin=stdin)
        assert (done.returncode, done.stdout) == (0, "")
    bad = letta.payload("UserPromptSubmit", prompt=["not", "text"])
    done = run_hook("UserPromptSubmit", "--host", "letta-code", env=env, stdin=bad)
    assert (done.returncode, done.stdout) == (0, "")
    assert all_events(api) == []
    assert "prompt" in (Path(env["PPS_CLIENT_DIR"]) / "hooks.log").read_text()
