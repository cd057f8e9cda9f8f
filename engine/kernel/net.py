"""Addresses: whether a host is this machine. Plain standard library, so the light clients
(hooks, the stdio relay) can ask it without loading the settings."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
