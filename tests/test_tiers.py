"""The test tiers: the markers tests/conftest.py sets are the ones pyproject.toml
registers, each fixture that sets one exists (a fixture renamed would quietly put its
tests back in the quick loop), and a test that starts a process without a fixture that
may fails, so no such test sits in the quick loop."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

from tests.conftest import BEYOND, BY_FIXTURE, NOT_QUICK, _only_quick

TESTS = Path(__file__).resolve().parent


def registered() -> set[str]:
    config = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())
    return {line.split(":")[0] for line in config["tool"]["pytest"]["ini_options"]["markers"]}


def test_every_marker_set_is_registered():
    used = set(BY_FIXTURE.values())
    assert used == {"graph", "neo4j", "browser", "process", "slow"}
    assert set(BEYOND) == used - {"slow"} | {"containers"}  # the container tests mark themselves
    assert registered() == set(NOT_QUICK) | {"quick"} == used | {"containers", "quick"}


def _fixtures(path: Path) -> set[str]:
    def is_fixture(decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return isinstance(target, ast.Attribute) and target.attr == "fixture"

    return {
        node.name
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and any(map(is_fixture, node.decorator_list))
    }


def test_every_fixture_that_marks_exists():
    defined = set().union(*map(_fixtures, TESTS.glob("*.py")))
    missing = sorted(set(BY_FIXTURE) - defined)
    assert not missing, f"named in tests/conftest.py BY_FIXTURE but defined nowhere: {missing}"


def test_a_run_that_wants_only_quick_tests_is_told_apart():
    def only_quick(expression: str) -> bool:
        return _only_quick(SimpleNamespace(option=SimpleNamespace(markexpr=expression)))

    assert only_quick("quick") and only_quick("quick and not process")
    assert not only_quick("") and not only_quick("not graph") and not only_quick("quick or slow")
    assert not only_quick("not quick") and not only_quick("not (quick and graph)")


WATCHED = """
import subprocess, sys

def test_unmarked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_marked(processes):
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_nothing_started():
    pass
"""


def test_a_test_that_starts_a_process_without_a_fixture_that_may_fails(tmp_path, processes):
    (tmp_path / "test_watched.py").write_text(WATCHED)
    pytest = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "tests.conftest",
        "-p",
        "no:cacheprovider",
    ]
    config = ["-c", str(TESTS.parent / "pyproject.toml"), "--rootdir", str(tmp_path)]
    done = subprocess.run(
        [*pytest, *config, str(tmp_path / "test_watched.py")],
        capture_output=True,
        text=True,
        cwd=TESTS.parent,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    # Each test passes; the one that started a process unmarked fails at its teardown.
    assert "3 passed, 1 error" in done.stdout, done.stdout
    assert "ERROR at teardown of test_unmarked" in done.stdout
    assert "test_unmarked started a process but takes none of the fixtures" in done.stdout
