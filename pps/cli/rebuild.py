"""Rebuilding a derived layer from its source: `pps replay graph` (the graph from the
event log) and `pps reindex` (the search index from the files and the log)."""

from __future__ import annotations

from typing import Annotated

import typer

from pps.cli.options import (
    DataDir,
    EntityOpt,
    chosen_entities,
    engine_errors,
    fail,
    graph_settings,
    settings_for,
)

replay_app = typer.Typer(help="Rebuild a derived layer from its source.", no_args_is_help=True)


@replay_app.command("graph")
def replay_graph(
    entity: EntityOpt = None,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Empty the graph first (no server may be running).")
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Rebuild the graph from the event log (layer 1); resumable, with a progress bar."""
    from rich.progress import Progress

    from engine.api import Service

    with Service.open(graph_settings(data_dir, "replay into")) as service:
        names = chosen_entities(service, entity)
        with Progress(transient=False) as bar:
            task = bar.add_task("replaying episodes into the graph", total=None)
            with engine_errors():
                outcome = service.replay_graph(
                    names,
                    fresh=fresh,
                    progress=lambda done, total: bar.update(task, completed=done, total=total),
                )
    where = "here" if outcome.ran_here else "by the running server"
    typer.echo(f"{outcome.done} of {outcome.total} episodes replayed {where}, {outcome.dead} dead")
    if outcome.waiting:
        fail(f"the replay waits: {outcome.waiting}")
    if outcome.dead:
        fail("some episodes are dead: see `pps queue`, then `pps queue retry --dead`")


def reindex(
    entity: EntityOpt = None,
    re_embed: Annotated[
        bool, typer.Option("--re-embed", help="Embed every chunk again, not only those missing.")
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Rebuild the search index from the files on disk and the event log (progress bar).
    Vectors of another model are replaced; safe while the server runs."""
    from rich.progress import Progress

    from engine.api import Service
    from engine.api.statuses import ModelUnavailable

    unavailable = None
    with Service.open(settings_for(data_dir=data_dir)) as service:
        known = service.entities.index_keys()  # entities and shared stores (`shared:<store>`)
        if entity is not None and entity not in known:
            fail(f"no entity named {entity!r}")
        with Progress(transient=False) as bar:
            for name in [entity] if entity else known:
                task = bar.add_task(f"{name}: files", total=None)

                def show(stage: str, done: int, total: int, task=task, name=name) -> None:
                    bar.update(task, description=f"{name}: {stage}", completed=done, total=total)

                try:
                    report = service.reindex(name, re_embed=re_embed, progress=show)
                except ModelUnavailable as exc:
                    unavailable = str(exc)
                    continue
                bar.console.print(
                    f"{name}: {report.added + report.updated + report.unchanged} files indexed,"
                    f" {report.removed} removed, {report.embedded} chunks embedded"
                )
                for error in report.errors:
                    bar.console.print(f"{name}: could not read {error}")
                for skipped in report.skipped:
                    bar.console.print(f"{name}: skipped {skipped.path}: {skipped.problem}")
    if unavailable:
        fail(f"files and words are indexed, but not by meaning: {unavailable}")
