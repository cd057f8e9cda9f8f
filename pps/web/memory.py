"""The memory page: word-photos, fragments, memory files, crystals (the chain and the
archive), summaries, inventory and spaces, a tab each, and what is written new there.
Each tab reads through the entity's memory (the front door REST reads through); each form
is the request model REST takes, as a form model (pps.web.forms), passed to the same
method, then goes back to its tab (a notice by a fixed word, never text from the URL). A
word-photo, item or crystal listed opens on the memories page (pps.web.memories), where
it is edited, deleted or taken back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, TypeAlias

from fastapi import Form, Request
from fastapi.responses import RedirectResponse, Response

from engine.crystal.crystals import CrystalIn, CurrentQuery
from engine.crystal.summaries import RecentQuery, SummaryIn
from engine.inventory.items import ItemIn, ItemQuery, SpaceIn, SpaceUpdate
from engine.kernel.errors import InputError
from engine.search.anchors import AnchorIn
from engine.search.fragments import FragmentIn
from pps.http.deps import AppSettings
from pps.web import guard
from pps.web.forms import page_form
from pps.web.guard import SessionMemory, Write
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
    memory: SessionMemory,
    settings: AppSettings,
    tab: str = "anchors",
    done: str | None = None,
) -> Response:
    if tab not in dict(TABS):
        raise InputError.of("tab", ", ".join(dict(TABS)))
    view: dict = {}
    if tab == "anchors":
        view["anchors"] = memory.anchors.list().anchors
    elif tab in ("fragments", "files"):
        view["files"] = memory.files.list("fragment" if tab == "fragments" else None)
        view["skipped"] = memory.files.skipped() if tab == "files" else []
    elif tab == "crystals":
        view["current"] = memory.crystals.current(CurrentQuery(count=settings.crystal_keep))
        view["all"] = memory.crystals.list().crystals
    elif tab == "summaries":
        view["summaries"] = memory.summaries.recent(RecentQuery(limit=100)).summaries
        view["stats"] = memory.summaries.stats()
    elif tab == "inventory":
        view["items"] = memory.inventory.list(ItemQuery(limit=1000)).items
        view["categories"] = memory.inventory.categories().categories
        view["spaces"] = memory.inventory.spaces().spaces
    else:
        view["spaces"] = memory.inventory.spaces().spaces
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
    session: Write, memory: SessionMemory, anchor: Annotated[AnchorForm, Form()]
) -> Response:
    memory.anchors.save(anchor)
    return _back("anchors", "anchor-saved")


# --- fragments ---


@router.post("/memory/fragments")
def fragment_store(
    session: Write, memory: SessionMemory, fragment: Annotated[FragmentForm, Form()]
) -> Response:
    memory.files.store_fragment(fragment)
    return _back("fragments", "fragment-stored")


# --- crystals ---


@router.post("/memory/crystals")
def crystal_write(
    session: Write, memory: SessionMemory, crystal: Annotated[CrystalForm, Form()]
) -> Response:
    memory.crystals.crystallize(crystal)
    return _back("crystals", "crystal-written")


# --- summaries ---


@router.post("/memory/summaries")
def summary_store(
    session: Write, memory: SessionMemory, summary: Annotated[SummaryForm, Form()]
) -> Response:
    memory.summaries.store(summary)
    return _back("summaries", "summary-stored")


# --- inventory and spaces ---


@router.post("/memory/inventory")
def item_save(session: Write, memory: SessionMemory, item: Annotated[ItemForm, Form()]) -> Response:
    memory.inventory.add(item)
    return _back("inventory", "item-saved")


@router.post("/memory/spaces")
def space_add(
    session: Write, memory: SessionMemory, space: Annotated[SpaceForm, Form()]
) -> Response:
    memory.inventory.add_space(space)
    return _back("spaces", "space-added")


@router.post("/memory/spaces/edit")
def space_edit(
    session: Write,
    memory: SessionMemory,
    space: Annotated[SpaceUpdateForm, Form()],
    name: Annotated[str, Form()] = "",
) -> Response:
    memory.inventory.update_space(name, space)
    return _back("spaces", "space-changed")
