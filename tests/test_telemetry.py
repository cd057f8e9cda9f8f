"""pps sends nothing anywhere (issue 24, item 1): `pps serve` and every CLI command, run
as a user runs them (an empty HOME, its own data dir, the embedded FalkorDB), leave no
analytics id behind, import no analytics client and open no connection off this machine.

Graphiti sends PostHog events and ONNX Runtime (under fastembed) starts Microsoft's 1DS
telemetry unless their switches are off in the environment; `pps check` beside a
running server once reached Graphiti by a path that never set Graphiti's. Both skip
themselves when `pytest` is imported, so only child processes show what a user's would.

Each child runs with `sitecustomize.py` from a folder of the test's first on its path: a
Python audit hook that writes down every module imported from an analytics client and
every name looked up or address connected to that is not this machine.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer

from bench.client_start import INITIALIZE
from pps.cli import app
from pps.process import ServerProcess
from tests.fixtures_ingest import ROOT
from tests.test_cli import as_user
from tests.test_import_claude_code import write_sessions
from tests.test_import_discord_db import daemon_database
from tests.test_import_journals import journal_folder, openclaw_workspace

WATCH = """
import json, os, socket, sys

_OUT = os.environ["PPS_TEST_WATCH"]
_CLIENTS = ("posthog", "opentelemetry.exporter", "sentry_sdk", "segment", "mixpanel")
_LOCAL = {None, "", "localhost", "127.0.0.1", "::1", "0.0.0.0"}


def _note(what, detail):
    with open(_OUT, "a") as out:
        out.write(json.dumps({"argv": sys.argv[1:4], what: detail}) + "\\n")


def _hook(event, args):
    if event == "import" and str(args[0]).startswith(_CLIENTS):
        _note("import", args[0])
    elif event == "socket.getaddrinfo" and args[0] not in _LOCAL:
        host = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
        if not host.startswith("127."):
            _note("lookup", host)
    elif event == "socket.connect" and isinstance(args[1], tuple):
        host = str(args[1][0])
        if host not in _LOCAL and not host.startswith("127."):
            _note("connect", host)


