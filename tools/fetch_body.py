"""What `web_fetch` makes of a response body: HTML, text or binary, and HTML as readable text.

Kept apart from the tool (requests, redirects, the guard) because it is pure: bytes in, text
out, with no network, so it is tested and fuzzed on its own. The extractor drops scripts,
styles, navigation, hidden elements and page chrome (header and footer outside `<article>` /
`<main>`), puts blocks on their own lines and collapses whitespace. Decoding never raises: an
unknown or unusable charset (`idna`, `base64`) falls back to UTF-8 with replacement characters.

Why a scanner of our own rather than a parser: the page is hostile input, and every HTML reader
at hand is superlinear on some markup. CPython's `html.parser` is quadratic on runs of `</` (a
600 KB page took 17 s), and HTML5 tree builders (lexbor, html5lib) walk the stack of open
elements for every start tag, so 100,000 nested `<div>` take minutes. Text extraction needs no
tree: `_Scanner` reads tags, comments and raw-text elements left to right, and whenever a
terminator never comes (a comment, a quote or a tag left open) it takes the rest of the document
instead of trying again further on, so each character is looked at a bounded number of times.
What it keeps is two counters, never a stack, so nesting costs nothing. At most
`MAX_MARKUP_CHARS` of markup are read (`html_to_text` says so when it cuts).
"""

from __future__ import annotations

import html
import re

from tools import http_client

MAX_MARKUP_CHARS = 2_000_000
"""The most characters of markup read: the default HTTP cap (2 MiB), whatever the operator sets."""

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
        "iframe", "object", "canvas", "select", "button", "dialog", "title",
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
# Elements whose content is text up to their own end tag, never markup (HTML's raw text and
# escapable raw text elements, plus the ones browsers treat alike).
_RAW_TEXT_TAGS = frozenset(
    {"script", "style", "title", "textarea", "xmp", "iframe", "noembed", "noframes", "noscript"}
)

_WHITESPACE = re.compile(r"\s+")
# Every pattern below matches in time bounded by what it consumes (no nested repetition), so a
# failed match is never retried further on: the scanner then takes the rest of the document.
# Where markup may start; a tag without attributes is read by the same match.
_MARKUP_START = re.compile(r"<(?:(?P<slash>/?)(?P<name>[A-Za-z][^\s/>]*)>|(?=[A-Za-z!?/]))")
_SIMPLE_TAG = re.compile(r"<([A-Za-z][^\s/>]*)\s*>")  # no attributes: the common case
_TAG_NAME = re.compile(r"[A-Za-z][^\s/>]*")
_ATTRIBUTE = re.compile(r"[\s/]*([^\s/>][^\s/>=]*)(\s*=\s*)?")
_UNQUOTED = re.compile(r"[^\s>]*")
_TAG_END = re.compile(r"[\s/]*>")


