"""The web face's graph page on a real graph: the embedded FalkorDB fed by the stub LLM
(tests/stub_llm.py) through the real queue. Facts with their dates and the events they
came from, an entity's neighbourhood drawn, a fact deleted after a CSRF-checked post,
and another entity's fact a 404. The page without a graph is in tests/test_ui.py."""

from __future__ import annotations

import re

import pytest
from stub_llm import StubLLM

from tests.conftest import AppServer, wait_for
from tests.test_graph_http import FAST
from tests.test_ui import UI
from tests.test_ui_browser import browser_context, shots  # noqa: F401  (fixtures)

TURNS = [
    "I moved to Denver with Lyra last spring.",
    "Jeff works at Lockheed on satellites.",
]


@pytest.fixture(scope="module")
def stub():
    with StubLLM() as llm:
        yield llm


@pytest.fixture(scope="module")
def server(tmp_path_factory, stub, falkordb):
    settings = {
        **FAST,
        "llm_provider": "openai_compatible",
        "llm_base_url": stub.url,
        "llm_model": "stub",
    }
    with AppServer(tmp_path_factory.mktemp("pps") / "data", **settings) as app:
        yield app


def signed_in(server: AppServer, name: str) -> UI:
    import httpx

    from engine.capture import entities

    ui = UI(server, entities.create(server.db, name))
    ui.api = httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {ui.token}"}, timeout=30
    )
    assert ui.sign_in().status_code == 303
    return ui


def facts_of(ui: UI) -> list[dict]:
    return ui.api.get("/v1/texture/facts").json()["facts"]


@pytest.fixture(scope="module")
def learned(server):
    lyra = signed_in(server, "lyra")
    stored = lyra.api.post(
        "/v1/events",
        json=[{"channel": "terminal", "author": "Jeff", "content": t} for t in TURNS],
    ).json()["events"]
    facts = wait_for(lambda: len(f := facts_of(lyra)) >= 2 and f, 60, "facts in the graph")
    return lyra, stored, facts


def test_the_facts_with_their_dates_and_source_events(learned):
    lyra, stored, facts = learned
    page = lyra.get("/ui/graph")
    assert page.status_code == 200, page.text
    for fact in facts:
        assert f'data-fact="{fact["uuid"]}"' in page.text and fact["event_uids"]
    uids = {e["event_uid"] for e in stored}
    linked = set(re.findall(r'href="/ui/around\?uid=([^"]+)"', page.text))
    assert linked and linked <= uids
    around = lyra.get(f"/ui/around?uid={next(iter(linked))}")
    assert around.status_code == 200 and "Denver" in around.text + around.text
    assert '<svg id="graph-drawing"' in page.text and "<circle" in page.text
    denver = lyra.get("/ui/graph", params={"contains": "denver"}).text
    assert "Lockheed" not in denver.split('id="facts"')[1].split("</table>")[0]
    near = lyra.get("/ui/graph", params={"entity": "Lyra"}).text
    assert "Around Lyra" in near


def test_a_fact_opens_its_source_events_in_a_browser(browser_context, learned, server, shots):  # noqa: F811
    from playwright.sync_api import expect

    lyra, _, facts = learned
    page = browser_context.new_page()
    page.goto(server.url + "/ui")
    page.get_by_label("Token").fill(lyra.token)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("link", name="Graph").click()
    expect(page.locator(f'tr[data-fact="{facts[0]["uuid"]}"]')).to_be_visible()
    expect(page.locator("#graph-drawing circle").first).to_be_visible()
    page.screenshot(path=shots / "ui-graph.png", full_page=True)
    page.locator(f'tr[data-fact="{facts[0]["uuid"]}"] a.source-event').first.click()
    expect(page).to_have_url(re.compile(r"/ui/around\?uid="))
    expect(page.locator("li.event.this")).to_be_visible()
    page.close()


def test_deleting_a_fact_needs_the_csrf_token_and_is_the_entitys_own(learned, server):
    lyra, _, facts = learned
    nexus = signed_in(server, "nexus")
    target = facts[0]["uuid"]
    assert lyra.post("/ui/graph/delete", {"uuid": target}, csrf=False).status_code == 403
    other = nexus.post("/ui/graph/delete", {"uuid": target})
    assert other.status_code == 404
    assert "Denver" not in nexus.get("/ui/graph").text
    assert target in {f["uuid"] for f in facts_of(lyra)}
    done = lyra.post("/ui/graph/delete", {"uuid": target})
    assert done.status_code == 303 and "deleted=fact" in done.headers["location"]
    assert "Deleted the fact." in lyra.get(done.headers["location"]).text
    assert target not in {f["uuid"] for f in facts_of(lyra)}
    assert lyra.post("/ui/graph/delete", {"uuid": target}).status_code == 404
