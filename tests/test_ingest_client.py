"""The client and its spool against a real server: stored when up; spooled (and the caller
back at once) when down, hung, behind a proxy answering 5xx, or refusing the token; sent
in order, exactly once, by the next flush; invalid events isolated and kept, never
retried forever; nothing lost to SIGKILL between spooling and flushing or mid-flush."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engine.capture import entities
from ingest.client import Client
from ingest.spool import Spool
from pps.process import ServerProcess
from tests.conftest import NO_GRAPH, AppServer, connect, create_entity, settings_env
from tests.fixtures_ingest import ROOT, all_events, client_env, pps, token_of


def turns(prefix: str, n: int) -> list[dict]:
    return [
        {"event_uid": f"{prefix}-{i}", "channel": "terminal", "content": f"{prefix} turn {i}"}
        for i in range(n)
    ]


@pytest.fixture
def own_server(tmp_path):
    """A server of this test's own, which it may stop and start again."""
    with AppServer(tmp_path / "data") as server:
        yield server, entities.create(server.db, "lyra")


@pytest.fixture
def own_process(tmp_path, processes):
    """A `pps serve` of this test's own, which it may freeze (SIGSTOP)."""
    server = ServerProcess(tmp_path / "data", env=settings_env(**NO_GRAPH)).start()
    token = create_entity(server.data_dir, "lyra")
    yield server, token
    if server.proc and server.proc.poll() is None:
        server.proc.send_signal(signal.SIGCONT)
    server.stop()


def stored_uids(server: AppServer | ServerProcess) -> list[str]:
    with sqlite3.connect(server.data_dir / "pps.sqlite3") as db:
        return [r[0] for r in db.execute("SELECT event_uid FROM events ORDER BY id")]


def test_send_stores_and_leaves_no_spool_behind(make_client, server, tmp_path):
    api = make_client()
    spool = Spool(tmp_path / "client" / "spool.jsonl")
    with Client(server.url, token_of(api), spool) as client:
        result = client.send(turns("up", 3))
    assert (result.stored, result.duplicates, result.pending, result.error) == (3, 0, 0, None)
    assert [e["content"] for e in all_events(api)] == [f"up turn {i}" for i in range(3)]
    assert not spool.path.exists() and not spool.sending.exists()
    assert (tmp_path / "client").stat().st_mode & 0o777 == 0o700
    assert spool.rejected_path.exists() is False


def test_stopped_service_spools_and_the_next_flush_sends_in_order_once(
    own_server, tmp_path, processes
):
    server, token = own_server
    server.stop()
    spool = Spool(tmp_path / "client" / "spool.jsonl")
    with Client(server.url, token, spool, timeout=5) as client:
        first = client.send(turns("down", 30))
        second = client.send(turns("later", 20))
        assert first.error and "unreachable" in first.error and first.pending == 30
        assert second.pending == 50 and second.stored == 0
        assert spool.path.stat().st_mode & 0o777 == 0o600
        # The same events again (a hook that fired twice) are harmless.
        client.send(turns("down", 5))
        server.start()
        flushed = client.flush()
    assert flushed.error is None and flushed.pending == 0
    assert (flushed.stored, flushed.duplicates) == (50, 5)
    expected = [f"down-{i}" for i in range(30)] + [f"later-{i}" for i in range(20)]
    assert stored_uids(server) == expected  # in spool order, each once


def test_a_hung_service_does_not_hold_the_caller_past_its_deadline(own_process, tmp_path):
    server, token = own_process
    server.proc.send_signal(signal.SIGSTOP)  # accepts connections, never answers
    spool = Spool(tmp_path / "spool.jsonl")
    with Client(server.url, token, spool, timeout=60) as client:
        started = time.monotonic()
        result = client.send(turns("hung", 10), deadline=time.monotonic() + 1.0)
        waited = time.monotonic() - started
        assert result.error and result.pending == 10
        assert waited < 10, f"the send waited {waited:.1f}s with a 1s deadline"
        server.proc.send_signal(signal.SIGCONT)
        assert client.flush().pending == 0
    assert sorted(stored_uids(server)) == sorted(f"hung-{i}" for i in range(10))


