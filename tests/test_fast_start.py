"""A start in seconds: the server answers while its slow parts load (engine.runtime), and
`pps doctor` and `pps check` ask a running server instead of loading their own copies."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading

import httpx

from engine.kernel.config import settings_env
from engine.search import embeddings
from tests.conftest import AppServer, connect, create_entity, wait_for

STUBBORN = "import signal, sys\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nsys.stdin.read()\n"
"""A process that outlives SIGTERM until its stdin closes: a graph server left over from an
engine killed with SIGKILL, which the next start stops before starting its own."""


def test_health_says_starting_while_the_graph_starts_and_nothing_waits_for_it(
    tmp_path, processes, falkordb
):
    data_dir = tmp_path / "data"
    token = create_entity(data_dir, "ines")
    (data_dir / "graph").mkdir(mode=0o700)
    leftover = subprocess.Popen(
        [sys.executable, "-c", STUBBORN, str(data_dir / "graph")], stdin=subprocess.PIPE
    )
    (data_dir / "graph" / "falkordb.pid").write_text(str(leftover.pid))
    server = AppServer(data_dir, graph_backend="falkordb", graph_url="", llm_provider="none")
    server.wait_loaded = False
    try:
        with server, connect(server, token) as client:
            health = httpx.get(f"{server.url}/health", timeout=10).json()
            assert health["status"] == "starting", health
            assert health["components"]["graph"]["status"] == "starting"
            assert health["components"]["database"]["status"] == "ok"
            # What needs the graph says it is starting, at once, and the rest answers.
            stored = client.post(
                "/v1/events",
                json={"channel": "terminal", "event_type": "user", "content": "kiwi allergy"},
            )
            assert stored.status_code in (200, 201), stored.text
            recall = client.post("/v1/recall", json={"context": "what is Ines allergic to?"})
            assert recall.status_code == 200, recall.text
            graph = recall.json()["manifest"]["graph"]
            assert graph["status"] == "down" and "starting" in graph["detail"], graph
            facts = client.get("/v1/texture/facts")
            assert "starting" in facts.text, facts.text

            leftover.stdin.close()  # the leftover goes; the graph starts
            leftover.wait()
            health = wait_for(
                lambda: _settled(httpx.get(f"{server.url}/health", timeout=10).json()),
                timeout=120,  # FalkorDB and Graphiti start: seconds on a busy machine
                what="/health to settle once the graph has started",
            )
            assert health["status"] == "ok", health
            assert server.app.state.service.runtime.loaded()
    finally:
        leftover.kill()
        leftover.wait()


def _settled(health: dict) -> dict | None:
    return None if health["status"] == "starting" else health


MODELS_AND_SDKS = ("fastembed", "onnxruntime", "graphiti_core", "openai", "anthropic")


def _run_in_a_process(args: list[str], env: dict[str, str]) -> tuple[int, str, list[str]]:
    """`pps ARGS` in a fresh process: its exit code, its output, the modules it loaded."""
    probe = (
        "import json, sys\n"
        "from pps.cli import app\n"
        "code = 0\n"
        "try:\n"
        f"    app({args!r})\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "print(json.dumps([code, sorted({m.split('.')[0] for m in sys.modules})]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )
    *output, last = done.stdout.splitlines()
    code, loaded = json.loads(last)
    return code, "\n".join(output) + done.stderr, loaded


def test_doctor_asks_the_running_server_once_and_loads_no_model(tmp_path, processes):
    with AppServer(tmp_path / "data", llm_provider="none") as server:
        env = settings_env(**server.overrides)
        before = len(server.requests)
        code, output, loaded = _run_in_a_process(
            ["doctor", "--data-dir", str(server.data_dir)], env
        )
        asked = server.requests[before:]
    assert code == 0, output
    assert asked == ["GET /health"], asked
    assert not set(loaded) & set(MODELS_AND_SDKS), sorted(set(loaded) & set(MODELS_AND_SDKS))
    lines = {line.split()[0]: line for line in output.splitlines() if line.strip()}
    assert " running " in lines["service"], output
    assert " ok " in lines["embeddings"] and "dim=384" in lines["embeddings"], output
    assert "llm" in lines and "graph" in lines, output
    assert "workers" in lines and "summaries" in lines and "backup" in lines, output


def test_check_asks_the_running_server_and_only_the_data_dirs_owner_may(tmp_path, processes):
    with AppServer(tmp_path / "data") as server:
        ines = create_entity(server.data_dir, "ines")
        create_entity(server.data_dir, "jules")
        env = settings_env(**server.overrides)
        before = len(server.requests)
        code, output, loaded = _run_in_a_process(
            ["check", "--json", "--data-dir", str(server.data_dir)], env
        )
        asked = server.requests[before:]
        # An entity's token is no key to everyone's report; only the lock file's is.
        with connect(server, ines) as client:
            refused = client.get("/v1/operator/check")
        with connect(server, "not-the-key") as stranger:
            unknown = stranger.get("/v1/operator/check")
    assert code == 0, output
    assert asked == ["GET /v1/operator/check"], asked
    assert not set(loaded) & set(MODELS_AND_SDKS), sorted(set(loaded) & set(MODELS_AND_SDKS))
    report = json.loads(output[: output.rindex("}") + 1])
    assert sorted(e["entity"] for e in report["entities"]) == ["ines", "jules"]
    assert refused.status_code == 403, refused.text
    assert "jules" not in refused.text
    assert unknown.status_code == 401, unknown.text


def test_check_and_doctor_work_from_the_files_with_no_server(tmp_path, processes):
    data_dir = tmp_path / "data"
    create_entity(data_dir, "ines")
    env = settings_env(graph_backend="none", llm_provider="none", port=9)
    code, output, _ = _run_in_a_process(["check", "--data-dir", str(data_dir)], env)
    assert code == 0, output
    assert "ines: 0 events" in output and "consistent (1 entities" in output, output
    code, output, _ = _run_in_a_process(["doctor", "--data-dir", str(data_dir)], env)
    assert code == 0, output
    assert "not running" in output and "dim=384" in output, output


def test_search_and_recall_rank_by_words_while_the_model_loads_and_never_wait(tmp_path):
    """The model is still loading (here: another loader holds its load, as a first query
    would have before the server loaded it at its start): queries go on without it."""
    model = "a-model-still-loading"
    release = threading.Event()

    def slow_load():
        release.wait(120)
        raise RuntimeError("this model never loads")

    loader = threading.Thread(target=_load_quietly, args=(model, slow_load), daemon=True)
    loader.start()
    wait_for(lambda: embeddings.loading(model) is not None, what="the load to begin")
    data_dir = tmp_path / "data"
    token = create_entity(data_dir, "ines")
    server = AppServer(data_dir, embedding_model=model, search_rerank=0)
    server.wait_loaded = False
    try:
        with server, connect(server, token) as client:
            try:
                _rank_by_words_meanwhile(server, client)
            finally:
                release.set()  # before the server stops: its start waits for the load
            health = wait_for(
                lambda: _settled(httpx.get(f"{server.url}/health", timeout=10).json()),
                what="/health to settle once the load has failed",
            )
            assert health["components"]["embeddings"]["status"] == "down", health
    finally:
        release.set()
        loader.join(30)


def _rank_by_words_meanwhile(server, client) -> None:
    health = httpx.get(f"{server.url}/health", timeout=10).json()
    assert health["status"] == "starting", health
    assert health["components"]["embeddings"]["status"] == "starting", health
    stored = client.post(
        "/v1/events",
        json={"channel": "terminal", "event_type": "user", "content": "kiwi allergy"},
    )
    assert stored.status_code in (200, 201), stored.text
    found = client.post("/v1/search", json={"query": "kiwi", "tiers": "all"}).json()
    assert found["fallback"] == "bm25", found
    assert [r["text"] for r in found["results"]][:1] == ["kiwi allergy"], found
    recall = client.post("/v1/recall", json={"context": "kiwi allergy"}).json()
    turns = recall["manifest"]["turns"]
    assert turns["status"] == "ok" and "loading" in turns["detail"], turns


def _load_quietly(model: str, load) -> None:
    with contextlib.suppress(embeddings.Unavailable):
        embeddings.load_once(model, f"embedding model {model!r}", load)
