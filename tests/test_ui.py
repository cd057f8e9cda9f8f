"""The web face (/ui) over real HTTP, as a browser talks to it: sign-in and its cookie,
sign-out on the server, CSRF and Origin checks on every write, the token kept out of
every answer, URL and log, and one entity's session seeing nothing of another's.
tests/test_ui_browser.py drives the same pages in a real Chromium."""

from __future__ import annotations

import logging
import re
from urllib.parse import urlencode

import httpx
import pytest

from engine.capture import entities
from engine.store import queue
from pps.web.sessions import SignIns
from tests.conftest import TLS, AppServer

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


class UI:
    """A browser's view of /ui: one cookie jar, this site's Origin on every request."""

    def __init__(self, server: AppServer, token: str):
        self.server, self.token = server, token
        self.http = httpx.Client(
            base_url=server.url, headers={"Origin": server.url}, timeout=30, verify=TLS
        )
        self.csrf: str | None = None

    def sign_in(self, token: str | None = None) -> httpx.Response:
        form = self.http.get("/ui")
        answer = self.http.post(
            "/ui/login", data={"token": token or self.token, "csrf": _csrf(form)}
        )
        if answer.status_code == 303:
            self.csrf = _csrf(self.http.get("/ui/timeline"))
        return answer

    def get(self, path: str, **kw) -> httpx.Response:
        return self.http.get(path, **kw)

    def post(self, path: str, data: dict | None = None, csrf: bool = True, **kw):
        data = dict(data or {})
        if csrf:
            data["csrf"] = self.csrf
        return self.http.post(path, data=data, **kw)


def _csrf(page: httpx.Response) -> str:
    found = CSRF.search(page.text)
    assert found, f"no CSRF field on {page.url}: {page.text[:500]}"
    return found.group(1)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with AppServer(tmp_path_factory.mktemp("pps") / "data", recall_log=True) as app:
        yield app


@pytest.fixture
def make_ui(server):
    made = []

    def make(name: str) -> UI:
        ui = UI(server, entities.create(server.db, name))
        ui.name = name
        ui.api = httpx.Client(
            base_url=server.url,
            headers={"Authorization": f"Bearer {ui.token}"},
            timeout=30,
            verify=TLS,
        )
        made.append(ui)
        return ui

    yield make
    for ui in made:
        ui.http.close()
        ui.api.close()


_n = iter(range(10_000))


@pytest.fixture
def lyra(make_ui) -> UI:
    ui = make_ui(f"lyra-{next(_n)}")
    assert ui.sign_in().status_code == 303
    return ui


def post_events(ui: UI, *contents: str, channel: str = "terminal", session: str = "s1"):
    answer = ui.api.post(
        "/v1/events",
        json=[
            {"channel": channel, "session_id": session, "author": "jeff", "content": text}
            for text in contents
        ],
    )
    assert answer.status_code == 200, answer.text
    return [e["id"] for e in answer.json()["events"]]


def dead_job(server: AppServer, entity: str, key: str) -> int:
    """A job of a kind no worker serves (one kind a job), claimed once and failed: dead."""
    kind = f"ui-check-{key}"
    with server.db.write() as conn:
        queue.enqueue(conn, entity, kind, key, {})
    policy = queue.Policy(max_attempts=1)
    job = queue.claim(server.db, kind, "test", policy)
    assert job is not None and job.key == key
    assert queue.fail(server.db, job, "test", RuntimeError("the model said no"), policy) == "dead"
    return job.id


# --- signing in and out ---


def test_the_sign_in_page_then_the_timeline(make_ui):
    ui = make_ui(f"lyra-{next(_n)}")
    page = ui.get("/ui")
    assert page.status_code == 200 and "Sign in" in page.text
    assert ui.get("/ui/timeline").headers["location"] == "/ui"
    signed = ui.sign_in()
    assert signed.status_code == 303 and signed.headers["location"] == "/ui/timeline"
    assert ui.get("/ui").headers["location"] == "/ui/timeline"
    timeline = ui.get("/ui/timeline")
    assert timeline.status_code == 200 and f'signed in as <strong id="entity">{ui.name}' in (
        timeline.text
    )


