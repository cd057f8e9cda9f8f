"""`pps import claude-code`: transcripts turn by turn with the hooks' uids; bad lines and
unreadable files skipped with counts and the first errors; a re-run, or a session the
hooks already captured, stores nothing twice; a stopped service leaves it all spooled."""

from __future__ import annotations

import json

from tests.conftest import AppServer, create_entity
from tests.fixtures_ingest import (
    Transcript,
    all_events,
    client_env,
    pps,
    run_hook,
    summary_counts,
    token_of,
)


def write_sessions(folder, sessions=2, rounds=3) -> list[Transcript]:
    project = folder / "projects" / "-home-jeff-pps"
    project.mkdir(parents=True, exist_ok=True)
    written = []
    for s in range(sessions):
        transcript = Transcript(project / "unnamed.jsonl")
        transcript.path = project / f"{transcript.session}.jsonl"  # as Claude Code names them
        transcript.noise()
        for r in range(rounds):
            transcript.user(f"session {s} question {r}")
            transcript.tool_round()
            transcript.assistant(f"session {s} answer {r}")
        written.append(transcript)
    return written


def test_import_transcripts_then_again(make_client, server, tmp_path, processes):
    api = make_client()
    env = client_env(server.url, token_of(api), tmp_path)
    sessions = write_sessions(tmp_path)
    bad = sessions[0].path
    with open(bad, "a") as file:
        file.write("{not json\n")
        file.write(json.dumps({"type": "assistant", "message": {"content": "no uuid"}}) + "\n")
        file.write(json.dumps({"type": "user", "uuid": "u9", "sessionId": "s"}) + "\n")
    with open(bad, "ab") as file:
        file.write(b'{"type": "user", "message": {"content": "caf\xe9"}}\n')
    (tmp_path / "projects" / "latin1.jsonl").write_bytes(b"\xe9t\xe9\n")

    done = pps("import", "claude-code", str(tmp_path / "projects"), env=env)
    assert done.returncode == 0, done.stderr
    counts = summary_counts(done.stdout)
    assert counts["imported"] == 12 and counts["duplicates"] == 0
    assert counts["skipped"] == 5
    assert "3 files" in done.stdout
    errors = done.stdout.split("first errors:")[1]
    assert "invalid JSON" in errors and "missing field uuid" in errors
    assert "missing field message" in errors and "not UTF-8" in errors

    stored = all_events(api)
    for transcript in sessions:
        mine = [e for e in stored if e["session_id"] == transcript.session]
        assert [(e["role"], e["content"]) for e in mine] == transcript.turns

    again = pps("import", "claude-code", str(tmp_path / "projects"), env=env)
    assert summary_counts(again.stdout)["imported"] == 0
    assert summary_counts(again.stdout)["duplicates"] == 12
    assert len(all_events(api)) == 12


def test_a_session_captured_by_the_hooks_imports_as_duplicates(
    make_client, server, tmp_path, processes
):
    api = make_client()
    env = client_env(server.url, token_of(api), tmp_path)
    transcript = Transcript(tmp_path / "live.jsonl")
    for n in range(2):
        prompt = f"live question {n}"
        run_hook("UserPromptSubmit", env=env, stdin=transcript.payload("x", prompt=prompt))
        transcript.user(prompt)
        transcript.assistant(f"live answer {n}")
        run_hook("Stop", env=env, stdin=transcript.payload("Stop"))
    assert len(all_events(api)) == 4
    done = pps("import", "claude-code", str(transcript.path), env=env)
    assert summary_counts(done.stdout)["imported"] == 0
    assert summary_counts(done.stdout)["duplicates"] == 4
    assert len(all_events(api)) == 4


def test_import_with_the_service_stopped_spools_then_flush(tmp_path, processes):
    server = AppServer(tmp_path / "data").start()
    try:
        token = create_entity(server.data_dir, "lyra")
        env = client_env(server.url, token, tmp_path, PPS_CLIENT_BATCH="5")
        write_sessions(tmp_path, sessions=3, rounds=4)
        server.stop()
        done = pps("import", "claude-code", str(tmp_path / "projects"), env=env)
        assert done.returncode == 0, done.stderr
        assert summary_counts(done.stdout)["spooled"] == 24
        assert "unreachable" in done.stderr
        server.start()
        flushed = pps("ingest", "flush", env=env)
        assert "24 stored" in flushed.stdout and "0 waiting" in flushed.stdout
    finally:
        server.stop()
