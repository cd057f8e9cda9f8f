"""Claude Code hooks: `pps hook EVENT` (what Claude Code runs) and `pps hooks
install/uninstall` (putting ours in a settings file, or taking them out)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from pps.cli.options import ClientToken, Port, Url, fail, settings_for

app = typer.Typer(
    help="Put the Claude Code hooks in a settings file, or take them out.", no_args_is_help=True
)


def hook(
    event: Annotated[
        str, typer.Argument(help="SessionStart, UserPromptSubmit, Stop, PreCompact, SessionEnd.")
    ],
) -> None:
    """Run a Claude Code hook: its JSON on stdin, context to inject on stdout. Always exits 0
    within PPS_HOOK_BUDGET_S; problems go to hooks.log in PPS_CLIENT_DIR."""
    from ingest import claude_code, claude_settings

    try:
        settings = settings_for()
    except Exception:  # a broken setting must not break the session either
        return
    claude_code.main(event, settings, claude_settings.refused_http_hook)


@app.command("install")
def hooks_install(
    target: Annotated[str, typer.Argument(help="Where: claude-code.")] = "claude-code",
    project: Annotated[
        Path | None,
        typer.Option(
            "--project",
            file_okay=False,
            help="Into DIR/.claude/settings.local.json [default: the current folder].",
        ),
    ] = None,
    user: Annotated[
        bool, typer.Option("--user", help="Into ~/.claude/settings.json (every project).")
    ] = False,
    command: Annotated[
        bool,
        typer.Option(
            "--command",
            help="Every hook a command (`pps hook`), UserPromptSubmit too; by default it is an"
            " http hook served by the running service.",
        ),
    ] = False,
    token_file: ClientToken = None,
    url: Url = None,
    port: Port = None,
) -> None:
    """Merge our hooks into a Claude Code settings file; nobody else's hooks are touched.
    UserPromptSubmit is an http hook with the token in its header (the file is made 0600);
    the others run `pps hook`, Stop in the background."""
    from ingest import claude_settings
    from ingest.client import ClientConfigError, read_token, service_url

    if target != "claude-code":
        fail(f"unknown target {target!r}: only claude-code")
    if project is not None and user:
        fail("choose --project DIR or --user, not both")
    settings = settings_for(port=port, url=url, token_file=token_file)
    env = {"PPS_URL": service_url(settings)}
    if settings.token_file is not None:
        env["PPS_TOKEN_FILE"] = str(settings.token_file.expanduser().resolve())
    if os.environ.get("PPS_CLIENT_DIR"):
        env["PPS_CLIENT_DIR"] = str(settings.client_dir.expanduser().resolve())
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
    typer.echo(
        f"{path}: added {', '.join(changes.added) or 'none'};"
        f" updated {', '.join(changes.updated) or 'none'}"
    )
    if "PPS_TOKEN_FILE" not in env:
        typer.echo(
            "warning: no token file given; the hooks will need PPS_TOKEN_FILE (or PPS_TOKEN)"
            " in Claude Code's environment. Pass --token-file to name one.",
            err=True,
        )
    elif not os.access(env["PPS_TOKEN_FILE"], os.R_OK):
        typer.echo(f"warning: cannot read {env['PPS_TOKEN_FILE']} yet", err=True)


@app.command("uninstall")
def hooks_uninstall(
    target: Annotated[str, typer.Argument(help="Where: claude-code.")] = "claude-code",
    project: Annotated[
        Path | None,
        typer.Option("--project", file_okay=False, help="From DIR/.claude/settings.local.json."),
    ] = None,
    user: Annotated[bool, typer.Option("--user", help="From ~/.claude/settings.json.")] = False,
) -> None:
    """Remove our hooks (only ours) from a Claude Code settings file."""
    from ingest import claude_settings

    if target != "claude-code":
        fail(f"unknown target {target!r}: only claude-code")
    if project is not None and user:
        fail("choose --project DIR or --user, not both")
    path = claude_settings.settings_path(project=project, user=user)
    try:
        changes = claude_settings.uninstall(path)
    except claude_settings.SettingsError as exc:
        fail(str(exc))
    typer.echo(f"{path}: removed {', '.join(changes.removed) or 'nothing (none were ours)'}")