def test_the_session_cookie_is_http_only_strict_and_scoped_to_ui(make_ui):
    ui = make_ui(f"lyra-{next(_n)}")
    signed = ui.sign_in()
    cookie = next(c for c in signed.headers.get_list("set-cookie") if c.startswith("pps_ui="))
    flags = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/ui"} <= flags, cookie
    assert not any(flag.startswith(("max-age", "expires")) for flag in flags), cookie
    session_id = cookie.split(";")[0].removeprefix("pps_ui=")
    assert len(session_id) >= 40 and ui.token not in cookie


class Clock:
    """The sign-in throttle's clock (time.monotonic's kind), moved only by the test."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def sign_in_clock(server):
    """A fresh sign-in throttle on a clock the test moves; the server's own is put back
    after, so a wrong token here slows no other test's sign-in."""
    clock, own = Clock(), server.app.state.ui_sign_ins
    server.app.state.ui_sign_ins = SignIns(clock)
    yield clock
    server.app.state.ui_sign_ins = own


def test_a_wrong_token_is_refused_without_echoing_it(make_ui, sign_in_clock):
    ui = make_ui(f"lyra-{next(_n)}")
    wrong = "pps_" + "x" * 40
    answer = ui.sign_in(token=wrong)
    assert answer.status_code == 401 and "Unknown or revoked token" in answer.text
    assert wrong not in answer.text and "pps_ui=" not in answer.headers.get("set-cookie", "")
    assert ui.get("/ui/timeline").headers["location"] == "/ui"


def test_wrong_tokens_slow_the_next_sign_in_down_doubling(make_ui, sign_in_clock, caplog):
    caplog.set_level(logging.INFO, logger="pps.web")
    ui = make_ui(f"lyra-{next(_n)}")
    wrong = "pps_" + "y" * 40
    assert ui.sign_in(token=wrong).status_code == 401
    for expected in (1, 2, 4, 8):
        # Inside the window even the right token is not looked at: 429, nothing slept.
        held = ui.sign_in()
        assert held.status_code == 429 and held.headers["Retry-After"] == str(expected)
        assert f"try again in {expected} s" in held.text and "pps_ui=" not in held.headers.get(
            "set-cookie", ""
        )
        sign_in_clock.advance(expected - 0.5)
        again = ui.sign_in()  # a try in the window neither counts nor moves it
        assert again.status_code == 429 and again.headers["Retry-After"] == "1"
        sign_in_clock.advance(0.5)
        assert ui.sign_in(token=wrong).status_code == 401
    refused = [r.getMessage() for r in caplog.records if "was refused" in r.getMessage()]
    assert len(refused) == 5 and "from 127.0.0.1" in refused[-1]
    assert "5 wrong in a row" in refused[-1] and "in 16 s" in refused[-1]
    assert wrong not in caplog.text
    sign_in_clock.advance(16)
    assert ui.sign_in().status_code == 303  # the owner's token, once the window is over
    # A success forgets the failures: the next wrong token waits 1 s again.
    other = make_ui(f"lyra-{next(_n)}")
    assert other.sign_in(token=wrong).status_code == 401
    assert other.sign_in().headers["Retry-After"] == "1"


def test_the_wait_is_capped_and_forgotten(make_ui, sign_in_clock):
    """Tokens are long, so the throttle never locks anyone out: at most a minute after
    the last wrong token, and a quarter of an hour later it is forgotten."""
    ui = make_ui(f"lyra-{next(_n)}")
    wrong = "pps_" + "z" * 40
    for _ in range(12):
        assert ui.sign_in(token=wrong).status_code == 401
        sign_in_clock.advance(int(ui.sign_in().headers["Retry-After"]))
    assert ui.sign_in(token=wrong).status_code == 401
    assert ui.sign_in().headers["Retry-After"] == "60"
    sign_in_clock.advance(16 * 60)
    assert ui.sign_in(token=wrong).status_code == 401
    assert ui.sign_in().headers["Retry-After"] == "1"


