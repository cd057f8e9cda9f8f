"""Layer 4 crystals over REST: chained identity snapshots, files in the entity's home."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from engine.crystal.crystals import Crystal, CrystalIn, Crystals, CurrentQuery
from pps.http.deps import CurrentMemory
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1/crystals", tags=["crystals"])


@router.post("", summary="Write the next crystal, chained to the previous ones")
def crystallize(body: CrystalIn, memory: CurrentMemory) -> Crystal:
    return memory.crystals.crystallize(body)


@router.get("", summary="The newest current crystals, oldest of them first")
def get_crystals(query: Annotated[CurrentQuery, Query()], memory: CurrentMemory) -> Crystals:
    return memory.crystals.current(query)


@router.get("/all", summary="Every crystal, archived ones included, oldest first")
def crystal_list(memory: CurrentMemory) -> Crystals:
    return memory.crystals.list()


@router.delete(
    "/latest", summary="Take back the newest crystal (only that one)", responses=problems(404)
)
def crystal_delete(memory: CurrentMemory) -> Crystal:
    return memory.crystals.delete_latest()
