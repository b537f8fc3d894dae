"""Render an HTML page to plain text the way a naive web scraper would.

Everything visible is kept, navigation bars, tables of contents, "previous/next" links and
footers included: the docs stratum deliberately carries the boilerplate that CommonCrawl text
has, so quality raters have something real to penalise. Only what a browser never shows
(scripts, styles, inline SVG, the <head> apart from its title) is dropped.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_SKIPPED = {"script", "style", "svg", "noscript", "template", "head"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}
# Tags after which a scraper starts a new paragraph, and tags that only start a new line.
_PARAGRAPH = {"p", "div", "section", "article", "header", "footer", "aside", "main", "ul", "ol",
              "dl", "table", "pre", "blockquote", "figure", "h1", "h2", "h3", "h4", "h5", "h6"}
_LINE = {"li", "dt", "dd", "tr", "br", "hr", "nav", "form", "caption", "figcaption", "label"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
# Sphinx's "related" bar is a horizontal list; scrapers flatten it to one line of links.
_INLINE_CONTAINER_CLASSES = {"related", "breadcrumbs"}


class _TextRenderer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.current: list[str] = []
        self.title: list[str] = []
        self.open_tags: list[tuple[str, bool]] = []  # (tag, makes its content one line)
        self.skip_depth = 0
        self.pre_depth = 0
        self.in_title = False

    # -- structure ---------------------------------------------------------------------------
    def _inline_mode(self) -> bool:
        return any(flag for _, flag in self.open_tags)

    def _break(self, paragraph: bool) -> None:
        line = "".join(self.current).rstrip()
        self.current = []
        if line.strip():
            self.lines.append(line if self.pre_depth else re.sub(r" {2,}", " ", line.strip()))
        if paragraph and self.lines and self.lines[-1] != "":
            self.lines.append("")

    def _boundary(self, tag: str) -> None:
        if self._inline_mode() and tag not in _HEADINGS:
            self.current.append(" ")
        elif tag in _PARAGRAPH:
            self._break(paragraph=True)
        elif tag in _LINE:
            self._break(paragraph=False)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
        if tag in _SKIPPED:
            self.skip_depth += 1
        if self.skip_depth:
            if tag not in _VOID and tag in _SKIPPED:
                self.open_tags.append((tag, False))
            return
        self._boundary(tag)
        if tag in _VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
        self.open_tags.append((tag, bool(classes & _INLINE_CONTAINER_CLASSES)))
        if tag == "pre":
            self.pre_depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if not any(open_tag == tag for open_tag, _ in self.open_tags):
            return  # stray end tag
        while self.open_tags:
            open_tag, _ = self.open_tags.pop()
            if open_tag in _SKIPPED:
                self.skip_depth -= 1
            elif open_tag == "pre":
                self._break(paragraph=True)
                self.pre_depth -= 1
            if open_tag == tag:
                break
        if not self.skip_depth:
            self._boundary(tag)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        if self.skip_depth:
            return
        if self.pre_depth:
            for i, part in enumerate(data.split("\n")):
                if i:
                    self._break(paragraph=False)
                self.current.append(part)
        else:
            self.current.append(re.sub(r"\s+", " ", data))

    def text(self) -> str:
        self._break(paragraph=True)
        title = re.sub(r"\s+", " ", "".join(self.title)).strip()
        text = "\n".join(([title, ""] if title else []) + self.lines)
        return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def render_html(html: str) -> str:
    """Visible text of an HTML page, one block element per line, blank lines between blocks."""
    renderer = _TextRenderer()
    renderer.feed(html)
    renderer.close()
    return renderer.text()
