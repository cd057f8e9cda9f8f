"""Who called (issue 28, item 3): calls from labelled clients show up per client with
their counts, on GET /v1/clients and the Clients page; one entity never sees another's
clients; revoking on the page ends the old token at once; the page fits a phone.

Real parts: the app served on a port, our ingest Client and an MCP client over HTTP,
Chromium for the layout (skipped like tests/test_ui_browser.py when it is missing)."""

from __future__ import annotations

import httpx
import pytest

from engine.capture import clients, entities
from engine.capture.clients import Call
from engine.kernel.labels import CLIENT_HEADER
from ingest.client import Client
from ingest.spool import Spool
from tests.conftest import AppServer, connect
from tests.test_ui import UI
from tests.test_ui_browser import browser_context  # noqa: F401  (a fixture)
from tests.ui_checks import layout_problems

MCP = {"Accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with AppServer(tmp_path_factory.mktemp("pps") / "data") as app:
        yield app


def _mcp(api: httpx.Client, method: str, params: dict, n: int) -> httpx.Response:
    message = {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
    answer = api.post("/mcp", json=message, headers=MCP)
    assert answer.status_code == 200, answer.text
    return answer


def _by_client(api: httpx.Client) -> dict[str, dict]:
    answer = api.get("/v1/clients")
    assert answer.status_code == 200, answer.text
    return {c["client"]: c for c in answer.json()["clients"]}


def _calls_of(server: AppServer, token: str, tmp_path) -> None:
    """Two labelled clients: the ingest Client as claude-code (two writes of events, one
    recall), and an MCP client named by its initialize (initialize, one read tool)."""
    with Client(server.url, token, Spool(tmp_path / "spool.jsonl"), label="claude-code") as hook:
        for text in ("the kettle whistles", "the garden needs water"):
            flushed = hook.send([{"channel": "terminal", "author": "jeff", "content": text}])
            assert flushed.stored == 1, flushed
        hook.recall({"context": "the kettle"})
    with connect(server, token) as api:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}}
        _mcp(api, "initialize", {**init, "clientInfo": {"name": "cursor", "version": "1"}}, 1)
        _mcp(api, "tools/call", {"name": "anchor_list", "arguments": {}}, 2)


def test_two_labelled_clients_show_with_their_counts_and_no_one_elses(server, tmp_path):
    alice = entities.create(server.db, "alice")
    bob = entities.create(server.db, "bob")
    _calls_of(server, alice, tmp_path)
    with connect(server, alice) as api:
        seen = _by_client(api)
        assert set(seen) == {"claude-code", "mcp: cursor"}, seen
        assert (seen["claude-code"]["writes"], seen["claude-code"]["reads"]) == (2, 1)
        assert (seen["mcp: cursor"]["reads"], seen["mcp: cursor"]["writes"]) == (2, 0)
        assert seen["claude-code"]["last_status"] == 200
        recent = api.get("/v1/clients", params={"recent": 10}).json()["recent"]
        routes = [(c["client"], c["route"], c["kind"]) for c in recent]
        # The GET before this one is recorded now, as plain REST.
        assert routes[0] == ("rest", "/v1/clients", "read"), routes
        assert ("mcp: cursor", "/mcp tools/call anchor_list", "read") in routes
        assert ("claude-code", "/v1/events", "write") in routes
        assert all("kettle" not in str(c) for c in recent)  # no content in the log
    with connect(server, bob) as other:
        assert _by_client(other) == {}  # bob's first call: none of alice's clients
        assert set(_by_client(other)) == {"rest"}
    page = UI(server, bob)
    assert page.sign_in().status_code == 303
    shown = page.get("/ui/clients").text
    assert "claude-code" not in shown and "cursor" not in shown
    page = UI(server, alice)
    page.sign_in()
    shown = page.get("/ui/clients").text
    assert 'data-client="claude-code"' in shown and 'data-client="mcp: cursor"' in shown


