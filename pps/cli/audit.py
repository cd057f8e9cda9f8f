"""`pps audit`: the retrieval audit's judgments, as an evaluation set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from pps.cli.options import DataDir, EntityOpt, fail, settings_for

app = typer.Typer(help="The retrieval audit: judgments of logged recalls (see docs/ui.md).")


@app.callback()
def audit_group() -> None:
    """The retrieval audit: judgments of logged recalls (see docs/ui.md)."""


@app.command("export")
def audit_export(
    out: Annotated[Path, typer.Argument(help="The JSONL file to write ('-': stdout).")],
    entity: EntityOpt = None,
    data_dir: DataDir = None,
) -> None:
    """Write the judged recalls as an evaluation set (JSONL, one recall a line: the context,
    the judged items with their sources and relevance); bench/audit_score.py scores the
    current recall against it."""
    from engine.api import Service

    with Service.open(settings_for(data_dir=data_dir)) as service:
        entities = service.entities
        names = [entity] if entity else entities.judged()
        if entity and entity not in entities.names():
            fail(f"no entity {entity!r}")
        lines = [json.dumps(record) for name in names for record in entities.judgments(name)]
    text = "".join(line + "\n" for line in lines)
    if str(out) == "-":
        typer.echo(text, nl=False)
        return
    out.write_text(text, encoding="utf-8")
    judged = sum(len(json.loads(line)["items"]) for line in lines)
    typer.echo(f"{len(lines)} judged recalls, {judged} judged items, to {out}")
