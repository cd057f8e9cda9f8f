"""The reference tables in docs/ against the code, in both directions: what the code has
and the docs do not list fails, and so does what the docs list and the code no longer has.

- docs/rest.md: every route of the FastAPI app (method and path);
- docs/mcp.md: every MCP profile, its path and its tools;
- docs/cli.md: every `pps` command and subcommand;
- docs/settings.md: every setting's environment variable and default; `.env.example`
  lists every variable too.

Tables are read simply: rows start with `|`, the first cell names the thing, backticks
are dropped.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import fastapi.routing
import pytest
import typer
import typer.main
from pydantic import AliasChoices, SecretStr

# The code under test. When these modules move, only this block changes.
from engine.kernel.config import Settings
from engine.kernel.errors import ANSWERS
from mcp_bridge.mount import PROFILES
from pps.app import create_app
from pps.cli import app as cli_app

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


# --- reading markdown tables -------------------------------------------------------


def tables(path: Path) -> list[tuple[str, list[str], list[list[str]]]]:
    """Each table in the file: the heading above it, its header cells, its rows' cells.
    Code blocks are skipped."""
    found: list[tuple[str, list[str], list[list[str]]]] = []
    heading, current, fenced = "", None, False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("|"):
            current = None
            if not fenced and line.startswith("#"):
                heading = line.lstrip("#").strip()
            continue
        cells = _cells(line)
        if current is None:
            current = (heading, cells, [])
            found.append(current)
        elif not all(set(cell) <= set(":-") for cell in cells):  # not the |---| line
            current[2].append(cells)
    return found


def _cells(line: str) -> list[str]:
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [cell.replace("`", "").strip() for cell in re.split(r"(?<!\\)\|", inner)]


def rows(path: Path, first_header: str) -> list[list[str]]:
    """The rows of every table in the file whose first header cell is `first_header`."""
    return [row for _, header, body in tables(path) if header[0] == first_header for row in body]


def check(in_code: set, in_docs: set, doc: str) -> None:
    missing, gone = sorted(in_code - in_docs), sorted(in_docs - in_code)
    assert not missing, f"in the code, not in {doc}: {missing}"
    assert not gone, f"in {doc}, not in the code: {gone}"


# --- REST routes --------------------------------------------------------------------


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    return create_app(Settings(data_dir=tmp_path_factory.mktemp("data")))


def test_every_route_is_in_rest_md(app):
    # Recent FastAPI keeps included routers as one entry each; flatten them if so.
    flatten = getattr(fastapi.routing, "iter_route_contexts", iter)
    own = {app.openapi_url, app.docs_url, app.redoc_url, app.swagger_ui_oauth2_redirect_url}
    in_code = {
        (method, route.path)
        for route in flatten(app.routes)
        if route.path not in own
        for method in (route.methods or {"ANY"}) - {"HEAD"}  # HEAD comes with every GET
    }
    in_docs = {
        (method, row[1])
        for row in rows(DOCS / "rest.md", "method")
        for method in re.split(r"[,\s]+", row[0])
        if method
    }
    assert in_docs, "no `| method | path | ... |` table in docs/rest.md"
    check(in_code, in_docs, "docs/rest.md")


def test_each_engine_error_is_in_rest_md_as_every_face_answers_it():
    """The one error table (engine/kernel/errors.py) against docs/rest.md's errors."""
    in_docs = {(int(row[0]), row[1]) for row in rows(DOCS / "rest.md", "status")}
    in_code = {(said.status, said.code) for said in ANSWERS.values()}
    assert in_code <= in_docs, f"not in docs/rest.md: {sorted(in_code - in_docs)}"


# --- MCP profiles and tools ---------------------------------------------------------


def test_every_mcp_profile_and_path_is_in_mcp_md():
    in_code = {(name, path) for name, (path, _) in PROFILES.items()}
    in_docs = {(row[0], row[1]) for row in rows(DOCS / "mcp.md", "profile")}
    check(in_code, in_docs, "docs/mcp.md (profile table)")


def test_every_mcp_tool_is_in_mcp_md():
    async def listed(build) -> list[str]:
        return [tool.name for tool in await build().list_tools()]

    in_code = {
        (name, path, tool)
        for name, (path, build) in PROFILES.items()
        for tool in asyncio.run(listed(build))
    }
    in_docs = set()
    for heading, header, body in tables(DOCS / "mcp.md"):
        profile = re.fullmatch(r"Profile `([^`]+)` at `([^`]+)`", heading)
        if profile and header[0] == "tool":
            in_docs |= {(*profile.groups(), row[0]) for row in body}
    check(in_code, in_docs, "docs/mcp.md (the tool tables, one per `## Profile ...` heading)")


