"""Codex CLI: `pps hooks install|uninstall codex` against Codex's own files, read back by the
real `codex` binary (tests/hosts, `npm ci --prefix tests/hosts`); a real `codex exec` turn
through the installed hooks, its model the stand-in LLM (tests/stub_llm.py); and `pps hook
EVENT --host codex` fed the payloads Codex sends (the fields of the command-input schemas
codex-cli 0.171 carries) against a real server: what is stored (channel terminal:codex,
the session, the roles, once) and what is injected, in the output shape Codex reads.

Without the binary the tests that run it skip, except under PPS_REQUIRE_HOSTS=1 (CI)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import uuid
from pathlib import Path

import pytest

from ingest import codex_settings
from tests.fixtures_ingest import (
    KETTLE,
    KETTLE_PROMPT,
    KETTLE_REPLY,
    ROOT,
    all_events,
    assert_host_turn,
    client_env,
    host_cli,
    pps,
    run_hook,
    token_of,
)
from tests.stub_llm import StubLLM

EVENTS = ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"]
THEIRS_HOOKS = {
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]}],
    }
}
THEIRS_CONFIG = """\
# my Codex settings
model = "gpt-5.5"  # the one I like
approval_policy = "on-request"

[features]
hooks = false  # I was trying something

[mcp_servers.docs]
command = "docs-server"
args = ["--port", "0"]
"""


def codex(home: Path, *args: str, env: dict | None = None, cwd: Path | None = None) -> str:
    """Run the real `codex` with `home` as its CODEX_HOME (in `env`, else in this process's
    environment without pps's and Codex's variables); its stdout."""
    binary = host_cli("codex")
    if env is None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "PPS_"))}
    done = subprocess.run(
        [str(binary), *args],
        capture_output=True,
        text=True,
        env={**env, "CODEX_HOME": str(home)},
        cwd=cwd,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def install(env: dict, *args: str):
    done = pps("hooks", "install", "codex", *args, env=env)
    assert done.returncode == 0, done.stderr
    return done


def ours(hooks: dict) -> dict[str, list[dict]]:
    return {
        event: [h for g in groups for h in g["hooks"] if "--host codex" in h["command"]]
        for event, groups in hooks["hooks"].items()
        if any("--host codex" in h["command"] for g in groups for h in g["hooks"])
    }


@pytest.fixture
def codex_home(tmp_path, processes):
    """A Codex home holding the user's own hooks and config, and a client environment
    whose CODEX_HOME points at it."""
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "hooks.json").write_text(json.dumps(THEIRS_HOOKS, indent=2))
    (home / "config.toml").write_text(THEIRS_CONFIG)
    env = client_env("http://127.0.0.1:8765", "a-token", tmp_path / "client", CODEX_HOME=str(home))
    return home, env


def test_install_merges_into_codex_files_and_codex_reads_them(codex_home):
    home, env = codex_home
    done = install(env, "--user")
    assert "PPS_TOKEN" in done.stdout  # where Codex's MCP client finds the token

    hooks = json.loads((home / "hooks.json").read_text())
    assert hooks["hooks"]["PreToolUse"] == THEIRS_HOOKS["hooks"]["PreToolUse"]
    assert THEIRS_HOOKS["hooks"]["Stop"][0] in hooks["hooks"]["Stop"]
    mine = ours(hooks)
    assert sorted(mine) == sorted(EVENTS)
    for event, [hook] in mine.items():
        assert hook["type"] == "command"
        assert hook["command"].endswith(f" -I -S {ROOT}/ingest/hook.py {event} --host codex")
        assert f"PPS_TOKEN_FILE={env['PPS_TOKEN_FILE']}" in hook["command"]
        # within what Codex takes: a longer SessionEnd it clamps, warning on every run
        assert hook["timeout"] == (3 if event == "SessionEnd" else 10)

    config = (home / "config.toml").read_text()
    assert config.startswith(THEIRS_CONFIG.split("[features]")[0])  # comments, order kept
    assert 'args = ["--port", "0"]' in config and "a-token" not in config

    servers = {
        server["name"]: server for server in json.loads(codex(home, "mcp", "list", "--json"))
    }
    assert servers["docs"]["transport"]["command"] == "docs-server"
    transport = servers["pps"]["transport"]
    assert transport == {**transport, "type": "streamable_http", "url": "http://127.0.0.1:8765/mcp"}
    assert transport["bearer_token_env_var"] == "PPS_TOKEN"
    assert servers["pps"]["auth_status"] == "bearer_token"
    features = dict(line.split()[::2] for line in codex(home, "features", "list").splitlines())
    assert features["hooks"] == "true"  # it was false in the user's config


def test_an_install_from_before_the_hook_client_is_upgraded_in_place(codex_home):
    """Hooks that ran the whole `pps` CLI (half a second a prompt idle, seconds busy)
    become the hook client's, where they were; nobody else's hook moves."""
    home, env = codex_home
    install(env, "--user")
    hooks = json.loads((home / "hooks.json").read_text())
    for event, [hook] in ours(hooks).items():
        hook["command"] = (
            f"PPS_URL=http://127.0.0.1:8765 /old/venv/bin/pps hook {event} --host codex"
        )
    (home / "hooks.json").write_text(json.dumps(hooks))

    done = install(env, "--user")
    assert "updated " + ", ".join(EVENTS) in done.stdout
    upgraded = json.loads((home / "hooks.json").read_text())
    assert all("/ingest/hook.py" in hook["command"] for [hook] in ours(upgraded).values())
    assert upgraded["hooks"]["PreToolUse"] == THEIRS_HOOKS["hooks"]["PreToolUse"]


def app_server(home: Path, *calls: tuple[str, dict]) -> list[dict]:
    """The results of `calls` (method, params) to the real `codex app-server` over stdio,
    with `home` as its CODEX_HOME: what Codex itself says of its settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "PPS_"))}
    messages = [
        {
            "id": 0,
            "method": "initialize",
            "params": {"clientInfo": {"name": "pps-test", "version": "0"}},
        },
        {"method": "initialized"},
        *(
            {"id": n, "method": method, "params": params}
            for n, (method, params) in enumerate(calls, 1)
        ),
    ]
    proc = subprocess.Popen(
        [str(host_cli("codex")), "app-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**env, "CODEX_HOME": str(home)},
        cwd=home,
    )
    results: dict[int, dict] = {}
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            while "id" in message and message["id"] not in results:
                answer = json.loads(proc.stdout.readline())
                if "result" in answer or "error" in answer:
                    assert "error" not in answer, answer
                    results[answer["id"]] = answer["result"]
    finally:
        proc.kill()
        proc.wait()
    return [results[n] for n in range(1, len(calls) + 1)]


def test_hooks_codex_has_not_trusted_are_said_so_until_they_are(codex_home, monkeypatch):
    """Codex skips a hook nobody trusted, silently, also in `codex exec`: `pps hooks
    status` and `pps doctor` said ok all the same. They read Codex's trust records now,
    and say what Codex itself says (its app-server's hooks/list), before and after a
    person trusts them (as its TUI does: config/batchWrite of each hook's hash)."""
    home, env = codex_home
    monkeypatch.setenv("CODEX_HOME", str(home))  # whose trust records this process reads
    install(env, "--user")

    def codex_says() -> dict[str, tuple[str, str]]:
        [listed] = app_server(home, ("hooks/list", {"cwds": [str(home)]}))
        hooks = [hook for cwd in listed["data"] for hook in cwd["hooks"]]
        return {
            hook["key"]: (hook["trustStatus"], hook["currentHash"])
            for hook in hooks
            if "/ingest/hook.py" in hook["command"]
        }

    said = codex_says()
    assert len(said) == len(EVENTS) and {status for status, _ in said.values()} == {"untrusted"}
    assert sorted(codex_settings.untrusted(home / "hooks.json")) == sorted(EVENTS)
    hooks = json.loads((home / "hooks.json").read_text())["hooks"]
    for event, [hook] in ours({"hooks": hooks}).items():
        group = next(g for g in hooks[event] if hook in g["hooks"])
        key = next(k for k in said if f":{codex_settings._snake(event)}:" in k)
        assert said[key][1] == codex_settings.trust_hash(event, group, hook)  # as Codex hashes
    status = pps("hooks", "status", env=env)
    assert "not trusted: Codex runs none of" in status.stdout, status.stdout

    trusted = {key: {"trusted_hash": digest} for key, (_, digest) in said.items()}
    edit = {"keyPath": "hooks.state", "value": trusted, "mergeStrategy": "upsert"}
    app_server(home, ("config/batchWrite", {"edits": [edit]}))
    assert {status for status, _ in codex_says().values()} == {"trusted"}
    assert codex_settings.untrusted(home / "hooks.json") == []
    assert "not trusted" not in pps("hooks", "status", env=env).stdout


def test_reinstall_changes_nothing_and_uninstall_removes_only_ours(codex_home):
    home, env = codex_home
    install(env, "--user")
    before = {name: (home / name).read_bytes() for name in ("hooks.json", "config.toml")}
    done = install(env, "--user")
    assert "added none; updated none" in done.stdout
    assert {name: (home / name).read_bytes() for name in before} == before

    done = pps("hooks", "uninstall", "codex", "--user", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads((home / "hooks.json").read_text()) == THEIRS_HOOKS
    config = (home / "config.toml").read_text()
    assert config == THEIRS_CONFIG.replace("hooks = false", "hooks = true")
    names = [server["name"] for server in json.loads(codex(home, "mcp", "list", "--json"))]
    assert names == ["docs"]


def test_project_install_writes_private_files_in_its_codex_folder(tmp_path, processes):
    project = tmp_path / "project"
    project.mkdir()
    env = client_env("http://127.0.0.1:8765", "a-token", tmp_path / "client")
    install(env, "--project", str(project))
    folder = project / ".codex"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for name in ("hooks.json", "config.toml"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600
    [found] = codex_settings.installed(folder / "hooks.json")
    assert (found.url, found.source, found.token) == (
        "http://127.0.0.1:8765",
        env["PPS_TOKEN_FILE"],
        "a-token",
    )
    assert sorted(found.events) == sorted(EVENTS)


def test_a_config_that_is_not_toml_is_refused_and_left_as_it_was(codex_home):
    home, env = codex_home
    (home / "config.toml").write_text("model = \n[[broken")
    done = pps("hooks", "install", "codex", "--user", env=env)
    assert done.returncode != 0 and "not valid TOML" in done.stderr
    assert (home / "config.toml").read_text() == "model = \n[[broken"


# --- the hooks, as Codex runs them -----------------------------------------------------------


class Session:
    """One Codex session: the payloads Codex sends for it, turn by turn."""

    def __init__(self, cwd: Path):
        self.id = str(uuid.uuid4())
        self.cwd = str(cwd)
        self.turn = str(uuid.uuid4())
        self.rollout = str(cwd / f"rollout-{self.id}.jsonl")

    def payload(self, event: str, **fields) -> str:
        base = {
            "session_id": self.id,
            "transcript_path": self.rollout,
            "cwd": self.cwd,
            "hook_event_name": event,
            "model": "gpt-5.5",
        }
        if event in ("SessionStart", "UserPromptSubmit", "Stop"):
            base["permission_mode"] = "default"
        if event in ("UserPromptSubmit", "Stop", "PreCompact"):
            base["turn_id"] = self.turn
        if event == "SessionEnd":
            del base["model"]
        return json.dumps({**base, **fields})


@pytest.fixture
def session(make_client, server, tmp_path, processes):
    api = make_client()
    env = client_env(server.url, token_of(api), tmp_path, PPS_HOOK_BUDGET_S="20")
    return api, env, Session(tmp_path)


def hook(event: str, session: Session, env: dict, **fields):
    stdin = session.payload(event, **fields)
    done = run_hook(event, "--host", "codex", env=env, stdin=stdin)
    assert done.returncode == 0, done.stderr
    return done


def injected(done, event: str) -> str | None:
    if not done.stdout.strip():
        return None
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == event
    return output["additionalContext"]


def test_session_start_records_the_start_and_injects_startup_recall(session):
    api, env, codex_session = session
    api.post("/v1/anchors", json={"title": "Robe", "content": "The comfy robe, a gift."})
    done = hook("SessionStart", codex_session, env, source="startup")
    [start] = all_events(api)
    assert (start["event_type"], start["channel"]) == ("session_start", "terminal:codex")
    assert start["session_id"] == codex_session.id
    assert start["metadata"]["source"] == "codex"
    block = injected(done, "SessionStart")
    assert block is not None and block.startswith("# Memory") and "comfy robe" in block


def test_a_turn_is_stored_once_with_its_roles_and_recall_names_other_sessions(session):
    api, env, first = session
    hook(
        "UserPromptSubmit",
        first,
        env,
        prompt="Where did we put the robe? <private>pin quokka-4411</private>",
    )
    answer = "In the hall closet, next to the umbrellas."
    for _ in range(2):  # Codex may run Stop again (stop_hook_active): stored once
        hook("Stop", first, env, last_assistant_message=answer, stop_hook_active=False)
    turns = all_events(api)
    assert [(e["role"], e["content"].strip()) for e in turns] == [
        ("user", "Where did we put the robe?"),
        ("assistant", answer),
    ]
    assert {(e["channel"], e["session_id"]) for e in turns} == {("terminal:codex", first.id)}
    assert all("quokka" not in json.dumps(e) for e in turns)

    second = Session(Path(first.cwd))
    done = hook(  # Codex sends a null transcript_path when it keeps no rollout file
        "UserPromptSubmit",
        second,
        env,
        prompt="the robe: which closet was it?",
        transcript_path=None,
    )
    block = injected(done, "UserPromptSubmit")
    assert block is not None and "hall closet" in block  # the other session's answer
    assert "which closet was it" not in block  # never the prompt being answered


@pytest.mark.parametrize(
    ("event", "fields", "event_type", "why"),
    [
        ("PreCompact", {"trigger": "auto"}, "pre_compact", "auto"),
        ("SessionEnd", {"reason": "other"}, "session_end", "other"),
    ],
)
def test_compaction_and_the_end_close_the_window(session, event, fields, event_type, why):
    api, env, codex_session = session
    assert hook(event, codex_session, env, **fields).stdout == ""
    [marker] = all_events(api)
    assert (marker["event_type"], marker["channel"]) == (event_type, "terminal:codex")
    assert marker["metadata"]["closes_window"] is True
    assert why in marker["content"]


def test_input_that_is_no_codex_payload_stores_nothing_and_prints_nothing(session):
    api, env, codex_session = session
    for stdin in ("not json", json.dumps({"hook_event_name": "Stop"})):
        done = run_hook("Stop", "--host", "codex", env=env, stdin=stdin)
        assert (done.returncode, done.stdout) == (0, "")
    bad = codex_session.payload("Stop", last_assistant_message=["not", "text"])
    done = run_hook("Stop", "--host", "codex", env=env, stdin=bad)
    assert (done.returncode, done.stdout) == (0, "")
    assert all_events(api) == []
    log = (Path(env["PPS_CLIENT_DIR"]) / "hooks.log").read_text()
    assert "last_assistant_message" in log


def test_a_real_codex_turn_is_captured_and_its_model_is_given_the_memory(
    make_client, server, tmp_path, processes
):
    """`codex exec`, the real CLI with pps's hooks installed (and trusted), its model the
    stand-in LLM behind the Responses wire: Codex runs the hooks, the memory pps recalls
    reaches the model with the prompt, and the prompt and the answer are stored once, in
    terminal:codex."""
    api = make_client()
    assert api.post("/v1/anchors", json=KETTLE).status_code in (200, 201)
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = client_env(
        server.url, token_of(api), tmp_path / "client", CODEX_HOME=str(home), PPS_HOOK_BUDGET_S="20"
    )
    env.pop("OPENAI_API_KEY", None)
    with StubLLM() as model:
        model.turn_reply = KETTLE_REPLY
        (home / "config.toml").write_text(
            'model = "stub-model"\nmodel_provider = "stub"\n\n[model_providers.stub]\n'
            f'name = "stub"\nbase_url = "{model.url}"\nwire_api = "responses"\n'
        )
        install(env, "--user")
        # Codex asks a person to trust new hooks in its TUI (docs/capture.md); here the test
        # is the person who read them.
        trusted = "--dangerously-bypass-hook-trust"
        out = codex(
            home, "exec", "--skip-git-repo-check", trusted, KETTLE_PROMPT, env=env, cwd=work
        )
    assert KETTLE_REPLY in out
    [turn] = model.turns
    assert_host_turn(api, json.dumps(turn["input"]), "terminal:codex")
    assert {e["channel"] for e in all_events(api)} == {"terminal:codex"}
