"""The agent hosts' hooks: `pps hook EVENT [--host H]` (what Claude Code, Letta Code and
Codex run), `pps hooks install/uninstall H` (putting ours in a host's settings, or taking
them out) and `pps hooks status` (what is installed, and whether it reaches the service)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pps.cli.options import ClientToken, Port, Url, fail, settings_for

if TYPE_CHECKING:
    from ingest import claude_settings

TARGETS = ("claude-code", "letta-code", "codex")
"""The hosts (ingest.hook.HOSTS), named here without importing the client side."""

app = typer.Typer(
    help="Put the agent hosts' hooks (Claude Code, Letta Code, Codex) in their settings, or"
    " take them out.",
    no_args_is_help=True,
)


def hook(
    event: Annotated[
        str, typer.Argument(help="SessionStart, UserPromptSubmit, Stop, PreCompact, SessionEnd.")
    ],
    host: Annotated[
        str,
        typer.Option("--host", help="The agent host running it: claude-code, letta-code, codex."),
    ] = "claude-code",
) -> None:
    """Run an agent host's hook through the hook client: its JSON on stdin, what the host
    reads on stdout. Always exits 0 within PPS_HOOK_BUDGET_S; problems go to hooks.log in
    PPS_CLIENT_DIR. (The installed hooks run the client itself, which starts in tens of
    milliseconds; this is the same for a hook written by hand, or installed before it.)"""
    from ingest import hook as client

    client.main([event, "--host", host])


@app.command("install")
def hooks_install(
    target: Annotated[
        str, typer.Argument(help="Where: claude-code, letta-code or codex.")
    ] = "claude-code",
    project: Annotated[
        Path | None,
        typer.Option(
            "--project",
            file_okay=False,
            help="Into DIR/.claude/settings.local.json (codex: DIR/.codex/) [default: the current"
            " folder].",
        ),
    ] = None,
    user: Annotated[
        bool,
        typer.Option(
            "--user",
            help="Into ~/.claude/settings.json (codex: $CODEX_HOME, else ~/.codex): every project.",
        ),
    ] = False,
    command: Annotated[
        bool,
        typer.Option(
            "--command",
            help="Every hook a command (`pps hook`), UserPromptSubmit too; by default it is an"
            " http hook served by the running service.",
        ),
    ] = False,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="letta-code: the Letta agent (id or name) these hooks serve [default: the"
            " first one they see].",
        ),
    ] = None,
    token_file: ClientToken = None,
    url: Url = None,
    port: Port = None,
) -> None:
    """Merge our hooks into a Claude Code settings file; nobody else's hooks are touched.
    UserPromptSubmit is an http hook with the token in its header (the file is made 0600);
    the others run the hook client. Hooks installed before are
    replaced by these. The settings the client reads (the service, the token file, the
    client dir, the budget) are written into each command. With --user, pps's MCP server
    goes into Claude Code's user scope too (~/.claude.json, made 0600)."""
    from engine.kernel.config import ClientSettings
    from ingest import claude_settings
    from ingest.client import ClientConfigError, read_token, service_url

    if target not in TARGETS:
        fail(f"unknown target {target!r}: {' or '.join(TARGETS)}")
    if project is not None and user:
        fail("choose --project DIR or --user, not both")
    settings = settings_for(port=port, url=url, token_file=token_file)
    env = {"PPS_URL": service_url(settings)}
    if settings.token_file is not None:
        env["PPS_TOKEN_FILE"] = str(settings.token_file.expanduser().resolve())
    env["PPS_CLIENT_DIR"] = str(settings.client_dir.expanduser().resolve())
    for name in ("hook_budget_s", "hook_max_chars"):
        if getattr(settings, name) != ClientSettings.model_fields[name].default:
            env[f"PPS_{name.upper()}"] = str(getattr(settings, name))
    if target == "codex":
        _install_codex(env, settings.hook_budget_s, project, user)
        return
    if target == "letta-code":
        _install_letta(env, settings.hook_budget_s, project, user, agent)
        return
    path = claude_settings.settings_path(project=project, user=user)
    refused = None if command else claude_settings.http_refused(service_url(settings))
    if refused is not None:
        typer.echo(f"warning: {refused}; every hook is a command (as with --command)", err=True)
        command = True
    if command:
        wanted = claude_settings.command_hooks(env, settings.hook_budget_s)
    else:
        try:
            token = read_token(settings)
        except ClientConfigError as exc:
            fail(f"{exc}; the http hook carries the token (or install with --command)")
        wanted = claude_settings.http_hooks(
            env, settings.hook_budget_s, service_url(settings), token
        )
    try:
        changes = claude_settings.install(path, wanted)
    except claude_settings.SettingsError as exc:
        fail(str(exc))
    _installed(path, changes, env, "Claude Code")
    mcp = f"{service_url(settings)}/mcp"
    if not user or command:  # a project's own token, or no token written anywhere
        typer.echo(
            f"pps's MCP server, for Claude Code's tools: `claude mcp add --transport http pps"
            f' {mcp} --header "Authorization: Bearer $(cat TOKEN_FILE)"` (--scope user: every'
            " folder)"
        )
        return
    config = claude_settings.user_config_path()
    try:
        changed = claude_settings.install_mcp(config, service_url(settings), token)
    except claude_settings.SettingsError as exc:
        fail(str(exc))
    done = "set" if changed else "already set"
    typer.echo(f"{config}: mcpServers.pps {done} ({mcp}, Claude Code's user scope; 0600)")