# --- the pps command ----------------------------------------------------------------


def test_every_cli_command_is_in_cli_md():
    in_code: set[str] = set()

    def walk(command, path: str) -> None:
        if not hasattr(command, "list_commands"):
            return
        context = typer.Context(command)
        for name in command.list_commands(context):
            in_code.add(f"{path} {name}")
            walk(command.get_command(context, name), f"{path} {name}")

    walk(typer.main.get_command(cli_app), "pps")
    in_docs = {row[0] for row in rows(DOCS / "cli.md", "command")}
    check(in_code, in_docs, "docs/cli.md")


# --- settings -----------------------------------------------------------------------


def env_names() -> dict[str, str]:
    """Each setting's environment variable: PPS_<NAME>, or the first of its aliases for
    the ones shared with other tools (LLM_PROVIDER, also read as PPS_LLM_PROVIDER)."""
    prefix = Settings.model_config.get("env_prefix", "")
    names = {}
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        if isinstance(alias, AliasChoices):
            alias = alias.choices[0]
        names[name] = str(alias or prefix + name).upper()
    return names


def documented_default(value) -> str:
    """A default as docs/settings.md writes it (as .env.example would)."""
    if value is None:
        return "(unset)"
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


def test_every_setting_is_in_settings_md():
    in_code = set(env_names().values())
    in_docs = {row[0] for row in rows(DOCS / "settings.md", "variable")}
    check(in_code, in_docs, "docs/settings.md")


def test_settings_md_gives_each_default():
    names = env_names()
    in_code = {
        (names[name], documented_default(field.get_default(call_default_factory=True)))
        for name, field in Settings.model_fields.items()
    }
    in_docs = {(row[0], row[1]) for row in rows(DOCS / "settings.md", "variable")}
    check(in_code, in_docs, "docs/settings.md (variable, default)")


def test_every_setting_is_in_env_example():
    in_code = set(env_names().values())
    text = (ROOT / ".env.example").read_text()
    in_example = set(re.findall(r"^([A-Z][A-Z0-9_]*)=", text, flags=re.MULTILINE))
    check(in_code, in_example, ".env.example")


def _layout() -> dict[str, str]:
    """docs/layers.md's code layout: each folder or module it lists (`engine/search`,
    `pps/process.py` as `pps/process`), with its text."""
    text = (DOCS / "layers.md").read_text()
    block = text.split("## Code layout", 1)[1].split("```", 2)[1]
    entries: dict[str, str] = {}
    top, current = "", None
    for line in block.splitlines():
        match = re.match(r"^((?:  )?)([a-z_]+/|[a-z_]+\.py)\s", line + " ")
        if match:
            name = match.group(2).rstrip("/").removesuffix(".py")
            if match.group(1):
                current = f"{top}/{name}"
            else:
                top = current = name
            entries[current] = line[match.end() :]
        elif current is not None:
            entries[current] += " " + line.strip()
    return entries


def test_the_code_layout_in_layers_md_is_the_tree():
    """Every package and module of engine/, pps/, ingest/ and mcp_bridge/ is named in
    docs/layers.md's code layout, each engine module in its folder's line, and every
    folder and module the layout lists exists."""
    entries = _layout()
    missing = []
    for top in ("engine", "pps", "ingest", "mcp_bridge"):
        said = " ".join(text for key, text in entries.items() if key.split("/")[0] == top)
        for path in sorted((ROOT / top).iterdir()):
            if path.name.startswith("_") or not (
                path.suffix == ".py" or (path / "__init__.py").exists()
            ):
                continue
            key = f"{top}/{path.stem}"
            if top == "engine" and path.is_dir():
                modules = [m.stem for m in path.glob("*.py") if m.stem != "__init__"]
                text = entries.get(key, "")
                missing += [f"{key}/{m}.py" for m in modules if not re.search(rf"\b{m}\b", text)]
            if key not in entries and not re.search(rf"\b{path.stem}\b", said):
                missing.append(key)
    gone = [key for key in entries if not ((ROOT / key).is_dir() or (ROOT / f"{key}.py").exists())]
    assert not missing and not gone, f"not in the layout: {missing}; not in the tree: {gone}"
