"""`LLM_PROVIDER=openai` and `anthropic` on their own wires: the real SDKs pps uses,
through pps's own paths, against tests/stub_llm.py speaking OpenAI's Responses API and
Anthropic's Messages API (their JSON, their error shapes, their refusals).

Graph extraction runs an episode through the queue's workers onto a real FalkorDB with
the real embedding model; summaries go through the real app over HTTP. A 429, a 503, a
529 or a timeout costs one call and the queue retries it; a refusal ends the job dead
with its reason after the queue's attempts; a refused key, or none, pauses; the daily
budget counts every call sent, failed and timed-out ones included."""

from __future__ import annotations

import pytest
from stub_llm import REFUSAL

from engine.capture import entities
from engine.capture import events as capture
from engine.graph import episodes, texture
from engine.graph.server import FalkorServer
from engine.kernel.config import Settings
from engine.llm import budget, endpoint
from engine.runtime import CAPTURE_LISTENERS
from engine.store import queue
from tests.conftest import AppServer, connect, wait_for
from tests.graphs import extracting

WIRES = {"openai": ("responses", "json_schema"), "anthropic": ("messages", "tool_use")}
MODELS = {"openai": "gpt-5-mini", "anthropic": "claude-haiku-4-5-latest"}
ATTEMPTS = 3
TURNS = ["I moved to Denver with Lyra last spring.", "Lyra likes the Denver mountains."]


def llm_settings(stub, provider: str) -> dict:
    return {
        "llm_provider": provider,
        "llm_base_url": stub.anthropic_url if provider == "anthropic" else stub.url,
        "llm_model": MODELS[provider],
        "llm_api_key": "sk-stub",
        "llm_timeout_s": 2,
    }


def only_on_its_wire(stub, provider: str) -> bool:
    wire, form = WIRES[provider]
    return dict(stub.by_wire) == {wire: stub.calls} and set(stub.formats) == {form}


@pytest.fixture(autouse=True)
def healthy(stub):
    stub.set_mode(None)
    stub.reset_counts()
    yield
    stub.set_mode(None)


# --- graph extraction through the queue ---


@pytest.fixture(scope="module")
def falkor(tmp_path_factory, falkordb):
    with FalkorServer(tmp_path_factory.mktemp("graph")) as server:
        yield {"graph_backend": "falkordb", "graph_url": f"unix://{server.socket_path}"}


@pytest.fixture(params=sorted(WIRES))
def provider(request) -> str:
    return request.param


@pytest.fixture
def start(tmp_path, falkor, stub, provider):
    """start(**settings) -> (graph, db, entity): a graph and the queue's workers on it,
    extracting with `provider`."""
    policy = queue.Policy(
        poll_s=0.02, backoff_initial_s=0.05, backoff_max_s=0.2, max_attempts=ATTEMPTS
    )
    with extracting(policy) as started:

        def start(**overrides):
            settings = Settings(
                data_dir=tmp_path / "data", **falkor, **llm_settings(stub, provider) | overrides
            )
            return started(settings)

        yield start


@pytest.fixture
def worked(start):
    return start()


def record_episode(db, entity: str) -> str:
    events = [{"channel": "terminal", "author": "Jeff", "content": t} for t in TURNS]
    parsed = capture.parse_events(events, max_batch=50, max_content_bytes=10**5)
    capture.Capture(db, CAPTURE_LISTENERS).record(entity, parsed)
    (uuid,) = episodes.close_windows(db, episodes.Window(), force=True)
    return uuid


def job(db, uuid: str) -> dict:
    row = db.conn.execute(
        "SELECT state, attempts, last_error FROM jobs WHERE key = ?", (uuid,)
    ).fetchone()
    return dict(row)


def settled(db, uuid: str, state: str) -> dict:
    wait_for(lambda: job(db, uuid)["state"] == state, 60, f"the episode's job to be {state}")
    return job(db, uuid)


def test_an_episode_is_extracted_on_the_providers_own_wire(worked, stub, provider):
    graph, db, entity = worked
    uuid = record_episode(db, entity)
    assert settled(db, uuid, "done")["attempts"] == 1
    assert graph.store.episode_uuids(entity) == [uuid]
    found = texture.search(graph, db, entity, texture.SearchQuery(query="Denver mountains"))
    assert found.status == "ok" and any("Denver" in f.fact for f in found.facts)
    assert only_on_its_wire(stub, provider), (stub.by_wire, set(stub.formats))
    used = budget.usage_today(db, entity)
    assert used["calls"] == stub.calls and used["tokens"] > 0


@pytest.mark.parametrize(
    ("provider", "fault"),
    [
        ("openai", "429"),
        ("openai", "503"),
        ("openai", "hang"),
        ("anthropic", "429"),
        ("anthropic", "529"),
        ("anthropic", "hang"),
    ],
)
def test_a_busy_or_silent_llm_is_retried_by_the_queue(worked, stub, provider, fault):
    graph, db, entity = worked
    stub.fail(fault, times=2)
    uuid = record_episode(db, entity)
    done = settled(db, uuid, "done")
    # One call per failed attempt (no re-asking inside a job), then the third succeeds.
    assert done["attempts"] == 3 and stub.faults_served == {fault: 2}
    assert graph.store.episode_uuids(entity) == [uuid]
    assert budget.usage_today(db, entity)["calls"] == stub.calls  # the failed calls count