class _Maintenance(BaseHTTPRequestHandler):
    """A proxy in front of pps showing its maintenance page: 503 to everything."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b"<html>503 Service Unavailable</html>"
        self.send_response(503)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_private_text_is_never_spooled_nor_sent(make_client, tmp_path):
    """A client's events (the Discord adapter's, an importer's) lose what the user wrapped
    in <private>…</private> before the spool is written: the spool file never holds it,
    the service never sees it, and an event that was only private is not taken on."""
    api = make_client()
    spool = Spool(tmp_path / "spool.jsonl")
    events = [
        {
            "event_uid": "dm-1",
            "channel": "discord",
            "content": "the wifi password is <private>hunter2-tulip</private> now",
        },
        {"event_uid": "dm-2", "channel": "discord", "content": "<PRIVATE>rosebud 77</PRIVATE>"},
        {"event_uid": "dm-3", "channel": "discord", "content": "see you <private>at 9 at"},
    ]
    with Client("http://127.0.0.1:9", token_of(api), spool) as client:  # nothing answers
        assert client.send(events).pending == 2
    written = "".join(p.read_text() for p in tmp_path.iterdir() if p.is_file())
    assert "dm-1" in written
    assert not [secret for secret in ("hunter2", "rosebud", "at 9") if secret in written]
    with Client(str(api.base_url).rstrip("/"), token_of(api), spool) as client:
        assert client.flush().stored == 2
    stored = {e["event_uid"]: e["content"] for e in all_events(api)}
    assert stored == {"dm-1": "the wifi password is  now", "dm-3": "see you "}


def test_5xx_keeps_everything_spooled(make_client, server, tmp_path):
    api = make_client()
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), _Maintenance)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    spool = Spool(tmp_path / "spool.jsonl")
    try:
        behind = f"http://127.0.0.1:{proxy.server_address[1]}"
        with Client(behind, token_of(api), spool) as client:
            result = client.send(turns("maint", 12))
    finally:
        proxy.shutdown()
    assert "HTTP 503" in result.error and result.pending == 12 and result.rejected == 0
    assert all_events(api) == []
    with Client(server.url, token_of(api), spool) as client:
        assert client.flush().stored == 12


def test_invalid_events_are_isolated_kept_and_the_rest_stored(make_client, server, tmp_path):
    api = make_client()
    events = turns("mixed", 40)
    events[7]["channel"] = "Not A Channel!"
    events[23]["content"] = "   "
    spool = Spool(tmp_path / "spool.jsonl")
    with Client(server.url, token_of(api), spool) as client:
        result = client.send(events)
    assert (result.stored, result.rejected, result.pending, result.error) == (38, 2, 0, None)
    assert len(all_events(api)) == 38
    kept = [json.loads(line) for line in spool.rejected_path.read_text().splitlines()]
    assert [k["event"]["event_uid"] for k in kept] == ["mixed-7", "mixed-23"]
    assert kept[0]["status"] == 422 and "channel" in kept[0]["problem"]
    assert "content must not be empty" in kept[1]["problem"]
    assert spool.rejected_path.stat().st_mode & 0o777 == 0o600


def test_a_refused_token_keeps_everything_and_says_why(server, tmp_path):
    spool = Spool(tmp_path / "spool.jsonl")
    with Client(server.url, "pps_not-a-real-token", spool) as client:
        result = client.send(turns("refused", 4))
    assert "HTTP 401" in result.error and "token" in result.error
    assert result.pending == 4 and result.rejected == 0


def test_a_torn_spool_line_is_kept_as_rejected_and_the_rest_sent(make_client, server, tmp_path):
    api = make_client()
    spool = Spool(tmp_path / "spool.jsonl")
    spool.append(turns("before", 2))
    with open(spool.path, "ab") as file:
        file.write(b'{"event_uid": "torn", "chan')  # a writer killed mid-line
    spool.append(turns("after", 2))
    with Client(server.url, token_of(api), spool) as client:
        result = client.flush()
    assert (result.stored, result.rejected, result.pending) == (4, 1, 0)
    assert "unreadable" in spool.rejected_path.read_text()


def test_many_writers_and_flushers_at_once_lose_nothing(make_client, server, tmp_path):
    api = make_client()
    path = tmp_path / "spool.jsonl"

    def writer(n: int) -> None:
        with Client(server.url, token_of(api), Spool(path), batch=7) as client:
            for start in range(0, 150, 10):
                client.send(turns(f"w{n}", 150)[start : start + 10])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with Client(server.url, token_of(api), Spool(path)) as client:
        assert client.flush().pending == 0
    uids = [e["event_uid"] for e in all_events(api)]
    assert sorted(uids) == sorted(f"w{n}-{i}" for n in range(4) for i in range(150))


_SPOOL_AND_DIE = """
import os, sys
from ingest.client import Client
from ingest.spool import Spool
client = Client(sys.argv[1], sys.argv[2], Spool(sys.argv[3]), timeout=2)
events = [{"event_uid": f"k-{i}", "channel": "terminal", "content": f"kill {i}"}
          for i in range(300)]
