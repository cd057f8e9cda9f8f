"""Extraction's cost and quality on the configured LLM: the labelled household episodes
(bench/data/extraction, scored by bench/extraction_score.py) through pps's own graph path.

Run: .venv/bin/python bench/extraction.py [--episodes N] [--stub] [--show] [--json FILE]
                                          [--attempts N] [--concurrency C] [--data DIR]

The LLM is the one pps is configured with (LLM_PROVIDER, LLM_BASE_URL, LLM_MODEL,
PPS_LLM_RESPONSE_FORMAT, PPS_LLM_TIMEOUT_S...: the environment or pps's .env, as `pps
serve` reads them; docs/settings.md); `--stub` uses tests/stub_llm.py instead, which
proves the plumbing and says nothing of quality. The graph is the embedded FalkorDB in
a temporary data dir, and the path is the server's: each episode's turns are stored as
events by capture (one entity per episode, so that no episode's extraction sees
another's), the episode window is closed, and its `graph_episode` job waits in the
queue with the others; queue workers (`--concurrency`, 1 by default, so that each
episode's time is its own) claim them oldest first and run pps's handler
(engine.graph.texture), which calls Graphiti with pps's LLM client. A job that fails is
retried by the queue up to `--attempts` times in all (1 by default: a failure counts).

While the queue works, the backlog estimate (engine.graph.backlog) is printed beside the
time the rest really took. Then, per episode and in total: the handler's time, the time
spent waiting for the LLM, LLM calls, prompt and output tokens, and entity and fact
precision and recall against the labels (docs/extraction.md has the rules). pps's own
meter counts calls and total tokens (engine/llm/budget.py); the split into prompt and
output tokens is read from each answer's `usage` by a pass-through meter that this
script puts between pps and LLM_BASE_URL (so with no LLM_BASE_URL, only totals).
`--show` prints, per episode, what was missed and what was found that no label has.
Ctrl-C stops the run and scores the episodes that finished (a small CPU model takes
minutes an episode).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

# Run as `python bench/extraction.py`: the repository and tests/ (the stub LLM) on the
# path, and not bench/ itself, whose ingest.py would shadow the ingest package.
ROOT = Path(__file__).resolve().parent.parent
sys.path[0:1] = [str(ROOT), str(ROOT / "tests")]

import httpx  # noqa: E402

from bench.extraction_score import DATA, Episode, Found, Score, load, percent, score  # noqa: E402
from engine.capture import entities  # noqa: E402
from engine.capture import events as capture  # noqa: E402
from engine.graph import backlog, episodes, texture  # noqa: E402
from engine.graph.backend import Graph  # noqa: E402
from engine.kernel.config import Settings  # noqa: E402
from engine.runtime import CAPTURE_LISTENERS  # noqa: E402
from engine.search import embeddings  # noqa: E402
from engine.store import queue  # noqa: E402
from engine.store.db import Database  # noqa: E402

FINISHED = ("done", "dead")


# --- the pass-through meter ---


@dataclass
class Call:
    began: float
    seconds: float
    path: str
    status: int
    prompt: int
    output: int


class Meter:
    """An HTTP pass-through on 127.0.0.1 to the LLM's base URL that notes each call's
    prompt and output tokens (OpenAI's `prompt_tokens`/`completion_tokens`, the Responses
    and Anthropic wires' `input_tokens`/`output_tokens`). Everything else goes through
    untouched, refusals included."""

    def __init__(self, upstream: str, timeout_s: float):
        parts = urlsplit(upstream)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.path = parts.path
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._http = httpx.Client(timeout=timeout_s + 30)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _relay(self))
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{self.path}"

    def __enter__(self) -> Meter:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._http.close()

    def note(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def between(self, start: float, end: float) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if start <= c.began <= end]


def _relay(meter: Meter):
    class Relay(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            skip = {"host", "content-length", "accept-encoding", "connection"}
            headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
            began = time.monotonic()
            try:
                answer = meter._http.request(
                    self.command, meter.origin + self.path, content=body, headers=headers
                )
            except httpx.HTTPError as exc:
                self.send_error(502, f"the meter could not reach the LLM: {exc}")
                return
            prompt, output = _tokens(answer)
            if self.command == "POST":
                meter.note(
                    Call(
                        began,
                        time.monotonic() - began,
                        self.path,
                        answer.status_code,
                        prompt,
                        output,
                    )
                )
            self.send_response(answer.status_code)
            drop = {"content-length", "content-encoding", "transfer-encoding", "connection"}
            for key, value in answer.headers.items():
                if key.lower() not in drop:
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

        do_GET = do_POST = _forward

    return Relay


def _tokens(answer: httpx.Response) -> tuple[int, int]:
    try:
        usage = answer.json().get("usage") or {}
    except (ValueError, AttributeError):
        return 0, 0
    prompt = usage.get("prompt_tokens", usage.get("input_tokens")) or 0
    output = usage.get("completion_tokens", usage.get("output_tokens")) or 0
    return int(prompt), int(output)


# --- one run ---


@dataclass
class Result:
    id: str
    turns: int
    state: str = "queued"
    error: str | None = None
    seconds: float = 0.0
    llm_seconds: float = 0.0
    calls: int = 0
    tokens: int = 0
    prompt: int | None = None
    output: int | None = None
    attempts: int = 0
    score: Score | None = None
    found: dict = field(default_factory=dict)


def entity_name(n: int, episode: Episode) -> str:
    return f"x{n:02d}-{episode.id}"


def settings_for(args: argparse.Namespace, root: Path, base_url: str | None) -> Settings:
    """pps's settings as `pps serve` reads them, in a data dir of the bench's own, the
    graph the embedded FalkorDB."""
    chosen = Settings(data_dir=root / "data", graph_backend="falkordb", graph_url=None)
    if base_url is not None:
        chosen = chosen.model_copy(update={"llm_base_url": base_url})
    return chosen


def run(args: argparse.Namespace, settings: Settings, meter: Meter | None) -> list[Result]:
    chosen = load(args.data)[: args.episodes]
    db = Database.open(settings)
    graph = Graph(settings, db).start(sweep=False)
    results = {entity_name(n, e): Result(e.id, len(e.turns)) for n, e in enumerate(chosen, 1)}
    workers = None
    try:
        for n, episode in enumerate(chosen, 1):
            name = entity_name(n, episode)
            entities.create(db, name)
            capture.Capture(db, CAPTURE_LISTENERS).record(name, events_of(episode))
        queued = episodes.close_windows(db, graph.window, force=True)
        assert len(queued) == len(chosen), "one episode for each file"
        handle = texture.handler(graph, db, settings)

        def timed(job: queue.Job):
            result = results[job.entity]
            began = time.monotonic()
            result.attempts += 1
            try:
                usage = handle(job)
            finally:
                ended = time.monotonic()
                result.seconds += ended - began
                if meter is not None and args.concurrency == 1:  # else whose call is it?
                    calls = meter.between(began, ended)
                    result.prompt = (result.prompt or 0) + sum(c.prompt for c in calls)
                    result.output = (result.output or 0) + sum(c.output for c in calls)
            if usage is not None:
                result.llm_seconds += usage.seconds
                print(
                    f"  {result.id}: extracted in {result.seconds:,.1f} s, {usage.calls} LLM"
                    f" calls, {usage.tokens:,} tokens",
                    file=sys.stderr,
                )
            return usage

        policy = queue.Policy(
            max_attempts=args.attempts, backoff_initial_s=0.2, backoff_max_s=1.0, poll_s=0.1
        )
        workers = queue.Workers(db, policy)
        workers.add(episodes.JOB_KIND, timed, args.concurrency)
        start = time.monotonic()
        workers.start()
        guesses = watch(db, settings, start, len(chosen))
        if guesses and guesses[-1][1] == len(chosen):
            print_guesses(guesses, time.monotonic() - start)
    finally:
        if workers is not None:
            workers.stop()
    try:
        embed = embeddings.get(settings).embed
        for n, episode in enumerate(chosen, 1):
            name = entity_name(n, episode)
            result = results[name]
            row = db.conn.execute(
                "SELECT state, last_error, attempts FROM jobs WHERE entity = ? AND kind = ?",
                (name, episodes.JOB_KIND),
            ).fetchone()
            result.state, result.error = row["state"], row["last_error"]
            if result.state not in FINISHED:
                continue  # stopped before it finished: not scored
            used = db.conn.execute(
                "SELECT calls, tokens FROM graph_usage WHERE entity = ?", (name,)
            ).fetchone()
            result.calls, result.tokens = (used["calls"], used["tokens"]) if used else (0, 0)
            found = extracted(graph, name)
            result.found = {"entities": found.entities, "facts": found.facts}
            result.score = score(episode, found, embed)
    finally:
        graph.stop()
        db.close()
    return list(results.values())


def events_of(episode: Episode) -> list:
    """The episode's turns as one session's events, a second apart."""
    base = 1_767_600_000  # 2026-01-05
    raw = [
        {
            "channel": "terminal",
            "session_id": f"bench-{episode.id}",
            "author": speaker,
            "role": "assistant" if speaker == "Lyra" else "user",
            "content": text,
            "created_at": base + i,
        }
        for i, (speaker, text) in enumerate(episode.turns)
    ]
    return capture.parse_events(raw, max_batch=50, max_content_bytes=100_000)


def extracted(graph: Graph, entity: str) -> Found:
    """Everything the entity's graph holds: its entity nodes' names, its facts (valid
    and invalidated: both were extracted from the episode)."""
    store = graph.store
    assert store is not None
    nodes = [n["name"] for n in store.entity_nodes(entity)]
    facts = store.list_facts(entity, 2000, 0, None, None)
    return Found(nodes, [(f.source, f.name, f.target, f.fact) for f in facts])


def watch(db: Database, settings: Settings, start: float, total: int) -> list[tuple]:
    """Wait for every job to finish (or for the queue to pause: no LLM, a key refused, the
    budget spent); note the backlog estimate each time an episode finishes."""
    guesses: list[tuple] = []
    finished = -1
    try:
        return _watch(db, settings, start, total, guesses, finished)
    except KeyboardInterrupt:  # Ctrl-C: score what has finished
        print("stopped: the episodes that finished are scored", file=sys.stderr)
        return guesses


def _watch(
    db: Database, settings: Settings, start: float, total: int, guesses: list, finished: int
) -> list[tuple]:
    while True:
        counts = queue.counts(db.conn, episodes.JOB_KIND)
        done = sum(counts[s] for s in FINISHED)
        if done != finished:
            finished = done
            guess = backlog.estimate(db, settings)
            guesses.append((time.monotonic() - start, done, guess.clears_in_s))
            print(
                f"  {time.monotonic() - start:7.1f} s: {done}/{total} finished;"
                f" estimate: {_seconds(guess.clears_in_s)} left"
                f" ({_seconds(guess.seconds_per_episode)} an episode, {guess.sampled} timed)",
                file=sys.stderr,
            )
        if done >= total:
            return guesses
        paused = [p for p in queue.status(db, dead_limit=0).paused]
        if paused and counts["running"] == 0:
            print(f"the queue paused: {paused[0].reason}", file=sys.stderr)
            return guesses
        time.sleep(0.2)


def print_guesses(guesses: list[tuple], took: float) -> None:
    """The estimate against the truth: what was said at each point, and what was left."""
    rows = [(at, done, left, took - at) for at, done, left in guesses if left is not None]
    if not rows:
        return
    print("\nbacklog estimate (engine.graph.backlog) against the time the rest took")
    print("| after s | finished | estimated s left | really left s |")
    print("|---:|---:|---:|---:|")
    for at, done, left, real in rows:
        print(f"| {at:,.1f} | {done} | {left:,.1f} | {real:,.1f} |")


def _seconds(value: float | None) -> str:
    return "?" if value is None else f"{value:,.1f} s"


def table(results: list[Result], metered: tuple[int, int] | None) -> str:
    """Markdown: a row per episode and one for all; `metered`: the meter's totals."""
    lines = [
        "| episode | turns | state | s | LLM s | calls | prompt tok | output tok | pps tok"
        " | entity P | entity R | fact P | fact R |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    total = Score.empty()
    for r in results:
        assert r.score is not None
        total = total + r.score
        lines.append(
            f"| {r.id} | {r.turns} | {r.state} | {r.seconds:,.1f} | {r.llm_seconds:,.1f}"
            f" | {r.calls} | {_count(r.prompt)} | {_count(r.output)} | {r.tokens:,}"
            f" | {_score(r.score)} |"
        )
    prompt, output = metered if metered is not None else (None, None)
    if all(r.prompt is not None for r in results):  # each episode's own (one at a time)
        prompt, output = sum(r.prompt or 0 for r in results), sum(r.output or 0 for r in results)
    done = sum(r.state == "done" for r in results)
    lines.append(
        f"| **all {len(results)}** | {sum(r.turns for r in results)} | {done} done"
        f" | {sum(r.seconds for r in results):,.1f} | {sum(r.llm_seconds for r in results):,.1f}"
        f" | {sum(r.calls for r in results)} | {_count(prompt)} | {_count(output)}"
        f" | {sum(r.tokens for r in results):,} | {_score(total)} |"
    )
    return "\n".join(lines)


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _score(s: Score) -> str:
    e, f = s.entities, s.facts
    return " | ".join(percent(x) for x in (e.precision, e.recall, f.precision, f.recall))


def summary(results: list[Result]) -> str:
    done = [r for r in results if r.state == "done"]
    if not done:
        return "no episode was extracted"
    per = [r.seconds for r in done]
    calls = [r.calls for r in done]
    return (
        f"per extracted episode: median {statistics.median(per):,.1f} s"
        f" (min {min(per):,.1f}, max {max(per):,.1f}), median {statistics.median(calls):.0f}"
        f" LLM calls, {sum(r.tokens for r in done) / len(done):,.0f} tokens"
    )


def show(results: list[Result]) -> None:
    for r in results:
        assert r.score is not None
        print(f"\n## {r.id} ({r.state}{': ' + r.error if r.error else ''})")
        for kind, counts in (("entities", r.score.entities), ("facts", r.score.facts)):
            for line in counts.missed:
                print(f"  missed {kind[:-1] if kind == 'facts' else 'entity'}: {line}")
            for line in counts.invented:
                print(f"  no label for: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=None, help="the first N episodes only")
    parser.add_argument("--stub", action="store_true", help="tests/stub_llm.py as the LLM")
    parser.add_argument("--show", action="store_true", help="what was missed and invented")
    parser.add_argument("--json", type=Path, help="write the results here as well")
    parser.add_argument("--attempts", type=int, default=1, help="tries per episode")
    parser.add_argument("--concurrency", type=int, default=1, help="episodes at once")
    parser.add_argument("--data", type=Path, default=DATA, help="the labelled episodes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        configured = Settings(data_dir=Path(root) / "data")
        stub = None
        if args.stub:
            from stub_llm import StubLLM

            stub = StubLLM().start()
            import os

            os.environ.update(
                LLM_PROVIDER="openai_compatible", LLM_BASE_URL=stub.url, LLM_MODEL="stub"
            )
            configured = Settings(data_dir=Path(root) / "data")
        if configured.llm_provider == "none":
            sys.exit("no extraction LLM is configured: set LLM_PROVIDER (docs/settings.md)")
        print(
            f"LLM: {configured.llm_provider} {configured.llm_model or ''}"
            f" at {configured.llm_base_url or 'the provider API'}"
            f" (response format {configured.llm_response_format},"
            f" timeout {configured.llm_timeout_s:g} s)",
            file=sys.stderr,
        )
        metered = None
        try:
            if configured.llm_base_url:
                with Meter(configured.llm_base_url, configured.llm_timeout_s) as meter:
                    settings = settings_for(args, Path(root), meter.url)
                    results = run(args, settings, meter)
                    metered = (
                        sum(c.prompt for c in meter.calls),
                        sum(c.output for c in meter.calls),
                    )
            else:
                results = run(args, settings_for(args, Path(root), None), None)
        finally:
            if stub is not None:
                stub.stop()
    stopped = [r.id for r in results if r.score is None]
    results = [r for r in results if r.score is not None]
    print()
    print(table(results, metered))
    if stopped:
        print(f"\nnot finished (stopped): {', '.join(stopped)}")
    print()
    print(summary(results))
    if args.show:
        show(results)
    if args.json:
        rows = []
        for r in results:
            row = asdict(r)
            kept = ("found", "right", "labels", "matched")
            row["score"] = {
                kind: {k: v for k, v in counts.items() if k in kept}
                for kind, counts in row["score"].items()
            }
            rows.append(row)
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
