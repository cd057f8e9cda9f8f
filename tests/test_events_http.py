"""Capture and read back events over real HTTP, the way a channel would."""

from __future__ import annotations

import pytest


def post(client, body):
    response = client.post("/v1/events", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_one_event_round_trip(client):
    answer = post(
        client,
        {
            "event_uid": "discord-1001",
            "channel": "discord",
            "event_type": "message",
            "author": "jeff",
            "role": "user",
            "content": "Why don't you go pull on that comfy robe of yours?",
            "metadata": {"guild": "hearth", "attachments": []},
            "session_id": "s1",
            "created_at": "2026-01-04T14:30:00+02:00",
        },
    )
    assert answer["stored"] == 1 and answer["duplicates"] == 0
    [ack] = answer["events"]
    assert ack["event_uid"] == "discord-1001" and ack["duplicate"] is False

    [event] = client.get("/v1/events").json()["events"]
    assert event["id"] == ack["id"]
    assert event["content"] == "Why don't you go pull on that comfy robe of yours?"
    assert event["metadata"] == {"guild": "hearth", "attachments": []}
    assert event["created_at"] == "2026-01-04T12:30:00.000000Z"  # normalised to UTC
    assert event["received_at"].endswith("Z")
    assert (event["author"], event["role"], event["session_id"]) == ("jeff", "user", "s1")


def test_timestamps_are_normalised_to_utc(client):
    inputs = ["2026-01-04T12:00:00Z", "2026-01-04T07:00:00-05:00", 1767528000, "1767528000"]
    inputs.append("2026-01-04 12:00:00")  # no offset: taken as UTC, like SQLite's CURRENT_TIMESTAMP
    post(
        client,
        [
            {"channel": "terminal", "content": f"t{i}", "created_at": v}
            for i, v in enumerate(inputs)
        ],
    )
    stamps = {e["created_at"] for e in client.get("/v1/events").json()["events"]}
    assert stamps == {"2026-01-04T12:00:00.000000Z"}


def test_generated_uids_are_unique_and_returned(client):
    answer = post(client, [{"channel": "terminal", "content": "same words"}] * 3)
    uids = [e["event_uid"] for e in answer["events"]]
    assert len(set(uids)) == 3
    assert answer["stored"] == 3


def test_resend_answers_with_original_id_marked_duplicate(client):
    first = post(client, {"event_uid": "u-1", "channel": "terminal", "content": "once"})
    again = post(client, {"event_uid": "u-1", "channel": "terminal", "content": "once"})
    assert again["events"][0] == {**first["events"][0], "duplicate": True}
    assert again["stored"] == 0 and again["duplicates"] == 1
    assert len(client.get("/v1/events").json()["events"]) == 1


def test_duplicate_inside_one_batch(client):
    answer = post(
        client,
        [
            {"event_uid": "x", "channel": "terminal", "content": "a"},
            {"event_uid": "x", "channel": "terminal", "content": "a"},
        ],
    )
    first, second = answer["events"]
    assert second == {**first, "duplicate": True}


def _seed(client, n=25):
    post(
        client,
        [
            {
                "event_uid": f"e{i:03}",
                "channel": "discord" if i % 2 else "terminal",
                "event_type": "message" if i % 5 else "insight",
                "session_id": f"s{i // 10}",
                "content": f"turn number {i} about the {'robe' if i % 3 == 0 else 'kitchen'}",
                "created_at": f"2026-01-04T12:{i:02}:00Z",
            }
            for i in range(n)
        ],
    )


def _page_all(client, **params):
    seen, cursor = [], None
    while True:
        page = client.get("/v1/events", params={**params, **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200, page.text
        body = page.json()
        seen += [e["event_uid"] for e in body["events"]]
        cursor = body["next_cursor"]
        if cursor is None:
            return seen


def test_cursor_pagination_newest_and_oldest_first(client):
    _seed(client)
    newest = _page_all(client, limit=4)
    oldest = _page_all(client, limit=7, order="oldest")
    assert newest == [f"e{i:03}" for i in reversed(range(25))]
    assert oldest == [f"e{i:03}" for i in range(25)]


def test_filters(client):
    _seed(client)
    assert len(_page_all(client, channel="discord")) == 12
    assert _page_all(client, event_type="insight", order="oldest") == [
        "e000",
        "e005",
        "e010",
        "e015",
        "e020",
    ]
    assert _page_all(client, session_id="s2", order="oldest") == [f"e{i:03}" for i in range(20, 25)]
    window = _page_all(client, since="2026-01-04T12:03:00Z", until="2026-01-04T14:05:00+02:00")
    assert window == ["e005", "e004", "e003"]


def test_a_cursor_is_a_place_the_other_order_goes_back_from(client):
    """A cursor is the place of the page's last event (its time and id, in the format the
    OpenAPI description gives): `order` says which way the next page goes from there."""
    _seed(client, 5)
    page = client.get("/v1/events", params={"limit": 2}).json()
    assert [e["event_uid"] for e in page["events"]] == ["e004", "e003"]
    last = page["events"][-1]
    assert page["next_cursor"] == f"{last['created_at']}_{last['id']}"
    back = client.get("/v1/events", params={"cursor": page["next_cursor"], "order": "oldest"})
    assert back.status_code == 200, back.text
    assert [e["event_uid"] for e in back.json()["events"]] == ["e004"]
    bad = client.get("/v1/events", params={"cursor": "2026-01-04T12:03:00Z_3"})
    assert bad.status_code == 422 and bad.json()["problems"][0]["field"] == "cursor"


def test_search_ranks_and_snippets(client):
    _seed(client)
    post(client, {"channel": "terminal", "content": "the comfy robe hangs by the robe hook"})
    results = client.get("/v1/events/search", params={"q": "comfy robe"}).json()["results"]
    assert results[0]["event"]["content"] == "the comfy robe hangs by the robe hook"
    assert "**comfy**" in results[0]["snippet"] and "**robe**" in results[0]["snippet"]
    assert all("robe" in r["event"]["content"] for r in results)
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    # the same filters apply
    only_discord = client.get("/v1/events/search", params={"q": "robe", "channel": "discord"})
    assert {r["event"]["channel"] for r in only_discord.json()["results"]} == {"discord"}


def search(client, q, **params):
    response = client.get("/v1/events/search", params={"q": q, **params})
    assert response.status_code == 200, response.text
    return [(r["event"]["content"], r["score"]) for r in response.json()["results"]]


def test_search_scores_say_how_much_of_the_query_an_event_holds(make_client):
    """A first search on a new entity: its one event holds the word asked for, so it is a
    full match (FTS5's bm25 gave it 1e-06: a word in every event has no weight there)."""
    client = make_client()
    post(client, {"channel": "terminal", "content": "Jeff asked about the comfy robe"})
    assert search(client, "robe") == [("Jeff asked about the comfy robe", 1.0)]

    post(
        client,
        [
            {"channel": "terminal", "content": "the robe hangs by the door"},
            {"channel": "terminal", "content": "a walk by the river at dawn"},
            {"channel": "terminal", "content": "the kitchen robe hook came loose"},
        ],
    )
    found = search(client, "comfy robe")
    assert found[0] == ("Jeff asked about the comfy robe", 1.0)  # both words
    rest = dict(found[1:])
    assert set(rest) == {"the robe hangs by the door", "the kitchen robe hook came loose"}
    # "comfy" is in one event of four, "robe" in three: holding only "robe" is a small part
    assert all(0 < score < 0.5 for score in rest.values()), found
    assert [score for _, score in found] == sorted((score for _, score in found), reverse=True)
    # a rare word outweighs a common one, and a word no event holds still counts as asked
    river, *robes = search(client, "river robe")
    assert river[0] == "a walk by the river at dawn" and river[1] > 0.5
    assert all(score == pytest.approx(1 - river[1]) for _, score in robes)
    [(_, half)] = search(client, "river ghost")  # "ghost": in no event
    assert 0 < half < river[1]


def test_search_treats_query_syntax_as_words(client):
    post(client, {"channel": "terminal", "content": 'she said "NEAR" AND (not) OR *'})
    for q in ['"unbalanced', "NEAR(", "a AND", "*", "col:umn", "^x"]:
        response = client.get("/v1/events/search", params={"q": q})
        assert response.status_code in (200, 422), (q, response.text)


def test_turns_around_a_moment(client):
    _seed(client)
    around = client.get(
        "/v1/turns/around", params={"timestamp": "2026-01-04T12:10:00Z", "count": 4}
    ).json()["events"]
    assert [e["event_uid"] for e in around] == ["e009", "e010", "e011", "e012"]
    edge = client.get("/v1/turns/around", params={"timestamp": "2026-01-04T12:00:00Z", "count": 4})
    assert [e["event_uid"] for e in edge.json()["events"]] == ["e000", "e001", "e002", "e003"]


def test_health_needs_no_token_and_shows_no_data(server):
    import httpx

    body = httpx.get(f"{server.url}/health").json()
    assert body["status"] == "ok"
    assert body["components"]["database"]["status"] == "ok"
    shown = str(body)  # no entity names, no events (a job kind such as embed_events is no data)
    assert "entity" not in shown and "'events'" not in shown


def test_openapi_docs_are_served(server):
    import httpx

    assert httpx.get(f"{server.url}/docs").status_code == 200
    paths = httpx.get(f"{server.url}/openapi.json").json()["paths"]
    assert {"/v1/events", "/v1/events/search", "/v1/turns/around", "/health"} <= set(paths)


def test_private_text_from_a_client_that_did_not_strip_it_is_never_stored(client):
    """The service strips <private>…</private> itself; an event that is only private
    text is refused, naming its content, and nothing of the batch is stored."""
    answer = post(
        client,
        {
            "event_uid": "p-1",
            "channel": "terminal",
            "content": "my bank pin is <private>\n4471\n</private>, keep it to yourself",
        },
    )
    assert answer["stored"] == 1
    [event] = client.get("/v1/events").json()["events"]
    assert event["content"] == "my bank pin is , keep it to yourself"
    found = client.get("/v1/events/search", params={"q": "4471"})
    assert found.status_code == 200 and found.json()["results"] == [], found.text
    refused = client.post(
        "/v1/events",
        json=[
            {"event_uid": "p-2", "channel": "terminal", "content": "fine"},
            {"event_uid": "p-3", "channel": "terminal", "content": "<private>4471</private>"},
        ],
    )
    assert refused.status_code == 422, refused.text
    [problem] = refused.json()["problems"]
    assert problem["field"] == "events[1].content" and "private" in problem["problem"]
    assert [e["event_uid"] for e in client.get("/v1/events").json()["events"]] == ["p-1"]


@pytest.mark.parametrize(
    ("content", "stored"),
    [
        ("visible <private attr=1>SECRET</private>", "visible "),
        ('visible <Private reason="pin">SECRET</private> after', "visible  after"),
        ("<\u200bprivate>SECRET</private>visible", "visible"),
        ("visible <pri\u200dvate >SECRET", "visible "),  # unclosed: to the end
        ("visible <\ufeffprivate>SECRET</\u200bprivate> after", "visible  after"),
        ("a lone </private> tag stays text", "a lone </private> tag stays text"),
        ("<privateer>is not a tag</privateer>", "<privateer>is not a tag</privateer>"),
    ],
)
def test_private_tags_with_attributes_or_invisible_characters_still_hide(client, content, stored):
    answer = client.post("/v1/events", json={"channel": "terminal", "content": content})
    assert answer.status_code == 200, answer.text
    [event] = client.get("/v1/events", params={"limit": 1}).json()["events"]
    assert event["content"] == stored
    assert client.get("/v1/events/search", params={"q": "SECRET"}).json()["results"] == []
