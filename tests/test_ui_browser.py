"""The web face in a real browser: Debian's Chromium, driven by Playwright's Python
package (never `playwright install`: the browser is the system's), against the real app
on a real port. Sign in, see an event posted over REST appear without a reload, run a
recall and read its trace, retry a dead job, sign out and find the pages closed.

Skipped when Chromium or Playwright is missing, unless PPS_REQUIRE_BROWSER=1 (CI, where
.ci/run installs Chromium): then that is a failure. The `shots` fixture is where
other browser tests save docs/ui.md's pictures: docs/images/ with PPS_UI_SCREENSHOTS=1,
else a tmp dir; this test's own, of each step, stay in its tmp dir.
Every wait is on a condition (Playwright's expect), never a sleep.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import httpx
import pytest

from engine.capture import entities
from engine.store import queue
from tests.conftest import AppServer, unless_required

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 15_000


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    if _chromium() is None:
        return "no chromium on PATH (Debian: apt-get install chromium)"
    return None


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory):
    unless_required(_missing(), "PPS_REQUIRE_BROWSER")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),  # a fresh user-data dir
            executable_path=_chromium(),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 860},
        )
        context.set_default_timeout(WAIT_MS)
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with AppServer(tmp_path_factory.mktemp("pps") / "data", recall_log=True) as app:
        yield app


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    if os.environ.get("PPS_UI_SCREENSHOTS") == "1":
        folder = ROOT / "docs" / "images"
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    return tmp_path_factory.mktemp("screenshots")


def test_a_person_signs_in_watches_recalls_tends_and_signs_out(browser_context, server, tmp_path):
    from playwright.sync_api import expect

    shots = tmp_path  # each step's picture, for a failure; docs/ui.md's are the phone test's

    token = entities.create(server.db, "lyra")
    api = httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    api.post(
        "/v1/events",
        json=[
            {"channel": "terminal", "session_id": "morning", "author": "jeff", "content": text}
            for text in (
                "good morning, the coffee is on",
                "go put on that comfy robe",
                "the kettle whistles at dawn",
            )
        ],
    ).raise_for_status()
    api.post(
        "/v1/events",
        json={"channel": "discord", "author": "nexus", "content": "the garden needs water"},
    ).raise_for_status()
    page = browser_context.new_page()

    # Sign in with the token: the timeline, and the token kept nowhere the page can read.
    page.goto(server.url + "/ui")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.screenshot(path=shots / "ui-sign-in.png")
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(server.url + "/ui/timeline")
    expect(page.locator("#entity")).to_have_text("lyra")
    expect(page.locator("#events")).to_contain_text("go put on that comfy robe")
    stored = page.evaluate(
        "() => [document.cookie, JSON.stringify(localStorage), JSON.stringify(sessionStorage)]"
    )
    assert stored == ["", "{}", "{}"], stored
    assert token not in page.content()

    # An event posted over REST appears at the top without a reload.
    page.evaluate("() => { window.notReloaded = true; }")
    api.post(
        "/v1/events",
        json={
            "channel": "terminal",
            "session_id": "morning",
            "author": "lyra",
            "content": "just now: the robe is on",
        },
    ).raise_for_status()
    expect(page.locator("#events li.event").first).to_contain_text("just now: the robe is on")
    expect(page.locator("#live")).to_be_visible()
    assert page.evaluate("() => window.notReloaded") is True
    page.screenshot(path=shots / "ui-timeline.png")

    # The turns around an event.
    page.locator("#events li.event").first.get_by_role("link", name="around").click()
    expect(page.locator("li.event.this")).to_contain_text("just now: the robe is on")
    expect(page.locator("ol.around-list")).to_contain_text("go put on that comfy robe")

    # A recall, beside its trace.
    page.get_by_role("link", name="Recall", exact=True).click()
    page.get_by_label("Context", exact=True).fill("the comfy robe")
    page.get_by_label("Channel", exact=True).first.fill("discord")
    page.get_by_role("button", name="Recall").click()
    expect(page.locator("#kept")).to_contain_text("comfy robe")
    turns = page.locator('tr[data-layer="turns"]')
    expect(turns.locator("td.status")).to_have_text("ok")
    expect(turns.locator("meter")).to_have_count(1)  # its latency against its budget
    expect(page.locator("#dropped")).to_be_visible()
    expect(page.locator("#log li").first).to_contain_text("the comfy robe")
    page.screenshot(path=shots / "ui-recall.png", full_page=True)
    page.locator("#log li a").first.click()
    expect(page.locator("#logged")).to_contain_text("Logged recall")

    # The audit: the drawn recall's items judged from the keyboard, precision redrawn.
    page.get_by_role("link", name="Audit").click()
    items = page.locator("li.judge-item")
    expect(items.first).to_have_class(re.compile(r"\bcurrent\b"))
    assert items.count() >= 2, "the recall surfaced fewer than two items"
    expect(page.locator("#p-all")).to_have_text("\u2013")  # nothing judged yet
    page.keyboard.press("y")
    expect(items.nth(0)).to_have_class(re.compile(r"\byes\b"))
    expect(page.locator("#p-all")).to_have_text("100%")
    expect(items.nth(1)).to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("n")
    expect(items.nth(1)).to_have_class(re.compile(r"\bno\b"))
    expect(page.locator("#p-all")).to_have_text("50%")
    expect(page.locator("#p-layers tr[data-layer]").first).to_be_visible()
    page.screenshot(path=shots / "ui-audit.png", full_page=True)
    page.reload()  # stored: the same draw shows the verdicts
    expect(page.locator("li.judge-item.yes")).to_have_count(1)
    expect(page.locator("#p-all")).to_have_text("50%")

    # The graph is off on this server: the page says so.
    page.get_by_role("link", name="Graph").click()
    expect(page.locator("#graph-status")).to_contain_text("The graph is off")

    # Memory: a word-photo written, then opened and edited on Memories.
    page.get_by_role("link", name="Memory").click()
    form = page.locator("#anchor-new")
    form.get_by_label("Title").fill("The blue robe")
    form.get_by_label("Text").fill("Soft and blue, by the door.")
    form.get_by_label("Tags").fill("robe, home")
    form.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("Word-photo saved.")
    page.locator("#anchors").get_by_role("link", name="The blue robe").click()  # on Memories
    expect(page.locator("#rendered")).to_have_text("Soft and blue, by the door.")
    page.locator("#opened").get_by_role("link", name="edit").click()
    edit = page.locator("#anchor-edit")
    expect(edit.get_by_label("Text")).to_have_value("Soft and blue, by the door.")
    edit.get_by_label("Text").fill("Green now: it was dyed.")
    edit.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("Word-photo rewritten.")
    [photo] = api.get("/v1/anchors").json()["anchors"]
    assert api.get(f"/v1/anchors/{photo['name']}").json()["content"] == "Green now: it was dyed."
    page.screenshot(path=shots / "ui-memory.png", full_page=True)

    # A dead job, retried from the queue page.
    with server.db.write() as conn:
        queue.enqueue(conn, "lyra", "ui-browser-check", "k1", {})
    policy = queue.Policy(max_attempts=1)
    job = queue.claim(server.db, "ui-browser-check", "test", policy)
    queue.fail(server.db, job, "test", RuntimeError("the model said no"), policy)
    page.get_by_role("link", name="Queue").click()
    row = page.locator(f'tr[data-job="{job.id}"]')
    expect(row).to_contain_text("RuntimeError: the model said no")
    expect(page.locator('tr[data-component="database"]')).to_contain_text("ok")
    expect(page.locator("#budget")).to_contain_text("calls")
    page.screenshot(path=shots / "ui-queue.png", full_page=True)
    # The browser's own cookie, without the page's CSRF token: refused, nothing changes.
    forged = page.request.post(
        server.url + "/ui/queue/retry", form={"job": str(job.id)}, headers={"Origin": server.url}
    )
    assert forged.status == 403 and "CSRF" in forged.text()
    assert [d.id for d in queue.status(server.db, "lyra").dead] == [job.id]
    row.get_by_role("button", name="Retry").click()
    expect(page.get_by_role("status")).to_contain_text(f"job {job.id}")
    expect(page.locator(f'tr[data-job="{job.id}"]')).to_have_count(0)
    assert queue.status(server.db, "lyra").counts["pending"] == 1

    # Sign out: the pages and the JSON they poll are closed to this browser.
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    for path in ("/ui/timeline", "/ui/recall", "/ui/queue", "/ui/audit", "/ui/memory"):
        page.goto(server.url + path)
        expect(page).to_have_url(server.url + "/ui")
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert page.request.get(server.url + "/ui/api/events").status == 401
    api.close()