def test_revoke_ends_the_old_token_at_once_and_shows_the_new_one_once(server):
    token = entities.create(server.db, "carol")
    with connect(server, token) as api:
        assert api.get("/v1/events", headers={CLIENT_HEADER: "discord"}).status_code == 200
        page, elsewhere = UI(server, token), UI(server, token)  # two browsers
        assert page.sign_in().status_code == 303 and elsewhere.sign_in().status_code == 303
        listed = page.get("/ui/clients").text
        assert 'data-client="discord"' in listed and 'id="revoke"' in listed
        assert "every client using the old token is refused" in listed
        revoked = page.post("/ui/clients/revoke")
        assert revoked.status_code == 200, revoked.text
        new = revoked.text.split('<code class="token">', 1)[1].split("</code>", 1)[0]
        assert new.startswith(entities.TOKEN_PREFIX) and new != token
        refused = api.get("/v1/events", headers={CLIENT_HEADER: "discord"})
        assert refused.status_code == 401, refused.text
        assert new not in page.get("/ui/clients").text  # shown once, and still signed in
        # The other browser is signed out: its cookie opens nothing, not even after.
        for _ in range(2):
            gone = elsewhere.get("/ui/clients")
            assert (gone.status_code, gone.headers["location"]) == (303, "/ui"), gone.text
        assert elsewhere.get("/ui").status_code == 200  # the sign-in form, no loop
        assert elsewhere.sign_in(new).status_code == 303
    with connect(server, new) as api:
        assert api.get("/v1/events").status_code == 200


def test_rotating_the_token_from_the_cli_signs_its_browsers_out(server):
    """`pps entity rotate` runs the same engine function in its own process: the service
    learns of it from the database, at the session's next request."""
    page = UI(server, entities.create(server.db, "ines"))
    assert page.sign_in().status_code == 303
    assert page.get("/ui/clients").status_code == 200
    entities.rotate(server.db, "ines")
    assert page.get("/ui/clients").headers.get("location") == "/ui"


def test_the_http_hook_and_the_pages_are_named_by_their_route(server):
    token = entities.create(server.db, "frank")
    with connect(server, token) as api:
        hook = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "hello"}
        assert api.post("/v1/hooks/claude-code", json=hook).status_code == 200
        page = UI(server, token)
        page.sign_in()
        assert page.get("/ui/timeline").status_code == 200
        assert page.get("/ui/api/events").status_code == 200  # a poll: not recorded
        recent = api.get("/v1/clients", params={"recent": 50}).json()["recent"]
        assert {c["route"] for c in recent if c["client"] == "web"} == {"/ui/timeline"}
        seen = _by_client(api)
        assert seen["claude-code-http"]["writes"] == 1, seen
        assert seen["web"]["reads"] >= 1, seen
        refused = api.get("/v1/clients", params={"recent": 500})
        assert refused.status_code == 422 and refused.json()["error"] == "invalid_input"


def test_the_discord_adapters_client_calls_as_discord(server, tmp_path):
    from ingest.discord import DiscordCapture

    token = entities.create(server.db, "hana")
    with Client(server.url, token, Spool(tmp_path / "spool.jsonl")) as client:
        DiscordCapture(client)
        assert client.send([{"channel": "discord", "author": "jeff", "content": "hi"}]).stored
    with connect(server, token) as api:
        assert set(_by_client(api)) == {"discord"}


def test_the_record_is_bounded_in_calls_and_clients(server):
    entities.create(server.db, "gina")
    recorder = clients.Recorder(server.db)
    for i in range(clients.RECENT_KEPT + 50):
        label = f"label-{i % (clients.CLIENTS_KEPT + 8)}"
        recorder.record(Call("gina", label, "GET", "/v1/events", "read", 200, 1.0))
    recorder.flush()
    assert len(recorder.recent("gina", 1000)) == clients.RECENT_KEPT
    kept = recorder.clients("gina")
    assert len(kept) == clients.CLIENTS_KEPT + 1
    assert clients.OTHER in {c.client for c in kept}
    assert sum(c.reads for c in kept) == clients.RECENT_KEPT + 50  # every call counted


def test_a_revoke_without_the_form_token_changes_nothing(server):
    token = entities.create(server.db, "dave")
    page = UI(server, token)
    page.sign_in()
    assert page.post("/ui/clients/revoke", csrf=False).status_code == 403
    with connect(server, token) as api:
        assert api.get("/v1/events").status_code == 200


@pytest.mark.parametrize("size", [(390, 844), (1280, 800)])
def test_the_clients_page_fits_a_phone_and_a_desktop(browser_context, server, tmp_path, size):  # noqa: F811
    from playwright.sync_api import expect

    token = entities.create(server.db, f"erin-{size[0]}")
    _calls_of(server, token, tmp_path)
    browser_context.clear_cookies()
    page = browser_context.new_page()
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(server.url + "/ui")
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(server.url + "/ui/timeline")
    page.goto(server.url + "/ui/clients")
    expect(page.locator('#clients tr[data-client="claude-code"]')).to_be_visible()
    assert layout_problems(page) == []
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke the token").click()
    expect(page.locator("#new-token")).to_be_visible()
    assert layout_problems(page) == []
    page.close()
