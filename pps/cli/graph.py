"""`pps graph duplicates` and `pps graph merge`: the graph curator (engine.graph.curator).

The graph is reached as `pps check` reaches it: an external one (GRAPH_URL, Neo4j)
directly; the embedded FalkorDB through the running server's socket, or started here
under the data dir's lock when no server runs. A graph that is off, down or out of reach
is a message and exit 1.
"""

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
)

app = typer.Typer(help="Upkeep of the knowledge graph (layer 3).", no_args_is_help=True)

AsJson = Annotated[bool, typer.Option("--json", help="The report as JSON.")]


@app.command("duplicates")
def duplicates(entity: EntityOpt = None, as_json: AsJson = False, data_dir: DataDir = None) -> None:
    """Entity nodes that are the same thing, per entity: the node kept, those that would
    be merged into it, their uuids and facts. Changes nothing."""
    from engine.api import Service

    found = {}
    with Service.open(graph_settings(data_dir, "curate"), graph="pps graph") as service:
        for name in chosen_entities(service, entity):
            with engine_errors():
                found[name] = service.memory(name).graph.duplicates()
    if as_json:
        typer.echo(_json(found))
        return
    for name, report in found.items():
        typer.echo(
            f"{name}: {report.nodes} nodes, {len(report.groups)} groups of duplicates"
            f" ({report.seconds:.2f} s)"
        )
        _show(report.groups)


@app.command("merge")
def merge(
    entity: EntityOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only say what would change; change nothing.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Merge without asking.")] = False,
    as_json: AsJson = False,
    data_dir: DataDir = None,
) -> None:
    """Merge each group of duplicates into the node with the most facts (then the
    oldest): every fact re-pointed with its provenance, nothing lost. Asks first, unless
    --yes; --dry-run only shows what would change."""
    from engine.api import Service

    done = {}
    with Service.open(graph_settings(data_dir, "curate"), graph="pps graph") as service:
        for name in chosen_entities(service, entity):
            graph = service.memory(name).graph
            with engine_errors():
                plan = graph.merge_duplicates(dry_run=True)
                if dry_run or not plan.groups:
                    done[name] = plan
                    continue
                if not yes and not as_json:
                    typer.echo(f"{name}: {plan.nodes_merged} nodes would be merged:")
                    _show(plan.groups)
                    typer.confirm(f"merge them in the graph of {name}?", abort=True)
                busy = service.extracting(name)
                if busy:
                    fail(
                        f"{name}: {busy} episodes are being extracted into the graph now;"
                        " retry when they are done, or merge through the server"
                        " (POST /v1/texture/duplicates/merge), which waits for them"
                    )
                done[name] = graph.merge_duplicates(dry_run=False)
    if as_json:
        typer.echo(_json(done))
        return
    for name, result in done.items():
        verb = "would merge" if result.dry_run else "merged"
        typer.echo(
            f"{name}: {verb} {result.nodes_merged} nodes into {len(result.groups)},"
            f" {result.facts_moved} facts re-pointed; facts {result.facts_before}"
            f" before, {result.facts_after} after ({result.seconds:.2f} s)"
        )
        if result.dry_run:
            _show(result.groups)


def _show(groups) -> None:
    for g in groups:
        merged = ", ".join(f"{n.name!r} {n.uuid} ({n.facts} facts)" for n in g.merge)
        typer.echo(f"  keep {g.keep.name!r} {g.keep.uuid} ({g.keep.facts} facts) <- {merged}")
        typer.echo(f"       {g.reason}")


def _json(reports: dict) -> str:
    import json

    return json.dumps({name: r.model_dump() for name, r in reports.items()}, indent=2)
