"""What a user installs: the wheel carries the migrations, and an install without them
stops at start with a clear error instead of opening an empty database."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from engine.store.db import Database, MigrationsMissing, migrations

ROOT = Path(__file__).resolve().parent.parent
PIP = [sys.executable, "-m", "pip", "--quiet"]
SHIPPED = "engine/store/migrations/"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory, processes) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    [built] = out.glob("pps-*.whl")
    return built


def test_the_wheel_carries_every_migration(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(
        n.rpartition("/")[2] for n in names if n.startswith("engine/store/migrations/")
    )
    assert shipped == sorted(p.name for p in (ROOT / "migrations").glob("*.sql"))
    assert any(n.startswith("pps/cli/") for n in names)


def test_the_wheel_carries_the_web_faces_templates_and_script(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    web = ROOT / "pps" / "web"
    for folder in ("templates", "static"):
        files = {f"pps/web/{folder}/{p.name}" for p in (web / folder).iterdir() if p.is_file()}
        assert files and files <= names, sorted(files - names)


def test_an_installed_wheel_finds_its_migrations(wheel, tmp_path, processes):
    site = tmp_path / "site"
    subprocess.run(
        [*PIP, "install", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    probe = (
        "import json, engine.store.db as db;"
        "print(json.dumps([str(db.MIGRATIONS_DIR), len(db.migrations())]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": str(site), "PATH": ""},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    where, count = json.loads(done.stdout)
    assert Path(where).is_relative_to(site)
    assert count == len(migrations())


@pytest.mark.parametrize("state", ["missing", "empty"])
def test_no_migrations_is_a_loud_error_not_an_empty_database(tmp_path, state):
    folder = tmp_path / "migrations"
    if state == "empty":
        folder.mkdir()
    db = Database(tmp_path / "pps.sqlite3")
    with pytest.raises(MigrationsMissing, match="the install is incomplete"):
        db.migrate(directory=folder)
    assert db.schema_version() == 0
