"""Backups as an operator lives them: `pps backup` while the server takes a stream of
events, `pps restore` into an empty folder, and a server on the restored data dir that
answers the same token; damaged archives, wrong passphrases and keys, and folders that
are not empty are refused with nothing written; one entity's archive holds nobody
else's; the backups are listed to the operator and in /health.

Real parts only: the app on a real HTTP server (tests/conftest.py), the `pps` command
in process, real SQLite files and real archives on disk.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import os
import re
import sqlite3
import stat
import tarfile
import threading
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from engine.capture import entities
from tests.conftest import AppServer, connect, settings_env, wait_for

NO_MODEL = {"embedding_model": "no-such-org/no-such-model"}  # BM25 only: no CPU for vectors
EVENTS = 5000
BATCH = 50


def pps(*args: str, **env: str):
    """The `pps` command in process; the result (exit_code, stdout, stderr)."""
    from pps.cli import app

    umask = os.umask(0o077)
    try:
        return CliRunner().invoke(
            app, list(args), env={**settings_env(graph_backend="none"), **env}
        )
    finally:
        os.umask(umask)


def restore(archive: Path, target: Path, *extra: str, **env: str):
    return pps("restore", str(archive), "--data-dir", str(target), *extra, **env)


def refused(result, words: str) -> None:
    assert result.exit_code == 1, result.stdout
    assert words in result.stderr, result.stderr


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- a backup while events stream in, restored and served ---------------------------


@pytest.fixture(scope="module")
def streamed(tmp_path_factory):
    """A server taking 5,000 events in batches from a writer thread; a backup taken in the
    middle. Yields what was acknowledged before the backup began, and the archive."""
    root = tmp_path_factory.mktemp("stream")
    with AppServer(root / "data", **NO_MODEL) as server:
        token = entities.create(server.db, "lyra")
        home = server.data_dir / "entities" / "lyra"
        (home / "word_photos").mkdir(parents=True)
        (home / "word_photos" / "harbor.md").write_text("# Harbor\n\nThe lighthouse at dusk.\n")
        (home / "crystals").mkdir()
        (home / "crystals" / "crystal_001.md").write_text("# Crystal 1\n\nSteady.\n")
        acked: list[tuple[float, list[str]]] = []
        failures: list[str] = []

        def write() -> None:
            with connect(server, token) as client:
                for start in range(0, EVENTS, BATCH):
                    batch = [
                        {
                            "event_uid": f"e{i}",
                            "channel": "terminal",
                            "author": "jeff",
                            "content": f"turn {i}: the lighthouse keeper counts {i} gulls",
                        }
                        for i in range(start, start + BATCH)
                    ]
                    response = client.post("/v1/events", json=batch)
                    if response.status_code != 200:
                        failures.append(response.text)
                        return
                    acked.append((time.monotonic(), [e["event_uid"] for e in batch]))

        writer = threading.Thread(target=write)
        writer.start()
        wait_for(lambda: len(acked) * BATCH >= 1000 or failures, 60, "1,000 events acknowledged")
        archive = root / "backup.tar"
        started = time.monotonic()
        out = server.pps("backup", str(archive))
        finished = time.monotonic()
        writer.join(120)
        assert not failures, failures
        assert len(acked) * BATCH == EVENTS
        before = {uid for at, uids in acked if at < started for uid in uids}
        during = [uids for at, uids in acked if started < at < finished]
        yield {
            "archive": archive,
            "before": before,
            "during": during,
            "token": token,
            "out": out,
            "root": root,
            "home": home,
        }


def test_a_backup_taken_during_a_stream_restores_every_acknowledged_event_once(streamed):
    archive, target = streamed["archive"], streamed["root"] / "restored"
    assert streamed["during"], "the writer was not acknowledging events while the backup ran"
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    assert "the graph is not in it" in streamed["out"]

    result = restore(archive, target)
    assert result.exit_code == 0, result.stderr
    assert "pps replay graph" in result.stdout

    database = target / "pps.sqlite3"
    conn = sqlite3.connect(database)
    uids = [row[0] for row in conn.execute("SELECT event_uid FROM events WHERE entity = 'lyra'")]
    conn.close()
    assert len(uids) == len(set(uids)), "an event was restored twice"
    missing = streamed["before"] - set(uids)
    assert not missing, f"{len(missing)} acknowledged events are not in the backup"
    assert len(uids) < EVENTS  # a snapshot of the middle of the stream, not the end

    for path in [target, *target.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path
    restored_home = target / "entities" / "lyra"
    for relative in ("word_photos/harbor.md", "crystals/crystal_001.md"):
        assert (restored_home / relative).read_bytes() == (streamed["home"] / relative).read_bytes()


def test_the_restored_data_dir_serves_search_and_recall_to_the_same_token(streamed):
    target = streamed["root"] / "restored"
    if not target.exists():
        assert restore(streamed["archive"], target).exit_code == 0
    with AppServer(target, **NO_MODEL) as server, connect(server, streamed["token"]) as lyra:
        found = lyra.post("/v1/search", json={"query": "lighthouse keeper gulls"})
        assert found.status_code == 200, found.text
        assert found.json()["results"], "search found nothing in the restored data dir"
        recalled = lyra.post("/v1/recall", json={"context": "the lighthouse keeper"})
        assert recalled.status_code == 200, recalled.text
        assert "lighthouse" in recalled.json()["context"]
        assert lyra.get("/v1/events", params={"limit": 1}).status_code == 200


# --- refused: damage, a wrong passphrase or key, a folder that is not empty ---------


@pytest.mark.parametrize("where", ["database", "header", "manifest", "padding", "end"])
def test_one_flipped_byte_anywhere_is_refused_and_nothing_is_written(streamed, tmp_path, where):
    data = bytearray(streamed["archive"].read_bytes())
    with tarfile.open(streamed["archive"]) as tar:
        found = {m.name: m for m in tar}
    db, manifest = found["database/pps.sqlite3"], found["manifest.json"]
    position = {
        "database": db.offset_data + db.size // 2,
        "header": db.offset + 110,  # the database member's size field
        "manifest": manifest.offset_data + 40,
        "padding": manifest.offset_data + manifest.size + 1,
        "end": len(data) - 7,
    }[where]
    data[position] ^= 0x04
    damaged = tmp_path / "damaged.tar"
    damaged.write_bytes(data)
    target = tmp_path / "target"
    refused(restore(damaged, target), "nothing was written")
    assert not target.exists()


def test_a_missing_or_an_extra_member_is_refused(streamed, tmp_path):
    original = members(streamed["archive"])
    home_file = next(name for name in original if name.startswith("entities/"))

    def rebuilt(name: str, contents: dict[str, bytes]) -> Path:
        path = tmp_path / name
        with tarfile.open(path, "w") as tar:
            for member, data in contents.items():
                info = tarfile.TarInfo(member)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return path

    without = {k: v for k, v in original.items() if k != home_file}
    refused(restore(rebuilt("without.tar", without), tmp_path / "a"), f"{home_file} is missing")
    extra = dict(original)
    extra = {"entities/lyra/word_photos/planted.md": b"# not ours\n", **extra}
    refused(restore(rebuilt("extra.tar", extra), tmp_path / "b"), "planted.md is not in")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_folder_that_is_not_empty_is_refused_and_left_alone(streamed, tmp_path):
    target = tmp_path / "busy"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    refused(restore(streamed["archive"], target), "not an empty folder")
    assert [p.name for p in target.iterdir()] == ["notes.txt"]


@pytest.fixture
def passphrase() -> str:
    """A passphrase for an archive. age wraps its key with scrypt, slow on purpose (a second
    or more for each wrap and unwrap): a test that takes it is `slow` (tests/conftest.py)."""
    return "correct horse battery staple"


def test_passphrase_archives_open_only_with_the_passphrase(tmp_path, passphrase):
    data = tmp_path / "data"
    token = _small_entity(data, "wren", "the wren sings at the window")
    archive = tmp_path / "wren.age"
    made = pps("backup", str(archive), "--encrypt", "--data-dir", str(data),
               PPS_BACKUP_PASSPHRASE=passphrase)  # fmt: skip
    assert made.exit_code == 0, made.stderr
    raw = archive.read_bytes()
    # A one-time age key wrapped by the passphrase, then the archive streamed to that key.
    assert raw.startswith(b"pps-backup age key wrapped by a passphrase") and b"wren" not in raw

    wrong = restore(archive, tmp_path / "wrong", PPS_BACKUP_PASSPHRASE="incorrect horse")
    refused(wrong, "passphrase is wrong")
    assert not (tmp_path / "wrong").exists()
    flipped = tmp_path / "flipped.age"
    flipped.write_bytes(raw[:-100] + bytes([raw[-100] ^ 1]) + raw[-99:])
    damaged = restore(flipped, tmp_path / "damaged", PPS_BACKUP_PASSPHRASE=passphrase)
    refused(damaged, "damaged")
    assert not (tmp_path / "damaged").exists()

    right = restore(archive, tmp_path / "right", PPS_BACKUP_PASSPHRASE=passphrase)
    assert right.exit_code == 0, right.stderr
    conn = sqlite3.connect(tmp_path / "right" / "pps.sqlite3")
    assert conn.execute("SELECT content FROM events").fetchall() == [
        ("the wren sings at the window",)
    ]
    assert conn.execute("SELECT name FROM entities").fetchall() == [("wren",)]
    conn.close()
    assert token  # the same token: its hash is in the restored row


def test_a_short_passphrase_or_no_terminal_to_ask_one_is_refused_by_name(tmp_path):
    data = tmp_path / "data"
    _small_entity(data, "wren", "the wren sings at the window")
    archive = tmp_path / "wren.age"
    short = pps("backup", str(archive), "--encrypt", "--data-dir", str(data),
                PPS_BACKUP_PASSPHRASE="x")  # fmt: skip
    refused(short, "at least 12 characters (this one has 1)")
    unasked = pps("backup", str(archive), "--encrypt", "--data-dir", str(data))
    refused(unasked, "no terminal to ask a passphrase on: set PPS_BACKUP_PASSPHRASE")
    assert not archive.exists()


def test_key_archives_open_only_with_the_identity(tmp_path):
    from pyrage import x25519

    data = tmp_path / "data"
    _small_entity(data, "wren", "the wren sings at the window")
    key, other = x25519.Identity.generate(), x25519.Identity.generate()
    archive = tmp_path / "wren.age"
    made = pps("backup", str(archive), "--recipient", str(key.to_public()), "--data-dir", str(data))
    assert made.exit_code == 0, made.stderr
    wrong_key, right_key = tmp_path / "other.key", tmp_path / "wren.key"
    wrong_key.write_text(f"# another key\n{other}\n")
    right_key.write_text(f"{key}\n")

    refused(restore(archive, tmp_path / "no-key"), "--identity")
    refused(restore(archive, tmp_path / "wrong", "--identity", str(wrong_key)), "cannot decrypt")
    assert not (tmp_path / "wrong").exists()
    right = restore(archive, tmp_path / "right", "--identity", str(right_key))
    assert right.exit_code == 0, right.stderr
    assert (tmp_path / "right" / "pps.sqlite3").is_file()


def test_a_backup_never_overwrites_a_file(tmp_path):
    data = tmp_path / "data"
    _small_entity(data, "wren", "hello")
    taken = tmp_path / "taken.tar"
    taken.write_text("someone's file")
    refused(pps("backup", str(taken), "--data-dir", str(data)), "never overwrites")
    assert taken.read_text() == "someone's file"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_table_no_rule_places_stops_an_entity_archive_and_names_where_its_rule_goes(
    tmp_path,
):
    data = tmp_path / "data"
    _small_entity(data, "wren", "hello")
    conn = sqlite3.connect(data / "pps.sqlite3")
    conn.execute("CREATE TABLE later_notes (note TEXT)")  # a later migration's, say
    conn.execute("INSERT INTO later_notes VALUES ('whose is this?')")
    conn.commit()
    conn.close()
    out = tmp_path / "wren.tar"
    result = pps("backup", "--entity", "wren", str(out), "--data-dir", str(data))
    refused(result, "table 'later_notes' has no entity column")
    [named] = re.findall(r"engine/backup/\w+\.py", result.stderr)
    rules = importlib.import_module(named.removesuffix(".py").replace("/", "."))._OTHER_TABLES
    assert "entities" in rules and "later_notes" not in rules  # the file that holds the rules
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    conn = sqlite3.connect(data / "pps.sqlite3")
    assert conn.execute("SELECT note FROM later_notes").fetchall() == [("whose is this?",)]
    assert conn.execute("SELECT COUNT(*) FROM backups").fetchone() == (0,)
    conn.close()
    assert pps("backup", str(out), "--data-dir", str(data)).exit_code == 0  # whole: every table


def _small_entity(data: Path, name: str, content: str) -> str:
    with AppServer(data, **NO_MODEL) as server:
        token = entities.create(server.db, name)
        with connect(server, token) as client:
            client.post("/v1/events", json={"channel": "terminal", "content": content})
    return token


# --- one entity's archive -----------------------------------------------------------


def test_an_entity_archive_holds_no_other_entitys_events_tokens_or_files(tmp_path):
    with AppServer(tmp_path / "data", **NO_MODEL) as server:
        lyra = connect(server, entities.create(server.db, "lyra"))
        nova_token = entities.create(server.db, "nova")
        nova = connect(server, nova_token)
        lyra.post("/v1/events", json={"channel": "terminal", "content": "lyra likes tea"})
        nova.post("/v1/events", json={"channel": "terminal", "content": "zanzibarquux secret"})
        for client, words in ((lyra, "a quiet morning"), (nova, "zanzibarquux anchor")):
            made = client.post("/v1/anchors", json={"title": "moment", "content": words})
            assert made.status_code == 201, made.text
        server.pps("shared", "create", "house")
        server.pps("shared", "add", "house", "nova")
        server.pps("operator", "token")
        whole = tmp_path / "whole.tar"
        server.pps("backup", str(whole))
        archive = tmp_path / "lyra.tar"
        server.pps("backup", "--entity", "lyra", str(archive))
        lyra.close()
        nova.close()

    names = set(members(archive))
    assert any(n.startswith("entities/lyra/word_photos/") for n in names)
    assert not [n for n in names if n.startswith(("entities/nova", "shared/"))]
    manifest = json.loads(members(archive)["manifest.json"])
    assert manifest["scope"] == "entity" and [e["name"] for e in manifest["entities"]] == ["lyra"]
    assert manifest["shared_stores"] == []

    snapshot = tmp_path / "snapshot.sqlite3"
    snapshot.write_bytes(members(archive)["database/pps.sqlite3"])
    assert b"zanzibarquux" not in snapshot.read_bytes(), "nova's words are in the file"
    assert hashlib.sha256(nova_token.encode()).hexdigest().encode() not in snapshot.read_bytes()
    conn = sqlite3.connect(snapshot)
    assert conn.execute("SELECT name FROM entities").fetchall() == [("lyra",)]
    assert conn.execute("SELECT DISTINCT entity FROM events").fetchall() == [("lyra",)]
    assert conn.execute("SELECT DISTINCT entity FROM search_chunks").fetchall() == [("lyra",)]
    for table in ("operator_tokens", "shared_stores", "shared_members", "backups"):
        assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone() == (0,), table
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()

    whole_names = set(members(whole))
    assert any(n.startswith("entities/nova/") for n in whole_names)
    whole_manifest = json.loads(members(whole)["manifest.json"])
    assert [s["name"] for s in whole_manifest["shared_stores"]] == ["house"]


# --- vectors, the status route and /health ------------------------------------------


def test_backups_are_listed_to_the_operator_and_in_health_and_vectors_come_back(tmp_path):
    with AppServer(tmp_path / "data") as server:
        token = entities.create(server.db, "iris")
        iris = connect(server, token)
        health = httpx.get(f"{server.url}/health").json()
        assert health["components"]["backup"]["status"] == "none"
        assert health["status"] == "ok", health  # no backup yet degrades nothing

        iris.post("/v1/events", json={"channel": "terminal", "content": "the violets bloomed"})
        iris.post("/v1/anchors", json={"title": "garden", "content": "Violets by the wall."})
        index = wait_for(
            lambda: (
                (i := iris.get("/v1/search/index").json())["vectors"] >= 2
                and i["vectors"] == i["chunks"]
                and i
            ),
            60,
            "every chunk to have its vector",
        )
        archive = tmp_path / "iris-backup.tar"
        server.pps("backup", str(archive))
        operator = server.pps("operator", "token").strip().splitlines()[-1]

        listed = httpx.get(
            f"{server.url}/v1/operator/backups", headers={"Authorization": f"Bearer {operator}"}
        )
        assert listed.status_code == 200, listed.text
        (record,) = listed.json()["backups"]
        assert record["archive"] == "iris-backup.tar"  # its name, never where it is
        assert record["size"] == archive.stat().st_size
        assert record["sha256"] == sha256(archive)
        assert record["encrypted"] is None and record["entity"] is None
        assert record["events"] == 1 and record["entities"] == 1
        assert iris.get("/v1/operator/backups").status_code == 403
        assert httpx.get(f"{server.url}/v1/operator/backups").status_code == 401

        health = httpx.get(f"{server.url}/health").json()
        component = health["components"]["backup"]
        assert component["status"] == "ok" and component["last_at"] == record["created_at"]
        assert 0 <= component["age_s"] < 300 and "iris" not in json.dumps(health)
        iris.close()

    target = tmp_path / "restored"
    assert restore(archive, target).exit_code == 0
    with AppServer(target) as server, connect(server, token) as iris:
        again = iris.get("/v1/search/index").json()
        assert (again["vectors"], again["chunks"]) == (index["vectors"], index["chunks"])
        found = iris.post("/v1/search", json={"query": "flowers near the wall"}).json()
        assert found.get("fallback") is None and found["results"]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda m: m.update(members={"database/pps.sqlite3": 1}), "members: input should be"),
        (lambda m: m["members"][0].update(size="big"), "members.0.size"),
        (lambda m: m.update(entities=None), "entities: input should be"),
        (lambda m: m.pop("prefix_bytes"), "prefix_bytes: field required"),
    ],
)
def test_a_manifest_resealed_over_another_shape_is_refused_by_name(
    streamed, tmp_path, change, named
):
    """An archive whose manifest was changed and sealed anew (the seal is a checksum, not a
    signature): refused in one line that names the field, no traceback, nothing written."""
    with tarfile.open(streamed["archive"]) as tar:
        contents = {m.name: tar.extractfile(m).read() for m in tar}
    manifest = json.loads(contents["manifest.json"])
    change(manifest)
    text = json.dumps(manifest).encode()
    contents["manifest.json"] = text
    contents["manifest.json.sha256"] = (hashlib.sha256(text).hexdigest() + "\n").encode()
    altered = tmp_path / "altered.tar"
    with tarfile.open(altered, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in contents.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    result = restore(altered, tmp_path / "restored")
    refused(result, named)
    assert isinstance(result.exception, SystemExit)  # a message, not a traceback
    assert not (tmp_path / "restored").exists()
