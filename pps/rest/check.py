"""The consistency check over REST: GET /v1/check, the caller's entity, read-only.

Repairs are the operator's: `pps check --repair` on the server's machine. They re-read
files, re-embed and drop rows, work an agent calling in a loop should not be able to
start, so no route does them. The operator's route checks every entity at once; `pps check`
asks it with the server's local key (engine.kernel.lock) rather than open the graph itself."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from engine.consistency import CheckReport
from engine.kernel.errors import NotFound
from pps.http.deps import AppService, CurrentMemory, Operator
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1/check", tags=["check"])
operator = APIRouter(prefix="/v1/operator/check", tags=["check"], dependencies=[Operator])


@router.get("", summary="Walk every layer of your memory: counts, and each problem with its repair")
def check(memory: CurrentMemory) -> CheckReport:
    return memory.check()


@operator.get(
    "",
    summary="The same check of every entity, or of one (`pps check` asks this)",
    responses=problems(404),
)
def check_all(
    service: AppService,
    entity: Annotated[str | None, Query(description="Only this entity.")] = None,
) -> CheckReport:
    known = service.entities.index_keys()
    if entity is not None and entity not in known:
        raise NotFound(f"no entity named {entity!r}", "entity")
    return service.check([entity] if entity else known)
