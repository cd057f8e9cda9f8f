"""One backoff: every wait that grows after failures (a queue job's next attempt, a failing
background loop, FalkorDB restarting, the stdio relay asking a service that is down, the
sign-in throttle) is computed by engine.kernel.backoff, and no other module grows a delay
of its own.

The source is read (ast): a power of two with a variable exponent, a shift by a variable,
a wait (a name that reads as one) that doubles itself, a class named for a backoff or an
import of a retry library anywhere else fails here, naming the place.
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

from engine.kernel import backoff

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "pps", "mcp_bridge", "ingest")
ONE_PLACE = ROOT / "engine" / "kernel" / "backoff.py"
RETRY_LIBRARIES = {"tenacity", "backoff", "retrying", "stamina"}


def _two(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in (2, 2.0)


WAITS = re.compile(r"delay|wait|sleep|backoff|pause|interval|timeout|_s$|_ms$", re.I)
"""Names that read as a time to wait: a value of that name that doubles itself is a
backoff (a search window that widens, say, is not)."""


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _doubled(node: ast.AST) -> set[str]:
    """The names that `x * 2` or `2 * x` doubles anywhere inside `node`."""
    return {
        name
        for n in ast.walk(node)
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult)
        for side, other in ((n.left, n.right), (n.right, n.left))
        if _two(other) and (name := _name(side)) is not None
    }


def _growths(source: str) -> list[tuple[int, str]]:
    """(line, what) for each backoff of its own that `source` computes or imports."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.BinOp) and not isinstance(node.right, ast.Constant):
            if isinstance(node.op, ast.Pow) and _two(node.left):
                found.append((line, "a power of two that grows"))
            elif isinstance(node.op, ast.LShift):
                found.append((line, "a shift that grows"))
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Mult):
            name = _name(node.target)
            if _two(node.value) and name is not None and WAITS.search(name):
                found.append((line, f"a wait that doubles ({name} *= 2)"))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            name = _name(node.targets[0])
            if name is not None and WAITS.search(name) and name in _doubled(node.value):
                found.append((line, f"a wait that doubles ({name} = ... {name} * 2 ...)"))
        elif isinstance(node, ast.ClassDef) and "backoff" in node.name.lower():
            found.append((line, f"a class {node.name}"))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            for name in names:
                if (name or "").split(".")[0] in RETRY_LIBRARIES:
                    found.append((line, f"an import of {name}"))
    return found


def _sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def test_no_module_but_the_kernels_grows_a_delay_of_its_own():
    own = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in _sources()
        if path != ONE_PLACE
        for line, what in _growths(path.read_text())
    ]
    assert not own, "use engine.kernel.backoff instead:\n" + "\n".join(own)


@pytest.mark.parametrize(
    "source",
    [
        "delay = initial * 2.0 ** (attempts - 1)",
        "delay = FIRST * 2 ** min(count - 1, 16)",
        "self.delay = min(self.delay * 2, self.cap)",
        "wait = min(2 * wait, PROBE_MAX_S)",
        "delay = delay * 2",
        "retry_after_s *= 2",
        "delay = first << failures",
        "class Backoff:\n    pass",
        "from tenacity import wait_exponential_jitter",
        "import backoff",
    ],
)
def test_the_checker_sees_each_way_of_growing_a_delay(source):
    """A test that cannot fail is a defect: each of these is a backoff of its own."""
    assert _growths(source), source


@pytest.mark.parametrize(
    "source",
    [
        "seed = random.SystemRandom().randrange(2**31)",
        "chunk = file.read(1 << 20)",
        "kept = 0.5 ** (age / FORGET_S)",
        "lines = (PROMPTS * 2)[:n]",
        "limit = min(MAX_TOP_K, 2 * ask.top_k + 10)",
        "k = min(MAX_K, max(2 * k, wanted))",  # a search window that widens: not a wait
        "size *= 2",
    ],
)
def test_the_checker_leaves_constants_and_decay_alone(source):
    assert not _growths(source), source


def test_the_delay_doubles_from_the_first_up_to_the_cap():
    delays = [backoff.delay(n, 1.0, 30.0) for n in range(1, 9)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert backoff.delay(0, 1.0, 30.0) == 1.0  # no failure yet counts as the first
    assert backoff.delay(3, 0.5, 5.0) == 2.0


def test_a_cap_below_the_first_delay_is_the_delay():
    assert [backoff.delay(n, 10.0, 3.0) for n in (1, 2, 50)] == [3.0, 3.0, 3.0]


def test_any_number_of_failures_gives_the_cap():
    """A job retried for years (or a counter gone wild) waits the cap, with no
    OverflowError from the power of two."""
    for failures in (1_024, 1_025, 10**6, 10**30):
        assert backoff.delay(failures, 2.0, 600.0) == 600.0
        assert backoff.delay(failures, 2.0, 600.0, jitter=2.0) == 600.0


def test_jitter_adds_up_to_its_amount_at_random_and_never_passes_the_cap():
    for failures in range(1, 12):
        grown = min(2 ** (failures - 1), 30)
        draws = [backoff.delay(failures, 1.0, 30.0, jitter=1.0) for _ in range(50)]
        assert all(grown <= d <= min(grown + 1, 30) for d in draws), (failures, draws)
    assert len({backoff.delay(3, 1.0, 30.0, jitter=1.0) for _ in range(20)}) > 1


def test_waits_are_the_delays_one_after_another():
    waits = backoff.waits(0.5, 5.0)
    assert list(itertools.islice(waits, 7)) == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    assert next(waits) == 5.0  # it never runs out
