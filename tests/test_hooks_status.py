"""`pps hooks status`: every host's hooks installed, side by side (Claude Code, Letta Code,
Codex, in their own settings files), each with its token's source and whether its last
call reached the service, as the service's record of calls says; and the per-host
channels a recall's "meanwhile in other channels" tells apart."""

from __future__ import annotations

import json

from tests.fixtures_ingest import client_env, pps, run_hook, token_of


def status_of(output: str) -> dict[str, list[str]]:
    """The status lines by host title."""
    hosts: dict[str, list[str]] = {}
    current: list[str] = []
    for line in output.splitlines():
        if not line.startswith(" "):
            current = hosts.setdefault(line.split(":")[0], [])
        current.append(line.strip())
    return hosts


def test_status_lists_every_host_and_whether_its_last_call_reached(
    make_client, server, tmp_path, processes
):
    api = make_client()
    home = tmp_path / "home"
    env = client_env(server.url, token_of(api), tmp_path, HOME=str(home))
    env["CODEX_HOME"] = str(home / ".codex")
    for host in ("claude-code", "letta-code", "codex"):
        extra = ["--command"] if host == "claude-code" else []
        done = pps("hooks", "install", host, "--user", *extra, env=env)
        assert done.returncode == 0, done.stderr

    prompt = {
        "event_type": "UserPromptSubmit",
        "working_directory": str(tmp_path),
        "prompt": "what did we plant in spring?",
        "is_command": False,
        "agent_id": "agent-1",
        "conversation_id": "conv-1",
    }
    done = run_hook("UserPromptSubmit", "--host", "letta-code", env=env, stdin=json.dumps(prompt))
    assert done.returncode == 0, done.stderr

    done = pps("hooks", "status", env=env)
    assert done.returncode == 0, done.stderr
    hosts = status_of(done.stdout)
    assert set(hosts) == {"Claude Code", "Letta Code", "Codex"}, done.stdout
    for lines in hosts.values():
        assert f"token: {env['PPS_TOKEN_FILE']}  service: {server.url}" in lines
    [letta] = [line for line in hosts["Letta Code"] if line.startswith("last call:")]
    assert "reached the service" in letta and "1 writes" in letta, letta
    [claude] = [line for line in hosts["Claude Code"] if line.startswith("last call:")]
    assert claude.startswith("last call: none yet"), claude

    token_file = tmp_path / "token"
    token_file.write_text("pps_not-a-real-token\n")
    hosts = status_of(pps("hooks", "status", env=env).stdout)
    for lines in hosts.values():
        assert any("refused" in line and "401" in line for line in lines), lines


def test_status_says_when_nothing_is_installed(tmp_path, processes):
    env = client_env("http://127.0.0.1:9", "a-token", tmp_path, HOME=str(tmp_path / "home"))
    env["CODEX_HOME"] = str(tmp_path / "home" / ".codex")
    done = pps("hooks", "status", env=env)
    assert done.returncode == 0 and "no hooks of ours installed" in done.stdout


def test_claude_codes_http_hook_and_its_command_hooks_each_show_their_own_last_call(
    make_client, server, tmp_path, processes
):
    """The http hook's line showed the command hooks' record (`claude-code`); it reads
    the http hook's own (`claude-code-http`, as the service names a call on its route)."""
    api = make_client()
    env = client_env(server.url, token_of(api), tmp_path, HOME=str(tmp_path / "home"))
    assert pps("hooks", "install", "claude-code", "--user", env=env).returncode == 0
    start = {"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"}
    assert run_hook("SessionStart", env=env, stdin=json.dumps(start)).returncode == 0

    def last_calls() -> dict[str, str]:
        """The last-call line of each token source: the http hook's header, the file."""
        found, source = {}, None
        for line in pps("hooks", "status", env=env).stdout.splitlines():
            if line.strip().startswith("token:"):
                source = "header" if "http hook" in line else "file"
            elif line.strip().startswith("last call:"):
                found[source] = line
        return found

    calls = last_calls()
    assert "reached the service" in calls["file"], calls
    assert "none yet" in calls["header"], calls  # Claude Code has sent no prompt yet

    prompt = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "hi"}
    assert api.post("/v1/hooks/claude-code", json=prompt).status_code == 200
    assert "reached the service" in last_calls()["header"]
