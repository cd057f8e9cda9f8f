"""ambient_recall: startup wakes an entity up; any other context recalls what resonates,
from every layer, with sources, a manifest, and the unsummarized count."""

from __future__ import annotations

import pytest

from tests.conftest import AppServer, connect, wait_for


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # Budgets are a safety net for a stuck layer; a busy test machine must not trip them.
    data_dir = tmp_path_factory.mktemp("pps") / "data"
    with AppServer(data_dir, recall_log=True, recall_budget_ms=20000) as app:
        yield app


def wait_searchable(client, query: str, tiers: str = "longform", timeout: float = 30):
    """Turns get their vectors from a background job; wait until the turn is found."""
    wait_for(
        lambda: client.post("/v1/search", json={"query": query, "tiers": tiers}).json()["results"],
        timeout,
        f"{query!r} to become searchable",
    )


@pytest.fixture
def lyra(make_client):
    client = make_client()
    client.post(
        "/v1/events",
        json=[
            {
                "event_uid": "t1",
                "channel": "terminal",
                "author": "jeff",
                "content": "Why don't you go pull on that comfy robe of yours?",
            },
            {
                "event_uid": "d1",
                "channel": "discord",
                "author": "nexus",
                "content": "The kitchen smells of fresh bread this morning.",
            },  # both said now: news for another channel
        ],
    )
    client.post(
        "/v1/anchors",
        json={
            "title": "The robe",
            "content": "The deep blue robe was Jeff's gift on a cold "
            "night; wearing it feels like being held.",
            "tags": ["robe"],
        },
    )
    client.post("/v1/crystals", json={"content": "Field: warm and steady. Scene: the hearth."})
    client.post("/v1/spaces", json={"name": "bedroom", "description": "Quiet, moonlit."})
    client.post(
        "/v1/inventory",
        json={
            "name": "comfy robe",
            "category": "wardrobe",
            "description": "deep blue, soft",
            "space": "bedroom",
        },
    )
    client.post("/v1/spaces/bedroom/enter", json={"channel": "terminal"})
    wait_searchable(client, "comfy robe")
    return client


