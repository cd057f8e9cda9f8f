"""`pps import journals` and `pps import openclaw`: dated markdown files become longform
events dated that day (a long one in parts), undated and unreadable files are skipped with
counts, a re-run stores nothing twice; an OpenClaw workspace's memory files become events
that search finds. Nothing claims to attach a folder the service would not search."""

from __future__ import annotations

import os

from tests.fixtures_ingest import all_events, client_env, pps, summary_counts, token_of
from tests.searching import search, texts


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


def test_import_journals_then_again(make_client, server, tmp_path, processes):
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


def openclaw_workspace(root):
    workspace = root / "openclaw"
    (workspace / "memory" / ".trash").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Lyra\nLikes slow mornings and the comfy robe.\n")
    os.utime(workspace / "MEMORY.md", (1767225600, 1767225600))  # 2026-01-01 00:00 UTC
    (workspace / "memory" / "2026-01-04.md").write_text("Robe day. We talked about lighthouses.\n")
    (workspace / "memory" / "broken.md").write_bytes(b"\xff\xfe\x00bad")
    (workspace / "memory" / "old.md").write_bytes(b"caf\xe9")
    (workspace / "memory" / ".trash" / "x.md").write_text("deleted")
    return workspace


def test_private_text_in_a_journal_is_never_imported(make_client, server, tmp_path, processes):
    """Stripped before the journal is cut in parts (a span may cross a cut); a journal
    that is only private text is skipped, saying why."""
    api = make_client()
    env = client_env(server.url, token_of(api), tmp_path, PPS_MAX_CONTENT_BYTES="1000")
    folder = tmp_path / "journals"
    folder.mkdir()
    secret = "<private>" + "the locker code is 3141. " * 40 + "</private>"
    (folder / "2026-02-01.md").write_text("Gym day.\n" * 60 + secret + "\nHome by six.\n")
    (folder / "2026-02-02.md").write_text("<private>a letter I never sent</private>\n")
    done = pps("import", "journals", str(folder), env=env)
    assert done.returncode == 0, done.stderr
    assert "2026-02-02.md: only private text" in done.stdout
    stored = "".join(e["content"] for e in all_events(api))
    assert "Gym day." in stored and "Home by six." in stored
    assert "locker" not in stored and "letter" not in stored and "private>" not in stored
    assert "3141" not in stored  # the span's end, past the cut, was kept once


def test_an_openclaw_workspace_imports_as_events_that_search_finds(
    make_client, server, tmp_path, processes
):
    api = make_client()
    env = client_env(server.url, token_of(api), tmp_path)
    workspace = openclaw_workspace(tmp_path)

    done = pps("import", "openclaw", str(workspace), env=env)
    assert done.returncode == 0, done.stderr
    assert "attach" not in done.stdout + done.stderr
    assert "memory/old.md: not UTF-8" in done.stdout
    counts = summary_counts(done.stdout)
    assert (counts["imported"], counts["skipped"]) == (3, 1)
    stored = {e["metadata"]["path"]: e for e in all_events(api)}
    assert set(stored) == {"MEMORY.md", "memory/2026-01-04.md", "memory/broken.md"}
    memory = stored["MEMORY.md"]
    assert (memory["channel"], memory["event_type"]) == ("openclaw", "longform")
    assert memory["created_at"] == "2026-01-01T00:00:00.000000Z"  # when it last changed
    assert memory["metadata"]["title"] == "Lyra"
    assert stored["memory/2026-01-04.md"]["created_at"].startswith("2026-01-04")

    # what was imported is found: raw search and the search over every tier
    [hit] = api.get("/v1/events/search", params={"q": "lighthouses"}).json()["results"]
    assert hit["event"]["metadata"]["path"] == "memory/2026-01-04.md"
    assert any("slow mornings" in text for text in texts(search(api, "slow mornings")))

    again = summary_counts(pps("import", "openclaw", str(workspace), env=env).stdout)
    assert (again["imported"], again["duplicates"]) == (0, 3)
    (workspace / "MEMORY.md").write_text("# Lyra\nNow likes late nights.\n")
    edited = summary_counts(pps("import", "openclaw", str(workspace), env=env).stdout)
    assert (edited["imported"], edited["duplicates"]) == (1, 2)  # the new text, kept beside
    assert len(all_events(api, channel="openclaw")) == 4


def test_no_import_claims_to_attach_a_folder(make_client, server, tmp_path, processes):
    """`--attach` recorded a folder in a client-side file the service never read, and said
    "attached": it is gone, and no import's help offers it."""
    env = client_env(server.url, token_of(make_client()), tmp_path)
    folder = journal_folder(tmp_path)
    done = pps("import", "journals", str(folder), "--attach", env=env)
    assert done.returncode == 2 and "No such option: --attach" in done.stderr
    for command in ("journals", "openclaw"):
        shown = pps("import", command, "--help", env=env).stdout
        assert "attach" not in shown.lower(), shown
    assert not list((tmp_path / "client").glob("attachments-*.json"))


def test_a_folder_that_is_not_a_workspace_is_refused(make_client, server, tmp_path, processes):
    api = make_client()
    env = client_env(server.url, token_of(api), tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    done = pps("import", "openclaw", str(empty), env=env)
    assert done.returncode == 1 and "neither MEMORY.md nor memory/*.md" in done.stderr
    assert all_events(api) == []


def test_piped_output_is_the_summary_alone(make_client, server, tmp_path, processes):
    """`pps import ... | cat`: no progress bar leftovers (blank lines) on either stream."""
    env = client_env(server.url, token_of(make_client()), tmp_path)
    done = pps("import", "journals", str(journal_folder(tmp_path)), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "" not in done.stdout.splitlines()
    assert done.stdout.startswith("journals: 8 files")
