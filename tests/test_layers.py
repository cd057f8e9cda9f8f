"""The house keeps its shape: layers are folders, a lower layer never imports a higher one,
the engine imports none of its faces, there is no import circle, and the client side
(hooks, spool, Discord adapter, importers, the stdio bridge) loads nothing heavy.

Imports are read from the source (every `import`, including those inside functions), so
a lazy import cannot hide an upward dependency or a circle.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from enum import Enum
from pathlib import Path

import pytest
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "pps", "mcp_bridge", "ingest")

# Inside engine/: the kernel, the shared store, the LLM, the five layers, the seeds'
# contracts, recall, and the runtime that wires them. A module may import its own rank or
# lower.
ENGINE_RANKS = {
    "engine.kernel": -1,
    "engine.store": 0,
    "engine.llm": 1,
    "engine.capture": 2,
    "engine.search": 3,
    "engine.graph": 4,
    "engine.crystal": 5,
    "engine.inventory": 6,
    "engine.contracts": 7,
    "engine.recall": 8,
    "engine.runtime": 9,
    "engine.health": 9,
    "engine.backlogs": 9,
    "engine.backup": 9,
    "engine.consistency": 9,
    "engine.forgetting": 9,
    "engine.api": 10,
}
# What each part may import, by the longest prefix that names it: the kernel stands alone,
# and the client side (ingest/: hooks, spool, importers, the MCP relay) stands on it only.
MAY_IMPORT = {
    "engine": {"engine"},
    "engine.kernel": {"engine.kernel"},
    "ingest": {"ingest", "engine.kernel"},
    "mcp_bridge": {"mcp_bridge", "engine", "pps.http"},
    "pps": {"pps", "engine", "mcp_bridge", "ingest"},
    "pps.http": {"pps.http", "engine"},  # below the faces: see test_the_http_layer_imports_no_face
}
HEAVY = [
    "numpy",
    "faiss",
    "onnxruntime",
    "fastembed",
    "graphiti_core",
    "openai",
    "anthropic",
    "fastapi",
    "uvicorn",
    "mcp",
]


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The project modules `name` imports, anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            # `from engine.search import hybrid` names a module; `from x import Name` does not
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _rank(module: str) -> int | None:
    for prefix, rank in ENGINE_RANKS.items():
        if module == prefix or module.startswith(prefix + "."):
            return rank
    return None


def test_every_engine_module_sits_in_a_known_layer():
    unplaced = [m for m in MODULES if m.startswith("engine.") and _rank(m) is None]
    assert not unplaced, f"put these in a layer folder (or rank them here): {unplaced}"


def test_no_layer_imports_a_higher_one():
    upward = [
        f"{m} (rank {_rank(m)}) imports {t} (rank {_rank(t)})"
        for m, targets in GRAPH.items()
        if _rank(m) is not None
        for t in targets
        if _rank(t) is not None and _rank(t) > _rank(m)
    ]
    assert not upward, "\n".join(upward)


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _may_import(module: str) -> set[str]:
    return MAY_IMPORT[max((p for p in MAY_IMPORT if _within(module, p)), key=len)]


def test_each_part_imports_only_what_it_may():
    """The engine imports none of its faces, the kernel nothing else of pps, the client
    side only the kernel."""
    wrong = [
        f"{m} imports {t}"
        for m, targets in GRAPH.items()
        for t in targets
        if not any(_within(t, allowed) for allowed in _may_import(m))
    ]
    assert not wrong, "\n".join(wrong)


def test_no_import_circles():
    circles, state = [], {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(GRAPH[module]):
            if target == module.rpartition(".")[0]:
                continue  # a package's own __init__ docstring, never code here
            if state.get(target) == "open":
                circles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[module] = "done"

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])
    assert not circles, "\n".join(circles)


def test_the_checker_sees_a_lazy_upward_import(tmp_path):
    """A test that cannot fail is a defect: an import inside a function still counts."""
    source = tmp_path / "probe.py"
    source.write_text("def f():\n    from engine.recall import ambient\n")
    MODULES["engine.store.probe"] = source
    try:
        assert "engine.recall.ambient" in _imports("engine.store.probe", source)
    finally:
        del MODULES["engine.store.probe"]


CLIENT_SIDE = [
    "ingest.client",
    "ingest.spool",
    "ingest.claude_code",
    "ingest.claude_settings",
    "ingest.discord",
    "ingest.importers.claude_code",
    "ingest.importers.discord_db",
    "ingest.importers.journals",
    "ingest.importers.openclaw",
    "ingest.mcp_relay",
    "pps.cli",
]
STRICTER = {"ingest.mcp_relay": {"pydantic"}}  # the relay reads no settings either
CLIENT_EXTRA = {"click", "rich", "pygments"}
"""Nor do the hooks, the relay, the client and the Discord adapter load a command line's
libraries (the importers show progress with rich): httpx's own command line brings them,
~0.1 s of every hook's start (ingest/__init__.py keeps it out)."""


