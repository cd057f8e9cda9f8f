"""compose.yaml and the Dockerfile: the stack a user starts with `docker compose up`.

Read without Docker (tests/test_stack.py runs the stack itself): the compose file, with its
variables given their defaults as compose would, is checked against the Compose
specification (the `compose-spec` package) and for the properties that keep a self-hosted
memory private and durable: loopback-only ports, no secret written in it or handed to a
container as an environment variable, data on named volumes, pps waiting for a healthy
Neo4j, and a server that runs as a non-root user.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from pathlib import Path

import pytest
import yaml
from compose_spec import ComposeSpecification, PyCompose

from engine.kernel.config import Settings

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "compose.yaml"
DOCKERFILE = ROOT / "Dockerfile"

SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|KEY|AUTH")
SUBSTITUTION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)([^}]*)\}")
URL_WITH_CREDENTIALS = re.compile(r"://[^/@\s$]+:[^/@\s$]+@")


def interpolated(text: str) -> str:
    """compose.yaml's text as compose reads it with no variable set: `${X:-default}` is its
    default, `${X:?error}` (compose would stop) and `${X}` a placeholder."""

    def value(match: re.Match) -> str:
        modifier = match[2]
        return modifier[2:] if modifier.startswith(":-") else "given"

    return SUBSTITUTION.sub(value, text)


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(interpolated(COMPOSE.read_text()))


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose["services"]


def validate(document: dict) -> None:
    """Raise ValueError if `document` is not a valid Compose file.

    The pydantic model (ComposeSpecification) checks types but ignores unknown keys; the
    package's Rust parser (PyCompose) also rejects unknown keys, such as a `port:` typo. It
    knows no `host-gateway` (Docker's word for this machine's address in `extra_hosts`):
    it reads an address there instead.
    """
    ComposeSpecification.model_validate(document)
    text = json.dumps(document).replace(":host-gateway", ":172.17.0.1")
    PyCompose.from_json(text).validate()


def published_host_ip(port) -> str | None:
    """The host address a `ports:` entry publishes on; None means all interfaces."""
    if isinstance(port, dict):
        return port.get("host_ip")
    if isinstance(port, int | float):
        return None
    parts = port.split("/")[0].rsplit(":", 2)  # "[HOST:]PUBLISHED:TARGET[/PROTO]"
    return parts[0].strip("[]") if len(parts) == 3 else None


def mounts(service: dict) -> list[dict]:
    """The service's volumes in long syntax: {"type", "source", "target"}."""
    result = [{"type": "tmpfs", "source": None, "target": t} for t in _as_list(service, "tmpfs")]
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            result.append(volume)
            continue
        parts = volume.split(":")
        if len(parts) == 1:
            result.append({"type": "volume", "source": None, "target": parts[0]})
            continue
        kind = "bind" if parts[0].startswith(("/", ".", "~", "$")) else "volume"
        result.append({"type": kind, "source": parts[0], "target": parts[1]})
    return result


def environment(service: dict) -> dict[str, str | None]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, None) for item in env)
    return {name: None if value is None else str(value) for name, value in env.items()}


def command(service: dict) -> list[str]:
    cmd = service.get("command", [])
    return shlex.split(cmd) if isinstance(cmd, str) else [str(part) for part in cmd]


def _as_list(service: dict, key: str) -> list:
    value = service.get(key, [])
    return [value] if isinstance(value, str) else list(value)


def secret_problem(value: str | None) -> str | None:
    """Why a secret-named variable's value is not a pure `${...}` substitution, or None."""
    if value is None:
        return None  # passed through from the shell running compose
    found = SUBSTITUTION.findall(value)
    if not found:
        return "has no ${...} substitution"
    for name, modifier in found:
        if modifier and not modifier.startswith(("?", ":?")):
            return f"${{{name}{modifier}}} carries a literal default"
    literal = SUBSTITUTION.sub("", value)
    if not value.endswith("}") or not re.fullmatch(r"(?:[\w.-]*[/:])?", literal):
        return f"has literal text {literal!r} besides a user name prefix"
    return None


