"""`pps mcp`: the stdio bridge for MCP clients that spawn a command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pps.cli.options import Port, Url, fail, settings_for


def mcp_stdio(
    profile: Annotated[
        str, typer.Option("--profile", help="pps, wordwalker, openclaw or shared-memory.")
    ] = "pps",
    url: Url = None,
    token_file: Annotated[
        Path | None, typer.Option("--token-file", help="The entity token [env: PPS_TOKEN_FILE].")
    ] = None,
    port: Port = None,
) -> None:
    """Serve an MCP profile on stdio, forwarding every call to the running service with the
    entity's token (from PPS_TOKEN or PPS_TOKEN_FILE)."""
    import anyio

    from ingest.client import ClientConfigError, read_token, service_url
    from mcp_bridge import stdio
    from mcp_bridge.mount import PROFILES

    if profile not in PROFILES:
        fail(f"unknown profile {profile!r}: use one of {', '.join(PROFILES)}")
    settings = settings_for(port=port, url=url, token_file=token_file)
    try:
        token = read_token(settings)
    except ClientConfigError as exc:
        fail(str(exc))
    path, _ = PROFILES[profile]
    anyio.run(stdio.serve, service_url(settings) + path, token, f"pps-{profile}")
