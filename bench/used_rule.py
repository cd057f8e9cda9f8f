"""Choose the "was it used" rule on a labelled set: how well each candidate tells a
recalled item the reply drew on from one it did not.

Run: .venv/bin/python bench/used_rule.py [bench/data/used_pairs.jsonl]

Each line of the set is a reply with the items it used and items it did not (written
for this from companion conversations: a day, a project, a pet, a trip). Candidates:
shared distinctive words (engine.recall.used.words) at 1, 2 and 3 words, and the cosine
similarity of the bundled embedding model (the one search loads) at a few thresholds.
Prints precision, recall and F1 of "used" for each. Figures only.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run by path: bench/ingest.py must not shadow `ingest`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import json

from engine.kernel.config import Settings
from engine.recall import used
from engine.search import embeddings

SET = Path(__file__).parent / "data" / "used_pairs.jsonl"


def pairs(path: Path) -> list[tuple[str, str, bool]]:
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        found += [(item, record["reply"], True) for item in record["used"]]
        found += [(item, record["reply"], False) for item in record["unused"]]
    return found


def figures(truth: list[bool], said: list[bool]) -> tuple[float, float, float]:
    hits = sum(t and s for t, s in zip(truth, said, strict=True))
    precision = hits / sum(said) if any(said) else 0.0
    recall = hits / sum(truth) if any(truth) else 0.0
    f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
    return precision, recall, f1


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else SET
    found = pairs(path)
    truth = [label for _, _, label in found]
    print(f"{len(found)} pairs, {sum(truth)} used")
    shared = [len(used.words(item) & used.words(reply)) for item, reply, _ in found]
    for n in (1, 2, 3):
        p, r, f = figures(truth, [s >= n for s in shared])
        print(f"words>={n}      precision {p:.3f} recall {r:.3f} F1 {f:.3f}")
    embedder = embeddings.get(Settings())
    items = embedder.embed_now([item for item, _, _ in found])
    replies = embedder.embed_now([reply for _, reply, _ in found])
    cosine = [float(a @ b) for a, b in zip(items, replies, strict=True)]
    for threshold in (0.3, 0.4, 0.5, 0.6):
        p, r, f = figures(truth, [c >= threshold for c in cosine])
        print(f"cosine>={threshold}  precision {p:.3f} recall {r:.3f} F1 {f:.3f}")


if __name__ == "__main__":
    main()
