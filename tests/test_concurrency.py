"""One concurrency model (docs/layers.md, "Concurrency"), held: the engine is synchronous,
and every coroutine it runs goes to the process's one event loop (engine/kernel/loop.py)
through `loop.run`; no module of pps makes a loop of its own or runs one per call, and
every thread the engine starts is a named daemon.
"""

from __future__ import annotations

import ast
import asyncio
import threading
from concurrent.futures import CancelledError
from pathlib import Path

import pytest

from engine.crystal.summarize import MessageSummary
from engine.kernel import loop
from engine.kernel.config import Settings
from engine.llm import budget
from engine.llm import client as llm

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "pps", "mcp_bridge", "ingest")
RUNNER = ROOT / "engine" / "kernel" / "loop.py"
LOOP_MAKERS = {"run", "new_event_loop", "run_coroutine_threadsafe", "run_until_complete"}
"""What starts or drives an event loop: `asyncio.run(...)`, `asyncio.new_event_loop()`,
`asyncio.run_coroutine_threadsafe(...)`, `loop.run_until_complete(...)`."""


def _loop_makers(source: str, name: str) -> list[str]:
    """Where `source` starts or drives an event loop of its own (`name:line call`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in LOOP_MAKERS:
            owner = func.value
            # asyncio.run(...) and asyncio.x(...); anything.run_until_complete(...)
            if func.attr == "run_until_complete" or (
                isinstance(owner, ast.Name) and owner.id == "asyncio"
            ):
                found.append(f"{name}:{node.lineno} {func.attr}")
        elif isinstance(func, ast.Name) and func.id in LOOP_MAKERS - {"run"}:
            found.append(f"{name}:{node.lineno} {func.id}")  # imported bare
    return found


def _found_in(path: Path) -> list[str]:
    return _loop_makers(path.read_text(), str(path.relative_to(ROOT)))


def test_only_the_runner_starts_an_event_loop():
    """No `asyncio.run` per call, no private loop: the runner is the one place."""
    sources = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    elsewhere = [hit for path in sources if path != RUNNER for hit in _found_in(path)]
    assert not elsewhere, "run coroutines through engine.kernel.loop.run:\n" + "\n".join(elsewhere)
    assert _found_in(RUNNER)  # the scan sees the runner's own


def test_the_scan_sees_every_way_to_start_a_loop():
    """A test that cannot fail is a defect: each form is found."""
    source = (
        "import asyncio\n"
        "from asyncio import new_event_loop\n"
        "def f(coro, other):\n"
        "    asyncio.run(coro)\n"
        "    new_event_loop()\n"
        "    asyncio.run_coroutine_threadsafe(coro, other)\n"
        "    other.run_until_complete(coro)\n"
        "    loop.run(coro, 1)\n"  # the runner's own: not a loop of its own
    )
    found = _loop_makers(source, "probe.py")
    assert [hit.split()[-1] for hit in found] == [
        "run",
        "new_event_loop",
        "run_coroutine_threadsafe",
        "run_until_complete",
    ], found


def test_every_thread_the_engine_starts_is_a_named_daemon():
    """A thread named in the logs and in a stack dump, that never holds the process open
    after the runtime stopped."""
    unnamed = []
    for path in (ROOT / "engine").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "Thread"
            ):
                given = {kw.arg: kw.value for kw in node.keywords}
                daemon = given.get("daemon")
                if "name" not in given or not (
                    isinstance(daemon, ast.Constant) and daemon.value is True
                ):
                    unnamed.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not unnamed, "give these threads name= and daemon=True:\n" + "\n".join(unnamed)


# --- the runner ---


def test_calls_from_two_threads_run_at_once_on_the_one_loop():
    """Each of two coroutines waits for the other to have started: both finish only if
    they run side by side, and an asyncio.Event only works within one loop."""
    started = [asyncio.Event(), asyncio.Event()]
    answers: dict[int, tuple] = {}

    async def meet(i: int) -> tuple:
        started[i].set()
        await asyncio.wait_for(started[1 - i].wait(), 10)
        return asyncio.get_running_loop(), threading.current_thread().name

    def call(i: int) -> None:
        answers[i] = loop.run(meet(i), 20)

    threads = [threading.Thread(target=call, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert set(answers) == {0, 1}, answers
    assert answers[0] == answers[1]
    assert answers[0][1] == loop.THREAD


def test_a_coroutine_that_raises_reaches_the_caller_as_its_exception():
    problem = ValueError("the graph said no")

    async def fail() -> None:
        raise problem

    with pytest.raises(ValueError) as raised:
        loop.run(fail(), 5)
    assert raised.value is problem
    assert loop.run(asyncio.sleep(0, "still serving"), 5) == "still serving"


def test_past_its_timeout_a_coroutine_is_cancelled():
    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(TimeoutError):
        loop.run(forever(), 0.2)
    assert cancelled.wait(10), "the coroutine still runs after its caller gave up"


def test_a_coroutine_that_stops_the_loop_is_logged_and_the_loop_runs_on(caplog):
    async def leave() -> None:
        raise SystemExit(3)

    with pytest.raises(SystemExit):
        loop.run(leave(), 5)
    assert loop.run(asyncio.sleep(0, "on"), 5) == "on"
    assert sum(t.name == loop.THREAD for t in threading.enumerate()) == 1
    assert "a coroutine stopped the event loop" in caplog.text


def test_a_coroutine_on_the_loop_cannot_wait_on_the_loop():
    """It would wait forever; it is told to await instead."""

    async def nested() -> str:
        return loop.run(asyncio.sleep(0, "never"), 1)

    with pytest.raises(RuntimeError, match="await it instead"):
        loop.run(nested(), 5)


def test_stopping_an_owner_cancels_its_calls_and_refuses_new_ones():
    """What the graph store does at shutdown: a worker waiting on the graph gets an error
    at once (its job retries), and nothing of the store runs on."""
    calls = loop.Calls()
    running, cancelled = threading.Event(), threading.Event()
    outcome: list[BaseException] = []

    async def extract() -> None:
        running.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def worker() -> None:
        try:
            calls.run(extract(), None)
        except BaseException as exc:
            outcome.append(exc)

    with pytest.raises(loop.Closed):
        calls.run(extract(), None)  # not started yet
    calls.start()
    thread = threading.Thread(target=worker)
    thread.start()
    assert running.wait(10)
    calls.stop()
    thread.join(10)
    assert [type(exc) for exc in outcome] == [CancelledError]
    assert cancelled.wait(10)
    with pytest.raises(loop.Closed):
        calls.run(extract(), None)


# --- the LLM client on the one loop ---


def test_two_threads_asking_the_llm_at_once_both_get_answers_on_the_one_loop(
    stub, tmp_path, monkeypatch
):
    """Two summaries asked at once (two workers): the stub answers neither until both
    requests are in, so both were in flight together, on the process's one loop (once,
    each call made and ran a loop of its own)."""
    stub.set_mode(None)
    both_in = threading.Barrier(2)
    think = stub._think

    def together(*args):
        both_in.wait(10)
        return think(*args)

    monkeypatch.setattr(stub, "_think", together)
    loops = []
    ask = llm._ask

    async def noting(*args):
        loops.append((asyncio.get_running_loop(), threading.current_thread().name))
        return await ask(*args)

    monkeypatch.setattr(llm, "_ask", noting)
    settings = Settings(
        data_dir=tmp_path,
        llm_provider="openai",
        llm_base_url=stub.url,
        llm_model="gpt-5-mini",
        llm_api_key="sk-stub",
        llm_timeout_s=20,
    )
    answers: dict[int, MessageSummary] = {}

    def summarize(i: int) -> None:
        answers[i] = llm.ask(settings, "Summarize.", f"turns {i}", MessageSummary, budget.Usage())

    threads = [threading.Thread(target=summarize, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert set(answers) == {0, 1}, "a call did not finish"
    assert all(answer.summary for answer in answers.values())
    assert len(loops) == 2 and loops[0] == loops[1] and loops[0][1] == loop.THREAD