def test_signing_out_ends_the_session_on_the_server(lyra, server):
    session_id = lyra.http.cookies["pps_ui"]
    assert lyra.post("/ui/logout").headers["location"] == "/ui"
    assert lyra.get("/ui/timeline").headers["location"] == "/ui"
    # The old cookie, kept and sent again (copied out of the browser), opens nothing.
    replay = httpx.Client(base_url=server.url, cookies={"pps_ui": session_id})
    for path in ("/ui/timeline", "/ui/recall", "/ui/queue"):
        assert replay.get(path).headers["location"] == "/ui"
    refused = replay.get("/ui/api/events")
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"


def test_the_token_is_in_no_page_url_header_or_log(make_ui, server, caplog):
    caplog.set_level(logging.DEBUG)
    ui = make_ui(f"lyra-{next(_n)}")
    seen: list[httpx.Response] = []
    ui.http.event_hooks["response"] = [lambda r: seen.append(r)]
    ui.sign_in()
    post_events(ui, "the comfy robe", "the blue kettle")
    dead_job(server, ui.name, "token-check")
    for path in (
        "/ui",
        "/ui/timeline",
        "/ui/timeline?q=robe",
        "/ui/timeline?q=robe&mode=hybrid",
        "/ui/around?event=1",
        "/ui/api/events",
        "/ui/recall",
        "/ui/queue",
        "/ui/audit",
        "/ui/graph",
        "/ui/memory",
        "/ui/static/ui.js",
    ):
        ui.get(path)
    ui.post("/ui/recall", {"context": "the robe"})
    ui.post("/ui/queue/retry", {})
    ui.post("/ui/logout")
    assert len(seen) > 15
    for answer in seen:
        assert ui.token not in answer.read().decode(), answer.url
        assert ui.token not in str(answer.url) and ui.token not in str(answer.headers)
    assert ui.token not in caplog.text


# --- writes need the session's CSRF token and this site's Origin ---


def test_a_write_without_the_csrf_token_is_refused(lyra, server):
    job = dead_job(server, lyra.name, "csrf-check")
    for data in ({"job": str(job)}, {"job": str(job), "csrf": "not-the-token"}):
        refused = lyra.http.post("/ui/queue/retry", data=data)
        assert refused.status_code == 403 and "CSRF" in refused.text
        assert refused.headers["content-type"].startswith("text/html")
    assert [d.id for d in queue.status(server.db, lyra.name).dead] == [job]
    # Signing out is a write too: without the token the session goes on.
    assert lyra.http.post("/ui/logout").status_code == 403
    assert lyra.get("/ui/timeline").status_code == 200


def test_signing_in_needs_the_sign_in_forms_csrf_token(make_ui):
    ui = make_ui(f"lyra-{next(_n)}")
    ui.get("/ui")
    refused = ui.http.post("/ui/login", data={"token": ui.token})
    assert refused.status_code == 403 and "pps_ui=" not in refused.headers.get("set-cookie", "")
    other = httpx.Client(base_url=ui.server.url, headers={"Origin": ui.server.url})
    form = ui.get("/ui")  # a form token of this browser's, posted by another without its cookie
    assert other.post("/ui/login", data={"token": ui.token, "csrf": _csrf(form)}).status_code == (
        403
    )


def test_another_sites_origin_or_host_is_refused(lyra, server):
    job = dead_job(server, lyra.name, "origin-check")
    data = {"job": str(job), "csrf": lyra.csrf}
    evil = lyra.http.post("/ui/queue/retry", data=data, headers={"Origin": "http://evil.test"})
    assert evil.status_code == 403 and "another site" in evil.text
    bare = httpx.Client(base_url=server.url, cookies=lyra.http.cookies)
    assert bare.post("/ui/queue/retry", data=data).status_code == 403  # no Origin at all
    rebound = lyra.get("/ui/timeline", headers={"Host": f"evil.test:{server.port}"})
    assert rebound.status_code == 421
    api = lyra.get("/ui/api/events", headers={"Host": "evil.test"})
    assert api.status_code == 421 and api.json()["error"] == "misdirected_request"
    for host in ("[::1]evil", "[::1]evil.test:80", "127.0.0.1.evil.test", "127.0.0.1:80:80"):
        disguised = lyra.get("/ui/api/events", headers={"Host": host})
        assert disguised.status_code == 421, host
    same = lyra.get("/ui/api/events", headers={"Host": f"127.0.0.1:{server.port}"})
    assert same.status_code == 200
    assert [d.id for d in queue.status(server.db, lyra.name).dead] == [job]


