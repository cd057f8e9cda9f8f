"""compose.yaml's pps service, run without Docker: `pps serve` as a real process with the
environment compose gives it (read from compose.yaml itself), against a real Neo4j 5.26
community (the `neo4j_server` fixture, tests/neo4j) standing in for compose's `neo4j`
service. One episode end to end over REST, then /health and `pps doctor` name the Neo4j
graph. What differs from the container, and only that: the Neo4j's address (compose's
`neo4j:7687` is the launcher's 127.0.0.1 port), the data dir (compose's `/data` volume is
the test's folder), the port and the bind address (below), and the stub LLM's settings
with fast episode and queue timings, which compose leaves to `.env`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import yaml
from test_graph_http import TURNS, Entity, llm_settings

from engine.kernel.config import Settings
from pps.process import ServerProcess
from tests.conftest import create_entity, settings_env

ROOT = Path(__file__).resolve().parent.parent
SUBSTITUTION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)[^}]*\}")
GRAPH = {"GRAPH_BACKEND", "GRAPH_URL", "NEO4J_USER", "NEO4J_PASSWORD"}


def compose_pps() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]["pps"]


def compose_environment(neo4j_server, data_dir: Path) -> dict[str, str]:
    """services.pps.environment as compose would hand it to the container, pointed at the
    launcher: `${NEO4J_PASSWORD:?...}` is the launcher's password (compose reads it from
    .env), `neo4j:7687` its 127.0.0.1 port, `/data` the test's data dir."""
    given = {"NEO4J_PASSWORD": neo4j_server.password}

    def substitute(value: str) -> str:
        unknown = set(SUBSTITUTION.findall(value)) - set(given)
        assert not unknown, f"compose.yaml substitutes {unknown}: give the test a value"
        return SUBSTITUTION.sub(lambda m: given[m[1]], value)

    env = {name: substitute(str(value)) for name, value in compose_pps()["environment"].items()}
    assert set(env) >= GRAPH, f"compose no longer gives pps {GRAPH - set(env)}"
    assert env["GRAPH_BACKEND"] == "neo4j"
    url = urlsplit(env["GRAPH_URL"])
    assert url.netloc == "neo4j:7687", env["GRAPH_URL"]  # compose's neo4j service
    launcher = urlsplit(neo4j_server.uri)
    env["GRAPH_URL"] = urlunsplit(url._replace(netloc=launcher.netloc))
    assert env["PPS_DATA_DIR"] == "/data"  # the pps-data volume
    env["PPS_DATA_DIR"] = str(data_dir)
    return env


def without_settings(environ: dict[str, str]) -> dict[str, str]:
    """This shell's environment less every variable that sets a pps setting, so that only
    compose's and the test's reach the server."""
    names = set()
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        names |= set(alias.choices) if alias is not None else {f"PPS_{name.upper()}"}
    return {k: v for k, v in environ.items() if k not in names and not k.startswith("PPS_")}


def doctor(env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pps.cli", "doctor"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def line(report: str, name: str) -> str:
    (found,) = [row for row in report.splitlines() if row.split()[:1] == [name]]
    return found


def test_the_compose_environment_end_to_end_on_neo4j(tmp_path, neo4j_server, stub):
    neo4j_server.wipe()
    try:
        run_compose_pps(tmp_path, neo4j_server, stub)
    finally:
        neo4j_server.wipe()  # the session's Neo4j as found: other modules reuse names


def run_compose_pps(tmp_path: Path, neo4j_server, stub) -> None:
    stub.set_mode(None)
    data_dir = tmp_path / "data"
    compose = compose_environment(neo4j_server, data_dir)
    # Only what extraction needs on top: the stub LLM and fast timings (compose leaves the
    # LLM to .env). Never a graph setting: those are compose's.
    extraction = {
        k: v for k, v in llm_settings(stub).items() if k not in {"graph_backend", "graph_url"}
    }
    extra = settings_env(**extraction)
    assert not set(extra) & set(compose)
    env = {**without_settings(dict(os.environ)), **extra, **compose}

    # compose runs `pps serve --host 0.0.0.0 --port 8000 --allow-remote` (all interfaces
    # inside the container, published on 127.0.0.1 only); here the same command binds
    # loopback (the default) on a free port. No --data-dir: PPS_DATA_DIR decides, as in
    # the container. The working folder is the test's, so no .env of the checkout's is read.
    command = compose_pps()["command"]
    assert command[:2] == ["pps", "serve"] and "--data-dir" not in command
    log = tmp_path / "serve.log"
    server = ServerProcess(None, env=env, replace_env=True, cwd=tmp_path, log=log)
    server.start(timeout=120)
    try:
        lyra = Entity(server, "compose-lyra", create=False)
        lyra.token = create_entity(data_dir, lyra.name)
        uids = lyra.say(*TURNS)
        stats = lyra.ingested(timeout=90)
        assert stats["backend"] == "neo4j"
        assert stats["graph"]["episodes"] == 1 and stats["graph"]["facts"] > 0
        facts = lyra.search("Denver mountains", limit=5).json()["facts"]
        assert facts and all(f["event_uids"] == uids for f in facts)
        with lyra.http as http:
            episodes = http.get("/v1/texture/timeline", params={"limit": 5}).json()["episodes"]
        assert [e["event_uids"] for e in episodes] == [uids] and episodes[0]["facts"]

        health = httpx.get(f"{server.url}/health", timeout=10)
        assert health.status_code == 200
        graph = health.json()["components"]["graph"]
        assert graph["backend"] == "neo4j" and graph["status"] == "ok", graph

        # `pps doctor` beside the running server: its graph line is the server's /health.
        report = doctor(env, tmp_path)
        assert str(data_dir) in line(report, "data") and "PPS_DATA_DIR" in report
        assert line(report, "service").split()[1] == "running"
        assert line(report, "graph").split()[1:3] == ["ok", "backend=neo4j"], report
    finally:
        server.stop()
    assert server.proc.returncode is not None

    # With the server stopped, doctor connects to the Neo4j itself with compose's settings.
    report = doctor(env, tmp_path)
    assert line(report, "graph").split()[1:3] == ["ok", "backend=neo4j"], report
