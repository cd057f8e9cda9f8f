"""Markdown into chunks: headings, paragraphs, the size cap at word boundaries, front
matter as metadata; every chunk is the file's own text at the lines it names."""

from __future__ import annotations

from engine.search.chunks import split

NOTE = """---
title: Garden notes
tags: [Garden, roses]
date: 2026-01-02
superseded: false
---
# Garden

The roses came back after the frost.

## Tools

The old spade lives in the shed.
```
# not a heading, inside a fence
```

## Plans
Plant tulips in October.
"""


def lines_of(text: str, chunk) -> str:
    return "\n".join(text.splitlines()[chunk.start_line - 1 : chunk.end_line])


def test_headings_split_and_front_matter_is_metadata():
    document = split(NOTE, 1000)
    assert document.meta["title"] == "Garden notes"
    assert document.meta["tags"] == ["Garden", "roses"]
    assert [c.headings for c in document.chunks] == [
        ("Garden",),
        ("Garden", "Tools"),
        ("Garden", "Plans"),
    ]
    assert all("title:" not in c.text and "superseded" not in c.text for c in document.chunks)
    assert "# not a heading, inside a fence" in document.chunks[1].text
    for chunk in document.chunks:
        assert chunk.text == lines_of(NOTE, chunk)


def test_long_sections_split_between_paragraphs_then_words_within_the_cap():
    paragraph = " ".join(f"word{i}" for i in range(120))  # one line of ~900 characters
    text = "# Long\n\nshort opening paragraph\n\n" + paragraph + "\n\nclosing words\n"
    document = split(text, 200)
    assert all(len(c.text) <= 200 for c in document.chunks)
    pieces = [c for c in document.chunks if c.start_line == c.end_line == 5]
    assert len(pieces) >= 4
    assert " ".join(p.text for p in pieces) == paragraph  # cut only between words
    assert all(not p.text.startswith(" ") and not p.text.endswith(" ") for p in pieces)
    for chunk in document.chunks:
        assert chunk.text in lines_of(text, chunk)


def test_without_headings_paragraphs_are_packed_up_to_the_cap():
    text = "\n\n".join(f"Paragraph {i} says something short." for i in range(10))
    document = split(text, 120)
    assert len(document.chunks) > 1
    assert all(len(c.text) <= 120 for c in document.chunks)
    assert "".join(c.text.replace("\n", "") for c in document.chunks) == text.replace("\n", "")


def test_unparseable_front_matter_is_still_not_text():
    text = "---\n: : not yaml [\n---\nThe body.\n"
    document = split(text, 500)
    assert document.meta == {}
    assert [c.text for c in document.chunks] == ["The body."]
    assert document.chunks[0].start_line == 4


def test_heading_only_sections_make_no_chunks():
    document = split("# One\n## Two\n### Three\nbody text\n", 500)
    assert [c.text for c in document.chunks] == ["### Three\nbody text"]
    assert document.chunks[0].headings == ("One", "Two", "Three")
