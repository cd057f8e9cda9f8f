"""Mixed load on a real `pps serve`: writers, searchers and recallers at once, then the
same queries while another entity's big file is embedded.

Run: .venv/bin/python bench/load.py [--seconds S] [--writers W] [--searchers N]
     [--recallers N] [--big-file-mb MB] [--only homes] [--burn N]

Phases, each printed as one table row:
1. idle: one entity's search and recall alone (the baseline);
2. mixed: W writers posting single events (each a new turn) while N searchers and N
   recallers query the same entity; throughput, POST p95, search p95, recall p95;
   then the embedding lag: how long after the writers stop every turn has its vector
   (turns searchable by meaning), and the rate at which vectors came;
3. idle again: the same, with the turns the mixed phase added (the baseline of 4);
4. big file: a second entity's home gets a markdown file of MB megabytes (thousands of
   chunks) while the first entity's search and recall run; their p95 against idle again.
5. homes (alone with `--only homes`, B then has 200 turns): entity B (lyra) is searched and posts a
   turn every half second while entity A (nexus) gets a hostile home: the big file, a
   200 KB binary `.md` and a file rewritten every 2 s; A posts a turn every 2 s. B's
   search and POST p50/p95, and A's new turn to its vector (searchable by meaning), idle
   and while A's home is indexed. `--burn N`: N CPU-bound processes beside this phase
   (a busy machine), killed after it.

Prints figures (medians, p95s, ratios); asserts nothing. The machine is what it is:
compare ratios, not milliseconds, across machines.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from engine.capture import entities
from engine.kernel.config import Settings
from engine.store.db import Database
from pps.process import ServerProcess

console = Console(width=130)
WORDS = [
    "garden",
    "kitchen",
    "robe",
    "Denver",
    "mountains",
    "satellites",
    "pantry",
    "honey",
    "bicycle",
    "library",
    "concert",
    "Lisbon",
    "harbour",
    "winter",
    "lantern",
    "violin",
    "recipe",
    "orchard",
    "notebook",
    "telescope",
]


def sentence(rng: random.Random, n: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1] if len(samples) >= 2 else float("nan")


class Timed:
    """Latencies (ms) of one kind of call, from many threads."""

    def __init__(self):
        self.ms: list[float] = []
        self.errors = 0
        self._lock = threading.Lock()

    def call(self, fn) -> None:
        started = time.perf_counter()
        try:
            response = fn()
            ok = response.status_code < 400
        except httpx.HTTPError:
            ok = False
        with self._lock:
            if ok:
                self.ms.append((time.perf_counter() - started) * 1000)
            else:
                self.errors += 1

    def row(self) -> tuple[str, str]:
        if not self.ms:
            return "-", "-"
        return f"{statistics.median(self.ms):.0f}", f"{p95(self.ms):.0f}"


def loop(stop: threading.Event, body) -> threading.Thread:
    def run():
        while not stop.is_set():
            body()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def queries(url: str, token: str, stop: threading.Event, searchers: int, recallers: int):
    """Search and recall threads on one entity until `stop`; their timings."""
    search, recall = Timed(), Timed()
    threads = []
    for n in range(searchers + recallers):
        client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"})
        rng = random.Random(n)
        if n < searchers:
            body = lambda c=client, r=rng: search.call(  # noqa: E731
                lambda: c.post("/v1/search", json={"query": sentence(r, 4), "limit": 10})
            )
        else:
            body = lambda c=client, r=rng: recall.call(  # noqa: E731
                lambda: c.post("/v1/recall", json={"context": sentence(r, 8)})
            )
        threads.append(loop(stop, body))
    return search, recall, threads


def run_for(seconds: float, threads_of) -> None:
    stop = threading.Event()
    threads = threads_of(stop)
    time.sleep(seconds)  # a benchmark's measuring window, not a wait for a condition
    stop.set()
    for thread in threads:
        thread.join(30)


def vectors_ready(client: httpx.Client) -> tuple[int, int]:
    stats = client.get("/v1/search/index").json()
    return stats["vectors"], stats["chunks"]


def all_embedded(client: httpx.Client) -> tuple[int, float]:
    """Wait until every chunk of the entity has its vector: (how many had none, seconds)."""
    started = time.monotonic()
    done, total = vectors_ready(client)
    behind = total - done
    while done < total:
        time.sleep(0.5)  # polling the server's own count, as a user watching would
        done, total = vectors_ready(client)
    return behind, time.monotonic() - started


def big_file(path: Path, megabytes: float) -> tuple[int, int]:
    """A markdown file of `megabytes` in sections: (bytes, sections)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    frng = random.Random(3)
    parts, size = [], 0
    while size < megabytes * 1_000_000:
        part = f"## Note {len(parts)}\n" + " ".join(sentence(frng, 20) for _ in range(6))
        parts.append(part)
        size += len(part) + 2
    path.write_text("\n\n".join(parts) + "\n")
    return size, len(parts)


