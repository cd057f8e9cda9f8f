"""`pps hooks install|uninstall`: our hooks in a Claude Code settings file, nobody else's touched.

The settings structure (Claude Code's settings schema, 2.1): `{"hooks": {"<Event>":
[{"matcher": "...", "hooks": [<hook>, ...]}]}}`, a hook being `{"type": "command",
"command": "...", "timeout": <seconds>, "async": <bool>}` or `{"type": "http", "url":
"...", "headers": {...}, "allowedEnvVars": [...], "timeout": <seconds>}` (Claude Code
POSTs the payload a command hook reads on stdin and reads the same JSON answer; it runs
no http hook on SessionStart). The files: ~/.claude/settings.json (user),
<project>/.claude/settings.json (shared with the team) or <project>/.claude/settings.local.json
(this machine only). A project install goes to the local file: our hooks name this
machine's hook client, token file and service.

By default UserPromptSubmit, the hook every prompt waits for, is an http hook served by
the running service (no process); SessionStart, PreCompact and SessionEnd run the hook
client (ingest.hook), Stop too: it sends what the transcript holds, the prompts an http
hook could not deliver among it. (Stop ran in the background, `async`, while a hook
started the whole CLI; in `claude -p` Claude Code waits ~1.4 s for a background hook
before it exits, where the hook client takes ~50 ms: it is a plain hook now.)
`command_hooks` makes every one a command (`--command`, and where Claude Code would
refuse the http hook: a service at a private address, `http_refused`).

A hook is ours when its command runs the hook client (`python -I -S .../ingest/hook.py`,
or `pps hook ...` as installed before it; after any VAR=value words) or it POSTs to a URL
whose path is /v1/hooks/claude-code, so a hand-written one is recognised too, and an
install made before the hook client is upgraded in place. Install adds ours or replaces
them in place, and keeps every other key, event, group
and hook as it was; uninstall removes only ours. A file that is not valid JSON is
refused and left unchanged; writes are atomic, and a file that holds a token is 0600.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import re
import shlex
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ingest import hook as hook_client
from ingest.hook import EVENTS

ROUTE = "/v1/hooks/claude-code"
"""The service's route for Claude Code's http hooks (pps.rest.hooks)."""
HTTP_EVENTS = ("UserPromptSubmit",)
"""The hooks installed as http hooks: the payload is all their work needs."""

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class SettingsError(Exception):
    """The settings file cannot be changed safely; it was left as it was."""


@dataclass
class Changes:
    path: Path
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def settings_path(*, project: Path | None = None, user: bool = False) -> Path:
    if user:
        return Path.home() / ".claude" / "settings.json"
    return (project or Path.cwd()).resolve() / ".claude" / "settings.local.json"


def client_command() -> list[str]:
    """How to run the hook client (ingest.hook) of this very pps: this interpreter with
    no site-packages and none of the environment's PYTHON* variables, on the client's
    file (it needs nothing but the standard library)."""
    return [sys.executable, "-I", "-S", str(Path(hook_client.__file__).resolve())]


def hook_command(event: str, env: dict[str, str], host: str = "claude-code") -> str:
    words = [f"{name}={shlex.quote(value)}" for name, value in env.items()]
    words += [shlex.quote(word) for word in client_command()] + [event, "--host", host]
    return " ".join(words)


def command_timeout(budget_s: float) -> int:
    """A host's limit on a command hook: it only matters if our alarm failed."""
    return max(10, math.ceil(budget_s) * 3)


def command_hooks(env: dict[str, str], budget_s: float) -> dict[str, dict[str, Any]]:
    """Our hook for each event, every one a command (`--command`)."""
    timeout = command_timeout(budget_s)
    return {
        event: {"type": "command", "command": hook_command(event, env), "timeout": timeout}
        for event in EVENTS
    }


def http_hooks(
    env: dict[str, str], budget_s: float, url: str, token: str
) -> dict[str, dict[str, Any]]:
    """Our hook for each event: http where the payload is all the work needs, else the
    hook client. The token is written into the header: the settings file that holds it
    is kept 0600."""
    hooks = command_hooks(env, budget_s)
    for event in HTTP_EVENTS:
        hooks[event] = {
            "type": "http",
            "url": url.rstrip("/") + ROUTE,
            "headers": {"Authorization": f"Bearer {token}"},
            "timeout": budget_s,
        }
    return hooks


