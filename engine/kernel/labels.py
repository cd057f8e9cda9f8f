"""How a client names itself to the service: the `X-PPS-Client` header, sent by our own
clients (the hooks, the Discord adapter, the stdio relay), read by the service to keep
its record of who called (engine.capture.clients)."""

from __future__ import annotations

import re

CLIENT_HEADER = "X-PPS-Client"
LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._:/-]{0,63}$")
"""A label: up to 64 letters, digits, spaces and `._:/-`; anything else is not taken."""


def clean_label(value: str | None) -> str | None:
    """The label as given, trimmed, or None when there is none or it is not one."""
    if value is None:
        return None
    value = value.strip()
    return value if LABEL.fullmatch(value) else None
