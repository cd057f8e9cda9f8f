"""`pps serve`: the HTTP service (REST, OpenAPI, the MCP endpoints)."""

from __future__ import annotations

from typing import Annotated

import typer

from pps.cli.options import DataDir, Port, fail, settings_for


def serve(
    data_dir: DataDir = None,
    port: Port = None,
    host: Annotated[
        str | None,
        typer.Option(help="Address to bind [env: PPS_HOST, default: 127.0.0.1]."),
    ] = None,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote", help="Allow a non-loopback --host (put TLS and a proxy in front)."
        ),
    ] = False,
) -> None:
    """Run the HTTP service (REST under /v1, OpenAPI at /docs)."""
    settings = settings_for(
        data_dir=data_dir, port=port, host=host, allow_remote=allow_remote or None
    )
    if not settings.binds_loopback and not settings.allow_remote:
        fail(
            f"refusing to listen on {settings.host}: it is not a loopback address. "
            "pps has no TLS of its own; put a TLS proxy in front and pass --allow-remote."
        )
    # Only now the heavy part: a refused start answers at once.
    import uvicorn

    from pps.app import create_app

    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="info",
        access_log=False,
        timeout_graceful_shutdown=5,
    )
