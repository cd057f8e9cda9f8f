"""What a `pps backup` archive is, as both its writer (archiving: `pps backup`) and its
reader (restoring: `pps restore`) know it: its members' names, the format, the head of a
passphrase archive, and the error either answers with.

The archive is a tar, streamed to disk member by member (memory stays flat whatever
the size), optionally wrapped whole in age (pyrage):

    database/pps.sqlite3            the SQLite online-backup snapshot (one consistent state)
    entities/<entity>/...           each entity's home: markdown, fragments, crystals
    shared/<store>/...              shared stores' folders (whole backups only)
    manifest.json                   versions, entities, counts, size and sha256 of each member,
                                    and the sha256 of every archive byte before it
    manifest.json.sha256            the manifest's own sha256

The graph is not in it: it is derived from the event log, and `pps replay graph` rebuilds
it after a restore. The search index (chunks, FTS, vectors) lives in the database, so
search answers at once.
"""

from __future__ import annotations

FORMAT = "pps-backup/1"
DATABASE = "database/pps.sqlite3"
MANIFEST = "manifest.json"
SEAL = "manifest.json.sha256"
CHUNK = 1024 * 1024
"""How much of a file is read (and hashed) at a time."""
WRAPPED = b"pps-backup age key wrapped by a passphrase v1\n"
"""A passphrase archive: this line, the length of the next part, a one-time age key
encrypted with the passphrase (age scrypt, a few hundred bytes), then the archive
streamed to that key (age STREAM): memory stays flat, as with a key of one's own."""


class BackupError(Exception):
    """Why a backup or a restore did not happen; nothing was left behind."""
