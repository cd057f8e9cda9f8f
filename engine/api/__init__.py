"""The front door: what every face (REST, MCP, the web pages, the command line) calls.

`Service` is one data dir's memory service; `service.memory(entity)` is one entity's
memory, a `Memory`, with a part for each layer (`events`, `anchors`, `graph`, ...). A
face imports this package, the request and response models it sends and answers with,
and the kernel; nothing else of the engine (tests/test_layers.py holds it).

What stands behind a `Memory` is `Parts`: the settings, the database, the search index,
the graph (or None) and capture. The running server's `engine.runtime.Runtime` is one;
a command that opens the data dir itself gets one from `Service.open`.
"""

from engine.api.memory import Memory
from engine.api.parts import Parts
from engine.api.service import Service

__all__ = ["Memory", "Parts", "Service"]
