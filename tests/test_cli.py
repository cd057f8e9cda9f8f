"""The `pps` command as a user types it."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from engine.capture import entities
from engine.kernel.config import Settings
from engine.store.db import Database

pytestmark = pytest.mark.process  # every test runs `pps` as a user types it


def pps(*args: str, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pps.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=60,
    )


def as_user(home: Path, **env: str) -> dict[str, str]:
    """The environment of a user whose home is `home`: no PPS_ or XDG_ variables of ours."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PPS_", "XDG_"))}
    return {**clean, "HOME": str(home), **env}


def run_as(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`pps ARGS` typed by that user in the folder `cwd`."""
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "pps.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_entity_create_prints_only_the_token(tmp_path):
    done = pps("entity", "create", "lyra", "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pps_") and len(lines[0]) > 40
    db = Database.open(Settings(data_dir=tmp_path / "data"))
    assert entities.authenticate(db, lines[0]) == "lyra"
    stored = db.conn.execute("SELECT token_hash FROM entities").fetchone()[0]
    assert lines[0] not in stored  # only a hash is kept


def test_data_dir_from_environment(tmp_path):
    done = pps("entity", "create", "nexus", env={"PPS_DATA_DIR": str(tmp_path / "envdata")})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "envdata" / "pps.sqlite3").exists()
    listed = pps("entity", "list", env={"PPS_DATA_DIR": str(tmp_path / "envdata")})
    assert listed.stdout.startswith("nexus ")


def test_list_and_rotate(tmp_path):
    data = ["--data-dir", str(tmp_path / "data")]
    first = pps("entity", "create", "lyra", *data).stdout.strip()
    pps("entity", "create", "caia", *data)
    assert [line.split()[0] for line in pps("entity", "list", *data).stdout.splitlines()] == [
        "caia",
        "lyra",
    ]
    rotated = pps("entity", "rotate", "lyra", *data)
    assert rotated.returncode == 0 and rotated.stdout.strip() != first
    db = Database.open(Settings(data_dir=tmp_path / "data"))
    assert entities.authenticate(db, first) is None
    assert entities.authenticate(db, rotated.stdout.strip()) == "lyra"
    assert first not in pps("entity", "list", *data).stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("entity", "create", "Lyra"), "not a valid entity name"),
        (("entity", "create", "_lyra"), "not a valid entity name"),
        (("entity", "create", "x" * 65), "not a valid entity name"),
        (("entity", "rotate", "ghost"), "no entity named 'ghost'"),
    ],
)
def test_entity_errors_go_to_stderr(tmp_path, args, message):
    done = pps(*args, "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 1 and done.stdout == ""
    assert message in done.stderr


def test_creating_an_existing_entity_is_refused(tmp_path):
    data = ["--data-dir", str(tmp_path / "data")]
    token = pps("entity", "create", "lyra", *data).stdout.strip()
    again = pps("entity", "create", "lyra", *data)
    assert again.returncode == 1 and "already exists" in again.stderr
    db = Database.open(Settings(data_dir=tmp_path / "data"))
    assert entities.authenticate(db, token) == "lyra"  # the first token still works


def test_token_file_is_private(tmp_path):
    token_file = tmp_path / "lyra.token"
    done = pps(
        "entity",
        "create",
        "lyra",
        "--data-dir",
        str(tmp_path / "d"),
        "--token-file",
        str(token_file),
    )
    assert token_file.read_text().strip() == done.stdout.strip()
    assert token_file.stat().st_mode & 0o777 == 0o600


def test_token_file_in_a_folder_that_does_not_exist_yet(tmp_path):
    """`pps entity create x --token-file ~/.config/pps/x.token` on a fresh machine."""
    token_file = tmp_path / "home" / ".config" / "pps" / "x.token"
    done = pps(
        "entity", "create", "x", "--data-dir", str(tmp_path / "data"),
        "--token-file", str(token_file),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == token_file.read_text().strip()
    assert mode(token_file) == 0o600
    assert mode(token_file.parent) == 0o700 and mode(token_file.parent.parent) == 0o700
    assert [p.name for p in token_file.parent.iterdir()] == ["x.token"]


def test_no_token_is_issued_that_cannot_be_written(tmp_path):
    data = ["--data-dir", str(tmp_path / "data")]
    (tmp_path / "not-a-folder").write_text("")
    bad = str(tmp_path / "not-a-folder" / "x.token")
    refused = pps("entity", "create", "x", *data, "--token-file", bad)
    assert refused.returncode == 1 and refused.stdout == ""
    assert len(refused.stderr.splitlines()) == 1, refused.stderr  # one line, no traceback
    assert "x.token" in refused.stderr and "nothing was changed" in refused.stderr
    assert pps("entity", "list", *data).stdout == ""  # x was not created
    good = tmp_path / "tokens" / "x.token"
    created = pps("entity", "create", "x", *data, "--token-file", str(good))
    assert created.returncode == 0, created.stderr  # not "already exists"
    token = good.read_text().strip()
    rotate = pps("entity", "rotate", "x", *data, "--token-file", bad)
    assert rotate.returncode == 1 and rotate.stdout == "" and "nothing was changed" in rotate.stderr
    db = Database.open(Settings(data_dir=tmp_path / "data"))
    assert entities.authenticate(db, token) == "x"  # the old token still works


def test_the_data_dir_is_the_users_own_whatever_the_current_folder(tmp_path):
    """Not ./data: `pps entity create` run from another folder finds the same database."""
    home = tmp_path / "home"
    user = as_user(home)
    created = run_as(user, "entity", "create", "ghost", cwd=tmp_path / "repo")
    assert created.returncode == 0, created.stderr
    assert (home / ".local" / "share" / "pps" / "pps.sqlite3").exists()
    assert not (tmp_path / "repo" / "data").exists()
    listed = run_as(user, "entity", "list", cwd=tmp_path / "elsewhere")
    assert listed.stdout.startswith("ghost "), listed.stdout + listed.stderr
    xdg = as_user(home, XDG_DATA_HOME=str(tmp_path / "xdg"))
    assert run_as(xdg, "entity", "create", "other", cwd=tmp_path / "repo").returncode == 0
    assert (tmp_path / "xdg" / "pps" / "pps.sqlite3").exists()


def words(text: str) -> str:
    """Help text without its line breaks (a long path may be broken anywhere)."""
    return "".join(text.split())


def test_every_option_shows_its_environment_variable_and_default(tmp_path):
    home = tmp_path / "home"
    user = as_user(home)
    data_dir = words(f"[env: PPS_DATA_DIR, default: {home}/.local/share/pps]")
    serve = run_as(user, "serve", "--help", cwd=tmp_path)
    assert serve.returncode == 0, serve.stderr
    shown = words(serve.stdout)
    assert data_dir in shown, shown
    assert words("[env: PPS_PORT, default: 8000]") in shown
    assert words("[env: PPS_HOST, default: 127.0.0.1]") in shown
    assert "<bool>" not in shown and "--allow-remoteAllow" in shown
    assert "--install-completion" not in shown
    for command in [
        ("entity", "create"), ("entity", "list"), ("queue",), ("reindex",),
        ("replay", "graph"), ("doctor",),
    ]:  # fmt: skip
        shown = words(run_as(user, *command, "--help", cwd=tmp_path).stdout)
        assert data_dir in shown, f"pps {' '.join(command)} --help: {shown}"
    mine = as_user(home, PPS_DATA_DIR=str(tmp_path / "mine"))
    shown = words(run_as(mine, "entity", "list", "--help", cwd=tmp_path).stdout)
    assert words(f"now {tmp_path / 'mine'}") in shown


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::"])
def test_serve_refuses_a_non_loopback_bind_without_allow_remote(tmp_path, host):
    done = pps("serve", "--host", host, "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 1
    assert "not a loopback address" in done.stderr and "--allow-remote" in done.stderr


def test_settings_default_to_loopback_and_port_8000(tmp_path):
    settings = Settings(_env_file=None)
    assert (settings.host, settings.port) == ("127.0.0.1", 8000)
    assert settings.binds_loopback


def test_doctor_says_what_works_and_why_not(tmp_path):
    env = {"PPS_PORT": "9", "LLM_PROVIDER": "none", "GRAPH_BACKEND": "falkordb", "GRAPH_URL": ""}
    done = pps("doctor", "--data-dir", str(tmp_path / "data"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert f"{tmp_path / 'data'}" in lines["data"] and "--data-dir" in lines["data"]
    assert " ok " in lines["database"] and "0o700" in lines["database"]
    assert " ok " in lines["embeddings"]
    assert " ok " in lines["reranker"] and "ms-marco" in lines["reranker"]
    assert "unconfigured" in lines["llm"] and "LLM_PROVIDER" in lines["llm"]
    assert "not running" in lines["service"]
    assert " ok " in lines["graph"] and "falkordb (embedded)" in lines["graph"]  # it was started
    assert [line.split()[0] for line in done.stdout.splitlines()] == [
        "data", "database", "service", "graph", "llm", "embeddings", "reranker", "summaries",
        "backup",
    ]  # fmt: skip
    assert "entities_past=0" in lines["summaries"] and "threshold=100" in lines["summaries"]
    assert " none " in lines["backup"] and "pps backup" in lines["backup"]
    down = pps(
        "doctor",
        "--data-dir",
        str(tmp_path / "data"),
        env={**env, "LLM_PROVIDER": "openai_compatible", "LLM_BASE_URL": "http://127.0.0.1:9/v1"},
    )
    assert down.returncode == 1 and "unreachable" in down.stdout


def test_doctor_prints_each_check_as_it_finishes(tmp_path):
    """The database line is on the screen while the LLM check still waits for an answer:
    the LLM here is a socket the test answers only once it has read that line."""
    with socket.socket() as llm:
        llm.bind(("127.0.0.1", 0))
        llm.listen()
        env = {
            "PPS_PORT": "9",
            "GRAPH_BACKEND": "none",
            "LLM_PROVIDER": "openai_compatible",
            "LLM_BASE_URL": f"http://127.0.0.1:{llm.getsockname()[1]}/v1",
        }
        doctor = subprocess.Popen(
            [sys.executable, "-m", "pps.cli", "doctor", "--data-dir", str(tmp_path / "data")],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, **env},
        )
        try:
            database = next(line for line in doctor.stdout if line.startswith("database "))
            assert " ok " in database, database
            connection, _ = llm.accept()  # the probe asks; nothing was answered before the line
            with connection, contextlib.suppress(OSError):  # (unless it gave up waiting)
                connection.recv(65536)
                body = b'{"object": "list", "data": [{"id": "m", "object": "model"}]}'
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
                )
            rest = doctor.stdout.read()
        finally:
            if doctor.poll() is None:
                doctor.kill()
            doctor.wait()
    lines = {line.split()[0]: line for line in rest.splitlines()}
    assert " ok " in lines["llm"], (
        rest
    )  # answered in time: it had not printed everything at the end
    assert "disabled" in lines["graph"]


def test_serve_on_a_port_in_use_says_so_before_loading_the_engine(tmp_path):
    from tests.test_layers import HEAVY

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        probe = (
            "import json, sys\n"
            "from pps.cli import app\n"
            "try:\n"
            f"    app(['serve', '--port', '{port}', '--data-dir', {str(tmp_path / 'data')!r}])\n"
            "except SystemExit as exc:\n"
            "    code = exc.code\n"
            "print(json.dumps([code, sorted({m.split('.')[0] for m in sys.modules})]))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
        )
    code, loaded = json.loads(done.stdout.splitlines()[-1])
    assert code == 1, done.stderr
    assert f"port {port} on 127.0.0.1 is in use by another program" in done.stderr
    assert "--port" in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert not set(loaded) & set(HEAVY), sorted(set(loaded) & set(HEAVY))
    assert not (tmp_path / "data").exists()  # a refused start touches no data dir


def test_serve_on_the_port_of_another_pps_names_it(server, tmp_path):
    done = pps("serve", "--port", str(server.port), "--data-dir", str(tmp_path / "new"))
    assert done.returncode == 1
    assert f"port {server.port} on 127.0.0.1 is in use by another pps serve" in done.stderr
    assert not (tmp_path / "new").exists()


def test_version_names_the_installed_pps():
    from importlib.metadata import version

    done = pps("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"pps {version('pps')}"


def test_queue_of_an_entity_that_does_not_exist_is_refused(tmp_path):
    data = ["--data-dir", str(tmp_path / "data")]
    for command in (["queue"], ["queue", "retry"]):
        done = pps(*command, "--entity", "nobody", *data)
        assert done.returncode == 1 and "no entity named 'nobody'" in done.stderr, done.stderr