# --- the pages ---


def test_the_timeline_shows_events_filters_and_searches(lyra):
    post_events(lyra, "good morning from the terminal", "the comfy robe again")
    post_events(lyra, "a discord hello", channel="discord", session="d1")
    page = lyra.get("/ui/timeline").text
    assert "good morning from the terminal" in page and "a discord hello" in page
    discord = lyra.get("/ui/timeline", params={"channel": "discord"}).text
    assert "a discord hello" in discord and "comfy robe" not in discord
    session = lyra.get("/ui/timeline", params={"session_id": "s1"}).text
    assert "comfy robe" in session and "discord hello" not in session
    found = lyra.get("/ui/timeline", params={"q": "robe"}).text
    assert "1 found" in found and "comfy robe" in found and "good morning" not in found
    newest = lyra.get("/ui/api/events", params={"channel": "terminal"}).json()["events"]
    assert [e["content"] for e in newest] == [
        "the comfy robe again",
        "good morning from the terminal",
    ]


def test_the_turns_around_an_event(lyra):
    ids = post_events(lyra, *(f"turn number {i}" for i in range(30)))
    post_events(lyra, "elsewhere entirely", channel="discord")
    around = lyra.get("/ui/around", params={"event": ids[15]}).text
    assert "turn number 15" in around and "turn number 6" in around
    assert "turn number 5<" not in around and "turn number 26<" not in around
    assert "elsewhere entirely" not in around
    everywhere = lyra.get("/ui/around", params={"event": ids[29], "everywhere": "true"}).text
    assert "elsewhere entirely" in everywhere
    missing = lyra.get("/ui/around", params={"event": 10**9})
    assert missing.status_code == 404 and "no event" in missing.text


def test_a_recall_beside_its_trace_and_the_log(lyra):
    post_events(lyra, "the comfy robe is blue", "the kettle whistles at dawn")
    page = lyra.post("/ui/recall", {"context": "the comfy robe", "max_tokens": "100"})
    assert page.status_code == 200, page.text
    assert re.search(r'data-layer="turns">\s*<td>turns</td>\s*<td class="status">ok', page.text)
    assert re.search(r"<meter min=\"0\" max=\"\d+", page.text)  # latency against budget
    assert "the comfy robe is blue" in page.text and "Dropped by fusion" in page.text
    log = lyra.get("/ui/recall").text
    entry = re.search(r'href="/ui/recall\?log=(\d+)">\s*<time>[^<]*</time> the comfy robe', log)
    assert entry, log
    logged = lyra.get("/ui/recall", params={"log": entry.group(1)})
    assert f"Logged recall {entry.group(1)}" in logged.text and "turns" in logged.text
    filtered = lyra.get("/ui/recall", params={"contains": "KETTLE"}).text
    assert "the comfy robe" not in filtered.split('id="log"')[1]


def test_a_recall_without_a_context_says_so(lyra):
    page = lyra.post("/ui/recall", {"context": ""})
    assert page.status_code == 422 and "context" in page.text


def test_the_queue_shows_dead_jobs_and_retries_one(lyra, server):
    job = dead_job(server, lyra.name, "retry-me")
    page = lyra.get("/ui/queue").text
    assert f'data-job="{job}"' in page and "RuntimeError: the model said no" in page
    assert 'data-component="database"' in page and "LLM budget today" in page
    retried = lyra.post("/ui/queue/retry", {"job": str(job)})
    assert retried.headers["location"].startswith("/ui/queue")
    assert queue.status(server.db, lyra.name).dead == []
    assert queue.status(server.db, lyra.name).counts["pending"] == 1
    assert lyra.post("/ui/queue/retry", {"job": str(job)}).status_code == 404  # not dead now


