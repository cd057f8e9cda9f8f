"""The first hour of a new user, with real `pps serve` processes: the data dir is the
user's own whatever folder a command runs in, one server per data dir (a second one stops
at once and names the first, whose FalkorDB lives on), commands that write work beside a
running server, and the server's log is one line per record."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from pps.process import ServerProcess, free_port
from tests.conftest import AppServer
from tests.test_cli import as_user, run_as


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_token_made_in_another_folder_works_on_the_running_server(tmp_path, processes):
    """`make run` in the repository, `pps entity create` in another terminal elsewhere."""
    home = tmp_path / "home"
    user = as_user(home, GRAPH_BACKEND="none")
    (tmp_path / "repo").mkdir()
    server = ServerProcess(
        None, env=user, replace_env=True, cwd=tmp_path / "repo", log=tmp_path / "serve.log"
    )
    with server:
        created = run_as(user, "entity", "create", "ghost", cwd=tmp_path / "elsewhere")
        assert created.returncode == 0, created.stderr
        answer = httpx.get(f"{server.url}/v1/events", headers=bearer(created.stdout.strip()))
        assert answer.status_code == 200, answer.text
    data_dir = home / ".local" / "share" / "pps"
    assert (data_dir / "pps.sqlite3").exists()
    assert (
        not (tmp_path / "repo" / "data").exists() and not (tmp_path / "elsewhere" / "data").exists()
    )
    assert f"data dir {data_dir};" in server.logs()  # the server says which


def test_a_second_server_on_the_same_data_dir_stops_at_once_and_names_the_first(
    tmp_path, processes
):
    data = tmp_path / "data"
    with ServerProcess(data) as first:  # with its embedded FalkorDB
        falkordb = int((data / "graph" / "falkordb.pid").read_text())
        serve = ["serve", "--data-dir", str(data), "--port", str(free_port())]
        second = subprocess.run(
            [sys.executable, "-m", "pps.cli", *serve],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert second.returncode == 1
        assert len(second.stderr.splitlines()) == 1, second.stderr  # one line, no traceback
        assert f"in use by pps serve (pid {first.proc.pid}, port {first.port})" in second.stderr
        assert alive(falkordb)  # not stopped as "left over from an earlier run"
        graph = httpx.get(f"{first.url}/health").json()["components"]["graph"]
        assert graph["status"] == "ok" and graph["restarts"] == 0

        # Commands that write work beside it.
        token = first.pps("entity", "create", "lyra").strip()
        assert httpx.get(f"{first.url}/v1/events", headers=bearer(token)).status_code == 200
        reindexed = subprocess.run(
            [sys.executable, "-m", "pps.cli", "reindex", "--data-dir", str(data)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert reindexed.returncode == 0, reindexed.stderr
    with ServerProcess(data, port=first.port) as again:  # stopped: the data dir is free
        assert httpx.get(f"{again.url}/health").status_code == 200

    # The log, written to a file, is one line per record however long.
    socket = data / "graph" / "falkordb.sock"
    if len(str(socket)) <= 100:  # else it listens on a port
        listening = [line for line in first.logs().splitlines() if "listening on" in line]
        assert listening and listening[0].endswith(f"listening on unix:{socket}"), listening


# The refused app's uvicorn thread ends with SystemExit, as `pps serve` would exit.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_an_app_in_a_test_process_holds_its_data_dir_and_lets_it_go_when_stopped(tmp_path):
    first = AppServer(tmp_path / "data").start()
    try:
        with pytest.raises(RuntimeError, match="did not start"):
            AppServer(tmp_path / "data").start()
        assert httpx.get(f"{first.url}/health").json()["status"] == "ok"
        first.stop()
        first.start()  # a restart in the same process takes it again
        assert httpx.get(f"{first.url}/health").json()["status"] == "ok"
    finally:
        first.stop()
