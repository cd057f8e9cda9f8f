"""The REST face, /v1 (docs/rest.md): one router per resource, each route thin over the
engine's front door (engine.api: the caller's `Memory`, or the operator's `Service`).
`include(app)` registers them, each route's error statuses documented (pps.rest.statuses)."""

from __future__ import annotations

from fastapi import FastAPI

from pps.rest import (
    anchors,
    audit,
    check,
    clients,
    crystals,
    events,
    files,
    forget,
    fragments,
    health,
    hooks,
    inventory,
    queue,
    recall,
    search,
    shared,
    summaries,
    texture,
)
from pps.rest.statuses import document

ROUTERS = (
    health.router,
    events.router,
    queue.router,
    check.router,
    check.operator,
    summaries.router,
    inventory.router,
    crystals.router,
    recall.router,
    hooks.router,
    audit.router,
    texture.router,
    forget.router,
    search.router,
    anchors.router,
    fragments.router,
    files.router,
    shared.router,
    shared.operator,
    clients.router,
)


def include(app: FastAPI) -> None:
    for router in ROUTERS:
        document(router)
        app.include_router(router)
