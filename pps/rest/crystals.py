"""Layer 4 crystals over REST: chained identity snapshots, files in the entity's home."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from engine.crystal import crystals
from engine.crystal.crystals import Crystal, CrystalIn, Crystals, CurrentQuery
from engine.search import homes
from pps.http.deps import AppSettings, CurrentEntity
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1/crystals", tags=["crystals"])


@router.post("", summary="Write the next crystal, chained to the previous ones")
def crystallize(body: CrystalIn, entity: CurrentEntity, settings: AppSettings) -> Crystal:
    home = homes.home_for(settings, entity).root
    return crystals.crystallize(home, body, keep=settings.crystal_keep)


@router.get("", summary="The newest current crystals, oldest of them first")
def get_crystals(
    query: Annotated[CurrentQuery, Query()], entity: CurrentEntity, settings: AppSettings
) -> Crystals:
    return crystals.current(homes.home_for(settings, entity).root, query)


@router.get("/all", summary="Every crystal, archived ones included, oldest first")
def crystal_list(entity: CurrentEntity, settings: AppSettings) -> Crystals:
    return crystals.list_all(homes.home_for(settings, entity).root)


@router.delete(
    "/latest", summary="Take back the newest crystal (only that one)", responses=problems(404)
)
def crystal_delete(entity: CurrentEntity, settings: AppSettings) -> Crystal:
    home = homes.home_for(settings, entity).root
    return crystals.delete_latest(home, keep=settings.crystal_keep)
