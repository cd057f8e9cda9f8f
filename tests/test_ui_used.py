"""The used share in a real Chromium: after a recall and the assistant's reply, the audit
and recall pages show the share per layer at a desktop's and a phone's size, and the
logged recall says which item was used. (The whole page's fit at both sizes is the
every-route check's.)"""

from __future__ import annotations

import httpx
import pytest

from engine.capture import entities
from tests.test_ui_browser import browser_context, server  # noqa: F401  (fixtures)

SIZES = [(1280, 800), (390, 844)]


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_pages_show_what_the_reply_used(browser_context, server, width, height):  # noqa: F811
    from playwright.sync_api import expect

    name = f"lyra-used-{width}"
    token = entities.create(server.db, name)
    other = entities.create(server.db, f"nova-used-{width}")
    api = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"})
    api.post("/v1/anchors", json={"title": "Robe", "content": "The comfy robe, navy."})
    api.post("/v1/recall", json={"context": "the comfy robe", "session_id": "s-used"})
    api.post(
        "/v1/events",
        json={
            "channel": "terminal",
            "role": "assistant",
            "session_id": "s-used",
            "content": "The navy robe it is, the comfy one.",
        },
    ).raise_for_status()
    share = api.get("/v1/audit/used").json()
    assert share["used"] >= 1
    shown = f"{round(share['share'] * 100)}% of {share['marked']} recalled items used"

    browser_context.clear_cookies()  # signed out: each size signs its own entity in
    page = browser_context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    page.goto(server.url + "/ui")
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(server.url + "/ui/timeline")
    for path in ("/ui/audit", "/ui/recall"):
        page.goto(server.url + path)
        panel = page.locator("#used")
        expect(panel).to_contain_text(shown)
        expect(panel.locator('#u-layers tr[data-layer="anchors"]')).to_be_visible()
        box = panel.bounding_box()
        assert box is not None and box["width"] <= width, (path, box)
    entry = api.get("/v1/recall/log").json()["entries"][0]
    page.goto(f"{server.url}/ui/recall?log={entry['id']}")
    expect(page.locator("#logged td.used").first).to_have_text("used")
    page.close()

    nova = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {other}"})
    assert nova.get("/v1/audit/used").json()["marked"] == 0  # one entity's figures only
