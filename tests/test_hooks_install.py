"""`pps hooks install|uninstall claude-code`: our hooks merged into a settings file that
already holds other people's, updated in place on a re-install, removed alone; a file
that is not valid JSON is refused and left byte for byte; the installed hooks work. By
default UserPromptSubmit is an http hook with the token in its header (the file 0600) and
Stop a command run in the background; `--command` makes every hook a command."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.fixtures_ingest import (
    KETTLE,
    KETTLE_PROMPT,
    KETTLE_REPLY,
    Transcript,
    all_events,
    assert_host_turn,
    client_env,
    host_cli,
    pps,
    token_of,
)
from tests.stub_llm import StubLLM

pytestmark = pytest.mark.process  # every test runs `pps hooks` as a user types it

EVENTS = ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"]
THEIRS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git log:*)"]},
    "env": {"FOO": "bar"},
    "hooks": {
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}
        ],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
        ],
        "Stop": [
            {
                "hooks": [
                    {"type": "command", "command": "notify-send done"},
                    {"type": "command", "command": "npx claude-cortex hook stop"},
                ]
            }
        ],
    },
}


def install(env, *args):
    return pps("hooks", "install", "claude-code", *args, env=env)


def ours(settings: dict) -> dict[str, list[dict]]:
    """Our hooks by event: the commands that end in `hook <Event>`, the http hooks that
    post to the service's hook route."""
    found: dict[str, list[dict]] = {}
    for event, groups in settings.get("hooks", {}).items():
        for group in groups:
            for hook in group["hooks"]:
                if hook.get("command", "").endswith(
                    f"hook.py {event} --host claude-code"
                ) or hook.get("url", "").endswith("/v1/hooks/claude-code"):
                    found.setdefault(event, []).append(hook)
    return found


def test_install_merges_and_uninstall_removes_only_ours(tmp_path):
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    path = project / ".claude" / "settings.local.json"
    path.write_text(json.dumps(THEIRS, indent=4))
    env = client_env("http://127.0.0.1:8123", "pps_t", tmp_path)

    path.chmod(0o644)
    done = install(env, "--project", str(project))
    assert done.returncode == 0, done.stderr
    settings = json.loads(path.read_text())
    assert sorted(ours(settings)) == sorted(EVENTS)
    assert all(len(hooks) == 1 for hooks in ours(settings).values())
    for key in ("model", "permissions", "env"):
        assert settings[key] == THEIRS[key]
    assert settings["hooks"]["PreToolUse"] == THEIRS["hooks"]["PreToolUse"]
    assert settings["hooks"]["SessionStart"][0] == THEIRS["hooks"]["SessionStart"][0]
    assert settings["hooks"]["Stop"][0] == THEIRS["hooks"]["Stop"][0]
    [prompt] = ours(settings)["UserPromptSubmit"]
    assert prompt == {
        "type": "http",
        "url": "http://127.0.0.1:8123/v1/hooks/claude-code",
        "headers": {"Authorization": "Bearer pps_t"},
        "timeout": 2.0,
    }
    assert path.stat().st_mode & 0o777 == 0o600  # it holds the token now
    for event in ("SessionStart", "Stop", "PreCompact", "SessionEnd"):
        [hook] = ours(settings)[event]
        # no background hook: `claude -p` waited ~1.4 s for one to end before it exited
        assert hook["type"] == "command" and "async" not in hook and hook["timeout"] == 10
        command = hook["command"]
        assert "PPS_URL=http://127.0.0.1:8123" in command and "PPS_TOKEN_FILE=" in command
        assert "pps_t" not in command  # a command names the token file, not the token

    again = install(env, "--project", str(project))
    assert again.returncode == 0 and "added none" in again.stdout
    assert json.loads(path.read_text()) == settings  # idempotent

    moved = client_env("http://127.0.0.1:9999", "pps_t", tmp_path)
    assert "updated" in install(moved, "--project", str(project)).stdout
    updated = json.loads(path.read_text())
    assert all("9999" in json.dumps(hooks[0]) for hooks in ours(updated).values())
    assert all(len(hooks) == 1 for hooks in ours(updated).values())

    done = install(moved, "--command", "--project", str(project))
    assert "updated UserPromptSubmit\n" in done.stdout, done.stderr
    commands = json.loads(path.read_text())
    assert all(len(hooks) == 1 for hooks in ours(commands).values())
    for hooks in ours(commands).values():
        assert set(hooks[0]) == {"type", "command", "timeout"} and hooks[0]["type"] == "command"
    assert "pps_t" not in path.read_text()

    removed = pps("hooks", "uninstall", "claude-code", "--project", str(project), env=env)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(path.read_text()) == THEIRS