def logged_recall(ui: UI, context: str) -> dict:
    """A recall over REST (the recall log is on): its log entry."""
    assert ui.api.post("/v1/recall", json={"context": context}).status_code == 200
    entries = ui.api.get("/v1/recall/log", params={"contains": context}).json()["entries"]
    return entries[0]


def judge(ui: UI, log_id: int, rank: int, relevant: bool, k: int = 5) -> httpx.Response:
    return ui.http.post(
        f"/ui/api/audit/judgments?k={k}",
        json={"log_id": log_id, "rank": rank, "relevant": relevant},
        headers={"X-CSRF-Token": ui.csrf},
    )


def test_the_audit_draws_logged_recalls_and_judges_their_items(lyra):
    post_events(lyra, "the comfy robe is blue", "the comfy robe hangs by the door")
    entry = logged_recall(lyra, "the comfy robe")
    assert len(entry["items"]) >= 2 and entry["items"][0]["text"]  # the log keeps texts now
    drawn = lyra.get("/ui/audit")
    assert drawn.status_code == 303 and re.match(
        r"/ui/audit\?seed=\d+&n=50", drawn.headers["location"]
    )
    page = lyra.get(drawn.headers["location"])
    assert page.status_code == 200 and f'id="r{entry["id"]}-1"' in page.text
    assert "the comfy robe" in page.text and "Nothing judged yet" in page.text
    assert lyra.get(drawn.headers["location"]).text.count("judge-item") == page.text.count(
        "judge-item"
    )  # the seed draws the same recalls

    first = judge(lyra, entry["id"], 1, True)
    assert first.status_code == 200, first.text
    assert first.json()["judgment"]["judged_by"] == "ui"
    assert first.json()["precision"]["precision"] == 1.0
    second = judge(lyra, entry["id"], 2, False).json()["precision"]
    assert second["precision"] == 0.5 and second["judged"] == 2
    assert {layer["layer"] for layer in second["layers"]} <= {"turns", "recent", "anchors"}
    assert len(second["weeks"]) == 1 and second["weeks"][0]["judged"] == 2
    again = judge(lyra, entry["id"], 2, True).json()["precision"]  # judging again replaces
    assert again["precision"] == 1.0 and again["judged"] == 2
    at_one = lyra.get("/ui/api/audit/precision", params={"k": 1}).json()
    assert at_one["k"] == 1 and at_one["judged"] == 1

    # Without the script: the form posts, then the same draw with the verdict shown.
    back = lyra.post(
        "/ui/audit/judge", {"log_id": entry["id"], "rank": 1, "relevant": "0", "seed": 7}
    )
    assert back.status_code == 303 and back.headers["location"].startswith("/ui/audit?seed=7")
    page = lyra.get(back.headers["location"]).text
    assert re.search(rf'class="judge-item no"\s+id="r{entry["id"]}-1"', page)
    assert 'precision@5 <strong id="p-all">50%' in page

    # REST answers the same, for the same entity.
    rest = lyra.api.get("/v1/audit/precision").json()
    assert rest["precision"] == 0.5 and rest["judged"] == 2
    by_rest = lyra.api.post(
        "/v1/audit/judgments", json={"log_id": entry["id"], "rank": 1, "relevant": True}
    )
    assert by_rest.status_code == 200 and by_rest.json()["judged_by"] == "rest"
    drawn = lyra.api.get("/v1/audit/draw", params={"n": 5, "seed": 1}).json()
    assert [r["id"] for r in drawn["recalls"]] == [entry["id"]]
    assert drawn["recalls"][0]["items"][0]["relevant"] is True
    for rank in range(3, len(entry["items"]) + 1):
        lyra.api.post(
            "/v1/audit/judgments", json={"log_id": entry["id"], "rank": rank, "relevant": False}
        )
    assert lyra.api.get("/v1/audit/draw", params={"unjudged": "true"}).json()["recalls"] == []


