"""The consistency check over REST: GET /v1/check, the caller's entity, read-only.

Repairs are the operator's: `pps check --repair` on the server's machine. They re-read
files, re-embed and drop rows, work an agent calling in a loop should not be able to
start, so no route does them. The operator's route checks every entity at once; `pps check`
asks it with the server's local key (engine.kernel.lock) rather than open the graph itself."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from engine import consistency
from engine.consistency import CheckReport
from engine.kernel.errors import NotFound
from pps.http.deps import AppRuntime, CurrentEntity, Operator
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1/check", tags=["check"])
operator = APIRouter(prefix="/v1/operator/check", tags=["check"], dependencies=[Operator])


@router.get("", summary="Walk every layer of your memory: counts, and each problem with its repair")
def check(entity: CurrentEntity, runtime: AppRuntime) -> CheckReport:
    return consistency.run(runtime.index, runtime.graph, [entity])


@operator.get(
    "",
    summary="The same check of every entity, or of one (`pps check` asks this)",
    responses=problems(404),
)
def check_all(
    runtime: AppRuntime,
    entity: Annotated[str | None, Query(description="Only this entity.")] = None,
) -> CheckReport:
    known = runtime.index.entities()
    if entity is not None and entity not in known:
        raise NotFound(f"no entity named {entity!r}", "entity")
    return consistency.run(runtime.index, runtime.graph, [entity] if entity else known)
