"""bench/extraction.py run as a user runs it, on the stub LLM: the episodes go through pps's
graph path (capture, the queue, the handler, Graphiti, the embedded FalkorDB) and the
figures it prints hold together: every episode extracted, its LLM calls counted, pps's
own token count equal to the prompt and output tokens the meter read from the answers,
and the scores read from what the graph holds. What the stub extracts is no measure of
quality: only the plumbing is checked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.graph, pytest.mark.process]

ROOT = Path(__file__).resolve().parent.parent


def test_the_bench_runs_episodes_through_the_graph_and_its_figures_add_up(tmp_path):
    out = tmp_path / "results.json"
    run = subprocess.run(
        [sys.executable, "bench/extraction.py", "--stub", "--episodes", "2", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    rows = json.loads(out.read_text())
    assert [r["id"] for r in rows] == ["kitten", "sister-moves"]
    for r in rows:
        assert r["state"] == "done" and r["error"] is None
        assert r["calls"] >= 3  # Graphiti's extraction: entities, edges, their dedupes
        assert r["prompt"] > 0 and r["output"] > 0
        assert r["prompt"] + r["output"] == r["tokens"]  # the meter and pps agree
        facts = r["score"]["facts"]
        assert facts["found"] == len(r["found"]["facts"]) > 0
        assert r["score"]["entities"]["found"] == len(r["found"]["entities"]) > 0
        # the stub names the capitalised words: the speakers are among them
        assert "Jeff" in r["found"]["entities"]
    assert "| **all 2** | 8 | 2 done |" in run.stdout
    assert "backlog estimate (engine.graph.backlog)" in run.stdout
