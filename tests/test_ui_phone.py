"""Every page of the web face on a phone (390x844) and a wide screen (1280x800), in
Debian's Chromium: no sideways scroll, nothing interactive drawn over anything else, every
nav item visible and landing on its page. The pages are read from the app's routes
(tests/ui_checks.py), so a page added later is checked without a change here; the data
is seeded first so no page is empty. Also the rough edges of issue 28 a person on
either screen runs into: item text in a logged recall, a startup recall in layers, the
favicon, times with their zone."""

from __future__ import annotations

import httpx
import pytest

from engine.capture import entities
from engine.store import queue
from pps.web.memory import TABS
from tests.conftest import AppServer
from tests.test_ui_browser import browser_context  # noqa: F401 (a fixture)
from tests.ui_checks import SIZES, layout_problems, nav_problems, page_routes

# The queries that show a page's other views; a page not named here is visited bare.
VIEWS = {
    "/ui/around": ["?event={event}"],
    "/ui/recall": ["", "?log={log}", "?log={startup}"],
    "/ui/memory": [f"?tab={tab}" for tab, _ in TABS],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with AppServer(tmp_path_factory.mktemp("pps") / "data", recall_log=True) as app:
        yield app


@pytest.fixture(scope="module")
def seeded(server) -> dict:
    """An entity with something on every page: turns in two channels, recalls logged,
    word-photos, a fragment, a crystal, inventory in a space, a dead job."""
    token = entities.create(server.db, "lyra")
    api = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    turns = [
        {"channel": "terminal", "session_id": "morning", "author": who, "content": text}
        for who, text in [
            ("jeff", "good morning, the coffee is on and the kettle whistles"),
            ("lyra", "go put on that comfy robe, the blue one by the door"),
            ("jeff", "a very-long-word-" + "x" * 120 + " that no phone is wide enough for"),
        ]
        * 4
    ]
    turns.append({"channel": "discord", "author": "nexus", "content": "the garden needs water"})
    [first, *_] = api.post("/v1/events", json=turns).raise_for_status().json()["events"]
    for title, text in [
        ("The blue robe", "Soft and blue, by the door."),
        ("Morning coffee", "The kettle, the window, the first light."),
    ]:
        api.post("/v1/anchors", json={"title": title, "content": text, "tags": ["home"]})
    api.post("/v1/fragments", json={"text": "Jeff likes his coffee black.", "category": "work"})
    api.post("/v1/crystals", json={"content": "# Crystal one\n\nThe robe, the coffee."})
    api.post("/v1/spaces", json={"name": "kitchen", "description": "Where the kettle is."})
    api.post(
        "/v1/inventory",
        json={"name": "kettle", "category": "things", "description": "whistles", "space": "kitchen"},
    )
    api.post("/v1/recall", json={"context": "startup"}).raise_for_status()
    api.post("/v1/recall", json={"context": "the comfy robe"}).raise_for_status()
    logged = api.get("/v1/recall/log").raise_for_status().json()["entries"]
    by_context = {e["context"]: e["id"] for e in logged}
    with server.db.write() as conn:
        queue.enqueue(conn, "lyra", "ui-phone-check", "k1", {})
    policy = queue.Policy(max_attempts=1)
    job = queue.claim(server.db, "ui-phone-check", "test", policy)
    queue.fail(server.db, job, "test", RuntimeError("the model said no"), policy)
    api.close()
    return {
        "token": token,
        "event": first["id"],
        "log": by_context["the comfy robe"],
        "startup": by_context["startup"],
    }


def _urls(server, seeded) -> list[str]:
    urls = []
    for path in page_routes(server.app):
        for query in VIEWS.get(path, [""]):
            urls.append(server.url + path + query.format(**seeded))
    return urls


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s['width']}x{s['height']}")
def test_every_page_fits_the_screen_and_nothing_is_drawn_over_anything(
    browser_context,  # noqa: F811
    server,
    seeded,
    size,
):
    page = browser_context.new_page()
    page.set_viewport_size(size)
    page.goto(server.url + "/ui")  # the sign-in page, before signing in
    problems = layout_problems(page)
    page.get_by_label("Token").fill(seeded["token"])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/ui/timeline")
    urls = _urls(server, seeded)
    assert len(urls) >= 10, urls
    for url in urls:
        page.goto(url)
        page.wait_for_load_state("load")
        problems += layout_problems(page)
    problems += nav_problems(page, server.url + "/ui/timeline")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/ui")
    page.close()
    assert not problems, "\n".join(problems)