BLOCKED_NETWORKS = [
    ipaddress.ip_network(net)
    for net in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "::/128",
        "fc00::/7",
        "fe80::/10",
    )
]
"""Where Claude Code refuses to send an http hook (private and link-local addresses, not
loopback): its guard against a hook reaching into the network it runs in."""


def http_refused(url: str) -> str | None:
    """Why Claude Code would refuse an http hook to `url` (the address it would reach),
    or None. A name that does not resolve here is not refused here."""
    host = urlsplit(url).hostname or ""
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return None
    for address in sorted(addresses):
        ip = ipaddress.ip_address(address.split("%")[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if any(ip in network for network in BLOCKED_NETWORKS if network.version == ip.version):
            named = host if host == str(ip) else f"{host} ({ip})"
            return f"{named} is a private address: Claude Code sends no http hook there"
    return None


def is_ours(hook: Any) -> bool:
    if not isinstance(hook, dict):
        return False
    if hook.get("type") == "http":
        url = hook.get("url")
        return isinstance(url, str) and urlsplit(url).path.rstrip("/") == ROUTE
    command = hook.get("command")
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    while words and _ASSIGNMENT.match(words[0]):
        words.pop(0)
    if words[:1] and Path(words[0]).name == "pps":  # as installed before the hook client
        return words[1:2] == ["hook"]
    if words[1:4] == ["-m", "pps.cli", "hook"]:
        return True
    return any(Path(word).parts[-2:] == ("ingest", "hook.py") for word in words[1:4])


def holds_token(hook: dict[str, Any]) -> bool:
    return any(value.startswith("Bearer ") for value in hook.get("headers", {}).values())


def install(path: Path, wanted: dict[str, dict[str, Any]]) -> Changes:
    """Put `wanted[event]` as our hook for each event (replacing ours where it is); keep
    everything else. A file that then holds a token is made 0600."""
    settings = read(path)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError(f"{path}: 'hooks' is not an object; nothing was changed")
    changes = Changes(path)
    for event, hook in wanted.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise SettingsError(f"{path}: hooks.{event} is not a list; nothing was changed")
        ours = [(group, mine) for group, mine in _hooks(groups) if is_ours(mine)]
        if not ours:
            groups.append({"hooks": [dict(hook)]})
            changes.added.append(event)
            continue
        (_, first), extra = ours[0], ours[1:]
        if first != hook:
            first.clear()
            first.update(hook)
            changes.updated.append(event)
        for group, mine in extra:  # the same hook twice would capture every turn twice
            group["hooks"].remove(mine)
        _drop_empty(hooks, event, emptied={id(group) for group, _ in extra})
    private = any(holds_token(hook) for hook in wanted.values())
    _write(path, settings, mode=0o600 if private else None)
    return changes


def uninstall(path: Path) -> Changes:
    """Remove our hooks (and the groups and events only they filled); keep the rest."""
    changes = Changes(path)
    if not path.exists():
        return changes
    settings = read(path)
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return changes
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        ours = [(group, hook) for group, hook in _hooks(groups) if is_ours(hook)]
        for group, hook in ours:
            group["hooks"].remove(hook)
        if ours:
            changes.removed.append(event)
            _drop_empty(hooks, event, emptied={id(group) for group, _ in ours})
    if not hooks and changes.removed:
        del settings["hooks"]
    if changes.removed:
        _write(path, settings)
    return changes


def _hooks(groups: list[Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [
        (group, hook)
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for hook in group["hooks"]
        if isinstance(hook, dict)
    ]


def _drop_empty(hooks: dict[str, Any], event: str, emptied: set[int]) -> None:
    """Remove the groups we emptied, and the event if we emptied its list."""
    groups = hooks[event]
    groups[:] = [g for g in groups if not (id(g) in emptied and not g["hooks"])]
    if not groups and emptied:
        del hooks[event]


def read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError(f"cannot read {path}: {exc.strerror}") from None
    if not text.strip():
        return {}
    try:
        settings = json.loads(text)
    except ValueError as exc:
        raise SettingsError(f"{path} is not valid JSON ({exc}); nothing was changed") from None
    if not isinstance(settings, dict):
        raise SettingsError(f"{path} does not hold a JSON object; nothing was changed")
    return settings


def _write(path: Path, settings: dict[str, Any], mode: int | None = None) -> None:
    write_file(path, json.dumps(settings, indent=2, ensure_ascii=False) + "\n", mode)


def write_file(path: Path, text: str, mode: int | None = None) -> None:
    """Atomically, as `mode`, else keeping the file's mode (0600 for a new file; a new
    folder is 0700). Claude Code (and Codex) keep a file's mode when they rewrite it."""
    if not path.parent.exists():
        path.parent.mkdir(mode=0o700, parents=True)
    if mode is None:
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    temporary = path.with_name(f".{path.name}.pps-tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(temporary, mode)
    os.replace(temporary, path)


# --- pps's MCP server in Claude Code's user scope -------------------------------------------


MCP_SERVER = "pps"
"""Our entry in the user scope's `mcpServers` (`claude mcp get pps`)."""


def user_config_path() -> Path:
    """Claude Code's own file, where `claude mcp add --scope user` keeps MCP servers (as
    `mcpServers` at its top level; a project's local scope is under `projects`)."""
    return Path.home() / ".claude.json"


def install_mcp(path: Path, service: str, token: str) -> bool:
    """Put pps's MCP server into the user scope of Claude Code's file at `path`, as
    `claude mcp add --scope user --transport http` does, the token in its header: the
    file is made 0600. Every other key is kept. Whether it changed."""
    config = read(path)
    servers = config.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise SettingsError(f"{path}: 'mcpServers' is not an object; nothing was changed")
    entry = {
        "type": "http",
        "url": service.rstrip("/") + "/mcp",
        "headers": {"Authorization": f"Bearer {token}"},
    }
    if servers.get(MCP_SERVER) == entry and path.stat().st_mode & 0o777 == 0o600:
        return False
    servers[MCP_SERVER] = entry
    _write(path, config, mode=0o600)
    return True


def uninstall_mcp(path: Path) -> bool:
    """Take pps's MCP server out of the user scope (only ours); whether it was there."""
    if not path.exists():
        return False
    config = read(path)
    servers = config.get("mcpServers")
    if not isinstance(servers, dict) or MCP_SERVER not in servers:
        return False
    del servers[MCP_SERVER]
    _write(path, config)
    return True


# --- where the installed hooks send, and with which token (pps doctor) ---------------------


HEADER = "the http hook's header"
"""The `source` of a token written into an http hook's headers."""


@dataclass(frozen=True)
class Installed:
    """Our hooks in one settings file that send to one service with one token: `source`
    says where the token comes from (the http hook's header, or a token file), `problem`
    why none could be read (then `token` is None)."""

    url: str
    source: str
    token: str | None
    problem: str | None
    events: tuple[str, ...]


def installed(path: Path) -> list[Installed]:
    """Our hooks in the settings file `path`, by service and token (none: no file, or no
    hook of ours in it). Raises SettingsError for a file that cannot be read."""
    hooks = read(path).get("hooks")
    if not isinstance(hooks, dict):
        return []
    found: dict[tuple[str, str, str | None, str | None], list[str]] = {}
    for event, groups in hooks.items():
        if isinstance(groups, list):
            for _, hook in _hooks(groups):
                if is_ours(hook):
                    found.setdefault(_credential(hook), []).append(event)
    return [Installed(*key, events=tuple(events)) for key, events in found.items()]


def _credential(hook: dict[str, Any]) -> tuple[str, str, str | None, str | None]:
    """(service URL, where the token comes from, the token, why it could not be read)."""
    if hook.get("type") == "http":
        url = str(hook["url"]).rstrip("/").removesuffix(ROUTE)
        headers = hook.get("headers")
        values = headers.values() if isinstance(headers, dict) else []
        bearer = next((v for v in values if isinstance(v, str) and v.startswith("Bearer ")), "")
        token = bearer.removeprefix("Bearer ").strip()
        return url, HEADER, token or None, None if token else "no bearer token"
    words = shlex.split(str(hook["command"]))
    env = {}
    while words and _ASSIGNMENT.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    url = env.get("PPS_URL", "PPS_URL of Claude Code's environment")
    named = env.get("PPS_TOKEN_FILE")
    if named is None:
        return url, "Claude Code's environment", None, "the command names no PPS_TOKEN_FILE"
    try:
        token = Path(named).expanduser().read_text().strip()
    except OSError as exc:
        return url, named, None, f"cannot read the token file: {exc.strerror}"
    return url, named, token or None, None if token else "the token file is empty"
