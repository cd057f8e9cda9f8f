"""`pps doctor`: what works, and why not."""

from __future__ import annotations

import contextlib

import typer

from engine.store.db import Database
from pps.cli.options import DataDir, Port, settings_for


def doctor(data_dir: DataDir = None, port: Port = None) -> None:
    """Check each part (database, embedding model, LLM, graph) and say why one does not
    work. Reads the running service's /health too, when it answers."""
    import httpx

    from engine.llm import client as llm
    from engine.search import embeddings
    from ingest.client import service_url

    settings = settings_for(data_dir=data_dir, port=port)
    checks: dict[str, dict] = {}
    try:
        version = Database.open(settings).schema_version()
        mode = settings.data_dir.stat().st_mode & 0o777
        checks["database"] = {"status": "ok", "schema_version": version, "data_dir_mode": oct(mode)}
    except Exception as exc:  # what is wrong is the answer
        checks["database"] = {"status": "down", "error": f"{type(exc).__name__}: {exc}"}
    with contextlib.suppress(embeddings.Unavailable):  # status() says why
        embeddings.get(settings)
    checks["embeddings"] = embeddings.status(settings)
    checks["llm"] = llm.probe(settings)
    try:
        served = httpx.get(f"{service_url(settings)}/health", timeout=3).json()
        checks["service"] = {"status": served["status"], "url": service_url(settings)}
        checks |= {f"service {k}": v for k, v in served["components"].items()}
    except (httpx.HTTPError, ValueError, KeyError):
        checks["service"] = {"status": "not running", "url": service_url(settings)}
    bad = False
    for name, check in checks.items():
        status = check.get("status")
        detail = ", ".join(f"{k}={v}" for k, v in check.items() if k != "status")
        typer.echo(f"{name:22} {status:12} {detail}")
        bad |= status in ("down", "refused", "failing")
    if bad:
        raise typer.Exit(1)
