"""The memories page and the shared stores page (pps.web.memories) over real HTTP, two
entities at once: the list with previews, kinds and tags, the hybrid search and filters,
a word-photo opened as safe markdown, edited and deleted, an item deleted, a shared
store's members, counts by writer and memories with their writers; in Chromium at a
phone's and a desktop's size, nothing wider than the screen and nothing drawn over
anything else."""

from __future__ import annotations

import html

import pytest

from engine.contracts import stores
from tests.test_ui import UI, make_ui, server  # noqa: F401 (fixtures)
from tests.test_ui_browser import browser_context  # noqa: F401 (a fixture)
from tests.ui_checks import layout_problems

HOSTILE = (
    "# Plan\n\n<script>window.pwned = 1</script>\n\n"
    "[click](javascript:window.pwned=2) and <img src=x onerror=window.pwned=3>\n\n"
    "**kept bold**"
)


def _signed_in(make_ui, name: str) -> UI:  # noqa: F811
    ui = make_ui(name)
    assert ui.sign_in().status_code == 303
    return ui


def _anchor(ui, title: str, content: str, tags: list[str]) -> dict:
    answer = ui.api.post("/v1/anchors", json={"title": title, "content": content, "tags": tags})
    assert answer.status_code in (200, 201), answer.text
    return answer.json()


def test_the_list_shows_each_kind_with_a_preview_and_only_ones_own(make_ui):  # noqa: F811
    ada, bo = _signed_in(make_ui, "mem-ada"), _signed_in(make_ui, "mem-bo")
    _anchor(ada, "Lighthouse walk", "We walked to the lighthouse at dusk.", ["walks"])
    stored = ada.api.post(
        "/v1/fragments",
        json={"text": "Ada prefers tea over coffee.", "category": "prefs", "tags": ["tea"]},
    )
    assert stored.status_code in (200, 201), stored.text
    ada.api.post(
        "/v1/inventory",
        json={"name": "red scarf", "category": "clothing", "description": "Knitted by Bo."},
    )
    crystal = "# Crystal one\n\nThe **lighthouse** summer."  # a preview shows its words
    ada.api.post("/v1/crystals", json={"content": crystal})
    _anchor(bo, "Bo's secret", "Bo keeps the garden key under the pot.", ["garden"])

    page = ada.get("/ui/memories")
    assert page.status_code == 200
    text = page.text
    for seen in (
        "Lighthouse walk",
        "We walked to the lighthouse",
        "Ada prefers tea",
        "red scarf",
        "Knitted by Bo.",
        "Crystal one The lighthouse summer.",
        "#walks",
        "#tea",
    ):
        assert html.escape(seen, quote=False) in text or seen in text, seen
    for kind in (
        'data-kind="anchor"',
        'data-kind="fragment"',
        'data-kind="crystal"',
        'data-kind="inventory"',
    ):
        assert kind in text
    assert "garden key" not in text and "Bo&#39;s secret" not in text
    assert "**lighthouse**" not in text and "# Crystal one" not in text

    assert "garden key" in bo.get("/ui/memories").text
    assert "lighthouse" not in bo.get("/ui/memories").text

    only = ada.get("/ui/memories", params={"kind": "inventory"}).text
    assert "red scarf" in only and "Lighthouse walk" not in only
    tagged = ada.get("/ui/memories", params={"tag": "tea"}).text
    assert "Ada prefers tea" in tagged and "Lighthouse walk" not in tagged

    found = ada.get("/ui/memories", params={"q": "lighthouse dusk"}).text
    first = found.split('class="memory-card"', 2)[1]
    assert "We walked to the lighthouse" in first
    assert "under the pot" not in ada.get("/ui/memories", params={"q": "garden key pot"}).text


def test_bad_filters_are_a_clear_400_page(make_ui):  # noqa: F811
    ada = _signed_in(make_ui, "mem-bad")
    assert ada.get("/ui/memories", params={"kind": "nonsense"}).status_code == 422
    assert ada.get("/ui/memories", params={"since": "yesterday"}).status_code in (400, 422)
    assert ada.get("/ui/memories", params={"path": "../../etc/passwd"}).status_code in (
        400,
        404,
        422,
    )


