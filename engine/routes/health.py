"""GET /health: no auth, no data; the status of each component."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from engine.routes.deps import DB

router = APIRouter(tags=["health"])


@router.get("/health", summary="Status of each component (no auth, no data)")
def health(db: DB) -> JSONResponse:
    components = {"database": _database(db)}
    ok = all(c["status"] == "ok" for c in components.values())
    body = {"status": "ok" if ok else "degraded", "components": components}
    return JSONResponse(body, status_code=200 if ok else 503)


def _database(db: DB) -> dict:
    try:
        return {"status": "ok", "schema_version": db.schema_version()}
    except Exception as exc:  # the database being unreachable is what we report
        return {"status": "down", "error": type(exc).__name__}
