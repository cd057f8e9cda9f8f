"""Recall is logged by default, kept for PPS_RECALL_LOG_DAYS / _ROWS, and the assistant's
reply marks each item of the recalls before it used or not (engine.recall.used): from a
real Claude Code Stop hook after a UserPromptSubmit recall, from a Discord-style reply
in the same channel, never across entities; REST and the pages show the used share."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from bench import audit_score
from engine.capture import entities
from engine.kernel.config import Settings
from engine.recall import log, used
from engine.recall.shapes import Item, RecallRequest
from engine.store.db import Database
from tests.test_hooks_claude_code import hook, session  # noqa: F401 (the fixture)
from tests.test_ui import UI

PAIRS = Path(__file__).parent.parent / "bench" / "data" / "used_pairs.jsonl"


def logged(api: httpx.Client) -> list[dict]:
    answer = api.get("/v1/recall/log")
    assert answer.status_code == 200, answer.text
    return answer.json()["entries"]


def test_recall_is_logged_by_default():
    assert Settings().recall_log is True


def test_the_log_keeps_its_days_and_rows_and_never_a_judged_recall(tmp_path):
    db = Database.open(Settings(data_dir=tmp_path / "data"))
    try:
        entities.create(db, "lyra")
        entities.create(db, "nova")
        start = datetime(2026, 3, 1, tzinfo=UTC)
        kept = Settings(data_dir=tmp_path / "data", recall_log_days=30, recall_log_rows=4)
        item = Item(layer="anchors", text="the comfy robe", score=1.0, source={"path": "r.md"})

        def write(entity: str, context: str, day: int) -> None:
            ask = RecallRequest(context=context)
            log.write(db, kept, entity, ask, [item], {}, 1.0, now=start + timedelta(days=day))

        write("lyra", "judged on day 0", 0)
        judged = db.conn.execute("SELECT id FROM recall_log").fetchone()["id"]
        with db.write() as conn:  # as the audit page's verdict writes it
            conn.execute(
                "INSERT INTO audit_judgments (entity, log_id, item_key, rank, layer, relevant,"
                " judged_by, judged_at) VALUES ('lyra', ?, 'file:r.md', 1, 'anchors', 1, 'ui',"
                " '2026-03-01T00:00:00.000000Z')",
                (judged,),
            )
        write("lyra", "day 1", 1)
        write("nova", "nova's day 1", 1)
        write("lyra", "day 20", 20)
        contexts = lambda who: [  # noqa: E731
            e.context for e in log.entries(db, who, log.LogQuery()).entries
        ]
        assert contexts("lyra") == ["day 20", "day 1", "judged on day 0"]
        write("lyra", "day 32", 32)  # day 1 is past 30 days now; the judged one stays
        assert contexts("lyra") == ["day 32", "day 20", "judged on day 0"]
        for day in (33, 34, 35):
            write("lyra", f"day {day}", day)
        assert contexts("lyra") == ["day 35", "day 34", "day 33", "day 32", "judged on day 0"]
        assert contexts("nova") == ["nova's day 1"]  # another entity's log is its own
    finally:
        db.close()


def test_the_rule_on_the_labelled_set_is_what_the_docs_say():
    """docs/retrieval-evaluation.md gives these figures (bench/used_rule.py prints them)."""
    hits = said = truth = 0
    for line in PAIRS.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for label, items in ((True, record["used"]), (False, record["unused"])):
            for text in items:
                marked, _ = used.is_used(text, record["reply"])
                hits += marked and label
                said += marked
                truth += label
    assert (truth, round(hits / said, 3), round(hits / truth, 3)) == (29, 0.967, 1.0)


def test_a_stop_hook_reply_marks_the_prompts_recall_used_or_not(session, make_client):  # noqa: F811
    api, env, transcript = session
    api.post(
        "/v1/anchors",
        json={"title": "Robe", "content": "The comfy robe: navy, too long in the sleeves."},
    )
    api.post(
        "/v1/anchors",
        json={"title": "Biscuit", "content": "Biscuit the old beagle naps on the porch."},
    )
    prompt = "Why don't you pull on that comfy robe, and how is Biscuit?"
    hook("UserPromptSubmit", transcript, env, prompt=prompt)
    [entry] = [e for e in logged(api) if e["context"] == prompt]
    assert entry["session_id"] == transcript.session
    texts = [item["text"] for item in entry["items"]]
    assert any("robe" in t for t in texts) and any("Biscuit" in t for t in texts), texts
    assert all(item["used"] is None for item in entry["items"])  # no reply yet

    other = make_client()  # another entity's reply in a session of the same id marks nothing
    sent = other.post(
        "/v1/events",
        json={
            "channel": "terminal",
            "role": "assistant",
            "session_id": transcript.session,
            "content": "The comfy robe is navy and too long in the sleeves; Biscuit naps.",
        },
    )
    assert sent.status_code == 200, sent.text
    assert all(item["used"] is None for item in logged(api)[0]["items"])

    reply = "There, the navy robe is on; the sleeves are too long, as ever."
    transcript.user(prompt)
    transcript.assistant(reply)
    hook("Stop", transcript, env, stop_hook_active=False)
    [entry] = [e for e in logged(api) if e["context"] == prompt]
    marks = {item["text"]: item["used"] for item in entry["items"]}
    assert marks == {text: used.is_used(text, reply)[0] for text in marks}
    assert any("robe" in t and m for t, m in marks.items()), marks
    assert any("Biscuit" in t and m is False for t, m in marks.items()), marks

    transcript.assistant("Biscuit is asleep on the porch, snoring.")  # a later reply
    hook("Stop", transcript, env, stop_hook_active=True)
    [again] = [e for e in logged(api) if e["context"] == prompt]
    assert {item["text"]: item["used"] for item in again["items"]} == marks  # marked once

    share = api.get("/v1/audit/used").json()
    assert share["marked"] == len(marks) and share["used"] == sum(marks.values())
    [anchors] = [layer for layer in share["layers"] if layer["layer"] == "anchors"]
    assert anchors["used"] >= 1 and len(share["weeks"]) == 1
    assert other.get("/v1/audit/used").json()["marked"] == 0


def test_a_discord_reply_marks_the_recall_of_its_own_discord_channel(make_client):
    """As the Discord adapter stores the bot's message: channel `discord`, the Discord
    channel's id as the session. A recall that gave only the channel is marked too."""
    api = make_client()
    api.post("/v1/anchors", json={"title": "Train", "content": "The 9:42 TGV to Lyon, car 7."})
    for ask in (
        {"context": "which train to Lyon?", "channel": "discord", "session_id": "discord:42"},
        {"context": "the Lyon train again?", "channel": "discord"},
    ):
        assert api.post("/v1/recall", json=ask).status_code == 200
    reply = {"channel": "discord", "role": "assistant", "author": "lyra"}
    elsewhere = {**reply, "channel": "terminal", "content": "The 9:42 TGV to Lyon, car 7."}
    api.post("/v1/events", json=elsewhere)
    assert all(i["used"] is None for e in logged(api) for i in e["items"])
    answer = {**reply, "session_id": "discord:42", "content": "Take the 9:42 TGV, car 7."}
    api.post("/v1/events", json=answer)
    entries = logged(api)
    assert len(entries) == 2 and all(e["items"] for e in entries)
    assert all(any(i["used"] for i in e["items"]) for e in entries), entries


