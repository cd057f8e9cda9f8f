"""Settings: every one documented in .env.example; the clients' apart from the server's;
`.env` read from the user's config folder and the data dir, never the current folder, and
never committed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from engine.kernel.config import ClientSettings, Settings

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


@pytest.fixture
def user(tmp_path, monkeypatch) -> Path:
    """A user whose home is tmp_path/home, with no PPS_ or XDG_ variables, working in
    tmp_path/project; returns the home."""
    for name in ("PPS_DATA_DIR", "PPS_PORT", "PPS_URL", "PPS_HOOK_BUDGET_S", "GRAPH_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(tmp_path / "project")
    return home


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_env_example_values_are_valid_settings(user, monkeypatch):
    write(user / ".config" / "pps" / ".env", (ROOT / ".env.example").read_text())
    monkeypatch.setenv("LLM_API_KEY", "")
    settings = Settings()
    assert settings.port == 8000 and settings.sqlite_synchronous == "FULL"
    assert settings.llm_model is None and settings.url is None  # `LLM_MODEL=`: not set
    assert settings.llm_api_key is None  # nor an empty variable


def test_a_dot_env_in_the_current_folder_is_not_read(user):
    """A hook runs inside any project: that project's .env is not pps's."""
    write(Path.cwd() / ".env", "PPS_PORT=9123\nPPS_URL=http://127.0.0.1:9123\n")
    assert Settings().port == 8000 and ClientSettings().port == 8000
    assert ClientSettings().url is None


def test_dot_env_is_read_from_the_config_folder_and_the_data_dir(user, monkeypatch):
    """The data dir's .env wins over the config folder's; the environment over both;
    the config folder's (or the environment) may name the data dir, whose .env is read."""
    config, data = user / ".config" / "pps" / ".env", user / ".local" / "share" / "pps" / ".env"
    write(config, "PPS_PORT=9123\nPPS_HOOK_BUDGET_S=3\n")
    assert Settings().port == 9123 and ClientSettings().hook_budget_s == 3
    write(data, "PPS_PORT=9124\nPPS_DATA_DIR=/elsewhere\n")  # a data dir cannot name another
    settings = Settings()
    assert (settings.port, settings.hook_budget_s) == (9124, 3)
    assert settings.data_dir == data.parent and ClientSettings().port == 9124
    monkeypatch.setenv("PPS_PORT", "9125")
    assert Settings().port == 9125 and ClientSettings().port == 9125
    monkeypatch.setenv("PPS_PORT", "")  # empty: not set, so the data dir's .env says
    assert Settings().port == 9124
    monkeypatch.delenv("PPS_PORT")

    mine = user / "mine"
    write(mine / ".env", "PPS_PORT=9126\n")
    assert Settings(data_dir=mine).port == 9126  # --data-dir: that data dir's .env
    write(config, f"PPS_PORT=9123\nPPS_DATA_DIR={mine}\n")
    assert Settings().data_dir == mine and Settings().port == 9126
    assert ClientSettings().port == 9126
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user / "config-home"))
    write(user / "config-home" / "pps" / ".env", "PPS_PORT=9127\n")
    assert Settings().port == 9124  # the default data dir's .env again, over this one


def test_dot_env_is_git_ignored():
    assert ".env" in (ROOT / ".gitignore").read_text().split()


def test_the_clients_read_only_their_own_settings(user, monkeypatch):
    """A client (a hook, an importer) reads the service's address, the token and its own
    folder; a broken server setting is not its concern."""
    client = set(ClientSettings.model_fields)
    assert {"url", "port", "token", "token_file", "client_dir", "hook_budget_s"} <= client
    assert not client & {"data_dir", "host", "graph_backend", "llm_api_key", "queue_lease_s"}
    assert client < set(Settings.model_fields)
    monkeypatch.setenv("GRAPH_BACKEND", "no-such-graph")
    with pytest.raises(ValidationError, match="GRAPH_BACKEND"):
        Settings()
    assert ClientSettings().port == 8000


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
