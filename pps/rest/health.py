"""GET /health: no auth, no data; the status of each component."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from pps.http.deps import AppService

router = APIRouter(tags=["health"])


@router.get(
    "/health",
    summary="Status of each component (no auth, no data)",
    responses={503: {"description": "Down: the database cannot be read (the same body)"}},
)
def health(service: AppService) -> JSONResponse:
    body = service.health()
    return JSONResponse(body, status_code=503 if body["status"] == "down" else 200)
