"""The `pps` command. Each command parses its options, builds Settings, and calls
one engine service. `--data-dir` and `--port` (or PPS_DATA_DIR / PPS_PORT) apply to
every command that uses them.

One module per command group; this one only assembles them, in the order `pps --help`
lists them. The options they share live in `options`.
"""

from __future__ import annotations

import typer

from pps.cli import doctor, entity, hooks, imports, ingest, mcp, queue, rebuild, serve

app = typer.Typer(
    help="pps — Pattern Persistence Service: one memory for every channel of an AI entity.",
    no_args_is_help=True,
    add_completion=False,
)
app.command()(serve.serve)
app.command()(doctor.doctor)
app.command("mcp")(mcp.mcp_stdio)
app.command("hook")(hooks.hook)
app.command()(rebuild.reindex)
app.add_typer(entity.app, name="entity")
app.add_typer(queue.app, name="queue")
app.add_typer(rebuild.replay_app, name="replay")
app.add_typer(hooks.app, name="hooks")
app.add_typer(ingest.app, name="ingest")
app.add_typer(imports.app, name="import")


def main() -> None:
    app()