def test_a_word_photo_opens_as_safe_markdown_and_is_edited_then_deleted(make_ui):  # noqa: F811
    ada, bo = _signed_in(make_ui, "mem-edit"), _signed_in(make_ui, "mem-other")
    made = _anchor(ada, "Hostile", HOSTILE, ["x"])
    path = made.get("path") or f"word_photos/{made['name']}"
    opened = ada.get("/ui/memories", params={"path": path})
    assert opened.status_code == 200
    body = opened.text.split('id="rendered"', 1)[1].split("</div>", 1)[0]
    assert "<strong>kept bold</strong>" in body and "<h1>Plan</h1>" in body
    assert "<script" not in body and "<img" not in body
    assert "javascript:" not in body.replace("[click](javascript:", "")
    assert 'href="javascript' not in body

    assert bo.get("/ui/memories", params={"path": path}).status_code == 404

    name = path.rsplit("/", 1)[-1]
    edited = ada.post(
        "/ui/memories/anchors/edit",
        {"name": name, "title": "Calm", "content": "Now a calm text.", "tags": "y"},
    )
    assert edited.status_code == 303
    after = ada.get(edited.headers["location"]).text
    assert "Word-photo rewritten." in after and "Now a calm text." in after

    refused = bo.post("/ui/memories/anchors/delete", {"name": name})
    assert refused.status_code == 404
    deleted = ada.post("/ui/memories/anchors/delete", {"name": name})
    assert deleted.status_code == 303
    assert "Now a calm text." not in ada.get("/ui/memories").text
    no_csrf = ada.post("/ui/memories/anchors/delete", {"name": name}, csrf=False)
    assert no_csrf.status_code == 403


def test_an_item_is_deleted_and_the_newest_crystal_taken_back(make_ui):  # noqa: F811
    ada = _signed_in(make_ui, "mem-items")
    ada.api.post("/v1/inventory", json={"name": "old lamp", "category": "things"})
    ada.api.post("/v1/crystals", json={"content": "first snapshot"})
    ada.api.post("/v1/crystals", json={"content": "second snapshot"})
    assert "old lamp" in ada.get("/ui/memories").text
    gone = ada.post("/ui/memories/inventory/delete", {"name": "old lamp", "category": "things"})
    assert gone.status_code == 303
    assert "old lamp" not in ada.get("/ui/memories").text
    back = ada.post("/ui/memories/crystals/delete-latest")
    assert back.status_code == 303
    page = ada.get("/ui/memories", params={"kind": "crystal"}).text
    assert "first snapshot" in page and "second snapshot" not in page


def test_the_shared_page_shows_members_counts_and_writers(make_ui, server):  # noqa: F811
    ada, bo = _signed_in(make_ui, "sh-ada"), _signed_in(make_ui, "sh-bo")
    eve = _signed_in(make_ui, "sh-eve")
    stores.create(server.db, "family", False)
    for who in ("sh-ada", "sh-bo"):
        stores.add_member(server.db, "family", who)
    for ui, text in (
        (ada, "Ada: the boat needs paint."),
        (bo, "Bo: <script>x</script> dinner at 7."),
        (ada, "Ada: keys are in the drawer."),
    ):
        added = ui.api.post("/v1/shared/family/add", json={"text": text})
        assert added.status_code == 201, added.text
    page = bo.get("/ui/shared")
    assert page.status_code == 200
    text = page.text
    assert "family" in text and "sh-ada, sh-bo" in text
    assert "<td>sh-ada</td><td>2</td>" in text and "<td>sh-bo</td><td>1</td>" in text
    assert "the boat needs paint" in text and "dinner at 7" in text
    assert "<script>x</script>" not in text
    lonely = eve.get("/ui/shared").text
    assert "family" not in lonely and "member of no shared store" in lonely
    assert eve.get("/ui/shared", params={"store": "family"}).status_code == 404


@pytest.mark.parametrize("size", [(390, 844), (1280, 800)], ids=["phone", "desktop"])
def test_both_pages_fit_a_phone_and_a_desktop(browser_context, make_ui, server, size):  # noqa: F811
    ada = _signed_in(make_ui, f"mem-look-{size[0]}")
    _anchor(
        ada,
        "A long title for a word-photo that wraps on a phone screen",
        "Text " * 200,
        ["one", "two", "three", "a-rather-long-tag-name"],
    )
    ada.api.post(
        "/v1/inventory", json={"name": "kettle", "category": "kitchen", "description": "whistles"}
    )
    stores.create(server.db, f"look{size[0]}", False)
    stores.add_member(server.db, f"look{size[0]}", ada.name)
    ada.api.post(f"/v1/shared/look{size[0]}/add", json={"text": "shared words " * 40})
    browser_context.clear_cookies()
    page = browser_context.new_page()
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(server.url + "/ui")
    page.get_by_label("Token").fill(ada.token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(server.url + "/ui/timeline")
    path = (
        "word_photos/"
        + ada.get("/ui/memories").text.split("path=word_photos%2F", 1)[1].split('"')[0]
    )
    for url in (
        "/ui/memories",
        "/ui/memories?q=text",
        "/ui/memories?path=" + path,
        "/ui/memories?edit=true&path=" + path,
        "/ui/shared",
    ):
        page.goto(server.url + url)
        assert layout_problems(page) == []
    # delete through the page, confirming as a person would
    page.goto(server.url + "/ui/memories?path=" + path)
    page.on("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="delete").click()
    page.wait_for_url("**/ui/memories?done=deleted")
    assert "Deleted." in page.content() and "A long title" not in page.content()
    page.close()
