"""`pps mcp`: the stdio relay for MCP clients that spawn a command.

A client waits for this command to answer `initialize`, so nothing heavy is imported here
or in what it runs: the relay (ingest.mcp_relay) is the standard library and httpx.
"""

from __future__ import annotations

from typing import Annotated

import typer

from pps.cli.options import ClientToken, Port, Url, fail, settings_for


def mcp_stdio(
    profile: Annotated[
        str, typer.Option("--profile", help="pps, wordwalker, openclaw or shared-memory.")
    ] = "pps",
    url: Url = None,
    token_file: ClientToken = None,
    port: Port = None,
    store: Annotated[
        str | None,
        typer.Option("--store", help="shared-memory only: the shared store (of several)."),
    ] = None,
) -> None:
    """Relay an MCP profile to stdio: every message goes to the running service with the
    entity's token (from PPS_TOKEN or PPS_TOKEN_FILE)."""
    from importlib.metadata import version

    from ingest import mcp_relay
    from ingest.client import ClientConfigError, read_token, service_url
    from mcp_bridge import PATHS

    if profile not in PATHS:
        fail(f"unknown profile {profile!r}: use one of {', '.join(PATHS)}")
    path = PATHS[profile]
    if store is not None:
        if profile != "shared-memory":
            fail("--store is for --profile shared-memory")
        path += f"/{store}"
    settings = settings_for(port=port, url=url, token_file=token_file)
    try:
        token = read_token(settings)
    except ClientConfigError as exc:
        fail(str(exc))
    mcp_relay.relay(service_url(settings) + path, token, profile, version("pps"))
