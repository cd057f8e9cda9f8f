"""The consistency check over REST: GET /v1/check, the caller's entity, read-only.

Repairs are the operator's: `pps check --repair` on the server's machine. They re-read
files, re-embed and drop rows, work an agent calling in a loop should not be able to
start, so no route does them."""

from __future__ import annotations

from fastapi import APIRouter

from engine import consistency
from engine.consistency import CheckReport
from pps.rest.deps import AppRuntime, CurrentEntity

router = APIRouter(prefix="/v1/check", tags=["check"])


@router.get("", summary="Walk every layer of your memory: counts, and each problem with its repair")
def check(entity: CurrentEntity, runtime: AppRuntime) -> CheckReport:
    return consistency.run(runtime.index, runtime.graph, [entity])