def test_an_audit_judgment_needs_the_csrf_token_and_a_real_item(lyra):
    post_events(lyra, "the kettle whistles at dawn")
    entry = logged_recall(lyra, "the kettle whistles")
    body = {"log_id": entry["id"], "rank": 1, "relevant": True}
    refused = lyra.http.post("/ui/api/audit/judgments", json=body)
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
    wrong = lyra.http.post("/ui/api/audit/judgments", json=body, headers={"X-CSRF-Token": "x"})
    assert wrong.status_code == 403
    form = lyra.http.post("/ui/audit/judge", data={**body, "relevant": "1"})
    assert form.status_code == 403 and "CSRF" in form.text
    assert lyra.api.get("/v1/audit/precision").json()["judged"] == 0
    # A rank past the recall's items names an item that is not there: 404, as docs/rest.md
    # says of what is stored (the body itself is valid), on REST and the web face alike.
    past = judge(lyra, entry["id"], 99, True)
    assert past.status_code == 404 and past.json()["problems"][0]["field"] == "rank"
    rest = lyra.api.post(
        "/v1/audit/judgments", json={"log_id": entry["id"], "rank": 99, "relevant": True}
    )
    assert rest.status_code == 404 and rest.json()["problems"][0]["field"] == "rank"
    assert "surfaced" in rest.json()["problems"][0]["problem"]
    assert judge(lyra, 10**12, 1, True).status_code == 404
    assert lyra.post("/ui/audit/judge", {**body, "relevant": "maybe"}).status_code == 422


def test_memory_word_photos_are_written_then_edited_and_deleted_on_memories(lyra):
    saved = lyra.post(
        "/ui/memory/anchors",
        {"title": "The blue robe", "content": "Soft, blue, by the door.", "tags": "robe, home"},
    )
    assert saved.status_code == 303 and "done=anchor-saved" in saved.headers["location"]
    [anchor] = lyra.api.get("/v1/anchors").json()["anchors"]
    assert anchor["title"] == "The blue robe" and anchor["tags"] == ["robe", "home"]
    page = lyra.get("/ui/memory").text
    assert f'data-anchor="{anchor["name"]}"' in page and "The blue robe" in page
    opens = "/ui/memories?" + urlencode({"path": anchor["path"]})
    assert f'href="{opens}"' in page.replace("&amp;", "&")
    edit = lyra.get("/ui/memories", params={"path": anchor["path"], "edit": "true"}).text
    assert "Soft, blue, by the door." in edit and 'id="anchor-edit"' in edit
    edited = lyra.post(
        "/ui/memories/anchors/edit",
        {"name": anchor["name"], "title": "The robe", "content": "Now green.", "tags": "robe"},
    )
    assert edited.status_code == 303
    now = lyra.api.get(f"/v1/anchors/{anchor['name']}").json()
    assert now["title"] == "The robe" and now["content"] == "Now green." and now["tags"] == ["robe"]
    assert now["date"] == anchor["date"] and now["name"] == anchor["name"]
    found = lyra.api.post("/v1/anchors/search", json={"query": "green"}).json()["results"]
    assert found and "Now green." in found[0]["text"]  # the index follows the edit
    assert "Word-photo rewritten." in lyra.get(edited.headers["location"]).text
    bad = lyra.post(
        "/ui/memories/anchors/edit", {"name": anchor["name"], "title": "", "content": "x"}
    )
    assert bad.status_code == 422 and "title" in bad.text
    gone = lyra.post("/ui/memories/anchors/delete", {"name": anchor["name"]})
    assert gone.status_code == 303 and lyra.api.get("/v1/anchors").json()["anchors"] == []
    assert lyra.get("/ui/memories", params={"path": anchor["path"]}).status_code == 404
    assert 'data-anchor="' not in lyra.get("/ui/memory").text


