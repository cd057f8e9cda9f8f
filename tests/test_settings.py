"""Settings: every one documented in .env.example; .env is read and never committed."""

from __future__ import annotations

import re
from pathlib import Path

from engine.kernel.config import Settings

ROOT = Path(__file__).resolve().parent.parent


def env_name(name, field) -> str:
    """The variable a setting is read from: its first alias, or PPS_<NAME>."""
    alias = field.validation_alias
    if alias is None:
        return f"PPS_{name.upper()}"
    return alias if isinstance(alias, str) else alias.choices[0]


def test_every_setting_is_in_env_example():
    documented = set(re.findall(r"^([A-Z][A-Z0-9_]*)=", (ROOT / ".env.example").read_text(), re.M))
    expected = {env_name(name, field) for name, field in Settings.model_fields.items()}
    assert expected <= documented, f"missing from .env.example: {expected - documented}"


def test_env_example_values_are_valid_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text((ROOT / ".env.example").read_text())
    settings = Settings()
    assert settings.port == 8000 and settings.sqlite_synchronous == "FULL"


def test_dot_env_is_read_and_git_ignored(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PPS_PORT", raising=False)
    (tmp_path / ".env").write_text("PPS_PORT=9123\n")
    assert Settings().port == 9123
    assert ".env" in (ROOT / ".gitignore").read_text().split()


def test_the_data_and_client_folders_are_the_users_own(tmp_path, monkeypatch):
    """Not relative to the current folder: the user's data and state folders (XDG)."""
    monkeypatch.chdir(tmp_path)
    for name in ("PPS_DATA_DIR", "PPS_CLIENT_DIR", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    settings = Settings(_env_file=None)
    assert settings.data_dir == home / ".local" / "share" / "pps"
    assert settings.client_dir == home / ".local" / "state" / "pps"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data-home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state-home"))
    settings = Settings(_env_file=None)
    assert settings.data_dir == tmp_path / "data-home" / "pps"
    assert settings.client_dir == tmp_path / "state-home" / "pps"
    monkeypatch.setenv("PPS_DATA_DIR", "")  # as .env.example writes it: unset
    assert Settings(_env_file=None).data_dir == tmp_path / "data-home" / "pps"
    monkeypatch.setenv("PPS_DATA_DIR", "mine")  # given: taken from here, said in full
    assert Settings(_env_file=None).data_dir == tmp_path / "mine"
    monkeypatch.setenv("PPS_CLIENT_DIR", "~/state")
    assert Settings(_env_file=None).client_dir == home / "state"
