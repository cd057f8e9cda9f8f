"""Every page of the web face on a phone (390x844, and the narrowest, 360 px) and a wide
screen (1280x800), in Debian's Chromium: no sideways scroll, nothing interactive drawn
over anything else, every nav item visible and landing on its page. The pages are read
from the app's routes (tests/ui_checks.py), so a page added later is checked without a
change here; the data is seeded first so no page is empty. Also the rough edges of issue
28 a person on either screen runs into: item text in a logged recall, a startup recall
folded by layer, times with their zone, the favicon, the workers' table, the audit's
pages, undo and panel, and the graph page saying that extraction waits for an LLM."""

from __future__ import annotations

import re

import httpx
import pytest

from engine.capture import entities
from engine.store import queue
from pps.web.memory import TABS
from tests.conftest import AppServer
from tests.test_ui_browser import browser_context, shots  # noqa: F401 (fixtures)
from tests.ui_checks import (
    SIZES,
    column_problems,
    layout_problems,
    nav_problems,
    page_routes,
    screenshot,
)

# The queries that show a page's other views; a page not named here is visited bare.
VIEWS = {
    "/ui/around": ["?event={event}"],
    "/ui/recall": ["", "?log={log}", "?log={startup}"],
    "/ui/memory": [f"?tab={tab}" for tab, _ in TABS],
}
# The views docs/ui.md shows at both sizes (PPS_UI_SCREENSHOTS=1 writes them to
# docs/images as ui-<name>-phone.png and ui-<name>-wide.png).
SHOWN = {  # and the sign-in page, before signing in: ui-sign-in-*.png
    "/ui/timeline": "timeline",
    "/ui/around?event={event}": "around",
    "/ui/recall?log={log}": "recall",
    "/ui/recall?log={startup}": "recall-startup",
    "/ui/queue": "queue",
    "/ui/audit": "audit",
    "/ui/graph": "graph",
    "/ui/memory?tab=anchors": "memory",
    "/ui/memory?tab=inventory": "memory-inventory",
    "/ui/memories": "memories",
    "/ui/shared": "shared",
    "/ui/clients": "clients",
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
    bearer = {"Authorization": f"Bearer {token}"}
    api = httpx.Client(base_url=server.url, headers=bearer, timeout=60)
    turns = [
        {"channel": "terminal", "session_id": "morning", "author": who, "content": text}
        for who, text in [
            ("jeff", "good morning, the coffee is on and the kettle whistles"),
            ("lyra", "go put on that comfy robe, the blue one by the door"),
            ("jeff", "a very-long-word-" + "x" * 120 + " that no phone is wide enough for"),
        ]
        * 12
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
        json={"name": "kettle", "category": "things", "space": "kitchen"},
    )
    api.post("/v1/recall", json={"context": "startup", "limit_per_layer": 50}).raise_for_status()
    for n in range(11):  # more than one page of the audit
        api.post("/v1/recall", json={"context": f"the kettle at dawn {n}"}).raise_for_status()
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


# The narrowest phone too (360 px), without screenshots.
NARROWEST = {"width": 360, "height": 740}


@pytest.mark.parametrize("size", [*SIZES, NARROWEST], ids=lambda s: f"{s['width']}x{s['height']}")
def test_every_page_fits_the_screen_and_nothing_is_drawn_over_anything(
    browser_context,  # noqa: F811
    server,
    seeded,
    size,
    shots,  # noqa: F811
):
    named = {server.url + view.format(**seeded): name for view, name in SHOWN.items()}
    suffix = {390: "phone", 1280: "wide"}.get(size["width"])
    page = browser_context.new_page()
    page.set_viewport_size(size)
    page.goto(server.url + "/ui")  # the sign-in page, before signing in
    problems = layout_problems(page)
    if suffix:
        screenshot(page, shots / f"ui-sign-in-{suffix}.png")
    page.get_by_label("Token").fill(seeded["token"])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/ui/timeline")
    urls = _urls(server, seeded)
    assert len(urls) >= 10, urls
    for url in urls:
        page.goto(url)
        page.wait_for_load_state("load")
        problems += layout_problems(page)
        if suffix and url in named:
            screenshot(page, shots / f"ui-{named[url]}-{suffix}.png")
    problems += nav_problems(page, server.url + "/ui/timeline")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/ui")
    page.close()
    assert not problems, "\n".join(problems)


def _signed_in(context, server, token: str):
    """A wide screen of the browser `context` signed in with `token`; signed out after."""
    page = context.new_page()
    page.set_viewport_size(SIZES[1])
    page.goto(server.url + "/ui")
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/ui/timeline")
    yield page
    page.goto(server.url + "/ui/timeline")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/ui")
    page.close()


@pytest.fixture
def lyra_page(browser_context, server, seeded):  # noqa: F811
    """Signed in as the seeded entity."""
    yield from _signed_in(browser_context, server, seeded["token"])


def test_a_logged_recall_shows_its_items_text_and_a_startup_recall_folds_by_layer(
    lyra_page, server, seeded
):
    from playwright.sync_api import expect

    page = lyra_page
    page.goto(f"{server.url}/ui/recall?log={seeded['log']}")
    expect(page.locator("#logged-items")).to_contain_text("comfy robe")

    page.goto(f"{server.url}/ui/recall?log={seeded['startup']}")
    layers = page.locator("#logged-items details[data-layer]")
    expect(layers.first).to_be_visible()
    assert layers.count() >= 2, page.locator("#logged").inner_text()
    rows = page.locator("#logged-items tbody tr")
    assert rows.count() > 20  # a long recall, so folded
    expect(page.locator("#logged-items tbody tr:visible")).to_have_count(0)
    first = layers.first
    first.locator("summary").click()
    expect(first.locator("tbody tr").first).to_be_visible()


def test_every_column_of_the_recall_page_is_readable_on_a_phone_and_a_wide_screen(
    lyra_page, server, seeded
):
    """On a 390 px phone (before) the kept table's text column was 44 px wide (a syllable
    a line) and its source column reached 571 px. Each of the page's tables (the layers,
    what was kept and dropped, a logged recall's items, folded or not) is measured column
    by column."""
    from playwright.sync_api import expect

    page = lyra_page
    problems = []
    for size in SIZES:
        page.set_viewport_size(size)
        page.goto(server.url + "/ui/recall")
        page.get_by_label("Context", exact=True).fill("the comfy robe and the very long word")
        page.get_by_role("button", name="Recall").click()
        expect(page.locator("#kept tbody tr").first).to_be_visible()
        problems += column_problems(page)
        page.goto(f"{server.url}/ui/recall?log={seeded['log']}")
        expect(page.locator("#logged-items tbody tr").first).to_be_visible()
        problems += column_problems(page)
        page.goto(f"{server.url}/ui/recall?log={seeded['startup']}")
        for fold in page.locator("#logged-items details").all():
            fold.locator("summary").click()
            expect(fold.locator("tbody tr").first).to_be_visible()
        problems += column_problems(page) + layout_problems(page)
    assert not problems, "\n".join(problems)


def test_times_carry_their_zone_and_the_favicon_is_an_icon(lyra_page, server):
    from playwright.sync_api import expect

    page = lyra_page
    expect(page.locator("#events time").first).to_have_text(re.compile(r"\d\d:\d\d:\d\d UTC$"))
    page.goto(server.url + "/ui/recall")
    expect(page.locator("#log time").first).to_have_text(re.compile(r"\d\d:\d\d UTC$"))
    icon = httpx.get(server.url + "/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert page.locator('link[rel="icon"]').get_attribute("href") == "/ui/static/favicon.svg"
    assert httpx.get(server.url + "/ui/static/favicon.svg").text == icon.text


def test_the_queue_shows_the_workers_kinds_as_a_table(lyra_page, server):
    from playwright.sync_api import expect

    page = lyra_page
    page.goto(server.url + "/ui/queue")
    kinds = page.locator('tr[data-component="workers"] table[data-detail="kinds"]')
    expect(kinds.locator("tr[data-kind]").first).to_be_visible()
    expect(kinds.locator("thead")).to_contain_text("threads")
    assert "{" not in page.locator("#health").inner_text()  # no JSON left


def test_the_audit_pages_its_draw_keeps_precision_in_view_and_undoes_a_judgment(lyra_page, server):
    from playwright.sync_api import expect

    page = lyra_page
    page.goto(server.url + "/ui/audit?seed=7&n=50")
    recalls = page.locator("article.judge-recall")
    expect(recalls.first).to_be_visible()
    assert recalls.count() == 10
    page.get_by_role("link", name="next →").first.click()
    expect(page).to_have_url(re.compile(r"page=2"))
    expect(recalls.first).to_be_visible()
    assert 1 <= recalls.count() <= 10
    page.goto(server.url + "/ui/audit?seed=7&n=50")
    items = page.locator("li.judge-item")
    expect(items.first).to_have_class(re.compile(r"\bcurrent\b"))
    before = page.locator("#p-all").inner_text()
    page.keyboard.press("y")
    expect(items.first).to_have_class(re.compile(r"\byes\b"))
    expect(page.locator("#p-counts")).to_contain_text("relevant")
    page.keyboard.press("k")  # back to the first item
    page.keyboard.press("u")
    expect(items.first).not_to_have_class(re.compile(r"\byes\b"))
    expect(page.locator("#p-all")).to_have_text(before)
    page.reload()  # stored: the judgment is gone
    expect(page.locator("li.judge-item.yes")).to_have_count(0)
    # The undo button of a judged item, after a reload.
    page.keyboard.press("n")
    expect(items.first).to_have_class(re.compile(r"\bno\b"))
    page.reload()
    items.first.get_by_role("button", name="undo (u)").click()
    expect(page.locator("li.judge-item.no")).to_have_count(0)

    # Scrolled to the bottom, the precision figure is still on the screen, on a wide
    # screen and on a phone, and no judgment button is under the panel there.
    for size in SIZES:
        page.set_viewport_size(size)
        page.goto(server.url + "/ui/audit?seed=7&n=50")
        page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
        page.wait_for_function("() => window.scrollY > 200")
        figure = page.locator("#p-all").bounding_box()
        assert figure is not None and 0 <= figure["y"] < size["height"], (size, figure)
        if size["width"] < 760:  # a third of the phone's screen, drawn over the items
            panel = page.locator("aside.precision").bounding_box()
            assert panel is not None and panel["height"] <= size["height"] / 2, panel
            under = page.evaluate(
                """([x, y]) => document.elementFromPoint(x, y).closest("aside.precision")
                    !== null""",
                [panel["x"] + 5, panel["y"] + panel["height"] - 5],
            )
            assert under


def test_the_audit_form_without_the_script_undoes_a_judgment(server, seeded):
    from tests.test_ui import UI

    ui = UI(server, seeded["token"])
    assert ui.sign_in().status_code == 303
    judged = {"log_id": str(seeded["log"]), "rank": "1", "seed": "7", "n": "50", "page": "1"}
    assert ui.post("/ui/audit/judge", {**judged, "relevant": "1"}).status_code == 303
    counts = ui.get("/ui/api/audit/precision").json()
    assert counts["judged"] >= 1
    back = ui.post("/ui/audit/judge", {**judged, "relevant": "undo"})
    assert back.status_code == 303 and "page=1" in back.headers["location"]
    assert ui.get("/ui/api/audit/precision").json()["judged"] == counts["judged"] - 1
    bad = ui.post("/ui/audit/judge", {**judged, "relevant": "maybe"})
    assert bad.status_code == 422
    assert ui.get("/ui/api/audit/precision").json()["judged"] == counts["judged"] - 1
    ui.http.close()


@pytest.fixture(scope="module")
def crowded(server) -> str:
    """An entity as a companion's first weeks leave it: 35 sessions of three
    turns in two channels, and 10 startup recalls logged, each of about 110 items. Its
    token."""
    token = entities.create(server.db, "crowded")
    bearer = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.url, headers=bearer, timeout=120) as api:
        turns = [
            {
                "channel": ("terminal", "discord")[n % 2],
                "session_id": f"0b6c{n:04d}-8d2a-4f11-9c3e-51a7e1c0aa{n:02d}",
                "author": ("jeff", "lyra", "jeff")[i],
                "content": f"session {n}, turn {i}: the kettle, the robe and the garden",
            }
            for n in range(35)
            for i in range(3)
        ]
        api.post("/v1/events", json=turns).raise_for_status()
        for _ in range(10):
            ask = {"context": "startup", "limit_per_layer": 50}
            api.post("/v1/recall", json=ask).raise_for_status()
    return token


@pytest.fixture
def crowded_page(browser_context, server, crowded):  # noqa: F811
    """Signed in as the crowded entity."""
    yield from _signed_in(browser_context, server, crowded)


def test_the_audit_of_ten_startup_recalls_is_a_few_screens_and_its_folds_are_judged(
    crowded_page,
    server,
    shots,  # noqa: F811
):
    """Before: 10 startup recalls of about 110 items made an audit page 171,440 px tall
    on a phone. A recall of more than 20 items is folded by layer; an opened layer's items
    are judged from the keyboard and by their buttons."""
    from playwright.sync_api import expect

    page = crowded_page
    problems = []
    for size in SIZES:
        page.set_viewport_size(size)
        page.goto(server.url + "/ui/audit?seed=3&n=10")
        recalls = page.locator("article.judge-recall")
        expect(recalls.first).to_be_visible()
        assert recalls.count() == 10
        assert page.locator("li.judge-item").count() > 10 * 100  # all there, folded
        tall = page.evaluate("() => document.documentElement.scrollHeight")
        assert tall < 10 * size["height"], f"{tall} px at {size}"
        problems += layout_problems(page)
        suffix = "phone" if size["width"] < 760 else "wide"
        screenshot(page, shots / f"ui-audit-startup-{suffix}.png")
    fold = page.locator("article.judge-recall details.fold").first
    expect(fold.locator("summary")).to_contain_text(re.compile(r"\d+ items · best #\d+ · 0 judged"))
    items = fold.locator("li.judge-item")
    before = page.locator("#p-counts").inner_text()
    page.keyboard.press("y")  # nothing is current while every item is folded
    expect(page.locator("li.judge-item.current")).to_have_count(0)
    fold.locator("summary").click()
    expect(items.first).to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("y")
    expect(items.first).to_have_class(re.compile(r"\byes\b"))
    expect(page.locator("#p-counts")).not_to_have_text(before)
    expect(items.nth(1)).to_have_class(re.compile(r"\bcurrent\b"))
    items.nth(1).get_by_role("button", name="not (n)").click()
    expect(items.nth(1)).to_have_class(re.compile(r"\bno\b"))
    page.reload()  # stored, and the fold says so
    expect(fold.locator("summary")).to_contain_text("2 judged")
    expect(page.locator("li.judge-item.yes")).to_have_count(1)
    assert not problems, "\n".join(problems)


def test_the_timelines_first_screen_shows_events_and_sessions_by_time_and_size(
    crowded_page, server
):
    """Before: 30 bare session ids filled a phone's first screen (its first event began
    at 1,282 px). The first 844 px now show events; each session is named by its last
    turn's time and its count, the latest few shown and the rest folded."""
    from playwright.sync_api import expect

    page = crowded_page
    problems = []
    for size in SIZES:
        page.set_viewport_size(size)
        page.goto(server.url + "/ui/timeline")
        first = page.locator("#events li.event").first
        expect(first).to_be_visible()
        box = first.bounding_box()
        assert box is not None and box["y"] + box["height"] <= size["height"], (size, box)
        problems += layout_problems(page)
    sessions = page.locator("#sessions li")
    expect(sessions.first).to_contain_text(re.compile(r"UTC\s+3 events · 0b6c"))
    more = page.locator("#sessions details")
    expect(more.locator("summary")).to_contain_text(re.compile(r"\d+ more"))
    assert more.locator("li").count() > 0 and not more.locator("li").first.is_visible()
    more.locator("summary").click()
    expect(more.locator("li").first).to_be_visible()
    assert not problems, "\n".join(problems)


@pytest.mark.graph
def test_the_graph_page_says_extraction_waits_for_an_llm_on_either_screen(
    browser_context,  # noqa: F811
    tmp_path,
):
    from playwright.sync_api import expect

    from tests.test_graph_http import FAST

    with AppServer(tmp_path / "data", **FAST) as app:  # a graph, and no LLM configured
        token = entities.create(app.db, "lyra")
        bearer = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=app.url, headers=bearer, timeout=30) as api:
            turn = {"channel": "terminal", "author": "jeff", "content": "I moved to Denver."}
            api.post("/v1/events", json=turn).raise_for_status()
        page = browser_context.new_page()
        page.goto(app.url + "/ui")
        page.get_by_label("Token").fill(token)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/ui/timeline")
        problems = []
        for size in SIZES:
            page.set_viewport_size(size)
            page.goto(app.url + "/ui/graph")
            expect(page.locator("#graph-waiting")).to_contain_text("LLM_PROVIDER=none")
            problems += layout_problems(page)
        page.locator("#graph-waiting").get_by_role("link", name="queue page").click()
        expect(page).to_have_url(app.url + "/ui/queue")
        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url("**/ui")
        page.close()
    assert not problems, "\n".join(problems)


def test_another_entity_cannot_undo_a_judgment(server, seeded):
    from tests.test_ui import UI

    lyra = UI(server, seeded["token"])
    nexus = UI(server, entities.create(server.db, "nexus-undo"))
    assert lyra.sign_in().status_code == 303 and nexus.sign_in().status_code == 303
    judged = {"log_id": str(seeded["log"]), "rank": "1"}
    assert lyra.post("/ui/audit/judge", {**judged, "relevant": "1"}).status_code == 303
    counts = lyra.get("/ui/api/audit/precision").json()
    undo = {"log_id": seeded["log"], "rank": 1}
    refused = nexus.http.post("/ui/api/audit/undo", json=undo, headers={"X-CSRF-Token": nexus.csrf})
    assert refused.status_code == 404, refused.text
    assert nexus.post("/ui/audit/judge", {**judged, "relevant": "undo"}).status_code == 404
    assert lyra.get("/ui/api/audit/precision").json() == counts
    done = lyra.http.post("/ui/api/audit/undo", json=undo, headers={"X-CSRF-Token": lyra.csrf})
    assert done.status_code == 200 and done.json()["undone"] is True
    assert done.json()["precision"]["judged"] == counts["judged"] - 1
    lyra.http.close()
    nexus.http.close()