# ── The file is valid Compose ────────────────────────────────────────────────────────


def test_compose_file_follows_the_compose_spec(compose):
    validate(compose)


@pytest.mark.parametrize(
    "break_it",
    [
        pytest.param(lambda c: c["services"]["pps"].update(ports=12), id="ports-not-a-list"),
        pytest.param(lambda c: c["services"]["pps"].update(port=["8000"]), id="unknown-key"),
        pytest.param(
            lambda c: c["services"]["pps"]["depends_on"]["neo4j"].update(condition="ready"),
            id="bad-depends-on-condition",
        ),
    ],
)
def test_validation_rejects_a_broken_file(compose, break_it):
    broken = copy.deepcopy(compose)
    break_it(broken)
    with pytest.raises(ValueError):
        validate(broken)


# ── Nothing is reachable from outside this machine ──────────────────────────────────


@pytest.mark.parametrize(
    ("port", "host_ip"),
    [
        ("127.0.0.1:8000:8000", "127.0.0.1"),
        ("127.0.0.1::8000/tcp", "127.0.0.1"),
        ("[::1]:8000:8000", "::1"),
        ("0.0.0.0:8000:8000", "0.0.0.0"),
        ("8000:8000", None),
        ("8000", None),
        (8000, None),
        ({"target": 8000, "published": 8000}, None),
        ({"target": 8000, "published": 8000, "host_ip": "127.0.0.1"}, "127.0.0.1"),
    ],
)
def test_published_host_ip_reads_short_and_long_syntax(port, host_ip):
    assert published_host_ip(port) == host_ip


def test_every_published_port_binds_127_0_0_1_only(services):
    exposed = [
        f"{name}: {port!r} publishes on {published_host_ip(port) or 'all interfaces'}"
        for name, service in services.items()
        for port in service.get("ports", [])
        if published_host_ip(port) != "127.0.0.1"
    ]
    exposed += [
        f"{name}: network_mode host skips publishing"
        for name, service in services.items()
        if service.get("network_mode") == "host"
    ]
    assert not exposed, "ports must be published on 127.0.0.1 only:\n" + "\n".join(exposed)


def test_allow_remote_is_paired_with_a_loopback_only_publish(services):
    pps = services["pps"]
    args = command(pps)
    assert args[:2] == ["pps", "serve"], f"pps should run `pps serve`, runs {args}"
    assert "--allow-remote" in args, (
        f"pps binds all interfaces inside the container and refuses that without "
        f"--allow-remote: {args}"
    )
    ports = pps.get("ports", [])
    assert ports, "pps publishes no port, so nothing can reach it"
    wide = [port for port in ports if published_host_ip(port) != "127.0.0.1"]
    assert not wide, f"--allow-remote needs every pps publish on 127.0.0.1, not {wide}"


def secret_variables() -> set[str]:
    """Every variable that sets a secret setting of pps's (its SecretStr fields)."""
    names = set()
    for name, field in Settings.model_fields.items():
        if "SecretStr" in str(field.annotation):
            alias = field.validation_alias
            names |= set(alias.choices) if alias is not None else {f"PPS_{name.upper()}"}
    return names


def test_no_secret_is_written_inline(raw):
    problems = []
    for name, service in raw["services"].items():
        for var, value in environment(service).items():
            if value and URL_WITH_CREDENTIALS.search(value):
                problems.append(f"{name}: {var}={value!r} has credentials in a URL")
    for kind in ("configs", "secrets"):
        for name, made in (raw.get(kind) or {}).items():
            if "content" in made and (why := secret_problem(made["content"])):
                problems.append(f"{kind}.{name}: its content {why}")
    assert not problems, "secrets belong in .env, referenced as ${VAR}:\n" + "\n".join(problems)


