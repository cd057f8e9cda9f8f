"""summarize_messages with an LLM: the real app asks the stub LLM (over the real
OpenAI-compatible wire) for a summary of the oldest unsummarized turns and stores it.
Faults: the LLM failing in every way stores nothing; turns stored while it thinks stay
unsummarized; two calls at once never cover the same turns; the daily budget holds."""

from __future__ import annotations

import threading

import pytest
from mcp_client import ToolFailed, call, session

from engine.capture import entities
from tests.conftest import AppServer, connect, wait_for

DAILY_CALLS = 4  # per entity: every test here but the budget's stays under it


@pytest.fixture(scope="module")
def server(tmp_path_factory, stub):
    with AppServer(
        tmp_path_factory.mktemp("summarize") / "data",
        llm_provider="openai_compatible",
        llm_base_url=stub.url,
        llm_model="stub",
        # A healthy answer can take seconds on a busy machine; the hang has its own test.
        llm_timeout_s=30,
        graph_daily_calls=DAILY_CALLS,
    ) as app:
        yield app


@pytest.fixture(autouse=True)
def healthy(stub):
    stub.set_mode(None)
    stub.slow_s = 1.0
    yield
    stub.set_mode(None)


def say(client, *contents, author="Jeff", created_at=None) -> list[int]:
    events = [
        {"channel": "terminal", "author": author, "content": c, "created_at": created_at}
        for c in contents
    ]
    response = client.post("/v1/events", json=events)
    assert response.status_code == 200, response.text
    return [ack["id"] for ack in response.json()["events"]]


def summarize(client, **body):
    return client.post("/v1/summaries/summarize", json=body)


def unsummarized_ids(client) -> list[int]:
    return [t["id"] for t in client.get("/v1/turns/since-summary").json()["turns"]]


def test_the_oldest_turns_become_a_stored_summary(client, stub):
    ids = say(client, "I moved to Denver in May.", "We chose the blue robe.", "Lyra laughed.")
    ids += say(client, "Tomorrow we bake bread.", "Goodnight.")
    response = summarize(client, limit=3)
    assert response.status_code == 200, response.text
    done = response.json()
    assert done["summarized"] is True and done["turns"] == []
    assert (done["start_id"], done["end_id"], done["count"]) == (ids[0], ids[2], 3)
    assert done["unsummarized"] == 2
    summary = done["summary"]
    text = summary["summary_text"]
    assert "Jeff: I moved to Denver in May." in text and "Lyra laughed." in text
    assert "bake bread" not in text  # only the batch went to the LLM
    assert summary["channels"] == ["terminal"] and summary["event_count"] == 3
    assert client.get("/v1/summaries").json()["summaries"][0]["id"] == summary["id"]

    startup = client.post("/v1/recall", json={"context": "startup"}).json()
    turns = [i["source"]["id"] for i in startup["items"] if i["layer"] == "unsummarized"]
    assert turns == ids[3:] and startup["unsummarized"] == 2
    assert "Denver" in startup["context"]  # now through the summary, not the turns


@pytest.mark.parametrize(
    ("fault", "status", "cause"),
    [
        ("500", 502, "the LLM answered 500"),
        ("429", 503, "rate-limiting us (429)"),
        ("garbage", 502, "not the answer asked for"),
        ("wrong_shape", 502, "not the answer asked for"),
        ("empty", 502, "an empty summary"),
    ],
)
def test_a_failing_llm_stores_nothing(client, stub, fault, status, cause):
    failed_and_recovered(client, stub, fault, status, cause)


def test_an_llm_that_does_not_answer_stores_nothing(tmp_path, stub):
    with (
        AppServer(
            tmp_path / "data",
            llm_provider="openai_compatible",
            llm_base_url=stub.url,
            llm_model="stub",
            llm_timeout_s=2,
        ) as app,
        connect(app, entities.create(app.db, "hale")) as client,
    ):
        failed_and_recovered(client, stub, "hang", 503, "did not answer within 2s")