def test_install_into_a_new_user_settings_file(tmp_path):
    home = tmp_path / "home"
    env = {**client_env("http://127.0.0.1:8123", "pps_t", tmp_path), "HOME": str(home)}
    done = install(env, "--user")
    assert done.returncode == 0, done.stderr
    path = home / ".claude" / "settings.json"
    assert path.stat().st_mode & 0o777 == 0o600
    assert (home / ".claude").stat().st_mode & 0o777 == 0o700
    settings = json.loads(path.read_text())
    assert sorted(settings["hooks"]) == sorted(EVENTS)
    group = settings["hooks"]["SessionEnd"][0]
    assert group["hooks"][0]["type"] == "command" and group["hooks"][0]["timeout"] >= 10

    assert pps("hooks", "uninstall", "--user", env=env).returncode == 0
    assert json.loads(path.read_text()) == {}


def test_a_file_that_is_not_json_is_refused_and_left_alone(tmp_path):
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    path = project / ".claude" / "settings.local.json"
    broken = '{"hooks": {"Stop": [ // a comment\n'
    path.write_text(broken)
    env = client_env("http://127.0.0.1:8123", "pps_t", tmp_path)
    for args in (["hooks", "install", "--project"], ["hooks", "uninstall", "--project"]):
        done = pps(*args, str(project), env=env)
        assert done.returncode == 1 and "not valid JSON" in done.stderr
        assert path.read_text() == broken


def test_both_scopes_at_once_are_refused(tmp_path):
    env = client_env("http://127.0.0.1:8123", "pps_t", tmp_path)
    done = install(env, "--user", "--project", str(tmp_path))
    assert done.returncode == 1 and "not both" in done.stderr


def test_a_service_at_a_private_address_gets_command_hooks(tmp_path):
    """Claude Code refuses http hooks to private addresses (not loopback): installing one
    there would leave every prompt without recall."""
    env = client_env("http://10.1.2.3:8123", "pps_t", tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    done = install(env, "--project", str(project))
    assert done.returncode == 0, done.stderr
    assert "10.1.2.3 is a private address" in done.stderr
    path = project / ".claude" / "settings.local.json"
    assert all(
        hooks[0]["type"] == "command" for hooks in ours(json.loads(path.read_text())).values()
    )
    assert "pps_t" not in path.read_text()


def test_http_hooks_need_a_token_and_say_so(tmp_path):
    env = client_env("http://127.0.0.1:8123", "pps_t", tmp_path)
    del env["PPS_TOKEN_FILE"]
    project = tmp_path / "project"
    project.mkdir()
    done = install(env, "--project", str(project))
    assert done.returncode == 1 and "--command" in done.stderr and "PPS_TOKEN_FILE" in done.stderr
    assert not (project / ".claude").exists()


def installed_prompt_command(env: dict, project) -> str:
    """The UserPromptSubmit command `pps hooks install claude-code --command --project`
    writes into the project's settings."""
    project.mkdir()
    assert install(env, "--command", "--project", str(project)).returncode == 0
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    return settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]