def test_the_audit_and_recall_pages_and_audit_score_show_the_used_share(
    server, make_client, capsys
):
    api = make_client()
    api.post("/v1/anchors", json={"title": "Robe", "content": "The comfy robe, navy."})
    api.post("/v1/recall", json={"context": "the comfy robe", "session_id": "s-1"})
    ui = UI(server, api.headers["Authorization"].removeprefix("Bearer "))
    assert ui.sign_in().status_code == 303
    page = ui.get("/ui/recall").text
    assert "No reply has come after a logged recall yet" in page
    api.post(
        "/v1/events",
        json={
            "channel": "terminal",
            "role": "assistant",
            "session_id": "s-1",
            "content": "The navy robe it is, the comfy one.",
        },
    )
    share = api.get("/v1/audit/used").json()
    assert share["marked"] >= 1
    shown = f"{round(share['share'] * 100)}% of {share['marked']} recalled items used"
    for path in ("/ui/recall", "/ui/audit?seed=1"):
        page = ui.get(path).text
        assert shown in page, path
        assert '<tr data-layer="anchors"><td>anchors</td>' in page, path
    entry_id = logged(api)[0]["id"]
    logged_page = ui.get(f"/ui/recall?log={entry_id}").text
    assert '<td class="used" data-label="used?">used</td>' in logged_page

    audit_score.used_shares(server.data_dir, [api.entity], graph_backend="none")
    printed = capsys.readouterr().out
    assert f"used     {api.entity}: {round(share['share'] * 100)}% of {share['marked']}" in printed