class _Scanner:
    """Reads markup once, left to right, and keeps the visible text (see the module docstring)."""

    def __init__(self) -> None:
        self.title_parts: list[str] = []
        self.first_h1: list[str] = []
        self.parts: list[str] = []
        self._skip_tag: str | None = None
        self._skip_depth = 0
        self._content_depth = 0
        self._in_h1 = False

    def feed(self, markup: str) -> None:
        """Scan the whole document; each step consumes what it read, so the scan is linear."""
        end = len(markup)
        pos = text_start = 0
        while pos < end:
            found = _MARKUP_START.search(markup, pos)
            if found is None:
                break
            tag, closing = found.group("name"), found.group("slash")
            if tag is not None and (closing or tag.lower() not in _RAW_TEXT_TAGS):
                # a tag without attributes, the common case, read here in one step
                if found.start() > text_start:
                    self._text(markup[text_start : found.start()])
                if closing:
                    self._end_tag(tag.lower())
                else:
                    self._start_tag(tag.lower(), {})
                pos = text_start = found.end()
                continue
            # A '<' that starts nothing ('a < b', '<3') stays in the text.
            pos = text_start = self._markup(markup, found.start(), text_start)
        if text_start < end:
            self._text(markup[text_start:])

    def _markup(self, markup: str, lt: int, text_start: int) -> int:
        """Read the construct starting at `lt` (a '<' and a letter, '!', '?' or '/'), after the
        text from `text_start`; the position after it."""
        following = markup[lt + 1 : lt + 2]
        if lt > text_start:
            self._text(markup[text_start:lt])
        if markup.startswith("<!--", lt):
            close = markup.find("-->", lt + 4)
            return len(markup) if close < 0 else close + 3
        if following in ("!", "?"):  # doctype, CDATA, processing instruction: bogus comments
            return self._past(markup, ">", lt + 2)
        if following == "/":
            name = _TAG_NAME.match(markup, lt + 2)
            if name is None:  # '</>' is dropped; '</ 3' and the like are bogus comments
                return self._past(markup, ">", lt + 2)
            self._end_tag(name.group().lower())
            return self._past(markup, ">", name.end())
        simple = _SIMPLE_TAG.match(markup, lt)
        if simple is not None:
            tag, attributes, pos = simple.group(1).lower(), {}, simple.end()
        else:
            name = _TAG_NAME.match(markup, lt + 1)
            assert name is not None  # _MARKUP_START saw a letter
            tag = name.group().lower()
            attributes, pos = self._attributes(markup, name.end())
        if attributes is None:
            return pos  # a tag left open at the end of the document is dropped
        visible = self._skip_tag is None
        self._start_tag(tag, attributes)
        if tag in _RAW_TEXT_TAGS:
            closing = re.compile(rf"</{re.escape(tag)}[\s/>]", re.IGNORECASE)
            found = closing.search(markup, pos)
            stop = len(markup) if found is None else found.start()
            if tag == "title" and visible:
                self.title_parts.append(html.unescape(markup[pos:stop]))
            elif tag in ("textarea", "xmp"):
                self._text(markup[pos:stop])
            if found is None:
                return stop
            self._end_tag(tag)
            return self._past(markup, ">", found.end() - 1)
        return pos

    def _attributes(self, markup: str, pos: int) -> tuple[dict[str, str] | None, int]:
        """The attributes of a start tag from `pos` and the position after its '>'; (None, the
        end of the document) when the tag or a quoted value never closes."""
        attributes: dict[str, str] = {}
        end = len(markup)
        while pos < end:
            close = _TAG_END.match(markup, pos)
            if close is not None:
                return attributes, close.end()
            found = _ATTRIBUTE.match(markup, pos)
            if found is None:
                return None, end  # only blanks and slashes up to the end
            name, pos = found.group(1).lower(), found.end()
            value = ""
            if found.group(2):
                quote = markup[pos : pos + 1]
                if quote in ('"', "'"):
                    stop = markup.find(quote, pos + 1)
                    if stop < 0:
                        return None, end
                    value, pos = markup[pos + 1 : stop], stop + 1
                else:
                    unquoted = _UNQUOTED.match(markup, pos)
                    assert unquoted is not None  # '*' always matches
                    value, pos = unquoted.group(), unquoted.end()
            attributes.setdefault(name, html.unescape(value))
        return None, end

    @staticmethod
    def _past(markup: str, terminator: str, pos: int) -> int:
        found = markup.find(terminator, pos)
        return len(markup) if found < 0 else found + len(terminator)

    def _start_tag(self, tag: str, attributes: dict[str, str]) -> None:
        if self._skip_tag is not None:
            if tag == self._skip_tag and tag not in _VOID_TAGS:
                self._skip_depth += 1
            return
        hidden = "hidden" in attributes or attributes.get("aria-hidden", "").lower() == "true"
        chrome = tag in _CHROME_TAGS and self._content_depth == 0
        if (tag in _SKIP_TAGS or chrome or hidden) and tag not in _VOID_TAGS:
            self._skip_tag, self._skip_depth = tag, 1
            return
        if tag in _CONTENT_TAGS:
            self._content_depth += 1
        if tag == "h1":
            self._in_h1 = True
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")
        elif tag in ("td", "th"):
            self.parts.append(" ")

    def _end_tag(self, tag: str) -> None:
        if self._skip_tag is not None:
            if tag == self._skip_tag:
                self._skip_depth -= 1
                if self._skip_depth == 0:
                    self._skip_tag = None
            return
        if tag in _CONTENT_TAGS and self._content_depth:
            self._content_depth -= 1
        if tag == "h1":
            self._in_h1 = False
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def _text(self, data: str) -> None:
        if self._skip_tag is not None:
            return
        data = _WHITESPACE.sub(" ", html.unescape(data))
        if self._in_h1 and len(self.first_h1) < 50:
            self.first_h1.append(data)
        self.parts.append(data)


def html_to_text(markup: str) -> tuple[str, str]:
    """(title, text) of an HTML document; blocks on their own lines, whitespace collapsed.

    Linear in the markup, of which at most `MAX_MARKUP_CHARS` are read; a cut document ends
    with a line saying so."""
    scanner = _Scanner()
    scanner.feed(markup[:MAX_MARKUP_CHARS])
    lines = (" ".join(line.split()) for line in "".join(scanner.parts).split("\n"))
    text = "\n".join(line for line in lines if line and line != "-")
    if len(markup) > MAX_MARKUP_CHARS:
        text += (
            f"\n[Only the first {MAX_MARKUP_CHARS:,} characters of the page's markup were read.]"
        )
    title = " ".join("".join(scanner.title_parts).split()) or " ".join(
        "".join(scanner.first_h1).split()
    )
    return title, text.strip()


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
