"""`pps mcp`, the stdio relay, as a client spawns it: the MCP SDK's own stdio client on
every profile, and raw JSON-RPC on the pipes for what a client sees when the token is
wrong or the service is down (one readable line, never a traceback). The relay is tested
as a process against the real app on real HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from importlib.metadata import version

import pytest
from mcp import Client, StdioServerParameters

from engine.capture import entities
from pps.process import free_port
from tests.conftest import AppServer, wait_for
from tests.mcp_client import call, session
from tests.searching import home, write

pytestmark = pytest.mark.process  # every test runs the relay, `pps mcp`

PPS_MCP = [sys.executable, "-m", "pps.cli", "mcp"]
"""How the relay is spawned; the one place to change it."""
READ_TIMEOUT = 30


def initialize(request_id=1) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }


def request(request_id, method, **params) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


class Relay:
    """A `pps mcp` child driven over its pipes; every read waits at most READ_TIMEOUT."""

    def __init__(self, url: str, token: str, profile: str = "pps", *options: str):
        self.proc = subprocess.Popen(
            [*PPS_MCP, "--profile", profile, "--url", url, *options],
            env={**os.environ, "PPS_TOKEN": token, "PPS_TOKEN_FILE": ""},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict:
        return json.loads(self.lines.get(timeout=READ_TIMEOUT))

    def close(self) -> tuple[list[bytes], str]:
        """End stdin (how a client stops it); the lines it wrote since, and its stderr."""
        self.proc.stdin.close()
        assert self.proc.wait(timeout=READ_TIMEOUT) == 0
        self.reader.join(READ_TIMEOUT)
        return list(self.lines.queue), self.proc.stderr.read().decode()

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def token_of(client) -> str:
    return client.headers["Authorization"].removeprefix("Bearer ")


# --- the SDK's stdio client, on every profile -------------------------------------------


@pytest.mark.parametrize(
    ("profile", "path", "tool", "arguments"),
    [
        ("pps", "/mcp", "store_event", {"content": "over stdio", "event_uid": "s-1"}),
        (
            "wordwalker",
            "/mcp/wordwalker",
            "store",
            {"text": "over stdio", "category": "work", "tags": ["stdio"]},
        ),
        ("openclaw", "/mcp/openclaw", "memory_get", {"path": "MEMORY.md"}),
        ("shared-memory", "/mcp/shared-memory", "memory_add", {"text": "over stdio"}),
    ],
)
def test_each_profile_through_the_relay(
    server, make_client, tmp_path, profile, path, tool, arguments
):
    client = make_client()
    write(server, client, "MEMORY.md", "over stdio\n")
    if profile == "shared-memory":  # a member of a store
        server.pps("shared", "create", f"relay-{client.entity}")
        server.pps("shared", "add", f"relay-{client.entity}", client.entity)
    token_file = tmp_path / "token"
    token_file.write_text(token_of(client))
    options = ["--profile", profile, "--url", server.url, "--token-file", str(token_file)]
    params = StdioServerParameters(
        command=PPS_MCP[0],
        args=[*PPS_MCP[1:], *options],
        env={**os.environ, "PPS_TOKEN": ""},
    )

    async def run():
        async with Client(params) as relay:
            names = {listed.name for listed in (await relay.list_tools()).tools}
            failed = await relay.call_tool(tool, {})
            return names, await call(relay, tool, **arguments), failed

    async def listed(direct):
        return {listed.name for listed in (await direct.list_tools()).tools}

    names, answer, failed = asyncio.run(run())
    assert names == session(server.url + path, token_of(client), listed)
    assert tool in names
    assert failed.is_error  # the service's own tool error, passed on
    if tool == "store_event":
        events = client.get("/v1/events").json()["events"]
        assert [e["content"] for e in events] == ["over stdio"]
    elif tool == "memory_get":
        assert answer["text"] == "over stdio"
    elif tool == "memory_add":
        store = server.data_dir / "shared" / f"relay-{client.entity}"
        assert "over stdio" in (store / ".brain/fragments" / answer).read_text()
    else:
        assert "over stdio" in (home(server, client) / answer["path"]).read_text()


def test_the_relay_serves_one_shared_store_of_several(server, make_client):
    alice, bob = make_client(), make_client()
    for store in ("relay-first", "relay-second"):
        server.pps("shared", "create", store)
        server.pps("shared", "add", store, alice.entity)
    server.pps("shared", "add", "relay-second", bob.entity)

    def relayed(client, *options):
        params = StdioServerParameters(
            command=PPS_MCP[0],
            args=[*PPS_MCP[1:], "--profile", "shared-memory", "--url", server.url, *options],
            env={**os.environ, "PPS_TOKEN": token_of(client), "PPS_TOKEN_FILE": ""},
        )

        async def run():
            async with Client(params) as relay:
                added = await call(relay, "memory_add", text="Bob's note on the relay.")
                return added, await call(relay, "memory_stats")

        return asyncio.run(run())

    added, stats = relayed(bob)  # its only store
    assert stats["collection"] == "relay-second" and stats["total"] == 1

    async def search(relay):
        return await call(relay, "memory_search", query="note on the relay")

    params = StdioServerParameters(
        command=PPS_MCP[0],
        args=[*PPS_MCP[1:], "--profile", "shared-memory", "--url", server.url,
              "--store", "relay-second"],
        env={**os.environ, "PPS_TOKEN": token_of(alice), "PPS_TOKEN_FILE": ""},
    )  # fmt: skip

    async def run():
        async with Client(params) as relay:
            return await search(relay)

    found = asyncio.run(run())
    assert found[0]["id"] == added and found[0]["metadata"]["written_by"] == bob.entity


# --- raw JSON-RPC on the pipes ------------------------------------------------------------


def test_initialize_comes_from_the_service_and_notifications_get_no_answer(server, make_client):
    client = make_client()
    with Relay(server.url, token_of(client)) as relay:
        relay.send(initialize())
        answer = relay.read()
        assert answer["id"] == 1 and answer["result"]["protocolVersion"] == "2025-06-18"
        assert answer["result"]["serverInfo"]["name"] == "pps"  # the service's own name
        relay.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        relay.send(request(2, "ping"))
        assert relay.read() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        relay.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}})
        left, stderr = relay.close()
    assert left == [] and stderr == ""


def test_requests_sent_together_are_all_answered(server, make_client):
    client = make_client()
    with Relay(server.url, token_of(client)) as relay:
        relay.send(initialize())
        relay.read()
        methods = ["tools/list", "ping", "tools/list", "ping", "tools/list"]
        for n, method in enumerate(methods, start=10):
            relay.send(request(n, method))
        answers = {answer["id"]: answer for answer in (relay.read() for _ in methods)}
        relay.close()
    assert sorted(answers) == list(range(10, 10 + len(methods)))
    assert all("result" in answer for answer in answers.values())


def test_the_services_json_rpc_errors_pass_through(server, make_client):
    client = make_client()
    with Relay(server.url, token_of(client)) as relay:
        relay.send(initialize())
        relay.read()
        relay.send(request(2, "no/such/method"))
        answer = relay.read()
        relay.close()
    assert answer["id"] == 2 and answer["error"]["code"] == -32601


def test_a_wrong_token_fails_initialize_with_one_line(server):
    url = f"{server.url}/mcp/wordwalker"
    with Relay(server.url, "pps_not_a_token", "wordwalker") as relay:
        relay.send(initialize())
        answer = relay.read()
        _, stderr = relay.close()
    assert answer["id"] == 1 and "result" not in answer
    assert answer["error"]["message"] == f"401: the token is not valid for {url}"
    assert stderr.count("\n") == 1 and stderr.endswith(f"401: the token is not valid for {url}\n")
    assert "Traceback" not in stderr


def test_a_token_revoked_later_is_a_tool_error(server, make_client):
    client = make_client()
    with Relay(server.url, token_of(client)) as relay:
        relay.send(initialize())
        assert "result" in relay.read()
        server.pps("entity", "rotate", client.entity)
        relay.send(request(2, "tools/call", name="store_event", arguments={"content": "x"}))
        called = relay.read()
        relay.send(request(3, "tools/list"))
        listed = relay.read()
        _, stderr = relay.close()
    line = f"401: the token is not valid for {server.url}/mcp"
    assert called["result"] == {"content": [{"type": "text", "text": line}], "isError": True}
    assert listed["error"]["message"] == line
    assert "Traceback" not in stderr


def test_a_token_file_on_the_command_line_beats_a_token_in_the_environment(
    server, make_client, tmp_path
):
    token_file = tmp_path / "lyra.token"
    token_file.write_text(token_of(make_client()) + "\n")
    with Relay(server.url, "pps_stale", "pps", "--token-file", str(token_file)) as relay:
        relay.send(initialize())
        answer = relay.read()
    assert "result" in answer, answer


def test_a_stopped_service_still_initializes_and_calls_say_it_is_down():
    url = f"http://127.0.0.1:{free_port()}"
    with Relay(url, "pps_whatever", "shared-memory") as relay:
        relay.send(initialize(7))
        started = relay.read()
        relay.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        relay.send(request(8, "tools/call", name="memory_stats", arguments={}))
        called = relay.read()
        relay.send(request(9, "tools/list"))
        listed = relay.read()
        left, stderr = relay.close()
    assert started["id"] == 7 and started["result"] == {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {"listChanged": True}},
        "serverInfo": {"name": "shared-memory", "version": version("pps")},
    }
    line = f"the pps service at {url}/mcp/shared-memory is not answering"
    assert called["id"] == 8 and called["result"]["isError"] is True
    assert called["result"]["content"] == [{"type": "text", "text": line}]
    assert listed["id"] == 9 and listed["error"]["message"] == line
    assert left == []
    assert stderr.count("\n") == 1 and line in stderr and "Traceback" not in stderr


def test_a_relay_started_before_the_service_lists_its_tools_once_it_answers(tmp_path):
    """A session started before `pps serve` (issue 27): the relay answered `initialize`
    itself, and the client kept no pps tools. Now it says the list may change, and once
    the service answers it sends `notifications/tools/list_changed`; the client's
    `tools/list` then gets the service's tools."""
    with AppServer(tmp_path / "data") as server:
        token = entities.create(server.db, "lyra")
        server.stop()
        with Relay(server.url, token) as relay:
            relay.send(initialize())
            started = relay.read()
            assert started["result"]["capabilities"]["tools"] == {"listChanged": True}
            relay.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            server.start()
            assert relay.read() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
            relay.send(request(2, "tools/list"))
            listed = relay.read()
            left, stderr = relay.close()
        names = {tool["name"] for tool in listed["result"]["tools"]}
        assert "store_event" in names and "ambient_recall" in names
        assert left == [] and stderr.count("\n") == 1 and "Traceback" not in stderr


