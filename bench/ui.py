"""Page load time of the web face: the timeline with many events, the graph page with
many facts.

Run: .venv/bin/python bench/ui.py [--events 100000] [--facts 10000] [--dir D] [--runs 5]

One entity gets `--events` events (4 channels, sessions of 50 turns; stored through the
capture service, in batches) and `--facts` facts in the embedded FalkorDB (bulk-loaded as
in bench/graph.py, no LLM). Then a real `pps serve` on the data dir, signed in through
the sign-in form, and per page:

- server time to first byte: a GET with the session cookie, until the answer's headers
  (median of --runs), and the whole page's size;
- in Debian's Chromium (Playwright's Python package, `executable_path`): the
  Performance API's responseStart and first-contentful-paint of a fresh navigation
  (median of --runs). Skipped, and said, when Chromium or Playwright is missing.

Goal: first meaningful paint under 1 s. With --dir the corpus stays between runs and a
later run grows it from where it is. Figures only; nothing is asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run by path: bench/ingest.py must not shadow `ingest`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import random
import re
import shutil
import statistics
import tempfile
import time

import httpx

from bench.graph import synthetic_facts
from engine.capture import entities
from engine.capture import events as capture
from engine.graph.backend import Graph
from engine.kernel.config import Settings, settings_env
from engine.kernel.events import EventIn
from engine.store.db import Database
from pps.process import ServerProcess

ENTITY = "observatory"
CHANNELS = ("terminal", "discord", "reflection", "texture-notes")
WORDS = [
    "robe",
    "kettle",
    "garden",
    "river",
    "hearth",
    "satellite",
    "mountain",
    "coffee",
    "letter",
    "lamp",
    "window",
]
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
GRAPH = {"graph_backend": "falkordb", "graph_url": None, "llm_provider": "none"}


def populate(data_dir: Path, events: int, facts: int) -> str:
    """The entity's events and facts, grown to the sizes asked; its token."""
    settings = Settings(data_dir=data_dir, **GRAPH)
    db = Database.open(settings)
    token_file = data_dir / "bench-token"
    if token_file.exists():
        token = token_file.read_text().strip()
    else:
        token = entities.create(db, ENTITY)
        token_file.write_text(token)
    rng = random.Random(7)
    have = db.conn.execute("SELECT COUNT(*) FROM events WHERE entity = ?", (ENTITY,)).fetchone()[0]
    began = time.perf_counter()
    for start in range(have, events, 1000):
        batch = [
            EventIn(
                channel=CHANNELS[n % len(CHANNELS)],
                session_id=f"s{n // 50}",
                author=rng.choice(("jeff", "lyra")),
                content=" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 40))),
            )
            for n in range(start, min(start + 1000, events))
        ]
        capture.Capture(db, ()).record(ENTITY, batch)
    if events > have:
        print(f"stored {events - have} events in {time.perf_counter() - began:.1f} s")
    if facts:
        graph = Graph(settings, db)
        graph.start()
        try:
            known = graph.store.counts(ENTITY)["facts"]
            began = time.perf_counter()
            if facts > known:
                graph.store.import_facts(ENTITY, synthetic_facts(facts - known, rng))
                print(f"loaded {facts - known} facts in {time.perf_counter() - began:.1f} s")
        finally:
            graph.stop()
    db.close()
    return token


def sign_in(url: str, token: str) -> httpx.Client:
    http = httpx.Client(base_url=url, headers={"Origin": url}, timeout=60)
    form = http.get("/ui")
    csrf = CSRF.search(form.text).group(1)
    assert http.post("/ui/login", data={"token": token, "csrf": csrf}).status_code == 303
    return http


def ttfb(http: httpx.Client, path: str, runs: int) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(runs):
        began = time.perf_counter()
        with http.stream("GET", path) as answer:
            times.append(time.perf_counter() - began)
            size = len(answer.read())
            assert answer.status_code == 200, (path, answer.status_code)
    return statistics.median(times) * 1000, size


def paint(url: str, token: str, paths: list[str], runs: int) -> dict[str, tuple[float, float]]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("no first contentful paint: the playwright package is not installed")
        return {}
    if chromium is None:
        print("no first contentful paint: no chromium on PATH")
        return {}
    figures = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        page = context.new_page()
        page.goto(url + "/ui")
        page.get_by_label("Token").fill(token)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(url + "/ui/timeline")
        for path in paths:
            first, fcp = [], []
            for _ in range(runs):
                page.goto(url + path, wait_until="load")
                timing = page.evaluate(
                    "() => new Promise(done => { const look = () => {"
                    " const p = performance.getEntriesByName('first-contentful-paint')[0];"
                    " if (!p) return requestAnimationFrame(look);"
                    " const n = performance.getEntriesByType('navigation')[0];"
                    " done([n.responseStart, p.startTime]); }; look(); })"
                )
                first.append(timing[0])
                fcp.append(timing[1])
            figures[path] = (statistics.median(first), statistics.median(fcp))
        browser.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="pps-bench-ui-"))
    data_dir = root / "data"
    token = populate(data_dir, args.events, args.facts)
    with ServerProcess(data_dir, env=settings_env(**GRAPH)) as server:
        http = sign_in(server.url, token)
        paths = ["/ui/timeline", "/ui/graph"]
        http.get("/ui/graph")  # the graph server's first query pays for its connection
        print(f"{args.events} events, {args.facts} facts; medians of {args.runs} runs")
        for path in paths:
            ms, size = ttfb(http, path, args.runs)
            print(f"{path:14} time to first byte {ms:7.1f} ms   {size / 1024:6.1f} KiB")
        for path, (first, fcp) in paint(server.url, token, paths, args.runs).items():
            print(f"{path:14} Chromium responseStart {first:7.1f} ms   first paint {fcp:7.1f} ms")
        http.close()


if __name__ == "__main__":
    main()
