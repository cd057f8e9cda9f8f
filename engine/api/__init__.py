"""The front door: what every face (REST, MCP, the web pages, the command line) calls.

`Service` is one data dir's memory service; `service.memory(entity)` is one entity's
memory, a `Memory`, with a part for each layer (`events`, `anchors`, `graph`, ...). A
face imports this package, the request and response models it sends and answers with,
and the kernel; nothing else of the engine (tests/test_layers.py holds it).

What stands behind a `Memory` is `Parts`: the settings, the database, the search index,
the graph (or None) and capture. The running server's `engine.runtime.Runtime` is one;
a command that opens the data dir itself gets one from `Service.open`.

The three names are loaded when first asked for (PEP 562), and each module of the door
loads the engine modules it uses when it uses them: a command that lists entities loads
the database, not search, the graph or a model (tests/test_layers.py holds that too).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.api.memory import Memory
    from engine.api.parts import Parts
    from engine.api.service import Service

__all__ = ["Memory", "Parts", "Service"]

_HOMES = {
    "Memory": "engine.api.memory",
    "Parts": "engine.api.parts",
    "Service": "engine.api.service",
}


def __getattr__(name: str) -> object:
    """`Memory`, `Parts` or `Service`, from its module, the first time it is asked for."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
