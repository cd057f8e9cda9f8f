"""The test tiers: the markers tests/conftest.py sets are the ones pyproject.toml registers,
and every module and test its map names exists (a stale entry would quietly put a slow
test back in the quick loop)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from tests.conftest import BY_FIXTURE, MARKED

TESTS = Path(__file__).resolve().parent


def registered() -> set[str]:
    config = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())
    return {line.split(":")[0] for line in config["tool"]["pytest"]["ini_options"]["markers"]}


def test_every_marker_set_is_registered():
    used = set(BY_FIXTURE.values()).union(*MARKED.values())
    assert used == {"graph", "neo4j", "browser", "process"}
    assert registered() == used | {"containers"}  # the container tests mark themselves


def test_every_module_and_test_named_exists():
    missing = []
    for key in MARKED:
        module, _, test = key.partition("::")
        path = TESTS / module
        if not path.exists():
            missing.append(key)
            continue
        names = {
            node.name
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        if test and test not in names:
            missing.append(key)
    assert not missing, f"named in tests/conftest.py MARKED but not found: {missing}"
