"""The one way a client talks HTTP to the pps service (the ingest client, the stdio relay)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx

from engine.kernel.net import is_loopback


def service_client(url: str, token: str, **options: Any) -> httpx.Client:
    """An httpx client for the service at `url`, as the entity whose token it is. A loopback
    URL ignores proxy settings from the environment; certificates are loaded only for
    https (loading them costs every hook about 60 ms)."""
    parts = urlsplit(url)
    return httpx.Client(
        headers={"Authorization": f"Bearer {token}", **options.pop("headers", {})},
        trust_env=not is_loopback(parts.hostname or ""),
        verify=parts.scheme == "https",
        **options,
    )