def turn_to_vector(db: Database, client: httpx.Client, n: int) -> float:
    """Post one turn and wait until it has its vector: seconds from the request sent."""
    started = time.monotonic()
    posted = client.post("/v1/events", json=[{"channel": "probe", "content": f"Turn {n}."}])
    posted.raise_for_status()
    event = posted.json()["events"][0]["id"]
    while not db.conn.execute(
        "SELECT 1 FROM search_vectors v JOIN search_chunks c ON c.id = v.chunk_id"
        " WHERE c.event_id = ?",
        (event,),
    ).fetchone():
        time.sleep(0.05)  # polling the database as a reader would, not a measured wait
    return time.monotonic() - started


def homes_phase(args, server, data_dir: Path, lyra: str, nexus: str) -> None:
    """Phase 5: B searched and writing while A's hostile home is indexed (beside
    `args.burn` CPU-bound processes, started once B's turns are embedded)."""
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burn)
    ]
    try:
        _homes(args, server, data_dir, lyra, nexus)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def _homes(args, server, data_dir: Path, lyra: str, nexus: str) -> None:
    db = Database(Settings(data_dir=data_dir).database_path)
    b = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {lyra}"}, timeout=120)
    a = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {nexus}"}, timeout=120)
    table = Table(
        title=f"One entity's hostile home ({args.seconds:.0f} s a phase, {args.burn} burners)"
    )
    for column in ("phase", "B search p50/p95 ms", "B POST p50/p95 ms", "A turn→vector p50/max s",
                   "B errors"):  # fmt: skip
        table.add_column(column, justify="right")

    def measure(label: str, hostile) -> None:
        search, posts, lags = Timed(), Timed(), []

        def threads_of(stop):
            rng = random.Random(11)
            body = lambda: search.call(  # noqa: E731
                lambda: b.post("/v1/search", json={"query": sentence(rng, 4), "limit": 10})
            )
            writer = httpx.Client(base_url=server.url, headers=b.headers, timeout=120)

            def write():
                event = {"channel": "b", "author": "Jeff", "content": sentence(rng)}
                posts.call(lambda: writer.post("/v1/events", json=[event]))
                stop.wait(0.5)

            def a_turns():
                lags.append(turn_to_vector(db, a, len(lags)))
                stop.wait(2.0)

            return [loop(stop, body), loop(stop, write), loop(stop, a_turns), *hostile(stop)]

        run_for(args.seconds, threads_of)
        lag = f"{statistics.median(lags):.1f}/{max(lags):.1f}" if lags else "-"
        table.add_row(label, "/".join(search.row()), "/".join(posts.row()), lag,
                      str(search.errors + posts.errors))  # fmt: skip

    measure("idle", lambda stop: [])
    home = data_dir / "entities" / "nexus"

    def hostile(stop):
        size, sections = big_file(home / "memory" / "huge.md", args.big_file_mb)
        console.print(f"A's big file: {size / 1e6:.1f} MB, {sections} sections")
        (home / "memory" / "blob.md").write_bytes(random.Random(5).randbytes(200_000))
        rewritten = home / "memory" / "rewritten.md"
        rng = random.Random(9)

        def rewrite():
            rewritten.write_text(
                "\n\n".join(f"## Part {n}\n{sentence(rng, 60)}" for n in range(300))
            )
            stop.wait(2.0)

        return [loop(stop, rewrite)]

    measure("A's hostile home", hostile)
    stats = a.get("/v1/search/index").json()
    console.print(table)
    console.print(
        f"A after {args.seconds:.0f} s: {stats['files']} files indexed, {stats['vectors']} of"
        f" {stats['chunks']} chunks embedded; skipped: {[s['path'] for s in stats['skipped']]}"
    )
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--searchers", type=int, default=2)
    parser.add_argument("--recallers", type=int, default=2)
    parser.add_argument("--big-file-mb", type=float, default=2.0)
    parser.add_argument("--only", choices=["homes"], help="Run only the two-homes phase.")
    parser.add_argument("--burn", type=int, default=0, help="CPU-bound processes beside it.")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="pps-load-"))
    data_dir = folder / "data"
    db = Database.open(Settings(data_dir=data_dir))
    lyra, nexus = entities.create(db, "lyra"), entities.create(db, "nexus")
    db.close()
    server = ServerProcess(data_dir, env={"PPS_GRAPH_BACKEND": "none"}).start(timeout=180)
    table = Table(title=f"Mixed load ({args.seconds:.0f} s a phase)")
    for column in ("phase", "events/s", "POST p50/p95 ms", "search p50/p95 ms",
                   "recall p50/p95 ms", "errors"):  # fmt: skip
        table.add_column(column, justify="right")
    try:
        client = httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {lyra}"}, timeout=60
        )
        rng = random.Random(7)
        seed = [{"channel": "terminal", "author": "Jeff", "content": sentence(rng)}
                for _ in range(200 if args.only else 500)]  # fmt: skip
        client.post("/v1/events", json=seed).raise_for_status()
        all_embedded(client)  # the seed's vectors first: idle means idle
        if args.only == "homes":
            homes_phase(args, server, data_dir, lyra, nexus)
            return

        def one_searcher_one_recaller(label: str) -> dict[str, Timed]:
            timed: dict[str, Timed] = {}

            def start(stop):
                search, recall, threads = queries(server.url, lyra, stop, 1, 1)
                timed.update(search=search, recall=recall)
                return threads

            run_for(args.seconds, start)
            table.add_row(label, "-", "-", "/".join(timed["search"].row()),
                          "/".join(timed["recall"].row()),
                          str(timed["search"].errors + timed["recall"].errors))  # fmt: skip
            return timed

        idle = one_searcher_one_recaller("idle")

        posts, mixed = Timed(), {}

        def mixed_phase(stop):
            search, recall, threads = queries(
                server.url, lyra, stop, args.searchers, args.recallers
            )
            mixed.update(search=search, recall=recall)
            for n in range(args.writers):
                writer = httpx.Client(base_url=server.url, headers=client.headers, timeout=60)
                wrng = random.Random(100 + n)

                def write(w=writer, r=wrng, channel=f"w{n}"):
                    event = {"channel": channel, "author": "Jeff", "content": sentence(r)}
                    posts.call(lambda: w.post("/v1/events", json=[event]))

                threads.append(loop(stop, write))
            return threads

        started = time.monotonic()
        run_for(args.seconds, mixed_phase)
        elapsed = time.monotonic() - started
        table.add_row(
            "mixed", f"{len(posts.ms) / elapsed:.0f}", "/".join(posts.row()),
            "/".join(mixed["search"].row()), "/".join(mixed["recall"].row()),
            str(posts.errors + mixed["search"].errors + mixed["recall"].errors),
        )  # fmt: skip

        # The embedding lag: from the writers' stop until every turn has its vector.
        behind, lag = all_embedded(client)
        # Idle again: the mixed phase left the entity several times the turns it had, so
        # the big file is set against this, not the first idle.
        before = one_searcher_one_recaller("idle, after")

        # A second entity's big file, while the first one queries.
        size, sections = big_file(data_dir / "entities" / "nexus" / "memory" / "huge.md",
                                  args.big_file_mb)  # fmt: skip
        other = httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {nexus}"}, timeout=60
        )
        busy = one_searcher_one_recaller("big file")
        embedded, chunks = vectors_ready(other)
        homes_phase(args, server, data_dir, lyra, nexus)
        console.print(table)
        console.print(
            f"embedding lag after the writers stopped: {behind} turns without vectors,"
            f" all embedded {lag:.1f} s later ({behind / max(lag, 0.001):.0f} turns/s)"
        )
        console.print(
            f"big file: {size / 1e6:.1f} MB, {sections} sections; {embedded} of {chunks}"
            f" chunks embedded after {args.seconds:.0f} s; search p95"
            f" {p95(busy['search'].ms) / p95(before['search'].ms):.2f}x idle after, recall p95"
            f" {p95(busy['recall'].ms) / p95(before['recall'].ms):.2f}x idle after (against"
            f" the first idle: {p95(busy['search'].ms) / p95(idle['search'].ms):.2f}x,"
            f" {p95(busy['recall'].ms) / p95(idle['recall'].ms):.2f}x)"
        )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