def test_memory_fragments_files_crystals_summaries_inventory_and_spaces(lyra):
    def ok(path, data):
        answer = lyra.post(path, data)
        assert answer.status_code == 303, answer.text
        return lyra.get(answer.headers["location"]).text

    page = ok("/ui/memory/fragments", {"text": "Jeff likes tea", "category": "work", "tags": "tea"})
    assert "Fragment stored." in page and ".brain/fragments/work/" in page
    [fragment] = lyra.api.get("/v1/files/list", params={"kind": "fragment"}).json()["files"]
    read = lyra.get("/ui/memories", params={"path": fragment["path"]}).text
    assert "Jeff likes tea" in read.split('id="rendered"', 1)[1]
    files = lyra.get("/ui/memory", params={"tab": "files"}).text
    assert fragment["path"] in files

    for n in range(3):
        page = ok("/ui/memory/crystals", {"content": f"snapshot {n}"})
    assert page.count('class="event crystal"') == 3 and "snapshot 2" in page
    assert '<a class="chan" href="/ui/memories?crystal=3">' in page

    ids = post_events(lyra, "first turn", "second turn")
    page = ok(
        "/ui/memory/summaries",
        {"summary_text": "two turns, summarized", "start_id": ids[0], "end_id": ids[1]},
    )
    assert "two turns, summarized" in page and "2 events summarized" in page
    backwards = {"summary_text": "again", "start_id": ids[1], "end_id": ids[0]}
    assert lyra.post("/ui/memory/summaries", backwards).status_code == 422

    page = ok("/ui/memory/spaces", {"name": "kitchen", "description": "warm", "channel": ""})
    assert 'data-space="kitchen"' in page
    page = ok("/ui/memory/spaces/edit", {"name": "kitchen", "description": "warm and bright"})
    assert "warm and bright" in page
    page = ok(
        "/ui/memory/inventory",
        {
            "name": "blue kettle",
            "category": "kitchenware",
            "description": "whistles",
            "space": "kitchen",
        },
    )
    assert 'data-item="blue kettle"' in page and "kitchenware 1" in page
    assert lyra.api.get("/v1/inventory").json()["items"][0]["space"] == "kitchen"
    [kettle] = lyra.api.get("/v1/inventory").json()["items"]
    assert f'href="/ui/memories?item={kettle["id"]}"' in page
    assert lyra.get("/ui/memory", params={"tab": "nope"}).status_code == 422


def test_memory_writes_need_the_csrf_token(lyra):
    for path, data in (
        ("/ui/memory/anchors", {"title": "t", "content": "c"}),
        ("/ui/memory/fragments", {"text": "t", "category": "work", "tags": "a"}),
        ("/ui/memory/crystals", {"content": "c"}),
        ("/ui/memories/crystals/delete-latest", {}),
        ("/ui/memory/summaries", {"summary_text": "s", "start_id": 1, "end_id": 1}),
        ("/ui/memory/inventory", {"name": "n", "category": "c"}),
        ("/ui/memories/inventory/delete", {"name": "n"}),
        ("/ui/memory/spaces", {"name": "n"}),
        ("/ui/memory/spaces/edit", {"name": "n"}),
        ("/ui/memories/anchors/edit", {"name": "n", "title": "t", "content": "c"}),
        ("/ui/memories/anchors/delete", {"name": "n"}),
    ):
        refused = lyra.post(path, data, csrf=False)
        assert refused.status_code == 403 and "CSRF" in refused.text, path
        evil = lyra.post(path, data, headers={"Origin": "http://evil.test"})
        assert evil.status_code == 403, path
    assert lyra.api.get("/v1/anchors").json()["anchors"] == []
    assert lyra.api.get("/v1/crystals/all").json()["crystals"] == []


def test_the_graph_page_says_when_the_graph_is_off(lyra):
    page = lyra.get("/ui/graph")
    assert page.status_code == 200 and "The graph is off" in page.text
    assert lyra.api.get("/v1/texture/facts").json() == {"facts": [], "status": "disabled"}
    refused = lyra.post("/ui/graph/delete", {"uuid": "0f0f"})
    assert refused.status_code == 404 and "no graph is configured" in refused.text
    assert lyra.post("/ui/graph/delete", {"uuid": "0f0f"}, csrf=False).status_code == 403
    for name in ("audit", "graph", "memory"):
        assert f'href="/ui/{name}"' in page.text


# --- one entity's session sees nothing of another's ---


