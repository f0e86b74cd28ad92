"""What `web_fetch` makes of a response body: HTML, text or binary, and HTML as readable text.

Kept apart from the tool (requests, redirects, the guard) because it is pure: bytes in, text
out, with no network, so it is tested and fuzzed on its own. The extractor drops scripts,
styles, navigation, hidden elements and page chrome (header and footer outside `<article>` /
`<main>`), puts blocks on their own lines and collapses whitespace. Decoding never raises: an
unknown or unusable charset (`idna`, `base64`) falls back to UTF-8 with replacement characters.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from tools import http_client

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/yaml",
        "application/x-yaml",
        "application/x-ndjson",
        "application/rss+xml",
        "application/atom+xml",
    }
)


_SKIP_TAGS = frozenset(
    {
        "script", "style", "noscript", "svg", "math", "template", "nav", "aside",
        "iframe", "object", "canvas", "select", "button", "dialog",
    }
)  # fmt: skip
_CHROME_TAGS = frozenset({"header", "footer"})  # dropped unless inside <article> / <main>
_CONTENT_TAGS = frozenset({"article", "main"})
_BLOCK_TAGS = frozenset(
    {
        "address", "article", "blockquote", "br", "caption", "dd", "details", "div", "dl",
        "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4",
        "h5", "h6", "header", "hr", "legend", "li", "main", "ol", "p", "pre", "section",
        "summary", "table", "tbody", "tfoot", "thead", "tr", "ul",
    }
)  # fmt: skip
_VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
     "track", "wbr"}
)  # fmt: skip


_WHITESPACE = re.compile(r"\s+")


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title_parts: list[str] = []
        self.first_h1: list[str] = []
        self.parts: list[str] = []
        self._skip_tag: str | None = None
        self._skip_depth = 0
        self._content_depth = 0
        self._in_title = False
        self._in_h1 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip_tag is not None:
            if tag == self._skip_tag and tag not in _VOID_TAGS:
                self._skip_depth += 1
            return
        hidden = any(
            name == "hidden" or (name == "aria-hidden" and (value or "").lower() == "true")
            for name, value in attrs
        )
        chrome = tag in _CHROME_TAGS and self._content_depth == 0
        if (tag in _SKIP_TAGS or chrome or hidden) and tag not in _VOID_TAGS:
            self._skip_tag, self._skip_depth = tag, 1
            return
        if tag in _CONTENT_TAGS:
            self._content_depth += 1
        if tag == "title":
            self._in_title = True
        if tag == "h1":
            self._in_h1 = True
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")
        elif tag in ("td", "th"):
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if self._skip_tag is not None:
            if tag == self._skip_tag:
                self._skip_depth -= 1
                if self._skip_depth == 0:
                    self._skip_tag = None
            return
        if tag in _CONTENT_TAGS and self._content_depth:
            self._content_depth -= 1
        if tag == "title":
            self._in_title = False
        if tag == "h1":
            self._in_h1 = False
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._skip_tag is not None:
            return
        if self._in_title:
            self.title_parts.append(data)
            return
        data = _WHITESPACE.sub(" ", data)
        if self._in_h1 and len(self.first_h1) < 50:
            self.first_h1.append(data)
        self.parts.append(data)


def html_to_text(markup: str) -> tuple[str, str]:
    """(title, text) of an HTML document; blocks on their own lines, whitespace collapsed."""
    parser = _TextExtractor()
    parser.feed(markup)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).split("\n"))
    text = "\n".join(line for line in lines if line and line != "-")
    title = " ".join("".join(parser.title_parts).split()) or " ".join(
        "".join(parser.first_h1).split()
    )
    return title, text


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


def decode_html(response: http_client.Response) -> str:
    """The document as text: the header's charset, else a `<meta charset>`, else UTF-8; an
    unknown or unusable charset falls back to UTF-8 with replacement characters."""
    encoding = response.charset
    if not encoding:
        match = _META_CHARSET.search(response.content[:4096])
        encoding = match.group(1).decode("ascii") if match else "utf-8"
    return http_client.decode_text(response.content, encoding)


def page_kind(response: http_client.Response) -> str:
    """'html', 'text' or 'binary'."""
    kind = response.content_type
    if kind in _HTML_TYPES:
        return "html"
    if kind.startswith("text/") or kind in _TEXT_TYPES or kind.endswith(("+json", "+xml")):
        return "text"
    if kind:
        return "binary"
    head = response.content[:1024].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")):
        return "html"
    if b"\x00" in head:
        return "binary"
    try:
        response.content[:4096].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < 4090:  # a character cut at the end of the sample is fine
            return "binary"
    return "text"