sys.addaudithook(_hook)
_note("watching", os.getpid())
"""

PROMPT = {
    "session_id": "5b0c7c8e-2f43-4a4e-9c57-3f5d6f0c2a11",
    "transcript_path": "/nowhere/5b0c7c8e.jsonl",
    "cwd": "/nowhere",
    "permission_mode": "default",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "what did jeff say about the robe?",
}


def _mcp_session() -> str:
    messages = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    return "".join(json.dumps(m) + "\n" for m in messages)


def commands(tmp: Path) -> list[tuple[list[str], str | None, int]]:
    """Every leaf command of `pps` with arguments that make it do its work against the
    running server's data dir (the user's default one): argv, stdin, the exit code."""
    token = str(tmp / "home" / ".config" / "pps" / "lyra.token")
    project = tmp / "project"
    project.mkdir()
    sessions = tmp / "claude"
    write_sessions(sessions, sessions=1, rounds=2)
    discord = tmp / "daemon.sqlite3"
    daemon_database(discord)
    journals = journal_folder(tmp)
    workspace = openclaw_workspace(tmp)
    notes = tmp / "household"
    notes.mkdir()
    (notes / "kitchen.md").write_text("# Kitchen\nThe kettle is on the left shelf.\n")
    client = ["--token-file", token]
    return [
        (["entity", "create", "lyra", "--token-file", token], None, 0),
        (["entity", "create", "nova"], None, 0),
        (["entity", "rotate", "nova"], None, 0),
        (["entity", "list"], None, 0),
        (["operator", "token", "--token-file", str(tmp / "operator.token")], None, 0),
        (["doctor"], None, 0),
        (["hooks", "install", "claude-code", "--project", str(project), *client], None, 0),
        (["hook", "UserPromptSubmit"], json.dumps(PROMPT), 0),
        (["hooks", "status", "--project", str(project)], None, 0),
        (["mcp", "--profile", "pps", *client], _mcp_session(), 0),
        (["import", "claude-code", str(sessions), *client], None, 0),
        (["import", "discord-db", str(discord), *client], None, 0),
        (["import", "journals", str(journals), *client], None, 0),
        (["import", "openclaw", str(workspace), *client], None, 0),
        (["ingest", "flush", *client], None, 0),
        (["shared", "create", "household"], None, 0),
        (["shared", "add", "household", "lyra"], None, 0),
        (["shared", "index", str(notes), "--store", "household", "--agent", "lyra"], None, 0),
        (["shared", "list"], None, 0),
        (["shared", "remove", "household", "lyra"], None, 0),
        (["shared", "delete", "household", "--yes"], None, 0),
        (["check"], None, None),
        (["forget", "--entity", "lyra", "--event", "no-such-event"], None, 1),
        (["reindex", "--entity", "lyra"], None, None),
        (["queue"], None, 0),
        (["queue", "retry", "--entity", "lyra"], None, 0),
        (["audit", "export", str(tmp / "audit.jsonl")], None, 0),
        (["replay", "graph", "--entity", "lyra"], None, None),
        (["graph", "duplicates", "--entity", "lyra"], None, None),
        (["graph", "merge", "--entity", "lyra", "--dry-run"], None, None),
        (["export", str(tmp / "lyra-export"), "--entity", "lyra"], None, 0),
        (["import", "export", str(tmp / "lyra-export"), "--entity", "lyra-copy"], None, 0),
        (["backup", str(tmp / "all.tar")], None, 0),
        (["restore", str(tmp / "all.tar"), "--data-dir", str(tmp / "restored")], None, 0),
        (["hooks", "uninstall", "claude-code", "--project", str(project)], None, 0),
        (["serve"], None, None),  # a second server on the data dir: refused at once
    ]


def leaves(command, path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """The path of every command that runs something (typer's own click: not `click`)."""
    if not hasattr(command, "list_commands"):
        return {path}
    ctx = typer.Context(command)
    found = {path} if command.invoke_without_command and path else set()
    for name in command.list_commands(ctx):
        found |= leaves(command.get_command(ctx, name), (*path, name))
    return found


def test_the_table_names_every_command(tmp_path):
    named = set()
    for argv, _, _ in commands(tmp_path):
        words = [w for w in argv if not w.startswith(("-", "/"))]
        named |= {tuple(words[:n]) for n in (1, 2)}
    missing = leaves(typer.main.get_command(app)) - named
    assert not missing, f"commands the telemetry test does not run: {sorted(missing)}"


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder with a short path, as a user's HOME has: the embedded FalkorDB listens on a
    unix socket in the data dir there, which `pps check` then opens itself (under pytest's
    long paths it takes a port, and check asks the server instead)."""
    folder = Path(tempfile.mkdtemp(prefix="pps-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def user(place) -> dict[str, str]:
    """A user with an empty HOME, none of pps's telemetry switches in the environment
    (this test process set them), and the audit hook on every child's path."""
    (place / "home").mkdir()
    (place / "site").mkdir()
    (place / "site" / "sitecustomize.py").write_text(WATCH)
    env = as_user(place / "home", PPS_TEST_WATCH=str(place / "watch.jsonl"))
    for switch in ("GRAPHITI_TELEMETRY_ENABLED", "ORT_DISABLE_TELEMETRY", "HF_HUB_OFFLINE"):
        env.pop(switch, None)
    env["PYTHONPATH"] = os.pathsep.join([str(place / "site"), str(ROOT)])
    return env


@pytest.mark.timeout(900)  # some 35 processes: about a minute on an idle machine, more if busy
def test_serve_and_every_command_send_nothing(user, place, processes):
    home = Path(user["HOME"])
    watch = Path(user["PPS_TEST_WATCH"])
    table = commands(place)
    (place / "repo").mkdir()
    log = place / "serve.log"
    server = ServerProcess(None, env=user, replace_env=True, cwd=place / "repo", log=log)
    failed, said = [], {}
    with server.start(timeout=120):
        for argv, stdin, code in table:
            done = subprocess.run(
                [sys.executable, "-m", "pps.cli", *argv],
                input=stdin,
                capture_output=True,
                text=True,
                env={**user, "PPS_URL": server.url} if argv[0] != "serve" else user,
                cwd=place / "project",
                timeout=180,
            )
            said[argv[0]] = done.stdout
            if code is not None and done.returncode != code:
                failed.append(f"pps {' '.join(argv)} -> {done.returncode}: {done.stderr[-600:]}")
    assert not failed, "\n".join(failed)
    assert "graph: ok" in said["check"], said["check"]  # it read the graph through Graphiti
    with sqlite3.connect(home / ".local" / "share" / "pps" / "pps.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM events").fetchone()[0] > 0  # they did work
    seen = [json.loads(line) for line in watch.read_text().splitlines()]
    watching = [s for s in seen if "watching" in s]
    assert len(watching) >= len(table) + 1  # every child and the server ran the hook
    found = sorted(
        {
            (" ".join(s["argv"]), kind, str(what).split(".")[0])
            for s in seen
            for kind, what in s.items()
            if kind not in ("argv", "watching")
        }
    )
    assert not found, f"analytics imported or traffic off this machine: {found}"
    cache = home / ".cache"
    left = sorted(str(p.relative_to(home)) for p in cache.rglob("*")) if cache.exists() else []
    assert not [p for p in left if "graphiti" in p or "Microsoft" in p], left


def test_the_neo4j_pps_starts_reports_no_usage(neo4j_server, processes):
    """`make neo4j` and the tests run the launcher; Neo4j's usage reports are off in it."""
    import neo4j

    auth = (neo4j_server.user, neo4j_server.password)
    with neo4j.GraphDatabase.driver(neo4j_server.uri, auth=auth) as driver:
        records, _, _ = driver.execute_query(
            "SHOW SETTINGS YIELD name, value WHERE name = 'dbms.usage_report.enabled' RETURN value"
        )
    assert [r["value"] for r in records] == ["false"]