def recall(client, **body):
    response = client.post("/v1/recall", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_startup_brings_back_every_layer_in_one_call(lyra):
    ids = [e["id"] for e in lyra.get("/v1/events", params={"order": "oldest"}).json()["events"]]
    lyra.post(
        "/v1/summaries",
        json={
            "summary_text": "We spoke of robes and warmth.",
            "start_id": ids[0],
            "end_id": ids[0],
        },
    )
    answer = recall(lyra, context="startup", channel="terminal")
    layers = {item["layer"] for item in answer["items"]}
    assert layers == {"crystals", "summaries", "anchors", "space", "unsummarized"}
    assert answer["unsummarized"] == 1 and answer["warning"] is None
    unsummarized = [i for i in answer["items"] if i["layer"] == "unsummarized"]
    assert [i["source"]["event_uid"] for i in unsummarized] == ["d1"]
    block = answer["context"]
    assert "Field: warm and steady" in block and "We spoke of robes" in block
    assert "deep blue robe" in block and "bedroom: Quiet, moonlit." in block
    assert "---" not in block.split("## Word-photos")[1].split("##")[0]  # no front matter
    assert "Unsummarized turns: 1" in block
    assert all(report["status"] == "ok" for report in answer["manifest"].values())


def test_startup_pages_past_the_cap_and_warns(make_client):
    client = make_client()
    client.post("/v1/events", json=[{"channel": "discord", "content": f"m{n}"} for n in range(205)])
    answer = recall(client, context="startup")
    assert answer["unsummarized"] == 205 and "205 unsummarized" in answer["warning"]
    assert answer["more_unsummarized"] == 5
    assert len([i for i in answer["items"] if i["layer"] == "unsummarized"]) == 200
    assert "5 older unsummarized turns not shown" in answer["context"]


def test_a_moment_recalls_across_layers_with_sources(lyra):
    answer = recall(lyra, context="pull on that comfy robe", channel="terminal")
    by_layer = {}
    for item in answer["items"]:
        by_layer.setdefault(item["layer"], []).append(item)
    anchor = by_layer["anchors"][0]
    assert "deep blue robe" in anchor["text"]
    assert anchor["source"]["path"].startswith("word_photos/") and anchor["source"]["start_line"]
    assert by_layer["turns"][0]["source"]["event_uid"] == "t1"
    assert by_layer["inventory"][0]["source"]["inventory_item"] == "comfy robe"
    # the discord turn arrives as news from another channel, once
    assert [i["source"]["event_uid"] for i in by_layer["recent"]] == ["d1"]
    assert sum(i["source"].get("event_uid") == "d1" for i in answer["items"]) == 1
    manifest = answer["manifest"]
    assert set(manifest) == {"anchors", "turns", "graph", "summaries", "recent", "inventory"}
    assert manifest["graph"]["status"] == "down" and manifest["graph"]["detail"]
    assert manifest["anchors"]["count"] == len(by_layer["anchors"])
    scores = [item["score"] for item in answer["items"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert all(item["signals"] is None for item in answer["items"])


def test_a_long_moment_still_searches_every_layer(lyra):
    # Longer than a search query may be (4,096 characters): recall searches its start.
    context = "pull on that comfy robe. " + "Then we talked about the weather. " * 200
    answer = recall(lyra, context=context, channel="discord")
    manifest = answer["manifest"]
    assert manifest["anchors"]["status"] == manifest["turns"]["status"] == "ok", manifest
    assert any(i["source"].get("event_uid") == "t1" for i in answer["items"])


def test_trace_shows_why_and_the_budget_trims(lyra):
    long_story = "The robe again: " + "soft blue folds, warm evenings, the fire. " * 30
    saved = lyra.post("/v1/anchors", json={"title": "Robe evenings", "content": long_story})
    assert saved.status_code == 201, saved.text
    traced = recall(lyra, context="comfy robe", trace=True)
    assert sum(len(i["text"]) for i in traced["items"]) > 400, traced
    assert all(set(i["signals"]) >= {"layer_score", "layer_rank", "fused"} for i in traced["items"])
    small = recall(lyra, context="comfy robe", max_tokens=100)
    assert sum(len(i["text"]) for i in small["items"]) <= 400
    assert len(small["items"]) < len(traced["items"])


def test_trace_says_what_fusion_dropped_and_each_layers_budget(lyra):
    # "comfy robe" is a turn both as a past turn and as news from another channel.
    traced = recall(lyra, context="comfy robe", channel="discord", trace=True)
    duplicates = [d for d in traced["dropped"] if d["reason"] == "duplicate"]
    assert duplicates and all("the same memory as a better" in d["detail"] for d in duplicates)
    kept = {i["source"].get("event_uid") for i in traced["items"]}
    assert {d["source"].get("event_uid") for d in duplicates} <= kept
    assert traced["manifest"]["turns"]["budget_ms"] == 20000
    assert traced["manifest"]["graph"]["budget_ms"] > 0
    long_story = "The robe again: " + "soft blue folds, warm evenings, the fire. " * 30
    lyra.post("/v1/anchors", json={"title": "Robe evenings", "content": long_story})
    small = recall(lyra, context="comfy robe", max_tokens=100, trace=True)
    past = [d for d in small["dropped"] if d["reason"] == "max_tokens"]
    assert any(d["text"].startswith("The robe again") for d in past)
    assert {d["detail"] for d in past} == {"past max_tokens 100"}
    assert recall(lyra, context="comfy robe")["dropped"] is None  # only with trace


def test_the_recall_log_filters(lyra):
    recall(lyra, context="the Kitchen bread", channel="discord")
    recall(lyra, context="comfy robe", channel="terminal")
    log = lyra.get("/v1/recall/log", params={"contains": "kitchen"}).json()["entries"]
    assert [e["context"] for e in log] == ["the Kitchen bread"]
    log = lyra.get("/v1/recall/log", params={"channel": "terminal"}).json()["entries"]
    assert log and {e["channel"] for e in log} == {"terminal"}
    one = lyra.get("/v1/recall/log", params={"id": log[0]["id"]}).json()["entries"]
    assert [e["id"] for e in one] == [log[0]["id"]]


def test_private_text_in_a_context_is_neither_searched_nor_logged(lyra):
    """For a client that did not strip it (the hooks do): the rest is recalled for."""
    answer = recall(lyra, context="the comfy robe <private>my diary says zwieback</private>")
    assert any("comfy robe" in i["text"] for i in answer["items"])
    [entry] = lyra.get("/v1/recall/log", params={"limit": 1}).json()["entries"]
    assert entry["context"] == "the comfy robe " and "zwieback" not in str(entry)
    only = lyra.post("/v1/recall", json={"context": "<private>zwieback</private>"})
    assert only.status_code == 422 and only.json()["problems"][0]["field"] == "context"
    assert "zwieback" not in str(lyra.get("/v1/recall/log").json())


def test_recall_log_records_each_call(lyra):
    recall(lyra, context="comfy robe")
    entries = lyra.get("/v1/recall/log", params={"limit": 1}).json()["entries"]
    assert entries[0]["context"] == "comfy robe"
    assert entries[0]["items"] and "anchors" in entries[0]["manifest"]


def test_recall_never_crosses_entities(lyra, server):
    other = connect(server, server.pps("entity", "create", "stranger").strip())
    for context in ("startup", "comfy robe bedroom kitchen bread"):
        answer = recall(other, context=context)
        assert answer["items"] == [], answer["items"]
    own_log = other.get("/v1/recall/log").json()["entries"]
    assert [e["context"] for e in own_log] == ["comfy robe bedroom kitchen bread", "startup"]
    assert all(e["items"] == [] for e in own_log)


def test_bad_recall_requests(lyra):
    for body, field in [
        ({}, "context"),
        ({"context": ""}, "context"),
        ({"context": "x", "max_tokens": 5}, "max_tokens"),
        ({"context": "x", "channel": "NO WAY"}, "channel"),
        ({"context": "x", "entity": "someone"}, "entity"),
        ({"context": "x", "answering": ["not a uid!"]}, "answering[0]"),
        ({"context": "x", "answering": [f"u{n}" for n in range(101)]}, "answering"),
        ({"context": "x", "session_id": "s" * 257}, "session_id"),
        ({"context": "x", "max_chars": 999}, "max_chars"),
    ]:
        response = lyra.post("/v1/recall", json=body)
        assert response.status_code == 422, (body, response.text)
        assert field in [p["field"] for p in response.json()["problems"]], response.text


def test_a_recall_never_returns_the_event_it_answers(lyra):
    """A prompt's own event may be stored before the recall made for it runs (a hook
    sends both at once): named in `answering`, it comes back from no layer."""
    prompt = "Shall we light the fire in the hearth tonight?"
    parts = [
        {"event_uid": uid, "channel": "terminal", "author": "jeff", "content": text}
        for uid, text in [("p1", prompt), ("p1#2", "(and the hearth candles)")]
    ]
    lyra.post("/v1/events", json=parts)
    wait_searchable(lyra, "light the fire in the hearth")
    unaware = recall(lyra, context=prompt)
    assert "p1" in [i["source"].get("event_uid") for i in unaware["items"]]

    answer = recall(lyra, context=prompt, answering=["p1", "p1#2"])
    uids = [i["source"].get("event_uid") for i in answer["items"]]
    assert "p1" not in uids and "p1#2" not in uids
    assert "light the fire" not in answer["context"] and "hearth candles" not in answer["context"]
    assert "t1" in uids  # the other turns still come
    startup = recall(lyra, context="startup", answering=["p1", "p1#2"])
    assert "light the fire" not in startup["context"]


def test_news_from_other_channels_is_neither_the_callers_channel_nor_its_session(make_client):
    client = make_client()
    client.post(
        "/v1/events",
        json=[
            {"event_uid": "here", "channel": "terminal", "session_id": "s1", "content": "one"},
            {"event_uid": "other-session", "channel": "terminal", "content": "two"},
            {"event_uid": "mine", "channel": "reflection", "session_id": "s1", "content": "three"},
            {"event_uid": "news", "channel": "discord", "role": "user", "content": "four"},
            {"event_uid": "mark", "channel": "discord", "event_type": "delete", "content": "gone"},
        ],
    )
    answer = recall(client, context="what else?", channel="terminal", session_id="s1")
    recent = [i["source"]["event_uid"] for i in answer["items"] if i["layer"] == "recent"]
    assert set(recent) <= {"news"}
    assert "news" in [i["source"].get("event_uid") for i in answer["items"]]
    assert "gone" not in answer["context"]
    by_session = recall(client, context="what else?", session_id="s1")
    recent = [i["source"]["event_uid"] for i in by_session["items"] if i["layer"] == "recent"]
    assert "here" not in recent and "mine" not in recent


def test_the_callers_own_session_is_never_recalled_it_holds_those_turns(make_client):
    """A hook's host has its session's turns in context already: neither a prompt's
    recall nor startup gives them back; the same words from another session come back."""
    client = make_client()
    client.post(
        "/v1/events",
        json=[
            {
                "event_uid": "mine-1",
                "channel": "terminal",
                "session_id": "s1",
                "role": "user",
                "content": "the pottery kiln needs a new thermocouple",
            },
            {
                "event_uid": "mine-2",
                "channel": "terminal",
                "session_id": "s1",
                "role": "assistant",
                "content": "I ordered a type K thermocouple for the pottery kiln.",
            },
            {
                "event_uid": "before",
                "channel": "terminal",
                "session_id": "s0",
                "role": "user",
                "content": "the pottery kiln cracked a shelf last spring",
            },
        ],
    )
    wait_searchable(client, "pottery kiln thermocouple")
    wait_searchable(client, "kiln cracked a shelf")
    for context in ("what about the pottery kiln?", "startup"):
        answer = recall(client, context=context, channel="terminal", session_id="s1")
        uids = {i["source"].get("event_uid") for i in answer["items"]}
        assert "before" in uids, answer["context"]
        assert not uids & {"mine-1", "mine-2"}, answer["context"]
        assert "thermocouple" not in answer["context"]
    anyone = recall(client, context="what about the pottery kiln?")  # no session: all of them
    assert {"mine-1", "mine-2"} <= {i["source"].get("event_uid") for i in anyone["items"]}


def test_a_context_nothing_in_memory_answers_injects_no_turn_or_excerpt(lyra):
    """Nothing rather than noise: no turn or word-photo is near "my bank PIN" by meaning,
    so none is injected (without the floor the robe turn and the word-photo came back);
    a turn holding the context's identifier comes back however far its words are."""
    layers = ("turns", "anchors")
    asked = recall(lyra, context="what is my bank PIN?", channel="terminal", trace=True)
    assert not [i for i in asked["items"] if i["layer"] in layers], asked["context"]
    assert "robe" not in asked["context"]
    near = recall(lyra, context="that comfy robe", channel="terminal")
    assert {"turns", "anchors"} <= {i["layer"] for i in near["items"]}
    lyra.post(
        "/v1/events",
        json=[{"event_uid": "code", "channel": "terminal", "content": "done: ZX-4417 closed"}],
    )
    wait_searchable(lyra, "ZX-4417 closed")
    ticket = recall(lyra, context="what did my bank say about ZX-4417?", channel="terminal")
    assert "code" in {i["source"].get("event_uid") for i in ticket["items"]}, ticket["context"]


def test_a_session_is_not_given_twice_what_it_holds(lyra):
    """A session woke up with the robe word-photo whole and the robe turn: the next
    prompt's recall leaves both out (trace says why); another session gets them; a new
    startup of the session starts again."""
    startup = recall(lyra, context="startup", channel="terminal", session_id="s9")
    assert "deep blue robe" in startup["context"]
    prompt = recall(
        lyra, context="that comfy robe", channel="terminal", session_id="s9", trace=True
    )
    assert "deep blue robe" not in prompt["context"], prompt["context"]
    assert "t1" not in {i["source"].get("event_uid") for i in prompt["items"]}
    held = {
        d["source"].get("event_uid") or d["source"].get("path")
        for d in prompt["dropped"]
        if d["reason"] == "held"
    }
    assert "t1" in held and any(str(k).startswith("word_photos/") for k in held), prompt
    other = recall(lyra, context="that comfy robe", channel="terminal", session_id="s10")
    assert "deep blue robe" in other["context"] and "comfy robe of yours" in other["context"]
    again = recall(lyra, context="that comfy robe", channel="terminal", session_id="s10")
    assert "comfy robe of yours" not in again["context"]
    recall(lyra, context="startup", channel="terminal", session_id="s10")
    assert "deep blue robe" in recall(lyra, context="startup", session_id="s10")["context"]


def test_a_message_from_long_ago_in_another_channel_is_not_news(make_client):
    client = make_client()
    old = {"channel": "discord", "author": "nexus", "created_at": "2025-12-30T10:00:00Z"}
    client.post(
        "/v1/events",
        json=[
            {"event_uid": "old", "content": "the kettle is descaled", **old},
            {"event_uid": "new", "channel": "discord", "content": "the kettle boiled over"},
        ],
    )
    answer = recall(client, context="what else happened?", channel="terminal")
    recent = [i["source"]["event_uid"] for i in answer["items"] if i["layer"] == "recent"]
    assert recent == ["new"], answer["context"]


def test_the_block_is_memory_text_the_sources_stay_in_the_items(lyra):
    """No uid after every line (19-27% of what a hook injected): a turn tells when, where
    and who; a file keeps its path and lines; every item's source is in `items`."""
    wait_searchable(lyra, "comfy robe")
    for context in ("startup", "the comfy robe"):
        answer = recall(lyra, context=context, channel="discord")
        block, items = answer["context"], answer["items"]
        assert any(i["source"].get("event_uid") for i in items), block
        for item in items:
            assert item["text"].strip() in block
            for uid in (item["source"].get("event_uid"), item["source"].get("fact_uuid")):
                assert uid is None or uid not in block, block
        assert "event_uid" not in block and "_(" not in block
        files = [i for i in items if i["source"].get("path")]
        assert files and all(i["source"]["path"].split("/")[-1] in block for i in files)
        memory = sum(len(i["text"].strip()) for i in items)
        assert memory >= 0.5 * len(block), block  # a tiny corpus: the headings weigh more


def test_a_turn_without_an_author_is_told_by_its_role_everywhere(make_client):
    client = make_client()
    client.post(
        "/v1/events",
        json=[
            {"channel": "terminal", "role": "assistant", "content": "The kiln reached 1200 C."},
            {"channel": "terminal", "content": "The kiln cooled overnight."},
        ],
    )
    wait_searchable(client, "kiln")
    for context in ("startup", "the kiln"):
        block = recall(client, context=context)["context"]
        assert "] assistant: The kiln reached 1200 C." in block, block
        assert "terminal] The kiln cooled overnight." in block, block
        assert "?:" not in block


def test_max_chars_keeps_the_block_within_and_says_what_was_left_out(lyra):
    lyra.post(
        "/v1/events",
        json=[
            {"channel": "discord", "content": f"robe talk {n}: " + "soft " * 40} for n in range(60)
        ],
    )
    full = recall(lyra, context="startup")
    assert len(full["context"]) > 4000 and full["left_out"] == {}
    capped = recall(lyra, context="startup", max_chars=4000)
    assert len(capped["context"]) <= 4000
    layers = [item["layer"] for item in capped["items"]]
    assert {"crystals", "space", "unsummarized"} <= set(layers)
    shown = layers.count("unsummarized")
    assert capped["left_out"]["unsummarized"] == 62 - shown == capped["more_unsummarized"]
    newest = [i for i in capped["items"] if i["layer"] == "unsummarized"][-1]
    assert "robe talk 59:" in newest["text"]
    assert (
        f"({62 - shown} older unsummarized turns not shown: get_turns_since_summary)"
        in (capped["context"])
    )
    assert "(cut to fit 4,000 characters)" in capped["context"]

    moment = recall(lyra, context="robe talk", max_chars=1000)
    assert len(moment["context"]) <= 1000
    left = sum(moment["left_out"].values())
    assert left >= 1 and "not shown: ambient_recall" in moment["context"]


def test_startup_on_a_channel_without_a_space_tells_the_last_one_entered(make_client):
    client = make_client()
    client.post("/v1/spaces", json={"name": "porch", "description": "Rain on the roof."})
    client.post("/v1/spaces/porch/enter", json={})
    answer = recall(client, context="startup", channel="terminal")
    assert "porch: Rain on the roof." in answer["context"]


def test_the_turn_that_answers_comes_before_word_photos_on_its_theme(make_client):
    """A word-photo does not outrank the turn that answers the moment by its kind alone:
    the best of each is ordered by how well it matches."""
    client = make_client()
    for title in ("The garden in spring", "Evenings on the back step"):
        saved = client.post(
            "/v1/anchors",
            json={"title": title, "content": "Tulips by the gate, the blue pots, the back door."},
        )
        assert saved.status_code == 201, saved.text
    client.post(
        "/v1/events",
        json=[
            {
                "channel": "terminal",
                "author": "dana",
                "content": "the spare key lives under the blue flowerpot by the back door",
            }
        ],
    )
    wait_searchable(client, "spare key flowerpot")
    answer = recall(client, context="where is the spare key?")
    assert answer["items"][0]["layer"] == "turns", [i["text"] for i in answer["items"]]
