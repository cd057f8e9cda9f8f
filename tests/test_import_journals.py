"""`pps import journals` and `pps import openclaw`: dated markdown files become longform
events dated that day (a long one in parts), undated and unreadable files are skipped with
counts, a re-run stores nothing twice; a folder can be attached instead (recorded for the
search layer, see ingest.attachments)."""

from __future__ import annotations

import json

from tests.fixtures_ingest import all_events, client_env, pps, summary_counts, token_of


def journal_folder(root):
    folder = root / "journals"
    (folder / "2026" / "01").mkdir(parents=True)
    (folder / ".obsidian").mkdir()
    (folder / "2026-01-04.md").write_text("# The robe\n\nJeff asked about the comfy robe.\n")
    (folder / "journal_20260105.md").write_text("Quiet day. Backups ran.\n")
    (folder / "2026" / "01" / "06.md").write_text("## Walk\nWe walked by the river.\n")
    (folder / "ideas.md").write_text("no date here\n")
    (folder / "2026-01-07.md").write_bytes("Café à l'aube".encode("latin-1"))
    (folder / "2026-01-08.md").write_text("   \n")
    (folder / "2026-01-09.md").write_text(("A long day, café ☕. " * 30 + "\n") * 60)  # ~39 KB
    (folder / "my notes").mkdir()
    (folder / "my notes" / "2026-01-12 été.md").write_text("Les notes d'été\n")
    (folder / ".obsidian" / "2026-01-10.md").write_text("settings, not a journal")
    (folder / "2026-01-11.txt").write_text("not markdown")
    return folder


def test_import_journals_then_again(make_client, server, tmp_path):
    api = make_client()
    env = client_env(server.url, token_of(api), tmp_path, PPS_MAX_CONTENT_BYTES="10000")
    folder = journal_folder(tmp_path)

    done = pps("import", "journals", str(folder), env=env)
    assert done.returncode == 0, done.stderr
    counts = summary_counts(done.stdout)
    stored = {e["event_uid"]: e for e in all_events(api)}
    parts = [e for uid, e in stored.items() if uid.startswith("journal:2026-01-09.md:")]
    assert len(parts) > 3  # 40 KB at a 10,000-byte limit
    assert (counts["imported"], counts["skipped"]) == (4 + len(parts), 3)
    assert "8 files" in done.stdout
    errors = done.stdout.split("first errors:")[1]
    assert "ideas.md: no date" in errors
    assert "2026-01-07.md: not UTF-8" in errors and "2026-01-08.md: empty" in errors

    robe = stored["journal:2026-01-04.md:1"]
    assert (robe["channel"], robe["event_type"]) == ("journal", "longform")
    assert robe["created_at"] == "2026-01-04T00:00:00.000000Z"
    assert robe["metadata"]["title"] == "The robe" and robe["metadata"]["date"] == "2026-01-04"
    assert stored["journal:journal_20260105.md:1"]["created_at"].startswith("2026-01-05")
    assert stored["journal:2026/01/06.md:1"]["metadata"]["title"] == "Walk"
    parts = [stored[f"journal:2026-01-09.md:{n}"] for n in range(1, len(parts) + 1)]
    assert "".join(p["content"] for p in parts) == (folder / "2026-01-09.md").read_text()
    assert [p["metadata"]["part"] for p in parts] == list(range(1, len(parts) + 1))
    assert all(len(p["content"].encode()) <= 10_000 for p in parts)
    [spaced] = [e for e in stored.values() if e["metadata"]["path"] == "my notes/2026-01-12 été.md"]
    assert spaced["created_at"].startswith("2026-01-12")

    again = summary_counts(pps("import", "journals", str(folder), env=env).stdout)
    assert (again["imported"], again["duplicates"]) == (0, 4 + len(parts))


def test_attach_journals_and_an_openclaw_workspace(make_client, server, tmp_path):
    api = make_client()
    env = client_env(server.url, token_of(api), tmp_path)
    folder = journal_folder(tmp_path)
    done = pps("import", "journals", str(folder), "--attach", "--name", "diary", env=env)
    assert done.returncode == 0, done.stderr
    assert "attached" in done.stdout and "'diary'" in done.stdout
    assert all_events(api) == []  # attached, not imported

    workspace = tmp_path / "openclaw"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Lyra\nLikes slow mornings.\n")
    (workspace / "memory" / "2026-01-04.md").write_text("robe day\n")
    (workspace / "memory" / "broken.md").write_bytes(b"\xff\xfe\x00bad")
    (workspace / "memory" / "old.md").write_bytes(b"caf\xe9")
    done = pps("import", "openclaw", str(workspace), env=env)
    assert done.returncode == 0, done.stderr
    assert "memory/old.md: not UTF-8" in done.stdout
    assert summary_counts(done.stdout)["skipped"] == 1
    pps("import", "openclaw", str(workspace), env=env)  # again: one entry, updated

    [registry] = (tmp_path / "client").glob("attachments-*.json")
    assert registry.stat().st_mode & 0o777 == 0o600
    entries = json.loads(registry.read_text())["attachments"]
    assert [(e["kind"], e["name"]) for e in entries] == [
        ("collection", "diary"),
        ("memory", "openclaw"),
    ]
    assert entries[0]["path"] == str(folder.resolve()) and entries[0]["files"] == 8
    assert entries[1]["files"] == 3


def test_a_folder_that_is_not_a_workspace_is_refused(make_client, server, tmp_path):
    env = client_env(server.url, token_of(make_client()), tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    done = pps("import", "openclaw", str(empty), env=env)
    assert done.returncode == 1 and "neither MEMORY.md nor memory/*.md" in done.stderr
    assert not list((tmp_path / "client").glob("attachments-*.json"))