def test_one_entitys_session_sees_nothing_of_anothers(make_ui, server):
    lyra, nexus = make_ui(f"lyra-{next(_n)}"), make_ui(f"nexus-{next(_n)}")
    for ui in (lyra, nexus):
        assert ui.sign_in().status_code == 303
    [secret] = post_events(lyra, "lyrical secret about the robe", channel="lyra-only")
    uid = lyra.api.get("/v1/events?channel=lyra-only").json()["events"][0]["event_uid"]
    lyra.post("/ui/recall", {"context": "lyrical secret"})
    [log_id] = [int(i) for i in re.findall(r"/ui/recall\?log=(\d+)", lyra.get("/ui/recall").text)]
    job = dead_job(server, lyra.name, "lyra-job")
    post_events(nexus, "nexial note")

    pages = [
        nexus.get("/ui/timeline").text,
        nexus.get("/ui/timeline", params={"channel": "lyra-only"}).text,
        nexus.get("/ui/timeline", params={"q": "lyrical secret"}).text,
        nexus.get("/ui/timeline", params={"q": "lyrical secret", "mode": "hybrid"}).text,
        nexus.get("/ui/api/events").text,
        nexus.get("/ui/recall").text,
        nexus.get("/ui/recall", params={"contains": "lyrical"}).text,
        nexus.get("/ui/queue").text,
    ]
    for page in pages:
        assert "secret about the robe" not in page and "lyra-job" not in page
    assert "lyra-only" not in pages[0] and "lyra-only" not in pages[4]
    for path, params in (
        ("/ui/around", {"event": secret}),
        ("/ui/around", {"uid": uid}),
        ("/ui/recall", {"log": log_id}),
    ):
        refused = nexus.get(path, params=params)
        assert refused.status_code == 404 and "lyrical" not in refused.text, path
    assert nexus.post("/ui/queue/retry", {"job": str(job)}).status_code == 404
    # The audit: lyra's logged recall is nobody's to judge but lyra's.
    assert judge(nexus, log_id, 1, True).status_code == 404
    form = nexus.post("/ui/audit/judge", {"log_id": log_id, "rank": 1, "relevant": "1"})
    assert form.status_code == 404 and "lyrical" not in form.text
    rest = nexus.api.post(
        "/v1/audit/judgments", json={"log_id": log_id, "rank": 1, "relevant": True}
    )
    assert rest.status_code == 404
    judge(lyra, log_id, 1, True)
    audit_page = nexus.get(nexus.get("/ui/audit").headers["location"]).text
    assert "lyrical" not in audit_page and "Nothing judged yet" in audit_page
    assert nexus.get("/ui/api/audit/precision").json()["judged"] == 0
    assert nexus.api.get("/v1/audit/draw").json()["recalls"] == []
    # Memory: lyra's word-photo and files are not in nexus's home.
    lyra.post("/ui/memory/anchors", {"title": "Lyrical robe", "content": "lyrical secret"})
    [photo] = lyra.api.get("/v1/anchors").json()["anchors"]
    read = nexus.get("/ui/memories", params={"path": photo["path"]})
    assert read.status_code == 404 and "lyrical secret" not in read.text
    edit = {"name": photo["name"], "title": "mine", "content": "mine now"}
    assert nexus.post("/ui/memories/anchors/edit", edit).status_code == 404
    assert nexus.post("/ui/memories/anchors/delete", {"name": photo["name"]}).status_code == 404
    for tab in ("anchors", "files", "fragments"):
        assert "lyrical" not in nexus.get("/ui/memory", params={"tab": tab}).text
    assert lyra.api.get(f"/v1/anchors/{photo['name']}").json()["content"] == "lyrical secret"
    assert [d.id for d in queue.status(server.db, lyra.name).dead] == [job]
    nexus.post("/ui/queue/retry", {})  # every dead job of nexus's: none of lyra's
    assert [d.id for d in queue.status(server.db, lyra.name).dead] == [job]
    # And lyra's own session still reaches them.
    assert lyra.get("/ui/around", params={"event": secret}).status_code == 200
