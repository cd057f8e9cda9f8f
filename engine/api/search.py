"""Layer 2 and the longform tier: word-photos, fragments, the entity's files, and search
over all of them (with the entity's past turns)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.api.part import Part
from engine.search import anchors, fragments, homes, hybrid
from engine.search.anchors import Anchor, AnchorIn, Anchors, AnchorSearch, Deleted, Resynced
from engine.search.chunks import front_matter, meta_date, meta_tags
from engine.search.fragments import FragmentIn, Stored
from engine.search.homes import FileLines, Home, HomeFile, SkippedFile
from engine.search.hybrid import SearchRequest, SearchResponse
from engine.search.index import IndexStats


class Search(Part):
    def __call__(
        self, request: SearchRequest, kinds: tuple[str, ...] | None = None
    ) -> SearchResponse:
        """Search the entity's memory by meaning and by words (only `kinds` of chunk,
        when given: 'word_photo', 'fragment', 'file', 'turn', ...)."""
        return hybrid.search(self.parts.index, self.entity, request, kinds=kinds)

    def stats(self) -> IndexStats:
        """What the entity's search index holds: files, chunks, vectors."""
        return self.parts.index.stats(self.entity)


class WordPhotos(Part):
    """The word-photos: dated markdown files in the entity's word_photos folder."""

    def save(self, anchor: AnchorIn) -> Anchor:
        return anchors.save(self.parts.index, self.entity, anchor)

    def get(self, name: str) -> tuple[Anchor, str]:
        return anchors.get(self.parts.index, self.entity, name)

    def edit(self, name: str, anchor: AnchorIn) -> Anchor:
        return anchors.edit(self.parts.index, self.entity, name, anchor)

    def list(self) -> Anchors:
        return anchors.list_all(self.parts.index, self.entity)

    def delete(self, name: str) -> Deleted:
        return anchors.delete(self.parts.index, self.entity, name)

    def resync(self) -> Resynced:
        return anchors.resync(self.parts.index, self.entity)

    def search(self, ask: AnchorSearch) -> SearchResponse:
        return anchors.search_anchors(self.parts.index, self.entity, ask)


@dataclass(frozen=True)
class Note:
    """A file of the entity's home, read for a page."""

    path: str
    title: str  # the front matter's title, else the file's name
    date: str | None  # the front matter's date (YYYY-MM-DD), if it has one that parses
    tags: list[str]
    body: str  # the text after the front matter
    word_photo: str | None  # the word-photo's name, when the file is one


class Files(Part):
    """The entity's home: its word-photos, crystals, fragments and the files it keeps."""

    TEXT_SUFFIXES = homes.TEXT_SUFFIXES
    """The endings of the files a home reads (and a path to read must have)."""

    @property
    def home(self) -> Home:
        return homes.home_for(self.parts.settings, self.entity)

    def skipped(self) -> list[SkippedFile]:
        """The home's files found but not indexed, and why."""
        return self.parts.index.skipped(self.entity)

    def list(self, kind: str | None = None) -> list[HomeFile]:
        return homes.list_files(self.home, kind)

    def read(self, relative: str, start: int = 1, count: int | None = None) -> FileLines:
        return homes.read_lines(self.home, relative, start, count)

    def note(self, relative: str, lines: int = 10_000) -> Note:
        """A file as a page shows it (its first `lines` lines): the title, date and tags
        its front matter gives, and its text after the front matter."""
        text = self.read(relative, count=lines).text.splitlines()
        meta, start = front_matter(text)
        name = relative.rsplit("/", 1)[-1]
        return Note(
            path=relative,
            title=str(meta.get("title") or name),
            date=meta_date(meta),
            tags=meta_tags(meta),
            body="\n".join(text[start:]).strip("\n"),
            word_photo=name if relative.startswith(homes.WORD_PHOTOS + "/") else None,
        )

    def store_fragment(self, fragment: FragmentIn) -> Stored:
        """A short fragment, saved as a file of its own and searchable at once."""
        return fragments.store(self.parts.index, self.entity, fragment)
