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


def plain(text: str) -> str:
    """The words of markdown without its marks (`# Crystal 2` is `Crystal 2`, `**tea**`
    is `tea`), a block to a line: what a one-line preview shows."""
    blocks = []
    for token in _md.parse(text):
        if token.type == "inline":
            blocks.append("".join(_words(child) for child in token.children or []))
        elif token.type in ("fence", "code_block"):
            blocks.append(token.content)
    return "\n".join(blocks)


def _words(token) -> str:
    if token.type in ("text", "code_inline"):
        return token.content
    return " " if token.type in ("softbreak", "hardbreak") else ""