@pytest.mark.parametrize("module", CLIENT_SIDE)
def test_the_client_side_loads_nothing_heavy(module, processes):
    probe = (
        f"import json, sys; import {module}; "
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    loaded = set(json.loads(done.stdout))
    heavy = set(HEAVY) | STRICTER.get(module, set())
    if module.startswith("ingest") and not module.startswith("ingest.importers"):
        heavy |= CLIENT_EXTRA
    assert not loaded & heavy, f"{module} loads {sorted(loaded & heavy)}"


def test_the_hook_client_runs_on_the_standard_library_alone(tmp_path, processes):
    """What every command hook of every host runs (ingest/hook.py, as installed: `-I -S`)
    loads the standard library and, of pps, the stripping of private text: no third-party
    package, none of pps's settings or HTTP client (the whole CLI's ~460 modules were
    0.5 s of every prompt idle, seconds busy). It is run to the end, a hook that finds no
    service, so what it loads while it works counts too."""
    probe = (
        "import json, runpy, sys\n"
        "sys.argv = ['hook.py', 'UserPromptSubmit', '--host', 'codex']\n"
        f"runpy.run_path({str(ROOT / 'ingest' / 'hook.py')!r}, run_name='__main__')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('engine', 'ingest')"
        " or m.split('.')[0] not in sys.stdlib_module_names)))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PPS_URL": "http://127.0.0.1:9", "PPS_TOKEN": "pps_x"}
    env["PPS_CLIENT_DIR"] = str(tmp_path)
    payload = json.dumps({"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe],
        input=payload,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    loaded = set(json.loads(done.stdout.splitlines()[-1])) - {"__main__", "_virtualenv"}
    assert loaded == {"engine", "engine.kernel", "engine.kernel.private"}, sorted(loaded)
    assert "1 hook call waits in the spool" in (tmp_path / "hooks.log").read_text()  # it ran


def test_serve_refuses_a_remote_host_before_loading_the_engine(tmp_path, processes):
    probe = (
        "import json, sys\n"
        "from pps.cli import app\n"
        "try:\n"
        f"    app(['serve', '--host', '0.0.0.0', '--data-dir', {str(tmp_path)!r}])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "print(json.dumps([code, sorted({m.split('.')[0] for m in sys.modules})]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    code, loaded = json.loads(done.stdout.splitlines()[-1])
    assert code == 1 and "refusing to listen on 0.0.0.0" in done.stderr
    assert not set(loaded) & set(HEAVY), sorted(set(loaded) & set(HEAVY))


def test_a_light_command_loads_nothing_heavy_through_the_front_door(tmp_path, processes):
    """`pps entity list` reaches the engine through engine.api (Service.open) and loads
    what listing entities needs, the database: not search, the graph, a model or an LLM
    client (the whole engine was ~0.7 s of its start, 3.5 times what it had cost before
    the front door). It runs to the end on a data dir with an entity, so what it loads
    while it works counts too."""
    probe = (
        "import json, sys\n"
        "from pps.cli import app\n"
        "for argv in (['entity', 'create', 'probe'], ['entity', 'list']):\n"
        "    try:\n"
        f"        app([*argv, '--data-dir', {str(tmp_path)!r}])\n"
        "    except SystemExit as exc:\n"
        "        assert not exc.code, exc.code\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert "probe  created " in done.stdout  # it listed the entity it made
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


FACES = ("pps.rest", "pps.web", "mcp_bridge")
"""The HTTP faces. They stand side by side on the shared HTTP layer (`pps.http`: the
dependencies, the error handlers, the record of who called); the app that registers each
face (`pps.app`) stands above them."""


def _reached(start: str) -> set[str]:
    """Every project module `start` imports, directly or through another."""
    seen, todo = set(), [start]
    while todo:
        for target in GRAPH[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_the_http_layer_imports_no_face():
    """`pps.http` stands below REST, the web face and MCP, with no loop between them: no
    module of it reaches a face, directly or through another module (it once made the
    app, which registered each face, while the MCP face imported its errors)."""
    http = [m for m in MODULES if _within(m, "pps.http")]
    assert "pps.http.deps" in http and "pps.http.errors" in http  # the scan sees the layer
    wrong = [
        f"{m} reaches {t}"
        for m in http
        for t in sorted(_reached(m))
        if any(_within(t, face) for face in FACES)
    ]
    assert not wrong, "\n".join(wrong)
    faces_on_http = [
        m for m in GRAPH if any(_within(m, f) for f in FACES) and _reached(m) & set(http)
    ]
    assert faces_on_http  # the faces do stand on it, so the rule above is the one that matters


def test_no_face_imports_another():
    """REST, the web face and MCP share only the HTTP layer: none imports another (the
    web face once took its dependencies from REST's)."""
    wrong = [
        f"{m} imports {t}"
        for m, targets in GRAPH.items()
        for face in FACES
        if _within(m, face)
        for t in targets
        if not _within(t, face) and any(_within(t, other) for other in FACES)
    ]
    assert not wrong, "\n".join(wrong)


FACE_PACKAGES = ("pps", "mcp_bridge")
DOOR = ("engine.api", "engine.kernel")


def _is_model(value: object) -> bool:
    """A request or response model: what a face sends the engine and shapes its answer
    from (a pydantic model, a dataclass, a named tuple, an enum), never a service."""
    if not isinstance(value, type):
        return False
    if issubclass(value, BaseModel | Enum) or dataclasses.is_dataclass(value):
        return True
    return issubclass(value, tuple) and hasattr(value, "_fields")


def _engine_names(path: Path) -> list[tuple[str, str]]:
    """(module, name) for each engine name `path` imports; name "" for a whole module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.startswith("engine")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine"):
            found += [(node.module, a.name) for a in node.names]
    return found


def face_imports() -> dict[str, list[str]]:
    """What each face imports of the engine past its front door: every name not from
    engine.api or the kernel, and not a model."""
    import importlib

    wrong: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        if not name.startswith(FACE_PACKAGES):
            continue
        for module, imported in _engine_names(path):
            if any(_within(module, door) for door in DOOR):
                continue
            value = getattr(importlib.import_module(module), imported, None) if imported else None
            if not _is_model(value):
                wrong.setdefault(name, []).append(f"{module}.{imported}".rstrip("."))
    return wrong


def test_faces_reach_the_engine_only_through_its_front_door():
    """REST, MCP, the web pages and the command line import engine.api (the service and
    an entity's memory), the models they send and answer with, and the kernel: no
    engine service, store or module (which is how a caller once forgot to tell search
    and the graph of an event it stored)."""
    wrong = face_imports()
    assert not wrong, "\n".join(f"{m}: {', '.join(names)}" for m, names in sorted(wrong.items()))


def test_the_front_door_check_sees_a_service_imported_past_it(tmp_path):
    """A test that cannot fail is a defect: a face importing a layer's function fails."""
    source = tmp_path / "probe.py"
    source.write_text("from engine.search.anchors import save, AnchorIn\nimport engine.store.db\n")
    MODULES["pps.rest.probe"] = source
    try:
        assert face_imports()["pps.rest.probe"] == ["engine.search.anchors.save", "engine.store.db"]
    finally:
        del MODULES["pps.rest.probe"]