def test_a_refusal_ends_the_job_dead_with_its_reason(worked, stub, provider):
    graph, db, entity = worked
    stub.set_mode("refusal")
    uuid = record_episode(db, entity)
    dead = settled(db, uuid, "dead")
    assert dead["attempts"] == ATTEMPTS and stub.calls == ATTEMPTS  # one call each
    assert "RefusalError" in dead["last_error"] and REFUSAL in dead["last_error"], dead
    assert db.conn.execute("SELECT COUNT(*) FROM queue_pauses").fetchone()[0] == 0
    assert graph.store.episode_uuids(entity) == []
    assert budget.usage_today(db, entity)["calls"] == ATTEMPTS
    listed = queue.status(db, entity).dead
    assert [d.last_error for d in listed] == [dead["last_error"]]


def test_a_refused_key_pauses_after_one_call(worked, stub, provider):
    _, db, entity = worked
    stub.set_mode("401")
    uuid = record_episode(db, entity)
    settled(db, uuid, "waiting")
    (reason,) = db.conn.execute("SELECT reason FROM queue_pauses").fetchone()
    assert "LLM_API_KEY" in reason and stub.calls == 1


def test_an_account_out_of_credit_pauses_after_one_call(worked, stub):
    _, db, entity = worked
    stub.set_mode("quota")  # OpenAI: 429 insufficient_quota, not a rate limit to wait out
    settled(db, record_episode(db, entity), "waiting")
    (reason,) = db.conn.execute("SELECT reason FROM queue_pauses").fetchone()
    assert "no credit or quota left" in reason and stub.calls == 1


def test_no_key_pauses_with_the_setting_to_fix(start, stub, monkeypatch):
    monkeypatch.setattr(stub, "api_key", "sk-stub")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-stub")  # pps's settings hold the key
    _, db, entity = start(llm_api_key=None)
    settled(db, record_episode(db, entity), "waiting")
    (reason,) = db.conn.execute("SELECT reason FROM queue_pauses").fetchone()
    assert "LLM_API_KEY" in reason


def test_the_probe_asks_the_providers_own_models_route(stub, provider):
    settings = Settings(**llm_settings(stub, provider))
    assert endpoint.probe(settings) == {"status": "ok"}
    stub.set_mode("401")
    assert endpoint.probe(settings)["status"] == "refused"
    assert stub.calls == 0  # no tokens spent


# --- summaries over HTTP ---


@pytest.fixture(scope="module", params=sorted(WIRES))
def server(request, tmp_path_factory, stub):
    with AppServer(
        tmp_path_factory.mktemp(request.param) / "data", **llm_settings(stub, request.param)
    ) as app:
        app.provider = request.param
        yield app


def say(client, *contents) -> list[int]:
    events = [{"channel": "terminal", "author": "Jeff", "content": c} for c in contents]
    response = client.post("/v1/events", json=events)
    assert response.status_code == 200, response.text
    return [ack["id"] for ack in response.json()["events"]]


def test_a_summary_is_written_on_the_providers_own_wire(server, make_client, stub):
    client = make_client()
    say(client, "Jeff planted tomatoes.", "Lyra named them.")
    response = client.post("/v1/summaries/summarize", json={})
    assert response.status_code == 200, response.text
    assert "Jeff: Jeff planted tomatoes." in response.json()["summary"]["summary_text"]
    assert only_on_its_wire(stub, server.provider) and stub.calls == 1
    used = budget.usage_today(server.db, client.entity)
    assert used["calls"] == 1 and used["tokens"] > 0


@pytest.mark.parametrize(
    ("fault", "status", "cause"),
    [
        ("429", 503, "rate-limiting us (429)"),
        ("503", 503, "overloaded (503)"),
        ("529", 503, "overloaded (529)"),
        ("500", 502, "the LLM answered 500"),
        ("refusal", 502, f"the LLM declined to answer: {REFUSAL}"),
        ("401", 502, "check LLM_API_KEY"),
        ("garbage", 502, "not the answer asked for"),
    ],
)
def test_a_failing_summary_says_why_and_stores_nothing(
    server, make_client, stub, fault, status, cause
):
    client = make_client()
    ids = say(client, "Jeff gave Lyra the blue robe.")
    stub.set_mode(fault)
    response = client.post("/v1/summaries/summarize", json={})
    stub.set_mode(None)
    assert response.status_code == status, response.text
    problem = response.json()["problems"][0]
    assert problem["field"] == "llm" and cause in problem["problem"], problem
    assert "nothing was stored" in problem["problem"]
    assert stub.calls == 1  # asked once: no re-asking inside the request
    assert budget.usage_today(server.db, client.entity)["calls"] == 1
    assert [t["id"] for t in client.get("/v1/turns/since-summary").json()["turns"]] == ids


@pytest.mark.parametrize(("provider", "fault"), [("openai", "429"), ("anthropic", "529")])
def test_a_summary_written_by_itself_is_retried_past_a_busy_llm(tmp_path, stub, provider, fault):
    with AppServer(
        tmp_path / "data",
        **llm_settings(stub, provider),
        summarize_after=1,
        summarize_check_s=0.05,
        queue_backoff_initial_s=0.05,
        queue_backoff_max_s=0.2,
    ) as app:
        client = connect(app, entities.create(app.db, "wren"))
        stub.fail(fault, times=2)
        say(client, "one thing", "another thing")
        stats = "/v1/summaries/stats"
        wait_for(lambda: client.get(stats).json()["summaries"] == 1, 30, "the summary")
        assert stub.faults_served == {fault: 2} and only_on_its_wire(stub, provider)
        assert budget.usage_today(app.db, "wren")["calls"] == stub.calls == 3
        client.close()
