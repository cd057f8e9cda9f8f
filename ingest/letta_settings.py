"""`pps hooks install|uninstall letta-code`: our hooks in a Letta Code settings file,
nobody else's touched.

Letta Code (the `letta` 0.34 package, `src/hooks/loader.ts`) reads `hooks` from
~/.letta/settings.json (the user's), <project>/.letta/settings.json (shared with the team)
and <project>/.letta/settings.local.json (this machine only), in Claude Code's envelope:
`{"hooks": {"<Event>": [{"matcher": "...", "hooks": [{"type": "command", "command": "...",
"timeout": <milliseconds>, "quiet": <bool>}]}]}}`. It runs every matching hook of the three
files. So the merge is ingest.claude_settings' (ours recognised by the command running
the hook client); every hook is a command, the hook client (ingest.hook) with `EVENT --host
letta-code`: Letta Code has no http hook. `quiet` keeps the memory we inject out of the
terminal (the agent gets it).
A project install goes to the local file: our hooks name this machine's hook client and
token file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ingest import claude_settings
from ingest.hook import EVENTS
from ingest.letta_code import AGENT_ENV, HOST


def settings_path(*, project: Path | None = None, user: bool = False) -> Path:
    if user:
        return Path.home() / ".letta" / "settings.json"
    return (project or Path.cwd()).resolve() / ".letta" / "settings.local.json"


def command_hooks(
    env: dict[str, str], budget_s: float, agent: str | None = None
) -> dict[str, dict[str, Any]]:
    """Our hook for each event: a command Letta Code waits for at most its timeout (in
    milliseconds), serving `agent` (its id or name) when one is named."""
    if agent:
        env = {**env, AGENT_ENV: agent}
    timeout_ms = claude_settings.command_timeout(budget_s) * 1000
    return {
        event: {
            "type": "command",
            "command": claude_settings.hook_command(event, env, HOST),
            "timeout": timeout_ms,
            "quiet": True,
        }
        for event in EVENTS
    }
