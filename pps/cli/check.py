"""`pps check`: the consistency check of every layer (engine.consistency), and its safe
repairs with `--repair`.

Safe while the server runs (SQLite takes turns). The graph is checked where it can be
reached: an external one (GRAPH_URL, Neo4j) directly; the embedded FalkorDB through the
running server's socket, or started here under the data dir's lock when no server runs.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from engine.kernel.lock import SERVE, owner
from pps.cli.options import DataDir, EntityOpt, fail, settings_for


def check(
    entity: EntityOpt = None,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Do the safe repairs (re-index, re-enqueue, drop orphans) and say what.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The report as JSON.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Walk every layer (files, turns, vectors, queue, graph, summaries) and report counts
    and each problem with the command that repairs it; exit 1 while problems remain.
    With a server running on the data dir, the check is the server's (one request: its
    graph, its index); repairs are always made here."""
    settings = settings_for(data_dir=data_dir)
    report = None if repair else _ask_server(settings, entity)
    if report is None:
        report = _check_here(settings, entity, repair)
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        _show(report)
    if report["problems"]:
        raise typer.Exit(1)


def _ask_server(settings, entity: str | None) -> dict | None:
    """The running server's report (GET /v1/operator/check with its local key, from the
    data dir's lock file), or None when no server runs on the data dir."""
    holder = owner(settings.data_dir)
    if holder is None or holder.command != SERVE or not holder.url or not holder.key:
        return None
    import httpx

    query = {} if entity is None else {"entity": entity}
    try:
        answer = httpx.get(
            f"{holder.url}/v1/operator/check",
            params=query,
            headers={"Authorization": f"Bearer {holder.key}"},
            timeout=600,  # a check walks every layer of every entity
        )
    except httpx.HTTPError as exc:
        fail(f"the server on this data dir ({holder.url}) did not answer the check: {exc}")
    if answer.status_code == 404:
        fail(f"no entity named {entity!r}")
    if answer.status_code != 200:
        fail(
            f"the server on this data dir answered the check with {answer.status_code}: "
            f"{answer.text[:500]}"
        )
    return answer.json()


def _check_here(settings, entity: str | None, repair: bool) -> dict:
    from engine.api import Service

    with Service.open(settings, graph="pps check") as service:
        known = service.entities.index_keys()  # entities and shared stores
        if entity is not None and entity not in known:
            fail(f"no entity named {entity!r}")
        report = service.check([entity] if entity else known, repair=repair)
    return report.model_dump(mode="json")


def _show(report: dict) -> None:
    for found in report["entities"]:
        c = found["counts"]
        typer.echo(
            f"{found['entity']}: {c['events']} events ({c['turns']} turns,"
            f" {c['turns_embedded']} embedded, {c['turns_embedding_pending']} pending),"
            f" {c['files_indexed']} files ({c['file_chunks']} chunks), {c['episodes']} episodes,"
            f" {c['summaries']} summaries, jobs: {c['jobs_dead']} dead; graph: {found['graph']}"
        )
        for line in found["repaired"]:
            typer.echo(f"  repaired  {line}")
        for skipped in found["skipped"]:
            typer.echo(f"  skipped   {skipped['path']}: {skipped['problem']}")
        for p in found["problems"]:
            typer.echo(f"  PROBLEM   {p['layer']}/{p['kind']} x{p['count']}: {p['detail']}")
            typer.echo(f"            e.g. {', '.join(p['examples'])}")
            typer.echo(f"            repair: {p['repair']}")
    problems = report["problems"]
    verdict = f"{problems} problems" if problems else "consistent"
    typer.echo(f"{verdict} ({len(report['entities'])} entities, {report['seconds']:.2f} s)")
