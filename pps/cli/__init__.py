"""The `pps` command. Each command parses its options, builds Settings, and calls the
engine through its front door (engine.api: the data dir's `Service`, which the command
opens, `with Service.open(settings) as service`). `--data-dir` and `--port` (or
PPS_DATA_DIR / PPS_PORT) apply to every command that uses them.

One module per command group, loaded only when its command runs (or `--help` lists
it), and the engine only inside the command that calls it: `pps hook`, which Claude
Code runs before every prompt, loads nothing it does not use. This module only names
them, in the order `pps --help` lists them. The options they share live in `options`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

# name -> (module, attribute): a command function or a Typer group.
COMMANDS = {
    "serve": ("pps.cli.serve", "serve"),
    "doctor": ("pps.cli.doctor", "doctor"),
    "mcp": ("pps.cli.mcp", "mcp_stdio"),
    "hook": ("pps.cli.hooks", "hook"),
    "reindex": ("pps.cli.rebuild", "reindex"),
    "check": ("pps.cli.check", "check"),
    "forget": ("pps.cli.forget", "forget"),
    "entity": ("pps.cli.entity", "app"),
    "shared": ("pps.cli.shared", "app"),
    "operator": ("pps.cli.operator", "app"),
    "queue": ("pps.cli.queue", "app"),
    "audit": ("pps.cli.audit", "app"),
    "replay": ("pps.cli.rebuild", "replay_app"),
    "graph": ("pps.cli.graph", "app"),
    "hooks": ("pps.cli.hooks", "app"),
    "ingest": ("pps.cli.ingest", "app"),
    "import": ("pps.cli.imports", "app"),
    "backup": ("pps.cli.backup", "backup"),
    "restore": ("pps.cli.backup", "restore"),
    "export": ("pps.cli.portable", "export"),
}


class LazyCommands(TyperGroup):
    # `ctx`: click's context, which typer's own modules name (typer.Context is a kind of
    # it); neither method reads it.
    def list_commands(self, ctx: object) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: object, name: str):
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name]
        found = getattr(importlib.import_module(module), attribute)
        command = (
            typer.main.get_group(found) if isinstance(found, typer.Typer) else _single(name, found)
        )
        command.name = name
        _plain_help(command)
        return command


def _single(name: str, function: Callable[..., Any]):
    """The command of one function, as typer makes it."""
    single = typer.Typer(add_completion=False)
    single.command(name)(function)
    return typer.main.get_command(single)


def _plain_help(command) -> None:
    """Click's own help layout for every command. Typer's Rich layout reads help text as
    Rich markup, so "[env: PPS_PORT, default: 8000]" vanished from every option, and it
    gave flags a `<bool>` type; the plain layout shows both as written."""
    command.rich_markup_mode = None
    for sub in getattr(command, "commands", {}).values():
        _plain_help(sub)


app = typer.Typer(
    cls=LazyCommands, no_args_is_help=True, add_completion=False, rich_markup_mode=None
)


def _version(asked: bool) -> None:
    if asked:
        from importlib.metadata import version

        typer.echo(f"pps {version('pps')}")
        raise typer.Exit()


@app.callback()
def pps(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """pps — Pattern Persistence Service: one memory for every channel of an AI entity."""


def main() -> None:
    app()
