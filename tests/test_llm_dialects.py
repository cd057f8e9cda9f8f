"""Structured output with the servers people run locally, with no response-format setting
(PPS_LLM_RESPONSE_FORMAT=auto): llama.cpp's `llama-server` (today's, and one from before
it took `json_schema`), llama-cpp-python's server, Ollama's `/v1`, vLLM and LM Studio,
each as tests/stub_llm.py speaks it over real HTTP (its models listing, the
`response_format` types it takes, its refusal of the others in its own status and
words). Each episode goes through the queue's workers into a real FalkorDB with the real
embedding model, and its facts are traced to its events.

A refusal that names the types the server accepts is an answer: one refused call, then
every call in the dialect it takes, remembered for the endpoint in the database (a
restart starts with it), logged once and shown by `pps doctor`. The setting, when given,
is obeyed; an error that names no types is a failure like any other."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
from stub_llm import StubLLM

from engine.capture import events as capture
from engine.graph import episodes, texture
from engine.graph.server import FalkorServer
from engine.kernel.config import Settings
from engine.llm import budget, dialect
from engine.runtime import CAPTURE_LISTENERS
from engine.store import queue
from tests.conftest import wait_for
from tests.graphs import extracting

pytestmark = pytest.mark.graph

TURNS = ["I moved to Denver with Lyra last spring.", "Lyra likes the Denver mountains."]
# What each server is asked in, call by call: (the first call, every later one), and what
# is remembered for it. A llama.cpp server says who it is in /models; llama-cpp-python's
# (owned_by "me") refuses json_schema once; the others take json_schema.
EXPECTED = {
    "llama-server": ("json_object+schema", "json_object+schema", "json_object_schema"),
    "llama-server-2024": ("json_object+schema", "json_object+schema", "json_object_schema"),
    "llama-cpp-python": ("json_schema", "json_object+schema", "json_object_schema"),
    "ollama": ("json_schema", "json_schema", None),
    "vllm": ("json_schema", "json_schema", None),
    "lmstudio": ("json_schema", "json_schema", None),
}


@pytest.fixture(scope="module")
def falkor(tmp_path_factory):
    with FalkorServer(tmp_path_factory.mktemp("graph")) as server:
        yield {"graph_backend": "falkordb", "graph_url": f"unix://{server.socket_path}"}


@pytest.fixture
def start(tmp_path, falkor):
    """start(stub, **settings) -> (graph, db, entity, settings): the queue's workers
    extracting through `stub` with no response-format setting, on data in tmp_path (the
    same each call: a second call is the service restarted)."""
    policy = queue.Policy(poll_s=0.02, backoff_initial_s=0.05, backoff_max_s=0.2)
    with extracting(policy) as started:

        def start(stub: StubLLM, **overrides):
            settings = Settings(
                data_dir=tmp_path / "data",
                **falkor,
                llm_provider="openai_compatible",
                llm_base_url=stub.url,
                llm_model=stub.model,
                llm_timeout_s=5,
                **overrides,
            )
            return (*started(settings), settings)

        yield start


def extracted(graph, db, entity: str) -> dict:
    """Record an episode, wait for its job to end, and say how it ended."""
    events = [{"channel": "terminal", "author": "Jeff", "content": t} for t in TURNS]
    parsed = capture.parse_events(events, max_batch=50, max_content_bytes=10**5)
    capture.Capture(db, CAPTURE_LISTENERS).record(entity, parsed)
    (uuid,) = episodes.close_windows(db, episodes.Window(), force=True)

    def job() -> dict:
        row = db.conn.execute(
            "SELECT state, attempts, last_error FROM jobs WHERE key = ?", (uuid,)
        ).fetchone()
        return dict(row)

    wait_for(lambda: job()["state"] in ("done", "dead"), 90, "the episode's job to end")
    return {"uuid": uuid, **job()}


def traced(graph, db, entity: str, uuid: str) -> list:
    """The episode's facts about Denver, each traced to the episode's events."""
    assert graph.store.episode_uuids(entity) == [uuid]
    found = texture.search(graph, db, entity, texture.SearchQuery(query="Denver mountains"))
    assert found.status == "ok", found
    uids = [
        r[0]
        for r in db.conn.execute(
            "SELECT event_uid FROM events WHERE entity = ? ORDER BY id", (entity,)
        )
    ]
    assert [(f.event_uids, f.episodes) for f in found.facts] == [(uids, [uuid])] * len(found.facts)
    return [f for f in found.facts if "Denver" in f.fact]


def doctor(data_dir, **env: str) -> str:
    """`pps doctor`'s llm line, as a person runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "pps.cli", "doctor", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, "PPS_PORT": "9", "GRAPH_BACKEND": "none", **env},
        timeout=120,
    )
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("llm ")]
    return line