def test_a_relay_started_before_the_service_says_once_that_it_refuses_the_token(tmp_path):
    """The service comes up and does not take the token: no list_changed (there are no
    tools to fetch), one line on stderr, and the calls say 401 as they did."""
    with AppServer(tmp_path / "data") as server:
        server.stop()
        with Relay(server.url, "pps_not_a_token") as relay:
            relay.send(initialize())
            assert "result" in relay.read()
            relay.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            server.requests.clear()
            server.start()
            wait_for(lambda: "POST /mcp" in server.requests, READ_TIMEOUT, "the relay to ask")
            relay.send(request(2, "tools/list"))
            listed = relay.read()
            left, stderr = relay.close()
    line = f"401: the token is not valid for {server.url}/mcp"
    assert listed["id"] == 2 and listed["error"]["message"] == line
    assert left == []
    assert stderr.splitlines()[-1] == f"pps mcp: {line}" and stderr.count(line) == 1


@pytest.mark.parametrize("signal_", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_and_sigterm_end_it_without_a_traceback(server, make_client, signal_):
    with Relay(server.url, token_of(make_client())) as relay:
        relay.send(initialize())
        assert "result" in relay.read()  # it is up, waiting on stdin
        relay.proc.send_signal(signal_)
        relay.proc.wait(timeout=READ_TIMEOUT)
        assert relay.proc.stderr.read() == b""