def _installed(path: Path, changes, env: dict[str, str], host: str) -> None:
    """Say what install changed, and warn about a token the hooks will not find."""
    typer.echo(
        f"{path}: added {', '.join(changes.added) or 'none'};"
        f" updated {', '.join(changes.updated) or 'none'}"
    )
    if "PPS_TOKEN_FILE" not in env:
        typer.echo(
            "warning: no token file given; the hooks will need PPS_TOKEN_FILE (or PPS_TOKEN)"
            f" in {host}'s environment. Pass --token-file to name one.",
            err=True,
        )
    elif not os.access(env["PPS_TOKEN_FILE"], os.R_OK):
        typer.echo(f"warning: cannot read {env['PPS_TOKEN_FILE']} yet", err=True)


def _install_codex(env: dict[str, str], budget_s: float, project: Path | None, user: bool):
    """Codex: command hooks in hooks.json, the feature flag and our MCP server in
    config.toml (its bearer token from PPS_TOKEN in Codex's environment)."""
    from ingest import claude_settings, codex_settings

    path = codex_settings.settings_path(project=project, user=user)
    config = codex_settings.config_path(project=project, user=user)
    try:
        changes = codex_settings.install(path, codex_settings.command_hooks(env, budget_s))
        changed = codex_settings.install_config(config, env["PPS_URL"])
    except claude_settings.SettingsError as exc:
        fail(str(exc))
    _installed(path, changes, env, "Codex")
    typer.echo(f"{config}: set {', '.join(changed) or 'nothing (already set)'}")
    typer.echo(
        f"Codex's MCP client sends the token in ${codex_settings.TOKEN_ENV}: export it where"
        " Codex runs (the hooks read their token file). Start codex once and trust the new"
        " hooks when it asks: until then Codex runs none of them."
    )


def _install_letta(
    env: dict[str, str], budget_s: float, project: Path | None, user: bool, agent: str | None
) -> None:
    """Letta Code: command hooks in its settings file (it has no http hook)."""
    from ingest import claude_settings, letta_settings

    path = letta_settings.settings_path(project=project, user=user)
    try:
        changes = claude_settings.install(path, letta_settings.command_hooks(env, budget_s, agent))
    except claude_settings.SettingsError as exc:
        fail(str(exc))
    _installed(path, changes, env, "Letta Code")
    serves = f"the agent {agent}" if agent else "the first Letta agent they see"
    typer.echo(f"The hooks serve {serves}; another agent's conversations are not captured.")