def remembered_in(db, stub: StubLLM) -> str | None:
    row = db.conn.execute(
        "SELECT dialect FROM llm_dialects WHERE endpoint = ?", (dialect.endpoint(stub.url),)
    ).fetchone()
    return row[0] if row else None


@pytest.mark.parametrize("server", sorted(EXPECTED))
def test_each_servers_dialect_fills_the_graph_with_no_setting(start, server, caplog):
    first, then, kept = EXPECTED[server]
    with StubLLM(server=server) as stub, caplog.at_level(logging.WARNING, "pps.llm"):
        graph, db, entity, _ = start(stub)
        job = extracted(graph, db, entity)
        assert job["state"] == "done" and job["attempts"] == 1, job
        assert traced(graph, db, entity, job["uuid"])
        assert stub.formats[0] == first and set(stub.formats[1:]) == {then}, stub.formats
        # One refused call at most, counted against the budget like any other.
        refused = 1 if first != then else 0
        assert stub.faults_served["response_format"] == refused
        assert budget.usage_today(db, entity)["calls"] == stub.calls
        assert remembered_in(db, stub) == kept
        said = [r.getMessage() for r in caplog.records if "for structured output" in r.message]
        assert len(said) == (1 if kept else 0), said


def test_a_learned_dialect_is_kept_across_a_restart(start):
    with StubLLM(server="llama-cpp-python") as stub:
        graph, db, entity, settings = start(stub)
        assert extracted(graph, db, entity)["state"] == "done"
        assert stub.faults_served["response_format"] == 1
        learned = dialect.remembered(settings)
        assert learned is not None and learned.dialect == "json_object_schema"
        assert "Input should be 'text' or 'json_object'" in learned.evidence
        stub.reset_counts()
        dialect._known.clear()  # a new process knows only what the database holds
        graph, db, entity, _ = start(stub)
        job = extracted(graph, db, entity)
        assert job["state"] == "done" and traced(graph, db, entity, job["uuid"])
        assert set(stub.formats) == {"json_object+schema"}, stub.formats  # asked so at once
        assert stub.faults_served["response_format"] == 0


def test_a_server_that_now_refuses_json_object_is_spoken_to_in_json_schema(start):
    """The endpoint learnt json_object_schema, then another server (LM Studio) answers on
    the same address: its refusal names json_schema, and that is learnt in turn."""
    with StubLLM(server="llama-cpp-python") as stub:
        graph, db, entity, _ = start(stub)
        assert extracted(graph, db, entity)["state"] == "done"
        stub.server = "lmstudio"
        stub.reset_counts()
        job = extracted(graph, db, entity)
        assert job["state"] == "done" and job["attempts"] == 1, job
        assert stub.formats[0] == "json_object+schema"
        assert set(stub.formats[1:]) == {"json_schema"}, stub.formats
        assert remembered_in(db, stub) == "json_schema"


def test_the_setting_is_obeyed_and_nothing_is_learned(start):
    with StubLLM(server="llama-cpp-python") as stub:
        graph, db, entity, _ = start(stub, llm_response_format="json_schema", queue_max_attempts=2)
        job = extracted(graph, db, entity)
        assert job["state"] == "dead" and "literal_error" in job["last_error"], job
        assert set(stub.formats) == {"json_schema"} and remembered_in(db, stub) is None


def test_an_error_that_names_no_types_is_retried_not_learned(start):
    with StubLLM(server="ollama") as stub:
        stub.fail("500", times=2)
        graph, db, entity, _ = start(stub)
        job = extracted(graph, db, entity)
        assert job["state"] == "done" and job["attempts"] == 3, job
        assert set(stub.formats) == {"json_schema"} and remembered_in(db, stub) is None


@pytest.mark.process
def test_doctor_shows_the_dialect(start):
    with StubLLM(server="llama-cpp-python") as stub:
        graph, db, entity, settings = start(stub)
        env = {"LLM_PROVIDER": "openai_compatible", "LLM_BASE_URL": stub.url}
        assert "response_format=json_schema (auto: none refused yet)" in doctor(
            settings.data_dir, **env
        )
        assert extracted(graph, db, entity)["state"] == "done"
        llm = doctor(settings.data_dir, **env)
        assert " ok " in llm and "response_format=json_object_schema (learned " in llm, llm
        assert "Input should be 'text' or 'json_object'" in llm
        forced = doctor(settings.data_dir, **env, PPS_LLM_RESPONSE_FORMAT="json_object")
        assert "response_format=json_object (PPS_LLM_RESPONSE_FORMAT)" in forced
