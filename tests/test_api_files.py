"""The front door's reading of an entity's files for a page (memory.files.note): the
title, date and tags a file's front matter gives, and what stands in for each when it
gives none; the memories page lists and opens files by it."""

from __future__ import annotations

from engine.api import Service
from engine.kernel.config import Settings


def test_a_note_reads_its_front_matter_and_falls_back_to_the_file(tmp_path):
    settings = Settings(data_dir=tmp_path, graph_backend="none")
    with Service.open(settings) as service:
        files = service.memory("ada").files
        home = files.home.root
        (home / "word_photos").mkdir(parents=True)
        (home / "word_photos" / "2026-01-02_walk.md").write_text(
            "---\ntitle: Lighthouse walk\ndate: 2026-01-02\ntags: [Walks, sea]\n---\n\n"
            "We walked to the lighthouse.\n"
        )
        (home / "memory").mkdir()
        (home / "memory" / "plain.md").write_text("# Plain\n\nNo front matter here.\n")

        walk = files.note("word_photos/2026-01-02_walk.md")
        assert (walk.title, walk.date, walk.tags) == (
            "Lighthouse walk",
            "2026-01-02",
            ["walks", "sea"],
        )
        assert walk.body == "We walked to the lighthouse."
        assert walk.word_photo == "2026-01-02_walk.md"

        plain = files.note("memory/plain.md")
        assert (plain.title, plain.date, plain.tags) == ("plain.md", None, [])
        assert plain.body == "# Plain\n\nNo front matter here."
        assert plain.word_photo is None
