"""`pps hooks install|uninstall codex`: our hooks in Codex's hooks.json, and pps's MCP server
in its config.toml; nobody else's touched.

Codex (codex-cli 0.171) reads hooks from `hooks.json` in its home (`$CODEX_HOME`, else
~/.codex) and in a project's `.codex/` folder, in Claude Code's envelope: `{"hooks":
{"<Event>": [{"matcher": "...", "hooks": [{"type": "command", "command": "...",
"timeout": <seconds>}]}]}}`. So the merge is ingest.claude_settings' (ours recognised by
the command running the hook client); every hook is a command, the hook client (ingest.hook)
with `EVENT --host codex`.
Codex asks the user to trust a new or changed hook before it runs it.

`config.toml` in the same folder gets, through tomlkit (the rest of the file, comments and
order included, stays as it was):
- `[features] hooks = true` (on by default in 0.171; written so an older default or a
  profile does not leave our hooks silent);
- `[mcp_servers.pps]` with `url` = the service's /mcp and `bearer_token_env_var =
  "PPS_TOKEN"`: Codex sends `Authorization: Bearer $PPS_TOKEN` from its own environment,
  so no token is written into the file.
Uninstall removes our hooks and `[mcp_servers.pps]`, and leaves the feature flag.

Codex runs no hook nobody trusted: it keeps the trust of each hook in the user's
config.toml, `[hooks.state."<hooks.json's real path>:<event>:<group>:<hook>"]` with
`trusted_hash = "sha256:<hex>"`, the SHA-256 of the hook as Codex reads it (its event,
its group's matcher, its fields with Codex's defaults: JSON, keys sorted, no spaces).
`untrusted` reads it so `pps hooks status` and `pps doctor` can say which of ours Codex
will skip (found with codex-cli 0.171, and checked against its own app-server's
`hooks/list` by tests/test_hooks_codex.py). Trusting them is the user's act, in Codex.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from ingest import claude_settings
from ingest.claude_settings import Changes, Installed, SettingsError
from ingest.hook import EVENTS

HOST = "codex"
SERVER = "pps"
"""Our entry in config.toml's [mcp_servers]."""
TOKEN_ENV = "PPS_TOKEN"
"""The variable of Codex's environment our MCP entry takes the bearer token from."""


def home(*, project: Path | None = None, user: bool = False) -> Path:
    """Codex's folder: its home for --user, else the project's `.codex/`."""
    if user:
        return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    return (project or Path.cwd()).resolve() / ".codex"


def settings_path(*, project: Path | None = None, user: bool = False) -> Path:
    return home(project=project, user=user) / "hooks.json"


def config_path(*, project: Path | None = None, user: bool = False) -> Path:
    return home(project=project, user=user) / "config.toml"


SESSION_END_TIMEOUT_S = 3
"""Codex's most for a SessionEnd hook: a longer one it clamps, with a warning each run."""


def command_hooks(env: dict[str, str], budget_s: float) -> dict[str, dict[str, Any]]:
    """Our hook for each event: the hook client, which Codex waits for at most its
    timeout (within what Codex takes for the event)."""
    timeout = claude_settings.command_timeout(budget_s)
    return {
        event: {
            "type": "command",
            "command": claude_settings.hook_command(event, env, HOST),
            "timeout": SESSION_END_TIMEOUT_S if event == "SessionEnd" else timeout,
        }
        for event in EVENTS
    }


def install(path: Path, wanted: dict[str, dict[str, Any]]) -> Changes:
    return claude_settings.install(path, wanted)


def uninstall(path: Path) -> Changes:
    return claude_settings.uninstall(path)


def installed(path: Path) -> list[Installed]:
    return claude_settings.installed(path)


SESSION_END_TIMEOUT_DEFAULT_S = 1
TIMEOUT_DEFAULT_S = 600
NO_MATCHER = ("UserPromptSubmit", "Stop")
"""Events whose matcher Codex ignores (and leaves out of a hook's hash)."""


def untrusted(path: Path) -> list[str]:
    """The events of our hooks in `path` (a hooks.json) that Codex will not run: never
    trusted, or changed since. Raises SettingsError for a file that cannot be read."""
    hooks = claude_settings.read(path).get("hooks")
    state = _read(config_path(user=True)).get("hooks", {}).get("state", {})
    real = os.path.realpath(path)
    found = []
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, hook in enumerate(handlers if isinstance(handlers, list) else []):
                if not claude_settings.is_ours(hook):
                    continue
                trust = state.get(f"{real}:{_snake(event)}:{g}:{h}", {})
                if trust.get("trusted_hash") != trust_hash(event, group, hook):
                    found.append(event)
    return found


def trust_hash(event: str, group: dict[str, Any], hook: dict[str, Any]) -> str:
    """What Codex records when a person trusts `hook` (of `group`, for `event`)."""
    default = SESSION_END_TIMEOUT_DEFAULT_S if event == "SessionEnd" else TIMEOUT_DEFAULT_S
    timeout = max(1, int(hook.get("timeout", default)))
    if event == "SessionEnd":
        timeout = min(timeout, SESSION_END_TIMEOUT_S)
    handler = {
        "type": "command",
        "command": hook.get("command"),
        "timeout": timeout,
        "async": bool(hook.get("async", False)),
    }
    for name in ("statusMessage", "additionalContextLimit"):
        if hook.get(name) is not None:
            handler[name] = hook[name]
    identity: dict[str, Any] = {"event_name": _snake(event), "hooks": [handler]}
    if group.get("matcher") is not None and event not in NO_MATCHER:
        identity["matcher"] = group["matcher"]
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", event).lower()


def mcp_url(service: str) -> str:
    return service.rstrip("/") + "/mcp"


def install_config(path: Path, service: str) -> list[str]:
    """Put the feature flag and our MCP server into config.toml; what changed."""
    document = _read(path)
    changed = []
    features = _table(document, "features", path)
    if features.get("hooks") is not True:
        features["hooks"] = True
        changed.append("features.hooks")
    servers = _table(document, "mcp_servers", path, super_table=True)
    entry = {"url": mcp_url(service), "bearer_token_env_var": TOKEN_ENV}
    current = servers.get(SERVER)
    if current is None or dict(current) != entry:
        table = tomlkit.table()
        table.update(entry)
        servers[SERVER] = table
        changed.append(f"mcp_servers.{SERVER}")
    if changed:
        claude_settings.write_file(path, tomlkit.dumps(document))
    return changed


def uninstall_config(path: Path) -> list[str]:
    """Take our MCP server out of config.toml (the feature flag stays); what changed."""
    if not path.exists():
        return []
    document = _read(path)
    servers = document.get("mcp_servers")
    if not isinstance(servers, dict) or SERVER not in servers:
        return []
    del servers[SERVER]
    if not servers:
        del document["mcp_servers"]
    text = tomlkit.dumps(document).rstrip("\n")  # and the blank line added before ours
    claude_settings.write_file(path, text + "\n" if text else "")
    return [f"mcp_servers.{SERVER}"]


def _table(document: Any, name: str, path: Path, super_table: bool = False) -> Any:
    table = document.get(name)
    if table is None:
        table = tomlkit.table(is_super_table=super_table)
        document[name] = table
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: {name} is not a table; nothing was changed")
    return table


def _read(path: Path) -> tomlkit.TOMLDocument:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return tomlkit.document()
    except OSError as exc:
        raise SettingsError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise SettingsError(f"{path} is not valid TOML ({exc}); nothing was changed") from None
