"""The stack as a user starts it: the README's Docker Compose lines, run as printed in a
fresh copy of the checkout with `.env` made from `.env.example`, then the walk-through
against it, an episode through Neo4j, the stack's promises (loopback only, a non-root
server, a 0700 volume, no secret in `docker inspect`), Neo4j stopped under a running pps,
and the data through a SIGKILL and a `down`/`up`.

Needs a Docker engine and compose 2.24+ (`tests/containers/setup` makes both where they
are missing, with stand-in images where none can be pulled); skipped without them, except
under PPS_REQUIRE_CONTAINERS=1 (CI). The only things changed from the README: the ports
(free ones, in `.env`) and the extraction LLM (the stub, reached through
host.docker.internal, in `.env`), and the compose project's name.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from stub_llm import StubLLM
from test_graph_http import FAST, TURNS, Entity

from pps.process import free_port
from tests.conftest import settings_env, unless_required, wait_for

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "pps-test-stack"
LLM_KEY = "stack-test-llm-key"

pytestmark = pytest.mark.containers


def readme_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## With Docker Compose", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```sh\n(.*?)```", section, re.S)
    return block.strip().splitlines()


def engine_problem() -> str | None:
    """Why the stack cannot run here, or None."""
    if not shutil.which("docker"):
        return "no docker command"
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, timeout=20)
        version = subprocess.run(
            ["docker", "compose", "version", "--short"], capture_output=True, text=True
        )
    except subprocess.TimeoutExpired:
        return "the Docker engine does not answer"
    if info.returncode != 0:
        return "no Docker engine answers (tests/containers/setup starts one)"
    found = tuple(int(part) for part in re.findall(r"\d+", version.stdout)[:2])
    if version.returncode != 0 or found < (2, 24):
        return f"docker compose is not 2.24 or newer: {version.stdout.strip() or 'missing'}"
    return None


def docker_gateway() -> str:
    """This machine's address on Docker's default bridge (docker0): what host-gateway is
    in a container, so what host.docker.internal reaches there. Nothing else reaches it."""
    bridge = subprocess.run(
        [
            "docker",
            "network",
            "inspect",
            "bridge",
            "-f",
            '{{index .Options "com.docker.network.bridge.name"}}',
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    shown = subprocess.run(
        ["ip", "-4", "-o", "addr", "show", bridge], capture_output=True, text=True, check=True
    ).stdout
    (address,) = re.findall(r"inet (\d+\.\d+\.\d+\.\d+)/", shown)
    return address


@dataclass
class Stack:
    folder: Path
    url: str
    token: str
    password: str
    stub: StubLLM
    up_s: float

    def compose(self, *args: str, timeout: float = 300, check: bool = True) -> str:
        done = subprocess.run(
            ["docker", "compose", *args],
            cwd=self.folder,
            env=compose_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check:
            assert done.returncode == 0, f"docker compose {' '.join(args)}: {done.stderr}"
        return done.stdout

    def container(self, service: str) -> str:
        return self.compose("ps", "-q", service).strip()

    def health(self, service: str) -> str:
        ids = self.container(service)
        if not ids:
            return "gone"
        out = subprocess.run(
            ["docker", "inspect", "-f", "{{.State.Health.Status}}", ids],
            capture_output=True,
            text=True,
        )
        return out.stdout.strip()

    def client(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def entity(self, name: str) -> Entity:
        created = self.compose("exec", "-T", "pps", "pps", "entity", "create", name)
        entity = Entity(self, name, create=False)
        entity.token = created.strip()
        return entity


def compose_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PPS_", "COMPOSE_"))}
    return {**env, "COMPOSE_PROJECT_NAME": PROJECT}


def fresh_checkout(folder: Path) -> None:
    """What a clone would hold, with this checkout's changes: the files git tracks or
    would, none it ignores."""
    names = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, names):
        source = ROOT / name.decode()
        if source.is_file():
            target = folder / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def set_lines(env_file: Path, values: dict[str, str]) -> None:
    """Set `NAME=value` lines in a .env, as a user editing it would."""
    lines = env_file.read_text().splitlines()
    rest = dict(values)
    for i, line in enumerate(lines):
        name = line.split("=", 1)[0]
        if name in rest:
            lines[i] = f"{name}={rest.pop(name)}"
    env_file.write_text("\n".join([*lines, *(f"{k}={v}" for k, v in rest.items())]) + "\n")


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    unless_required(engine_problem(), "PPS_REQUIRE_CONTAINERS")
    folder = tmp_path_factory.mktemp("checkout")
    fresh_checkout(folder)
    stub = StubLLM(host=docker_gateway()).start()
    stub.api_key = LLM_KEY  # answered only with the key: proves the secret reached pps
    port = free_port()
    ours = {
        "PPS_PORT": str(port),
        "NEO4J_HTTP_PORT": str(free_port()),
        "NEO4J_BOLT_PORT": str(free_port()),
        **settings_env(**{k: v for k, v in FAST.items() if not k.startswith("graph_")}),
        "PPS_GRAPH_EPISODE_IDLE_S": "0.3",
        "LLM_PROVIDER": "openai_compatible",
        "LLM_BASE_URL": f"http://host.docker.internal:{stub.url.rsplit(':', 1)[1]}",
        "LLM_MODEL": "stub",
        "LLM_API_KEY": LLM_KEY,
    }
    lines = readme_lines()
    up = next(i for i, line in enumerate(lines) if line.startswith("docker compose up"))
    script = [
        "set -e",
        "exec 3>&1 1>&2",  # the commands' output apart from the token, printed last
        *lines[:up],
        *(f"echo '{name}={value}' >> .env" for name, value in ours.items()),
        "docker compose down --volumes --remove-orphans",  # a run killed before its end
        *lines[up:],
        'printf "%s" "$TOKEN" >&3',
    ]
    try:
        start = time.monotonic()
        done = subprocess.run(
            ["bash", "-c", "\n".join(script)],
            cwd=folder,
            env=compose_env(),
            capture_output=True,
            text=True,
            timeout=900,
        )
        up_s = time.monotonic() - start
        assert done.returncode == 0, done.stderr[-4000:]
        password = re.search(r"^NEO4J_PASSWORD=(.+)$", (folder / ".env").read_text(), re.M)[1]
        yield Stack(folder, f"http://127.0.0.1:{port}", done.stdout, password, stub, up_s)
    finally:
        subprocess.run(
            ["docker", "compose", "down", "--volumes", "--remove-orphans", "--timeout", "20"],
            cwd=folder,
            env=compose_env(),
            capture_output=True,
            timeout=300,
        )
        stub.stop()


def test_compose_reads_the_file_and_refuses_it_without_a_password(tmp_path):
    """`docker compose config`: the file as this compose reads it, with .env.example's
    settings; without NEO4J_PASSWORD it stops before anything starts, naming it."""
    unless_required(engine_problem(), "PPS_REQUIRE_CONTAINERS")
    shutil.copy(ROOT / "compose.yaml", tmp_path)
    (tmp_path / "Dockerfile").touch()
    shutil.copy(ROOT / ".env.example", tmp_path / ".env")

    def config() -> subprocess.CompletedProcess:
        return subprocess.run(
            ["docker", "compose", "config", "--format", "json"],
            cwd=tmp_path,
            env=compose_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )

    read = config()
    assert read.returncode == 0, read.stderr
    project = json.loads(read.stdout)
    assert project["configs"]["neo4j_auth"]["content"] == "neo4j/change-me-to-something-long"
    assert project["services"]["pps"]["environment"]["NEO4J_PASSWORD"] == ""
    set_lines(tmp_path / ".env", {"NEO4J_PASSWORD": ""})
    refused = config()
    assert refused.returncode != 0 and "set NEO4J_PASSWORD in .env" in refused.stderr


def test_up_from_a_fresh_checkout_makes_both_services_healthy(stack):
    assert stack.health("neo4j") == "healthy" and stack.health("pps") == "healthy"
    assert re.fullmatch(r"pps_[\w-]{20,}", stack.token), stack.token
    print(f"\n`docker compose up -d --build --wait` to both healthy: {stack.up_s:.0f} s")
    health = httpx.get(f"{stack.url}/health", timeout=10).json()
    assert health["components"]["graph"] == {"backend": "neo4j", "status": "ok"}


def test_the_walk_through_against_the_stack(stack):
    """The README's walk-through, each step: an event, search, recall, MCP, the Claude Code
    http hook; and `pps doctor` in the container names the Neo4j."""
    with stack.client() as http:
        event = {
            "event_uid": "discord-1001",
            "channel": "discord",
            "author": "jeff",
            "content": "go put on that comfy robe",
            "created_at": "2026-01-04T14:30:00+02:00",
        }
        stored = http.post("/v1/events", json=event)
        assert stored.json()["stored"] == 1, stored.text
        assert http.post("/v1/events", json=event).json()["duplicates"] == 1
        found = http.post("/v1/search", json={"query": "what did jeff say about the robe?"})
        assert "comfy robe" in found.text, found.text
        recall = http.post("/v1/recall", json={"context": "the robe", "channel": "terminal"})
        assert recall.status_code == 200 and "comfy robe" in recall.json()["context"]
        listed = http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"accept": "application/json, text/event-stream"},
        )
        assert listed.status_code == 200, listed.text
        assert '"ambient_recall"' in listed.text
        session = str(uuid.uuid4())
        prompt = {
            "session_id": session,
            "transcript_path": str(stack.folder / f"{session}.jsonl"),
            "cwd": str(stack.folder),
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Is the comfy robe still on?",
        }
        answer = http.post("/v1/hooks/claude-code", json=prompt)
        assert answer.status_code == 200, answer.text
        assert "comfy robe" in answer.json()["hookSpecificOutput"]["additionalContext"]
        turns = http.get("/v1/events", params={"channel": "terminal:claude"}).json()["events"]
        assert [t["content"] for t in turns] == [prompt["prompt"]]
    doctor = stack.compose("exec", "-T", "pps", "pps", "doctor")
    (graph,) = [row for row in doctor.splitlines() if row.split()[:1] == ["graph"]]
    assert graph.split()[1] == "ok" and "backend=neo4j" in graph.split(", ")[0], doctor


def test_an_episode_reaches_neo4j_through_the_llm_and_its_facts_trace_to_their_events(stack):
    lyra = stack.entity("lyra-graph")
    uids = lyra.say(*TURNS)
    stats = lyra.ingested()
    assert stats["backend"] == "neo4j" and stats["graph"]["facts"] > 0
    facts = lyra.search("Denver mountains", limit=5).json()["facts"]
    assert facts and all(f["event_uids"] == uids for f in facts)
    assert stack.stub.calls > 0


def test_only_loopback_is_bound_the_server_is_not_root_and_no_secret_is_in_inspect(stack):
    env = (stack.folder / ".env").read_text()
    # The last line of each wins, as in compose (the test's are appended).
    names = ("PPS_PORT", "NEO4J_HTTP_PORT", "NEO4J_BOLT_PORT")
    ports = {re.findall(rf"^{name}=(\d+)$", env, re.M)[-1] for name in names}
    listening = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, check=True)
    bound = {
        (local.rsplit(":", 1)[0], local.rsplit(":", 1)[1])
        for local in (line.split()[3] for line in listening.stdout.splitlines())
        if local.rsplit(":", 1)[1] in ports
    }
    assert {port for _, port in bound} == ports, listening.stdout
    assert {address for address, _ in bound} == {"127.0.0.1"}, bound

    assert stack.compose("exec", "-T", "pps", "id", "-u").strip() not in ("", "0")
    assert stack.compose("exec", "-T", "pps", "stat", "-c", "%a", "/data").strip() == "700"

    ids = [stack.container("pps"), stack.container("neo4j")]
    inspect = subprocess.run(["docker", "inspect", *ids], capture_output=True, text=True)
    assert inspect.returncode == 0
    for secret in (stack.password, LLM_KEY):
        assert secret not in inspect.stdout
    for config in json.loads(inspect.stdout):
        names = {item.split("=", 1)[0]: item.split("=", 1)[1] for item in config["Config"]["Env"]}
        assert not names.get("NEO4J_PASSWORD") and not names.get("LLM_API_KEY")


def test_neo4j_stopped_under_a_running_pps_recall_answers_and_the_graph_comes_back(stack):
    """Recall answers all along; its first reads of the stopped graph run out of their
    budget (`timeout`), then the graph is known to be down and said so at once."""
    rosa = stack.entity("rosa-graph-down")
    rosa.say(*TURNS)  # an episode in its graph: recall reads no graph that holds nothing
    rosa.ingested()
    with rosa.http as http:
        robe = {"channel": "discord", "author": "jeff", "content": "go put on that comfy robe"}
        assert http.post("/v1/events", json=robe).status_code == 200

        def graph_layer() -> dict:
            recall = http.post("/v1/recall", json={"context": "the robe"})
            assert recall.status_code == 200, recall.text
            answer = recall.json()
            assert "comfy robe" in answer["context"], answer
            return answer["manifest"]["graph"]

        # A new entity's first graph read makes its indexes: it may outlast the budget.
        wait_for(lambda: graph_layer()["status"] in ("ok", "empty"), 60, "the graph layer")
        stack.compose("stop", "neo4j")
        try:
            down = wait_for(
                lambda: (g := graph_layer())["status"] == "down" and g, 60, "graph `down`"
            )
            assert "does not answer" in down["detail"], down
            health = httpx.get(f"{stack.url}/health", timeout=30).json()
            assert health["components"]["graph"]["status"] == "down", health
        finally:
            stack.compose("start", "neo4j")
        wait_for(lambda: stack.health("neo4j") == "healthy", 180, "neo4j healthy again")
        wait_for(lambda: graph_layer()["status"] in ("ok", "empty"), 60, "the graph back")


def test_acknowledged_events_survive_a_sigkill_and_a_down_then_up(stack):
    nexus = stack.entity("nexus-durable")
    with nexus.http as http:
        events = [
            {"channel": "discord", "author": "jeff", "content": f"note {i}"} for i in range(50)
        ]
        acked = [e["event_uid"] for e in http.post("/v1/events", json=events).json()["events"]]
    assert len(acked) == 50

    def stored() -> list[str]:
        with nexus.http as http:
            got = http.get("/v1/events", params={"channel": "discord", "limit": 500})
            return [e["event_uid"] for e in got.json()["events"]]

    def healthy_again(what: str) -> None:
        wait_for(lambda: stack.health("pps") == "healthy", 180, what)
        wait_for(lambda: _answers(stack.url), 60, f"{what}: /health answering")

    # A crash: the container killed, as the kernel's OOM killer would; its restart policy
    # starts it again.
    pid = subprocess.run(
        ["docker", "inspect", "-f", "{{.State.Pid}}", stack.container("pps")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run(["kill", "-KILL", pid], check=True)
    healthy_again("pps restarted by its policy after SIGKILL")
    assert sorted(stored()) == sorted(acked)

    stack.compose("down", "--timeout", "20")
    stack.compose("up", "-d", "--wait", timeout=600)
    healthy_again("pps after down and up")
    assert sorted(stored()) == sorted(acked)


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False
