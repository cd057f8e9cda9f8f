"""`pps hooks install|uninstall`: our hooks in a Claude Code settings file, nobody else's touched.

The settings structure (Claude Code hooks reference): `{"hooks": {"<Event>": [{"matcher":
"...", "hooks": [{"type": "command", "command": "...", "timeout": <seconds>}]}]}}`, in
~/.claude/settings.json (user), <project>/.claude/settings.json (shared with the team) or
<project>/.claude/settings.local.json (this machine only). A project install goes to the
local file: our command names this machine's `pps` and token file.

A hook is ours when its command runs `pps hook ...` (after any VAR=value words), so a
hand-written one is recognised too. Install adds ours or updates them in place, and keeps
every other key, event, group and hook as it was; uninstall removes only ours. A file
that is not valid JSON is refused and left unchanged; writes are atomic.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest.claude_code import EVENTS

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


def pps_command() -> list[str]:
    """How to run this very pps: the `pps` script next to this interpreter, else the module."""
    script = Path(sys.executable).parent / "pps"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "pps.cli"]


def hook_command(event: str, env: dict[str, str]) -> str:
    words = [f"{name}={shlex.quote(value)}" for name, value in env.items()]
    words += [shlex.quote(word) for word in pps_command()] + ["hook", event]
    return " ".join(words)


def is_ours(command: Any) -> bool:
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    while words and _ASSIGNMENT.match(words[0]):
        words.pop(0)
    if words[:1] and Path(words[0]).name == "pps":
        return words[1:2] == ["hook"]
    return words[1:4] == ["-m", "pps.cli", "hook"]


def install(path: Path, env: dict[str, str], budget_s: float) -> Changes:
    """Add our hook for each event (or update it where it is); keep everything else."""
    settings = _read(path)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError(f"{path}: 'hooks' is not an object; nothing was changed")
    # Claude Code's own limit only matters if our watchdog failed; leave it room.
    timeout = max(10, math.ceil(budget_s) * 3)
    changes = Changes(path)
    for event in EVENTS:
        command = hook_command(event, env)
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise SettingsError(f"{path}: hooks.{event} is not a list; nothing was changed")
        ours = [(group, hook) for group, hook in _hooks(groups) if is_ours(hook.get("command"))]
        if not ours:
            groups.append({"hooks": [{"type": "command", "command": command, "timeout": timeout}]})
            changes.added.append(event)
            continue
        (_, first), extra = ours[0], ours[1:]
        if first.get("command") != command or first.get("timeout") != timeout:
            first.update(type="command", command=command, timeout=timeout)
            changes.updated.append(event)
        for group, hook in extra:  # the same hook twice would capture every turn twice
            group["hooks"].remove(hook)
        _drop_empty(hooks, event, emptied={id(group) for group, _ in extra})
    _write(path, settings)
    return changes


def uninstall(path: Path) -> Changes:
    """Remove our hooks (and the groups and events only they filled); keep the rest."""
    changes = Changes(path)
    if not path.exists():
        return changes
    settings = _read(path)
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return changes
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        ours = [(group, hook) for group, hook in _hooks(groups) if is_ours(hook.get("command"))]
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


def _hooks(groups: list) -> list[tuple[dict, dict]]:
    return [
        (group, hook)
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for hook in group["hooks"]
        if isinstance(hook, dict)
    ]


def _drop_empty(hooks: dict, event: str, emptied: set[int]) -> None:
    """Remove the groups we emptied, and the event if we emptied its list."""
    groups = hooks[event]
    groups[:] = [g for g in groups if not (id(g) in emptied and not g["hooks"])]
    if not groups and emptied:
        del hooks[event]


def _read(path: Path) -> dict:
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


def _write(path: Path, settings: dict) -> None:
    """Atomically, keeping the file's mode (0600 for a new file; a new folder is 0700)."""
    if not path.parent.exists():
        path.parent.mkdir(mode=0o700, parents=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    temporary = path.with_name(f".{path.name}.pps-tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(temporary, mode)
    os.replace(temporary, path)