def test_the_installed_command_captures_a_prompt(make_client, server, tmp_path):
    api = make_client()
    env = client_env(server.url, token_of(api), tmp_path)
    project = tmp_path / "project"
    command = installed_prompt_command(env, project)
    transcript = Transcript(tmp_path / "t.jsonl")
    payload = transcript.payload("UserPromptSubmit", prompt="hello from the settings file")
    # Claude Code runs the command through a shell, in the project, with its environment
    # (which carries nothing of ours: the command names the service and the token file).
    bare = {k: v for k, v in env.items() if not k.startswith("PPS_") or k == "PPS_CLIENT_DIR"}
    done = subprocess.run(
        ["bash", "-c", command],
        input=payload,
        text=True,
        capture_output=True,
        cwd=project,
        env=bare,
    )
    assert done.returncode == 0, done.stderr
    if done.stdout:  # only ever the context to inject (recall), in Claude Code's form
        assert json.loads(done.stdout)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert [e["content"] for e in all_events(api)] == ["hello from the settings file"]


def test_the_installed_token_file_wins_over_an_exported_token(make_client, server, tmp_path):
    """A shell that exports another entity's PPS_TOKEN (issue 27): the installed command
    names its token file, and that is the entity its events go to (PPS_TOKEN used to win,
    so the prompt went to whoever the exported token belonged to)."""
    api, other = make_client(), make_client()
    env = client_env(server.url, token_of(api), tmp_path)
    project = tmp_path / "project"
    command = installed_prompt_command(env, project)
    payload = Transcript(tmp_path / "t.jsonl").payload("UserPromptSubmit", prompt="whose am I")
    bare = {k: v for k, v in env.items() if not k.startswith("PPS_") or k == "PPS_CLIENT_DIR"}
    exported = {**bare, "PPS_TOKEN": token_of(other)}
    done = subprocess.run(
        ["bash", "-c", command], input=payload, text=True, capture_output=True, env=exported
    )
    assert done.returncode == 0, done.stderr
    assert [e["content"] for e in all_events(api)] == ["whose am I"]
    assert all_events(other) == []


def test_doctor_says_which_installed_hook_has_a_token_the_service_refuses(
    make_client, server, tmp_path
):
    """The token rotated and written to the token file (issue 27): the command hooks read
    the new one, but the http hook's header still holds the old, so every prompt's hook
    was a 401 nobody saw. `pps doctor` now checks each installed hook's token."""
    from engine.capture import entities
    from tests.conftest import connect

    api = make_client()
    home = tmp_path / "home"
    env = {**client_env(server.url, token_of(api), tmp_path), "HOME": str(home)}
    assert install(env, "--user").returncode == 0

    def hooks_lines():
        done = pps("doctor", "--data-dir", str(server.data_dir), env=env, cwd=tmp_path)
        lines = [line for line in done.stdout.splitlines() if line.startswith("hooks ")]
        return done.returncode, {("header" in line): line for line in lines}

    _, lines = hooks_lines()
    assert " ok " in lines[True] and "UserPromptSubmit" in lines[True], lines
    assert " ok " in lines[False] and env["PPS_TOKEN_FILE"] in lines[False], lines
    assert "SessionStart,Stop,PreCompact,SessionEnd" in lines[False]

    rotated = entities.rotate(server.db, api.entity)
    Path(env["PPS_TOKEN_FILE"]).write_text(rotated + "\n")
    code, lines = hooks_lines()
    assert code == 1
    assert " refused " in lines[True] and "401" in lines[True], lines
    assert " ok " in lines[False], lines

    # And the session says so as it starts: SessionStart, a command reading the new token,
    # shows the user the line about the http hook's stale one.
    path = home / ".claude" / "settings.json"
    command = json.loads(path.read_text())["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    payload = Transcript(tmp_path / "t.jsonl").payload("SessionStart", source="startup")
    bare = {k: v for k, v in env.items() if not k.startswith("PPS_") or k == "PPS_CLIENT_DIR"}
    done = subprocess.run(
        ["bash", "-c", command], input=payload, text=True, capture_output=True, env=bare
    )
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)["systemMessage"]
    assert f"refuses the token in the UserPromptSubmit http hook of {path} (401)" in shown
    with connect(server, rotated) as now:  # the event went with the file's token
        assert [e["event_type"] for e in all_events(now)] == ["session_start"]


