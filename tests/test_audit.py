"""The retrieval audit end to end: recalls logged by the real app, judged over REST,
precision@k per layer and by week, `pps audit export` as an evaluation set, and
bench/audit_score.py scoring a replay of today's recall against it. The web face's audit
page, its CSRF and isolation are in tests/test_ui.py."""

from __future__ import annotations

import json

import httpx
import pytest

from bench import audit_score
from engine.capture import entities
from engine.recall import audit
from tests.conftest import AppServer


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """A data dir with two logged recalls of lyra's, every item judged, and the server
    stopped (the bench takes the data dir's lock)."""
    data = tmp_path_factory.mktemp("pps") / "data"
    with AppServer(data, recall_log=True) as server:
        token = entities.create(server.db, "lyra")
        api = httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        texts = ["the comfy robe is blue", "the robe hangs by the door", "the kettle at dawn"]
        api.post(
            "/v1/events",
            json=[{"channel": "terminal", "author": "jeff", "content": t} for t in texts],
        ).raise_for_status()
        logs = []
        for context in ("the comfy robe", "the kettle"):
            api.post("/v1/recall", json={"context": context}).raise_for_status()
            logs.append(api.get("/v1/recall/log", params={"limit": 1}).json()["entries"][0])
        for entry in logs:
            for rank, item in enumerate(entry["items"], start=1):
                relevant = ("robe" in item["text"]) == ("robe" in entry["context"])
                body = {"log_id": entry["id"], "rank": rank, "relevant": relevant, "by": "jeff"}
                api.post("/v1/audit/judgments", json=body).raise_for_status()
        precision = api.get("/v1/audit/precision", params={"k": 10}).json()
        out = data.parent / "eval.jsonl"
        said = server.pps("audit", "export", str(out), "--entity", "lyra")
        api.close()
    return {"data": data, "logs": logs, "precision": precision, "out": out, "said": said}


def test_precision_per_recall_then_averaged(judged):
    logs, precision = judged["logs"], judged["precision"]
    items = sum(len(entry["items"]) for entry in logs)
    assert precision["judged"] == items and precision["recalls"] == 2
    relevant = sum(
        ("robe" in i["text"]) == ("robe" in e["context"]) for e in logs for i in e["items"]
    )
    assert precision["relevant"] == relevant
    shares = [
        sum(("robe" in i["text"]) == ("robe" in e["context"]) for i in e["items"]) / len(e["items"])
        for e in logs
    ]
    assert precision["precision"] == pytest.approx(sum(shares) / 2, abs=1e-4)
    assert {layer["layer"] for layer in precision["layers"]} >= {"turns"}
    assert [w["judged"] for w in precision["weeks"]] == [items]


def test_the_export_is_an_evaluation_set(judged):
    assert "2 judged recalls" in judged["said"]
    records = [json.loads(line) for line in judged["out"].read_text().splitlines()]
    assert [r["context"] for r in records] == ["the comfy robe", "the kettle"]
    first = records[0]
    assert first["entity"] == "lyra" and first["channel"] is None
    item = first["items"][0]
    assert set(item) == {"key", "rank", "layer", "score", "source", "text", "relevant"}
    assert item["key"] == audit.item_key(item["source"]) and item["key"].startswith("event:")
    assert item["relevant"] is ("robe" in item["text"])


def test_the_bench_scores_a_replay_against_the_judgments(judged):
    records = audit_score.load(judged["out"], "lyra")
    logged = audit_score.score(records, audit_score.logged(records), [1, 10])
    assert logged[10]["precision"] == pytest.approx(judged["precision"]["precision"], abs=1e-4)
    assert logged[10]["judged_share"] == 1.0
    rankings = audit_score.replay(judged["data"], records, 5, graph_backend="none")
    replayed = audit_score.score(records, rankings, [1, 10])
    # The same memory, the same contexts: today's recall ranks the same judged items.
    assert replayed[1]["recalls"] == 2 and replayed[10]["precision"] is not None
    assert set(rankings[0]) >= {i["key"] for i in records[0]["items"] if i["relevant"]}


def test_item_identity_names_the_source_not_the_rank():
    assert audit.item_key({"event_uid": "e1", "channel": "x"}) == "event:e1"
    assert audit.item_key({"path": "a.md", "start_line": 3, "end_line": 9}) == "file:a.md:3-9"
    assert audit.item_key({"fact_uuid": "f", "event_uids": []}) == "fact:f"
    assert audit.item_key({"summary_id": 4}) == "summary:4"
    assert audit.item_key({"b": 1, "a": 2}) == audit.item_key({"a": 2, "b": 1})
    assert audit.precision_at(["a", "b", "c"], {"a": True, "c": False}, 2) == (1.0, 1)
    assert audit.precision_at(["x"], {}, 5) == (None, 0)