result = client.send(events)
print(result.pending, flush=True)
os.kill(os.getpid(), 9)  # SIGKILL: no cleanup of any kind
"""


def test_sigkill_between_spool_and_flush_loses_nothing(own_server, tmp_path, processes):
    server, token = own_server
    server.stop()
    spool_path = tmp_path / "client" / "spool.jsonl"
    child = subprocess.run(
        [sys.executable, "-c", _SPOOL_AND_DIE, server.url, token, str(spool_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert child.returncode == -signal.SIGKILL and child.stdout.strip() == "300"
    server.start()
    env = client_env(server.url, token, tmp_path, PPS_SPOOL_PATH=str(spool_path))
    done = pps("ingest", "flush", env=env)
    assert done.returncode == 0, done.stderr
    assert "300 stored" in done.stdout
    assert sorted(stored_uids(server)) == sorted(f"k-{i}" for i in range(300))


def test_sigkill_mid_flush_then_flush_again_stores_each_event_once(own_server, tmp_path, processes):
    server, token = own_server
    total = 10_000
    spool = Spool(tmp_path / "client" / "spool.jsonl")
    spool.append(turns("big", total))
    env = client_env(
        server.url, token, tmp_path, PPS_SPOOL_PATH=str(spool.path), PPS_CLIENT_BATCH="100"
    )
    flusher = subprocess.Popen(
        [sys.executable, "-m", "pps.cli", "ingest", "flush"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and flusher.poll() is None:
        if spool.offset_path.exists() and spool.offset_path.read_text() not in ("", "0"):
            break
        time.sleep(0.002)
    flusher.send_signal(signal.SIGKILL)
    flusher.wait()
    sent_before = len(stored_uids(server))
    assert 0 < sent_before < total, "the kill did not land mid-flush"
    assert spool.sending.exists() and spool.pending() > 0

    done = pps("ingest", "flush", env=env)
    assert done.returncode == 0, done.stderr
    assert "0 waiting" in done.stdout
    uids = stored_uids(server)
    assert len(uids) == total and set(uids) == {f"big-{i}" for i in range(total)}
    assert not spool.sending.exists() and not spool.path.exists()


def test_flush_command_reports_service_down(tmp_path, processes):
    spool = Spool(tmp_path / "client" / "spool.jsonl")
    spool.append(turns("waiting", 3))
    env = client_env("http://127.0.0.1:9", "pps_x", tmp_path, PPS_SPOOL_PATH=str(spool.path))
    done = pps("ingest", "flush", env=env)
    assert done.returncode == 1
    assert "unreachable" in done.stderr and "3 waiting" in done.stdout
    assert spool.pending() == 3


def test_flush_without_a_token_names_the_setting(tmp_path, processes):
    env = client_env("http://127.0.0.1:9", "x", tmp_path)
    del env["PPS_TOKEN_FILE"]
    done = pps("ingest", "flush", env=env)
    assert done.returncode == 1 and "PPS_TOKEN_FILE" in done.stderr


def test_events_reach_only_the_tokens_entity(make_client, server, tmp_path):
    lyra, nexus = make_client(), make_client()
    with Client(server.url, token_of(lyra), Spool(tmp_path / "a.jsonl")) as client:
        client.send(turns("private", 3))
    assert len(all_events(lyra)) == 3 and all_events(nexus) == []
    with connect(server, token_of(nexus)) as other:
        found = other.get("/v1/events/search", params={"q": "private"}).json()["results"]
    assert found == []


def spool_while_down(server, env, n: int):
    """What a hook does while the service is down: its events wait in the spool of
    (PPS_URL, token) under PPS_CLIENT_DIR."""
    from engine.kernel.config import Settings

    settings = Settings(
        url=env["PPS_URL"], token_file=env["PPS_TOKEN_FILE"], client_dir=env["PPS_CLIENT_DIR"]
    )
    with Client.from_settings(settings) as client:
        assert client.send(turns("waiting", n)).pending == n
    return client.spool.path


def test_flush_and_import_take_the_token_file_option(own_server, tmp_path, processes):
    """As `pps mcp` and `pps hooks install` do; a --token-file on the command line wins
    over a PPS_TOKEN left in the environment."""
    server, token = own_server
    env = client_env(server.url, token, tmp_path)
    server.stop()
    spool_while_down(server, env, 3)
    server.start()
    token_file = env.pop("PPS_TOKEN_FILE")
    env["PPS_TOKEN"] = "pps_not_this_one"

    done = pps("ingest", "flush", "--token-file", token_file, env=env)
    assert done.returncode == 0, done.stderr
    assert f"service {server.url}, as the token in {token_file}" in done.stdout
    assert "3 stored" in done.stdout and "0 waiting" in done.stdout

    journals = tmp_path / "journals"
    journals.mkdir()
    (journals / "2026-01-04.md").write_text("Robe day.\n")
    done = pps("import", "journals", str(journals), "--token-file", token_file, env=env)
    assert done.returncode == 0, done.stderr
    assert "imported            1" in done.stdout
    assert len(stored_uids(server)) == 4


def test_flush_says_which_service_and_spool_and_where_other_events_wait(
    own_server, tmp_path, processes
):
    """The first hour: events spooled for the service while it was down, then a flush with
    the wrong port. It used to answer "0 waiting" (about another spool, that of the wrong
    port's service) and exit 0, the events untouched. Now it says the service does not
    answer, names the spool it looked at, and where the events wait."""
    server, token = own_server
    env = client_env(server.url, token, tmp_path)
    server.stop()
    waiting = spool_while_down(server, env, 3)
    server.start()
    del env["PPS_URL"]

    wrong = pps("ingest", "flush", "--port", "9", env=env)
    assert wrong.returncode == 1
    assert "service unreachable at http://127.0.0.1:9" in wrong.stderr
    assert "no event waits in this spool" in wrong.stderr
    assert "service http://127.0.0.1:9," in wrong.stdout and "spool " in wrong.stdout
    assert "0 waiting" not in wrong.stdout
    assert f"3 events wait in another spool, for {server.url}: {waiting}" in wrong.stdout
    assert f"pps ingest flush --url {server.url} --token-file FILE" in wrong.stdout

    # the same service under another name is another spool: it answers, and says so
    other_name = server.url.replace("127.0.0.1", "localhost")
    elsewhere = pps("ingest", "flush", "--url", other_name, env=env)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert "nothing to send: no event waits in this spool" in elsewhere.stdout
    assert f"3 events wait in another spool, for {server.url}" in elsewhere.stdout
    assert stored_uids(server) == []

    right = pps("ingest", "flush", "--url", server.url, env=env)
    assert right.returncode == 0, right.stderr
    assert "3 stored" in right.stdout and "another spool" not in right.stdout
    assert sorted(stored_uids(server)) == [f"waiting-{i}" for i in range(3)]


def test_flush_with_a_token_the_service_refuses_says_so(make_client, server, tmp_path, processes):
    env = client_env(server.url, "pps_revoked_or_mistyped", tmp_path)
    done = pps("ingest", "flush", env=env)
    assert done.returncode == 1 and "HTTP 401" in done.stderr
    assert "0 waiting" not in done.stdout