def test_a_real_claude_code_turn_is_captured_and_its_model_is_given_the_memory(
    make_client, server, tmp_path
):
    """`claude -p`, the real CLI with the hooks `pps hooks install claude-code` wrote, its
    model the stand-in LLM behind the Messages wire: Claude Code calls the http hook and
    runs the commands, the memory pps recalls reaches the model with the prompt, and the
    prompt and the answer are stored once, in terminal:claude."""
    api = make_client()
    assert api.post("/v1/anchors", json=KETTLE).status_code in (200, 201)
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    env = client_env(
        server.url, token_of(api), tmp_path / "client", HOME=str(home), PPS_HOOK_BUDGET_S="20"
    )
    done = install(env, "--user")
    assert done.returncode == 0, done.stderr
    for name in ("ANTHROPIC_AUTH_TOKEN", "CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT"):
        env.pop(name, None)
    with StubLLM() as model:
        model.turn_reply = KETTLE_REPLY
        done = subprocess.run(
            [str(host_cli("claude")), "-p", KETTLE_PROMPT],
            capture_output=True,
            text=True,
            env={
                **env,
                "ANTHROPIC_BASE_URL": model.anthropic_url,
                "ANTHROPIC_API_KEY": "sk-stub",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            },
            cwd=work,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert KETTLE_REPLY in done.stdout
    asked = [t for t in model.turns if KETTLE_PROMPT in json.dumps(t["messages"])]
    assert asked, [json.dumps(t["messages"])[:300] for t in model.turns]
    assert_host_turn(api, json.dumps(asked[0]["messages"]), "terminal:claude")


def test_a_user_install_gives_claude_code_pps_mcp_server_in_every_folder(tmp_path):
    """`claude mcp add` run in one folder wrote Claude Code's local scope there: from any
    other folder `claude mcp list` said "No MCP servers configured". `--user` now puts
    pps's MCP server in Claude Code's user scope, keeping every other key of its file,
    which holds the token and is made 0600; the real `claude` reads it from anywhere, and
    uninstall takes out ours alone."""
    home = tmp_path / "home"
    home.mkdir()
    config = home / ".claude.json"
    theirs = {"numStartups": 3, "mcpServers": {"docs": {"type": "stdio", "command": "docs"}}}
    config.write_text(json.dumps(theirs))
    config.chmod(0o644)
    env = client_env("http://127.0.0.1:8123", "pps_t", tmp_path / "client", HOME=str(home))
    done = install(env, "--user")
    assert done.returncode == 0, done.stderr
    assert "mcpServers.pps set" in done.stdout
    written = json.loads(config.read_text())
    assert (
        written["numStartups"] == 3
        and written["mcpServers"]["docs"] == theirs["mcpServers"]["docs"]
    )
    assert config.stat().st_mode & 0o777 == 0o600  # it holds the token now

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    claude = {k: v for k, v in env.items() if not k.startswith(("CLAUDE", "ANTHROPIC"))}
    got = subprocess.run(
        [str(host_cli("claude")), "mcp", "get", "pps"],
        capture_output=True,
        text=True,
        env=claude,
        cwd=elsewhere,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr
    assert "User config" in got.stdout and "http://127.0.0.1:8123/mcp" in got.stdout

    done = pps("hooks", "uninstall", "claude-code", "--user", env=env)
    assert "removed mcpServers.pps" in done.stdout
    left = json.loads(config.read_text())
    assert "pps" not in left["mcpServers"] and "docs" in left["mcpServers"]