@app.command("uninstall")
def hooks_uninstall(
    target: Annotated[
        str, typer.Argument(help="Where: claude-code, letta-code or codex.")
    ] = "claude-code",
    project: Annotated[
        Path | None,
        typer.Option(
            "--project",
            file_okay=False,
            help="From DIR/.claude/settings.local.json (codex: DIR/.codex/).",
        ),
    ] = None,
    user: Annotated[
        bool, typer.Option("--user", help="From ~/.claude/settings.json (codex: ~/.codex).")
    ] = False,
) -> None:
    """Remove our hooks (only ours) from a Claude Code settings file, or from Codex's
    hooks.json (and our MCP server from its config.toml)."""
    from ingest import claude_settings, codex_settings, letta_settings

    if target not in TARGETS:
        fail(f"unknown target {target!r}: {' or '.join(TARGETS)}")
    if project is not None and user:
        fail("choose --project DIR or --user, not both")
    if target == "letta-code":
        path = letta_settings.settings_path(project=project, user=user)
        try:
            changes = claude_settings.uninstall(path)
        except claude_settings.SettingsError as exc:
            fail(str(exc))
        typer.echo(f"{path}: removed {', '.join(changes.removed) or 'nothing (none were ours)'}")
        return
    if target == "codex":
        path = codex_settings.settings_path(project=project, user=user)
        config = codex_settings.config_path(project=project, user=user)
        try:
            changes = codex_settings.uninstall(path)
            changed = codex_settings.uninstall_config(config)
        except claude_settings.SettingsError as exc:
            fail(str(exc))
        typer.echo(f"{path}: removed {', '.join(changes.removed) or 'nothing (none were ours)'}")
        typer.echo(f"{config}: removed {', '.join(changed) or 'nothing'}")
        return
    path = claude_settings.settings_path(project=project, user=user)
    config = claude_settings.user_config_path()
    try:
        changes = claude_settings.uninstall(path)
        mcp = user and claude_settings.uninstall_mcp(config)
    except claude_settings.SettingsError as exc:
        fail(str(exc))
    typer.echo(f"{path}: removed {', '.join(changes.removed) or 'nothing (none were ours)'}")
    if mcp:
        typer.echo(f"{config}: removed mcpServers.pps")


@app.command("status")
def hooks_status(
    project: Annotated[
        Path | None,
        typer.Option("--project", file_okay=False, help="Also DIR's settings [default: here]."),
    ] = None,
) -> None:
    """Every host's hooks installed (the user's settings, then the project's): where,
    which events, where the token comes from, and whether its last call reached the
    service (its record of this token's clients)."""
    from ingest import hosts

    found = hosts.installed(project)
    if not found:
        typer.echo("no hooks of ours installed (pps hooks install claude-code|letta-code|codex)")
    for one in found:
        typer.echo(f"{one.host.title}: {one.path}")
        if one.problem is not None or one.hooks is None:
            typer.echo(f"  cannot read it: {one.problem}")
            continue
        hooks = one.hooks
        typer.echo(f"  events: {', '.join(hooks.events)}")
        typer.echo(f"  token: {hooks.source}  service: {hooks.url}")
        if one.untrusted:
            typer.echo(f"  not trusted: {hosts.untrusted_says(one)}")
        typer.echo(f"  last call: {_last_call(one.label, hooks)}")


def _last_call(label: str, hooks: claude_settings.Installed) -> str:
    from ingest import hosts

    if hooks.token is None:
        return f"none can be made: {hooks.problem}"
    record = hosts.last_calls(hooks.url, hooks.token, timeout=5)
    if record is None:
        return f"unknown: the service at {hooks.url} does not answer"
    if record == 401:
        return "refused: the service does not take this token (401); install the hooks again"
    if isinstance(record, int):
        return f"unknown: the service answered {record}"
    last = record.get(label)
    if last is None:
        return "none yet: the service has no call from these hooks"
    counts = f"{last['writes']} writes, {last['reads']} reads in all"
    return f"{last['last_at']}, reached the service (answered {last['last_status']}; {counts})"
