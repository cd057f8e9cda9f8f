"""The commands a new user runs beside a running server (the real app on real HTTP with
its embedded FalkorDB): `pps replay graph` with no LLM says why at once, `pps doctor`
gives one verdict per component, and a 404 names the input that asked."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest
from stub_llm import StubLLM

from tests.conftest import AppServer, settings_env, wait_for
from tests.test_graph_http import Entity, llm_settings


def pps(server: AppServer, *args: str, **env: str) -> subprocess.CompletedProcess:
    """`pps ARGS --data-dir` of the server, in a process of its own, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "pps.cli", *args, "--data-dir", str(server.data_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, **settings_env(**server.overrides), **env},
        timeout=120,  # only so that a hang fails instead of waiting forever
    )


@pytest.fixture(scope="module")
def no_llm(tmp_path_factory, processes, falkordb):
    """A server with its graph and no extraction LLM: graph jobs wait."""
    with AppServer(tmp_path_factory.mktemp("no-llm") / "data", **llm_settings(None)) as server:
        yield server


def entity(server: AppServer, name: str) -> Entity:
    """An entity made by `pps entity create` in its own process, as a user makes one. (Not
    in this process: a second Database on the server's file in the server's process drops
    the server's SQLite locks when it closes the file, and another process's SQLite then
    takes the server's connections for gone.)"""
    made = pps(server, "entity", "create", name)
    assert made.returncode == 0, made.stderr
    created = Entity(server, name, create=False)
    created.token = made.stdout.strip()
    return created


def test_replay_without_an_llm_says_why_instead_of_waiting(no_llm):
    lyra = entity(no_llm, "lyra")
    lyra.say("Lyra moved to Denver.", session="one")
    lyra.say("Jeff works at Lockheed.", session="two")
    wait_for(lambda: lyra.stats()["jobs"]["waiting"], 15, "the graph queue to wait")

    replay = pps(no_llm, "replay", "graph", "--entity", "lyra")
    assert replay.returncode == 1
    assert "0 of 2 episodes replayed by the running server" in replay.stdout
    assert "the replay waits: lyra: no extraction LLM is configured" in replay.stderr
    assert "LLM_PROVIDER" in replay.stderr


def test_a_404_names_the_input_that_asked(no_llm):
    vega = entity(no_llm, "vega")
    with vega.http as http:
        missing = http.get("/v1/texture/explore", params={"entity_name": "Nobody"})
    assert missing.status_code == 404
    assert missing.json()["problems"] == [
        {"field": "entity_name", "problem": "no entity named 'Nobody' in the graph"}
    ]


def test_doctor_gives_one_verdict_per_component_beside_a_running_server(tmp_path, processes):
    with StubLLM() as stub, AppServer(tmp_path / "data", **llm_settings(stub)) as server:
        stub.set_mode("garbage")  # the endpoint answers /models, but no usable JSON
        rigel = entity(server, "rigel")
        rigel.say("Rigel sails to Madeira.")
        health = wait_for(
            lambda: (h := httpx.get(f"{server.url}/health").json())["components"]["llm"]["status"]
            == "failing" and h, 30, "the server to see the LLM failing",
        )  # fmt: skip
        error = health["components"]["llm"]["error"]

        doctor = pps(server, "doctor", PPS_PORT="9")  # the lock names the server's port
        assert doctor.returncode == 1, doctor.stdout + doctor.stderr
        names = [line.split()[0] for line in doctor.stdout.splitlines()]
        assert names == [
            "data", "database", "service", "graph", "llm", "embeddings", "reranker", "workers",
            "files", "summaries", "backup",
        ], names  # fmt: skip
        lines = {line.split()[0]: line for line in doctor.stdout.splitlines()}
        assert "running" in lines["service"] and server.url in lines["service"]
        assert " failing " in lines["llm"] and error.split(":")[0] in lines["llm"]
        assert "the endpoint answers GET /models" in lines["llm"]
        assert " ok " in lines["graph"] and "falkordb (embedded)" in lines["graph"]
