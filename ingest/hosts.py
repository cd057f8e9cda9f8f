"""The agent hosts pps installs hooks into, side by side: Claude Code, Letta Code and
Codex. Each keeps its hooks in Claude Code's envelope in its own settings files, so one
reader (ingest.claude_settings.installed) finds ours in all of them; `pps hooks status`
and `pps doctor` walk this table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ingest import claude_settings, codex_settings, letta_settings
from ingest.claude_settings import Installed, SettingsError
from ingest.http import service_client


@dataclass(frozen=True)
class Host:
    name: str
    """The install target, and the hook client's `--host NAME`."""
    title: str
    label: str
    """How the service's record of calls names this host's hook client's calls (its
    X-PPS-Client header)."""
    settings_path: Callable[..., Path]
    """(project=DIR | user=True) -> the file our hooks go into."""


HOSTS = (
    Host("claude-code", "Claude Code", "claude-code", claude_settings.settings_path),
    Host("letta-code", "Letta Code", "letta-code", letta_settings.settings_path),
    Host("codex", "Codex", "codex", codex_settings.settings_path),
)
HTTP_HOOK_LABEL = "claude-code-http"
"""How the record names Claude Code's own http hook's calls (by their route)."""


@dataclass(frozen=True)
class Found:
    """Our hooks of one host in one settings file (`hooks`), or why the file could not
    be read (`problem`)."""

    host: Host
    path: Path
    hooks: Installed | None = None
    problem: str | None = None
    untrusted: tuple[str, ...] = ()
    """Codex: the events of ours it will not run until a person trusts them."""

    @property
    def label(self) -> str:
        """The record's name for these hooks' calls: the http hook's, else the client's."""
        http = self.hooks is not None and self.hooks.source == claude_settings.HEADER
        return HTTP_HOOK_LABEL if http else self.host.label


def installed(project: Path | None = None) -> list[Found]:
    """Every host's hooks of ours: the user's settings, then the project's (`project`,
    else the current folder)."""
    found = []
    for host in HOSTS:
        for path in (host.settings_path(user=True), host.settings_path(project=project)):
            try:
                found += [
                    Found(host, path, hooks, untrusted=_untrusted(host, path, hooks))
                    for hooks in claude_settings.installed(path)
                ]
            except SettingsError as exc:
                found.append(Found(host, path, problem=str(exc)))
    return found


def _untrusted(host: Host, path: Path, hooks: Installed) -> tuple[str, ...]:
    if host.name != "codex":
        return ()
    return tuple(event for event in codex_settings.untrusted(path) if event in hooks.events)


def untrusted_says(found: Found) -> str:
    """What to tell about hooks Codex will not run."""
    return (
        f"Codex runs none of {', '.join(found.untrusted)} until they are trusted: start"
        " `codex` and trust pps's hooks when it asks"
    )


def last_calls(url: str, token: str, timeout: float) -> dict[str, dict[str, Any]] | int | None:
    """The service's record of this token's clients by name (GET /v1/clients), else the
    status it answered (401: it does not take the token), None when it does not answer."""
    try:
        with service_client(url, token, base_url=url, timeout=timeout) as http:
            answer = http.get("/v1/clients", params={"recent": 0})
    except httpx.HTTPError:
        return None
    if answer.status_code != 200:
        return answer.status_code
    return {client["client"]: client for client in answer.json().get("clients", [])}
