"""Settings: every one documented in .env.example; .env is read and never committed."""

from __future__ import annotations

import re
from pathlib import Path

from engine.store.config import Settings

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
