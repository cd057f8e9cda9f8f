"""The memories page: one list of the entity's word-photos, fragments, memory files,
crystals and inventory, each with a preview, its kind, date and tags; filters by kind,
tag and date; a search by the hybrid search /v1/search uses (over what the index holds:
word-photos, fragments and memory files); one memory opened, rendered as markdown
(pps.web.markup), with edit and delete where its layer has them (a word-photo is
rewritten, deleted or forgotten from every layer, an item deleted, the newest crystal
taken back; fragments and memory files are read-only here). Forgetting answers with its
receipt, for an event too (the around page's button). The shared stores page: the
stores the entity is a member of, their members, counts by writer and each memory with
who wrote it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Annotated, TypeAlias
from urllib.parse import urlencode

from fastapi import Form, Request
from fastapi.responses import RedirectResponse, Response

from engine.api import Memory
from engine.forgetting import ForgetRequest
from engine.inventory.items import ItemQuery, ItemRef
from engine.kernel.errors import InputError, NotFound
from engine.search.hybrid import SearchRequest
from pps.web import guard
from pps.web.forms import page_form
from pps.web.guard import SessionMemory, Write
from pps.web.markup import markdown, plain
from pps.web.memory import AnchorForm
from pps.web.render import blank, page_router, render

KINDS = (
    ("anchor", "word-photo"),
    ("fragment", "fragment"),
    ("memory", "memory file"),
    ("document", "document"),
    ("journal", "journal"),
    ("crystal", "crystal"),
    ("inventory", "inventory"),
)
SEARCHED = ("anchor", "fragment", "memory", "document", "journal")  # what the index holds
PREVIEW = 240
MAX_LISTED = 500
DONE = {
    "edited": "Word-photo rewritten.",
    "deleted": "Deleted.",
    "taken-back": "The newest crystal was taken back.",
}

router = page_router()

if TYPE_CHECKING:  # a form model is made at run time: to the checker, the model it reads
    ItemRefForm: TypeAlias = ItemRef
    ForgetForm: TypeAlias = ForgetRequest
else:
    ForgetForm = page_form(ForgetRequest, "event_uid", "word_photo", "why")
    ItemRefForm = page_form(ItemRef, "name", "category")


@dataclass
class Entry:
    kind: str
    title: str
    preview: str
    date: str | None
    tags: list[str] = field(default_factory=list)
    open: str = ""  # the query string that opens it on this page
    score: float | None = None


def _preview(text: str) -> str:
    flat = " ".join(plain(text).split())
    return flat if len(flat) <= PREVIEW else flat[: PREVIEW - 1].rstrip() + "…"


def _files(memory: Memory, kind: str | None) -> list[Entry]:
    found = []
    for f in memory.files.list(kind)[:MAX_LISTED]:
        try:
            note = memory.files.note(f.path)
        except (InputError, NotFound):
            continue
        found.append(
            Entry(
                kind=f.kind,
                title=note.title,
                preview=_preview(note.body),
                date=note.date or f.modified_at[:10],
                tags=note.tags,
                open=urlencode({"path": f.path}),
            )
        )
    return found


def _crystals(memory: Memory) -> list[Entry]:
    return [
        Entry(
            kind="crystal",
            title=f"crystal {c.number}" + (" (archived)" if c.archived else ""),
            preview=_preview(c.content),
            date=c.modified_at[:10],
            open=urlencode({"crystal": c.number}),
        )
        for c in sorted(memory.crystals.list().crystals, key=lambda c: -c.number)
    ]


def _items(memory: Memory) -> list[Entry]:
    return [
        Entry(
            kind="inventory",
            title=i.name,
            preview=_preview(i.description),
            date=i.updated_at[:10],
            tags=[t for t in (i.category, i.subcategory) if t],
            open=urlencode({"item": i.id}),
        )
        for i in memory.inventory.list(ItemQuery(limit=1000)).items
    ]


def _searched(memory: Memory, q: str, kind, tag, since, until) -> list[Entry]:
    ask = SearchRequest(query=q, tags=[tag] if tag else [], since=since, until=until, limit=50)
    ask.check()
    kinds = (kind,) if kind else SEARCHED
    hits = memory.search(ask, kinds=kinds).results
    return [
        Entry(
            kind=h.kind,
            title=(h.path or h.kind).rsplit("/", 1)[-1],
            preview=_preview(h.text),
            date=h.date or (h.created_at or "")[:10] or None,
            tags=h.tags,
            open=urlencode({"path": h.path}) if h.path else "",
            score=h.score,
        )
        for h in hits
    ]


def _kept(entries: list[Entry], tag, since, until) -> list[Entry]:
    return [
        e
        for e in entries
        if (not tag or tag.lower() in (t.lower() for t in e.tags))
        and (not since or (e.date or "") >= since)
        and (not until or (e.date or "9999") <= until)
    ]


@router.get("/memories")
def memories_page(
    request: Request,
    memory: SessionMemory,
    q: str | None = None,
    kind: str | None = None,
    tag: str | None = None,
    since: str | None = None,
    until: str | None = None,
    path: str | None = None,
    crystal: int | None = None,
    item: int | None = None,
    edit: bool = False,
    done: str | None = None,
) -> Response:
    q, kind, tag, since, until = map(blank, (q, kind, tag, since, until))
    if kind is not None and kind not in dict(KINDS):
        raise InputError.of("kind", ", ".join(dict(KINDS)))
    for name, value in (("since", since), ("until", until)):
        if value is not None:
            try:
                date.fromisoformat(value)
            except ValueError:
                raise InputError.of(name, "a day, YYYY-MM-DD") from None
    if q is not None:
        if kind in ("crystal", "inventory"):
            raise InputError.of("kind", "search covers word-photos, fragments and memory files")
        entries = _searched(memory, q, kind, tag, since, until)
    else:
        entries = []
        if kind is None or kind in SEARCHED:
            entries += _files(memory, kind)
        if kind in (None, "crystal"):
            entries += _crystals(memory)
        if kind in (None, "inventory"):
            entries += _items(memory)
        entries = _kept(entries, tag, since, until)
        entries.sort(key=lambda e: e.date or "", reverse=True)
    opened = _opened(memory, path, crystal, item)
    return render(
        request,
        "memories.html",
        active="memories",
        entries=entries,
        kinds=KINDS,
        names=dict(KINDS),
        ask={
            "q": q or "",
            "kind": kind or "",
            "tag": tag or "",
            "since": since or "",
            "until": until or "",
        },
        opened=opened,
        editing=edit and opened is not None and opened.get("anchor") is not None,
        done=DONE.get(done or ""),
    )


def _opened(memory: Memory, path: str | None, crystal: int | None, item: int | None) -> dict | None:
    """The memory asked for, rendered, with what may be done to it."""
    if path is not None:
        note = memory.files.note(path)
        return {
            "kind": "anchor" if note.word_photo is not None else "file",
            "title": note.title,
            "path": path,
            "html": markdown(note.body),
            "tags": note.tags,
            "anchor": note.word_photo,
            "text": note.body,
        }
    if crystal is not None:
        chain = memory.crystals.list().crystals
        found = [c for c in chain if c.number == crystal]
        if not found:
            raise NotFound(f"no crystal {crystal}")
        return {
            "kind": "crystal",
            "title": f"crystal {crystal}",
            "html": markdown(found[0].content),
            "newest": crystal == max(c.number for c in chain),
            "tags": [],
        }
    if item is not None:
        found_items = [
            i for i in memory.inventory.list(ItemQuery(limit=1000)).items if i.id == item
        ]
        if not found_items:
            raise NotFound(f"no inventory item {item}")
        it = found_items[0]
        return {
            "kind": "inventory",
            "title": it.name,
            "html": markdown(it.description),
            "tags": [t for t in (it.category, it.subcategory) if t],
            "item": it,
        }
    return None


def _back(done: str, **more: str) -> Response:
    target = "/ui/memories?" + urlencode({**more, "done": done})
    return guard.harden(RedirectResponse(target, status_code=303))


@router.post("/memories/anchors/edit")
def anchor_edit(
    session: Write,
    memory: SessionMemory,
    anchor: Annotated[AnchorForm, Form()],
    name: Annotated[str, Form()] = "",
) -> Response:
    edited = memory.anchors.edit(name, anchor)
    return _back("edited", path=edited.path)


@router.post("/memories/anchors/delete")
def anchor_delete(
    session: Write, memory: SessionMemory, name: Annotated[str, Form()] = ""
) -> Response:
    memory.anchors.delete(name)
    return _back("deleted")


@router.post("/forget")
def forget(
    request: Request,
    session: Write,
    memory: SessionMemory,
    ask: Annotated[ForgetForm, Form()],
) -> Response:
    """Forget an event (from the around page) or a word-photo (from this page) from every
    layer, as POST /v1/forget; the answer is the receipt."""
    receipt = memory.forget(ask, "web")
    return render(request, "forgotten.html", active="memories", receipt=receipt)


@router.post("/memories/inventory/delete")
def item_delete(
    session: Write, memory: SessionMemory, item: Annotated[ItemRefForm, Form()]
) -> Response:
    memory.inventory.delete(item)
    return _back("deleted")


@router.post("/memories/crystals/delete-latest")
def crystal_take_back(session: Write, memory: SessionMemory) -> Response:
    memory.crystals.delete_latest()
    return _back("taken-back")


# --- shared stores ---


@router.get("/shared")
def shared_page(request: Request, memory: SessionMemory, store: str | None = None) -> Response:
    mine = memory.stores()
    shown = []
    for s in mine:
        shared = memory.shared(s.name)
        shown.append(
            {
                "store": s,
                "stats": shared.stats(),
                "memories": [{**m.model_dump(), "html": markdown(m.text)} for m in shared.listed()]
                if store in (None, s.name)
                else None,
            }
        )
    if store is not None and store not in {s.name for s in mine}:
        raise NotFound(f"no shared store {store!r} of yours")
    return render(request, "shared.html", active="shared", stores=shown)
