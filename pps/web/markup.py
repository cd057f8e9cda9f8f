"""Markdown as the pages show it: CommonMark by markdown-it-py with raw HTML off, so a
memory's `<script>` is text on the page, and a link whose scheme is javascript:,
vbscript:, file: or data: is not made a link (markdown-it's own link check)."""

from __future__ import annotations

from markdown_it import MarkdownIt
from markupsafe import Markup

_md = MarkdownIt("commonmark", {"html": False}).enable("table")


def markdown(text: str) -> Markup:
    """`text` rendered to HTML that is safe to put in a page as it is."""
    return Markup(_md.render(text))
