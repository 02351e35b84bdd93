"""HTML → readable text with BeautifulSoup: scripts and chrome dropped, headings, list
items and links kept recognisable, whitespace collapsed."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

# bs4 (with soupsieve) is ~40% of building the runtime's tool registry at start-up: it is
# imported when a page is first read, not when the tool is registered.
if TYPE_CHECKING:
    from bs4 import BeautifulSoup, Tag

_DROP = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "head")
_BLOCK = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "nav",
    "aside",
    "ul",
    "ol",
    "table",
    "tr",
    "blockquote",
    "pre",
    "form",
    "figure",
    "figcaption",
    "dl",
    "dt",
    "dd",
    "br",
    "hr",
    "body",
    "html",
}
_SPACES = re.compile(r"[ \t\r\f\v]+")
_BLANKS = re.compile(r"\n{3,}")


def parse(html: str) -> BeautifulSoup:
    from bs4 import BeautifulSoup

    return BeautifulSoup(html, "html.parser")


def title_of(soup: BeautifulSoup) -> str:
    t = soup.title.get_text(" ", strip=True) if soup.title else ""
    if not t:
        h1 = soup.find("h1")
        t = h1.get_text(" ", strip=True) if h1 else ""
    return t


def to_text(soup: BeautifulSoup) -> str:
    """Readable text of a parsed page (the soup is not modified)."""
    root = soup.body or soup
    out: list[str] = []
    _walk(root, out)
    text = "".join(out)
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def _walk(node: Tag, out: list[str]) -> None:
    from bs4 import NavigableString, Tag

    for child in node.children:
        if isinstance(child, NavigableString):
            if type(child) is NavigableString:  # not comments, CDATA, doctype
                out.append(str(child) if node.name == "pre" else str(child).replace("\n", " "))
            continue
        if not isinstance(child, Tag) or child.name in _DROP:
            continue
        name = child.name
        if name and re.fullmatch(r"h[1-6]", name):
            out.append("\n\n" + "#" * int(name[1]) + " " + child.get_text(" ", strip=True) + "\n\n")
        elif name == "li":
            out.append("\n- ")
            _walk(child, out)
            out.append("\n")
        elif name == "a":
            label = child.get_text(" ", strip=True)
            href = child.get("href")
            if (
                label
                and isinstance(href, str)
                and href.startswith(("http://", "https://"))
                and href != label
            ):
                out.append(f"{label} ({href})")
            else:
                _walk(child, out)
        elif name in ("td", "th"):
            _walk(child, out)
            out.append(" | ")
        elif name == "img":
            alt = child.get("alt")
            if isinstance(alt, str) and alt.strip():
                out.append(f"[image: {alt.strip()}]")
        elif name in _BLOCK:
            out.append("\n")
            _walk(child, out)
            out.append("\n")
        else:
            _walk(child, out)
