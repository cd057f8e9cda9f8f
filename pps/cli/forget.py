"""`pps forget`: forget an event, a word-photo or a fact from every layer of one entity
(engine.forgetting), and print the receipt.

Safe while the server runs (SQLite takes turns): the graph's part, removing the episodes
that held a forgotten event, is a queued job the server's workers do (or the next `pps
serve`'s). Forgetting a fact deletes it from the graph here and now (see `pps check` for
how the graph is reached)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from pydantic import ValidationError

from pps.cli.options import DataDir, engine_errors, entity_names, fail, settings_for


def forget(
    entity: Annotated[str, typer.Option("--entity", help="The entity that forgets.")],
    event: Annotated[
        str | None, typer.Option("--event", help="An event's uid: every version of its message.")
    ] = None,
    word_photo: Annotated[
        str | None, typer.Option("--word-photo", help="A word-photo's file name.")
    ] = None,
    fact: Annotated[str | None, typer.Option("--fact", help="A fact's uuid.")] = None,
    why: Annotated[
        str | None, typer.Option("--why", help="Kept in the tombstone (never the text).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The receipt as JSON.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Forget one memory from every layer, for good: give one of --event, --word-photo and
    --fact. The raw log keeps a tombstone (who, when, why), never the text."""
    from engine.api import Service
    from engine.forgetting import ForgetRequest

    try:
        ask = ForgetRequest(event_uid=event, word_photo=word_photo, fact=fact, why=why)
    except ValidationError as exc:
        fail("; ".join(error["msg"].removeprefix("Value error, ") for error in exc.errors()))
    settings = settings_for(data_dir=data_dir)
    # A fact is forgotten in the graph here and now: only then is the graph reached.
    with Service.open(settings, graph="pps forget" if fact else None) as service:
        entity_names(service, entity)
        with engine_errors():
            receipt = service.memory(entity).forget(ask, "cli")
    if as_json:
        typer.echo(json.dumps(receipt.model_dump(), indent=2))
        return
    typer.echo(f"forgot {receipt.forgotten} {receipt.ref} (tombstone {receipt.id})")
    for removed in receipt.removed:
        typer.echo(f"  {removed.layer:<11} {removed.count:>4}  {removed.detail}")
    for line in receipt.pending:
        typer.echo(f"  pending     {line}")