def test_no_secret_reaches_a_container_as_an_environment_variable(services, compose):
    """`docker inspect` shows a container's environment: pps's secrets are blanked there
    (the env_file would pass them) and copied in as files named as their variables
    (engine.kernel.config.SECRETS_DIR); Neo4j reads its password from a file."""
    pps = services["pps"]
    env = environment(pps)
    secret = secret_variables()
    assert {"NEO4J_PASSWORD", "LLM_API_KEY", "PPS_TOKEN"} <= secret
    passed = {name: env.get(name) for name in secret if env.get(name) != ""}
    assert not passed, f"pps's environment passes these secrets on from .env: {passed}"
    files = {s["target"]: compose["secrets"][s["source"]] for s in pps.get("secrets", [])}
    assert files == {
        "NEO4J_PASSWORD": {"environment": "NEO4J_PASSWORD"},
        "LLM_API_KEY": {"environment": "LLM_API_KEY"},
    }
    neo4j = environment(services["neo4j"])
    named = {var: value for var, value in neo4j.items() if SECRET_NAME.search(var)}
    assert named == {"NEO4J_AUTH_FILE": "/run/secrets/neo4j_auth"}, named
    (auth,) = services["neo4j"]["configs"]
    assert auth["target"] == "/run/secrets/neo4j_auth"


@pytest.mark.parametrize(
    "value",
    ["hunter2hunter2", "neo4j/hunter2", "${PW:-changeme}", "neo4j/${PW-changeme}", "${PW}x"],
)
def test_secret_check_catches_literal_secrets(value):
    assert secret_problem(value) is not None


# ── Data is durable and the stack starts in order ───────────────────────────────────


def test_pps_waits_for_a_healthy_neo4j(services):
    healthcheck = services["neo4j"].get("healthcheck", {})
    assert healthcheck.get("test") and not healthcheck.get("disable"), (
        f"neo4j needs a healthcheck, has {healthcheck!r}"
    )
    depends_on = services["pps"].get("depends_on", {})
    assert isinstance(depends_on, dict) and "neo4j" in depends_on, (
        f"pps must depend on neo4j in long syntax, has {depends_on!r}"
    )
    condition = depends_on["neo4j"].get("condition")
    assert condition == "service_healthy", f"pps waits for neo4j {condition!r}, not healthy"


def test_neo4j_reports_no_usage(services):
    """pps sends nothing anywhere, and neither does the Neo4j compose runs beside it."""
    assert environment(services["neo4j"]).get("NEO4J_dbms_usage__report_enabled") == "false"


@pytest.mark.parametrize("name", ["neo4j", "pps"])
def test_data_lives_on_a_declared_named_volume(compose, name):
    data = [m for m in mounts(compose["services"][name]) if m.get("target") == "/data"]
    assert len(data) == 1, f"{name} should mount exactly one volume on /data, has {data}"
    mount = data[0]
    assert mount.get("type", "volume") == "volume" and mount.get("source"), (
        f"{name}'s /data is {mount}: anonymous volumes, binds and tmpfs are not kept"
    )
    declared = compose.get("volumes") or {}
    assert mount["source"] in declared, f"volume {mount['source']!r} is not declared top-level"
    options = declared[mount["source"]] or {}
    assert not options.get("external"), f"volume {mount['source']!r} should be compose-managed"


def test_services_restart_unless_stopped(services):
    policies = {name: service.get("restart") for name, service in services.items()}
    assert all(p == "unless-stopped" for p in policies.values()), policies


# ── The image ───────────────────────────────────────────────────────────────────────


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
        for line in lines
        if line and not line.startswith("#")
    ]


def test_dockerfile_runs_pps_serve_as_a_non_root_user():
    instructions = dockerfile_instructions()
    keywords = [keyword for keyword, _ in instructions]
    assert "USER" in keywords and "CMD" in keywords, "the Dockerfile needs a USER and a CMD"
    user = [arg for keyword, arg in instructions if keyword == "USER"][-1]
    assert user.split(":")[0] not in ("root", "0"), f"the image runs as {user!r}"
    cmd = json.loads([arg for keyword, arg in instructions if keyword == "CMD"][-1])
    assert cmd[:2] == ["pps", "serve"], f"the image should run `pps serve`, runs {cmd}"