def failed_and_recovered(client, stub, fault: str, status: int, cause: str) -> None:
    ids = say(client, "Jeff gave Lyra the blue robe.", "She wore it all evening.")
    stub.set_mode(fault)
    response = summarize(client)
    stub.set_mode(None)  # releases a hang
    assert response.status_code == status, response.text
    problem = response.json()["problems"][0]
    assert problem["field"] == "llm" and cause in problem["problem"], problem
    assert "nothing was stored" in problem["problem"]
    assert client.get("/v1/summaries/stats").json()["summaries"] == 0
    assert unsummarized_ids(client) == ids
    recovered = summarize(client)
    assert recovered.status_code == 200, recovered.text
    assert recovered.json()["summary"]["end_id"] == ids[-1]


def test_turns_stored_while_the_llm_thinks_stay_unsummarized(client, stub):
    ids = say(client, "First turn.", "Second turn.")
    stub.fail("slow")
    asked = stub.calls
    answer = {}
    thinking = threading.Thread(target=lambda: answer.update(done=summarize(client)))
    thinking.start()
    wait_for(lambda: stub.calls > asked, what="the LLM to be asked")  # it is thinking now
    late = say(client, "Said while it thought.")
    backdated = say(client, "Imported, from long ago.", created_at="2001-01-01T00:00:00Z")
    thinking.join()
    assert answer["done"].status_code == 200, answer["done"].text
    summary = answer["done"].json()["summary"]
    assert (summary["start_id"], summary["end_id"]) == (ids[0], ids[-1])
    assert "long ago" not in summary["summary_text"]
    assert unsummarized_ids(client) == [*backdated, *late]  # oldest first


def test_two_calls_at_once_never_cover_the_same_turns(client, stub):
    say(client, "One.", "Two.", "Three.")
    stub.set_mode("slow")
    answers = []
    calls = [threading.Thread(target=lambda: answers.append(summarize(client))) for _ in "ab"]
    for thread in calls:
        thread.start()
    for thread in calls:
        thread.join()
    assert sorted(a.status_code for a in answers) == [200, 409], [a.text for a in answers]
    refused = next(a for a in answers if a.status_code == 409).json()["problems"][0]["problem"]
    assert "nothing stored" in refused and "call again" in refused
    stored = client.get("/v1/summaries").json()["summaries"]
    assert len(stored) == 1 and stored[0]["event_count"] == 3
    assert unsummarized_ids(client) == []


def test_an_entity_summary_holds_only_its_own_turns(make_client):
    a, b = make_client(), make_client()
    say(a, "Alpha kept the lantern.")
    b_ids = say(b, "Bravo hid the map.")
    text = summarize(a).json()["summary"]["summary_text"]
    assert "lantern" in text and "map" not in text
    assert b.get("/v1/summaries").json()["summaries"] == []
    assert unsummarized_ids(b) == b_ids
    b_text = summarize(b).json()["summary"]["summary_text"]
    assert "map" in b_text and "lantern" not in b_text


def test_bad_requests_name_the_field_and_ask_nothing(client, stub):
    say(client, "A turn.")
    calls = stub.calls
    for body, field in [
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"summary_type": "Not A Type"}, "summary_type"),
        ({"limits": 5}, "limits"),
    ]:
        response = summarize(client, **body)
        assert response.status_code == 422, response.text
        assert [p["field"] for p in response.json()["problems"]] == [field]
    assert stub.calls == calls
    assert client.get("/v1/summaries/stats").json()["summaries"] == 0


def test_the_daily_llm_budget_holds(client, stub):
    say(client, *[f"Turn {n}." for n in range(DAILY_CALLS + 1)])
    for _ in range(DAILY_CALLS):
        assert summarize(client, limit=1).status_code == 200
    calls = stub.calls
    spent = summarize(client, limit=1)
    assert spent.status_code == 503, spent.text
    assert "daily LLM budget spent" in spent.json()["problems"][0]["problem"]
    assert stub.calls == calls
    assert client.get("/v1/summaries/stats").json()["unsummarized"] == 1


