"""The memory page: word-photos, fragments, memory files, crystals (the chain and the
archive), summaries, inventory and spaces, a tab each, and what is written new there.
Each tab reads through the engine service REST reads through; each form is the request
model REST takes, as a form model (pps.web.forms), passed to the same service, then goes
back to its tab (a notice by a fixed word, never text from the URL). A word-photo, item or
crystal listed opens on the memories page (pps.web.memories), where it is edited, deleted
or taken back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, TypeAlias

from fastapi import Form, Request
from fastapi.responses import RedirectResponse, Response

from engine.crystal import crystals, summaries
from engine.crystal.crystals import CrystalIn, CurrentQuery
from engine.crystal.summaries import RecentQuery, SummaryIn
from engine.inventory import items as inventory
from engine.inventory.items import ItemIn, ItemQuery, SpaceIn, SpaceUpdate
from engine.kernel.errors import InputError
from engine.search import anchors, fragments, homes
from engine.search.anchors import AnchorIn
from engine.search.fragments import FragmentIn
from pps.http.deps import DB, AppSettings, SearchIndex
from pps.web import guard
from pps.web.forms import page_form
from pps.web.guard import SignedIn, Write
from pps.web.render import page_router, render

TABS = (
    ("anchors", "Word-photos"),
    ("fragments", "Fragments"),
    ("files", "Memory files"),
    ("crystals", "Crystals"),
    ("summaries", "Summaries"),
    ("inventory", "Inventory"),
    ("spaces", "Spaces"),
)
DONE = {
    "anchor-saved": "Word-photo saved.",
    "fragment-stored": "Fragment stored.",
    "crystal-written": "Crystal written.",
    "summary-stored": "Summary stored.",
    "item-saved": "Item saved.",
    "space-added": "Space added.",
    "space-changed": "Space changed.",
}

router = page_router()

if TYPE_CHECKING:  # a form model is made at run time: to the checker, the model it reads
    AnchorForm: TypeAlias = AnchorIn
    FragmentForm: TypeAlias = FragmentIn
    CrystalForm: TypeAlias = CrystalIn
    SummaryForm: TypeAlias = SummaryIn
    ItemForm: TypeAlias = ItemIn
    SpaceForm: TypeAlias = SpaceIn
    SpaceUpdateForm: TypeAlias = SpaceUpdate
else:
    AnchorForm = page_form(AnchorIn, "title", "content", "tags")
    FragmentForm = page_form(FragmentIn, "text", "category", "tags")
    CrystalForm = page_form(CrystalIn, "content")
    SummaryForm = page_form(SummaryIn, "summary_text", "start_id", "end_id")
    ItemForm = page_form(ItemIn, "name", "category", "subcategory", "description", "space")
    SpaceForm = page_form(SpaceIn, "name", "description", "channel")
    SpaceUpdateForm = page_form(SpaceUpdate, "description", "channel", cleared=("description",))


def _back(tab: str, done: str, **more: str) -> Response:
    query = "&".join(f"{k}={v}" for k, v in more.items())
    target = f"/ui/memory?tab={tab}&done={done}" + (f"&{query}" if query else "")
    return guard.harden(RedirectResponse(target, status_code=303))


@router.get("/memory")
def memory_page(
    request: Request,
    session: SignedIn,
    db: DB,
    index: SearchIndex,
    settings: AppSettings,
    tab: str = "anchors",
    done: str | None = None,
) -> Response:
    if tab not in dict(TABS):
        raise InputError.of("tab", ", ".join(dict(TABS)))
    entity = session.entity
    home = index.home(entity)
    view: dict = {}
    if tab == "anchors":
        view["anchors"] = anchors.list_all(index, entity).anchors
    elif tab in ("fragments", "files"):
        view["files"] = homes.list_files(home, "fragment" if tab == "fragments" else None)
        view["skipped"] = index.skipped(entity) if tab == "files" else []
    elif tab == "crystals":
        root = homes.home_for(settings, entity).root
        view["current"] = crystals.current(root, CurrentQuery(count=settings.crystal_keep))
        view["all"] = crystals.list_all(root).crystals
    elif tab == "summaries":
        view["summaries"] = summaries.recent(db, entity, RecentQuery(limit=100)).summaries
        view["stats"] = summaries.stats(db, settings, entity)
    elif tab == "inventory":
        view["items"] = inventory.list_items(db, entity, ItemQuery(limit=1000)).items
        view["categories"] = inventory.categories(db, entity).categories
        view["spaces"] = inventory.list_spaces(db, entity).spaces
    else:
        view["spaces"] = inventory.list_spaces(db, entity).spaces
    return render(
        request,
        "memory.html",
        active="memory",
        tab=tab,
        tabs=TABS,
        done=DONE.get(done or ""),
        **view,
    )


# --- word-photos ---


@router.post("/memory/anchors")
def anchor_save(
    session: Write, index: SearchIndex, anchor: Annotated[AnchorForm, Form()]
) -> Response:
    anchors.save(index, session.entity, anchor)
    return _back("anchors", "anchor-saved")


# --- fragments ---


@router.post("/memory/fragments")
def fragment_store(
    session: Write, index: SearchIndex, fragment: Annotated[FragmentForm, Form()]
) -> Response:
    fragments.store(index, session.entity, fragment)
    return _back("fragments", "fragment-stored")


# --- crystals ---


@router.post("/memory/crystals")
def crystal_write(
    session: Write, settings: AppSettings, crystal: Annotated[CrystalForm, Form()]
) -> Response:
    home = homes.home_for(settings, session.entity).root
    crystals.crystallize(home, crystal, keep=settings.crystal_keep)
    return _back("crystals", "crystal-written")


# --- summaries ---


@router.post("/memory/summaries")
def summary_store(session: Write, db: DB, summary: Annotated[SummaryForm, Form()]) -> Response:
    summaries.store(db, session.entity, summary)
    return _back("summaries", "summary-stored")


# --- inventory and spaces ---


@router.post("/memory/inventory")
def item_save(session: Write, db: DB, item: Annotated[ItemForm, Form()]) -> Response:
    inventory.add(db, session.entity, item)
    return _back("inventory", "item-saved")


@router.post("/memory/spaces")
def space_add(session: Write, db: DB, space: Annotated[SpaceForm, Form()]) -> Response:
    inventory.add_space(db, session.entity, space)
    return _back("spaces", "space-added")


@router.post("/memory/spaces/edit")
def space_edit(
    session: Write,
    db: DB,
    space: Annotated[SpaceUpdateForm, Form()],
    name: Annotated[str, Form()] = "",
) -> Response:
    inventory.update_space(db, session.entity, name, space)
    return _back("spaces", "space-changed")