def test_over_mcp_a_summary_is_stored_and_a_failure_says_why(server, client, stub):
    token = client.headers["Authorization"].removeprefix("Bearer ")

    async def script(mcp):
        for content in ("Jeff planted tomatoes.", "Lyra named them."):
            await call(mcp, "store_event", content=content, author="Jeff")
        done = await call(mcp, "summarize_messages", limit=1)
        failures = []
        for fault in ("500", "429"):  # an unusable answer; no answer
            stub.fail(fault)
            with pytest.raises(ToolFailed) as failed:
                await call(mcp, "summarize_messages")
            failures.append(str(failed.value))
        left = await call(mcp, "get_turns_since_summary")
        return done, failures, left

    done, (failed, limited), left = session(f"{server.url}/mcp", token, script)
    assert done["summarized"] is True and done["count"] == 1 and done["unsummarized"] == 1
    assert "tomatoes" in done["summary"]["summary_text"]
    assert "failed (llm)" in failed and "500" in failed and "nothing was stored" in failed
    assert "unavailable (llm)" in limited and "(429)" in limited
    assert [t["content"] for t in left["turns"]] == ["Lyra named them."]


def test_past_the_threshold_summaries_are_written_by_themselves(tmp_path, stub):
    with AppServer(
        tmp_path / "data",
        llm_provider="openai_compatible",
        llm_base_url=stub.url,
        llm_model="stub",
        summarize_after=5,
        summarize_check_s=0.05,
    ) as app:
        client = connect(app, entities.create(app.db, "wren"))

        def ranges():
            found = client.get("/v1/summaries", params={"limit": 20}).json()["summaries"]
            return sorted((s["start_id"], s["end_id"]) for s in found)

        first = say(client, *(f"turn {n} about the garden" for n in range(12)))
        wait_for(lambda: ranges() == [(first[0], first[-1])], what="the first summary")
        few = say(client, "one", "two", "three")  # 3: not past the threshold
        assert client.post("/v1/recall", json={"context": "startup"}).json()["warning"] is None
        more = say(client, *(f"later turn {n}" for n in range(4)))  # 7 now
        wait_for(lambda: len(ranges()) == 2, what="a second summary")
        assert ranges() == [(first[0], first[-1]), (few[0], more[-1])]  # never the same turns
        left = client.get("/v1/turns/since-summary")
        assert left.status_code == 200 and left.json()["turns"] == [], left.text
        client.close()


def test_without_an_llm_the_threshold_is_only_a_warning(tmp_path):
    with AppServer(tmp_path / "data", summarize_after=5, summarize_check_s=0.05) as app:
        client = connect(app, entities.create(app.db, "wren"))
        say(client, *(f"turn {n}" for n in range(8)))
        answer = client.post("/v1/recall", json={"context": "startup"}).json()
        assert "8 unsummarized turns (more than 5): run summarize_messages" in answer["warning"]
        assert f"Warning: {answer['warning']}" in answer["context"]  # said once, at startup
        prompt = client.post("/v1/recall", json={"context": "what about turn 3?"}).json()
        assert prompt["warning"] == answer["warning"] and "Warning" not in prompt["context"]
        assert client.get("/v1/summaries").json()["summaries"] == []
        jobs = app.db.conn.execute("SELECT COUNT(*) FROM jobs WHERE kind = 'summarize'")
        assert jobs.fetchone()[0] == 0
        # /health says how many entities are past it (no names), and degrades nothing.
        health = client.get("/health").json()
        component = health["components"]["summaries"]
        assert component["entities_past"] == 1 and component["by_itself"] is False
        assert "wren" not in str(component) and health["status"] == "ok"
        client.close()


def test_a_summary_written_by_itself_survives_a_failing_llm(tmp_path, stub):
    with AppServer(
        tmp_path / "data",
        llm_provider="openai_compatible",
        llm_base_url=stub.url,
        llm_model="stub",
        summarize_after=2,
        summarize_check_s=0.05,
        queue_backoff_initial_s=0.1,
        queue_backoff_max_s=0.5,
    ) as app:
        client = connect(app, entities.create(app.db, "wren"))
        stub.set_mode("500")
        asked = stub.calls
        say(client, "one thing", "another thing", "a third thing")
        wait_for(lambda: stub.calls >= asked + 2, what="the job to ask and be retried")
        assert client.get("/v1/summaries/stats").json()["summaries"] == 0  # nothing stored
        stub.set_mode(None)
        wait_for(
            lambda: client.get("/v1/summaries/stats").json()["summaries"] == 1,
            what="the retried job to store the summary",
        )
        assert client.get("/v1/summaries/stats").json()["unsummarized"] == 0
        client.close()
