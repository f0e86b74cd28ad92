"""Search Wikipedia and return the best pages' titles, plain-text intros and URLs.

One MediaWiki API request asks for both the full-text search hits (`list=search`, with HTML
snippets) and the same pages' plain-text intro extracts (`generator=search` +
`prop=extracts&exintro&explaintext`). Results keep the search order; each text is the intro
extract, or the search snippet with its HTML (`<span class="searchmatch">`) stripped and entities
unescaped when a page has no extract, capped to `EXTRACT_CHARS` characters.

`REACT_AGENT_WIKIPEDIA_LANG` picks the language edition (default `en`; `zh`, `de`, ...) and
`REACT_AGENT_WIKIPEDIA_URL` overrides the site (default `https://{lang}.wikipedia.org`).
"""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import quote

from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, Field

from tools import http_client as http
from tools.support.blocking import run_sync
from tools.support.settings import env_str

RESULT_COUNT = 3
EXTRACT_CHARS = 400
MAX_QUERY_CHARS = 300

_LANG = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]{2,8})*$")
_TAG = re.compile(r"<[^>]*>")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|[。！？]")


def plain_text(fragment: str) -> str:
    """HTML fragment -> text: tags removed, entities unescaped, whitespace collapsed."""
    return " ".join(html.unescape(_TAG.sub("", fragment)).split())


def shorten(text: str, limit: int = EXTRACT_CHARS) -> str:
    """`text` cut to at most `limit` characters, at a sentence or word end where one is near."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    sentence_ends = [m.end() for m in _SENTENCE_END.finditer(cut)]
    if sentence_ends and sentence_ends[-1] >= limit // 2:
        return cut[: sentence_ends[-1]].rstrip() + " …"
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def article_url(lang: str, title: str) -> str:
    """https://en.wikipedia.org/wiki/Albert_Einstein; non-ASCII titles stay readable (北京)."""
    path = "".join(
        quote(ch, safe="") if ch in '%?#"<>\\^`{|}' or ord(ch) <= 32 or ord(ch) == 127 else ch
        for ch in title.replace(" ", "_")
    )
    return f"https://{lang}.wikipedia.org/wiki/{path}"


def _language() -> str:
    lang = env_str("REACT_AGENT_WIKIPEDIA_LANG", "en").lower()
    if not _LANG.match(lang):
        raise ToolException(
            f"REACT_AGENT_WIKIPEDIA_LANG must be a Wikipedia language code like 'en' or 'zh', "
            f"not {lang!r}."
        )
    return lang


async def search_wikipedia(query: str) -> str:
    """The top pages for `query` as numbered entries: title, URL, then the text."""
    text = " ".join(query.split())
    if not text:
        raise ToolException("Give something to search Wikipedia for, e.g. 'ReAct prompting'.")
    if len(text) > MAX_QUERY_CHARS:
        raise ToolException(f"The search text is longer than {MAX_QUERY_CHARS} characters.")
    lang = _language()
    base = env_str("REACT_AGENT_WIKIPEDIA_URL", f"https://{lang}.wikipedia.org").rstrip("/")
    params = {
        "action": "query",
        "format": "json",
        "formatversion": "2",
        "list": "search",
        "srsearch": text,
        "srlimit": RESULT_COUNT,
        "srprop": "snippet",
        "generator": "search",
        "gsrsearch": text,
        "gsrlimit": RESULT_COUNT,
        "prop": "extracts|info",
        "inprop": "url",
        "exintro": "1",
        "explaintext": "1",
        "exlimit": RESULT_COUNT,
        "redirects": "1",
    }
    try:
        data = await http.get_json(f"{base}/w/api.php", params=params)
    except http.HTTPFailure as exc:
        raise ToolException(exc.sentence("Wikipedia")) from None
    if not isinstance(data, dict):
        raise ToolException("Wikipedia error: unexpected response.")
    if isinstance(data.get("error"), dict):
        info = data["error"].get("info") or data["error"].get("code") or "unknown error"
        raise ToolException(f"Wikipedia error: {info}.")
    return _format(text, lang, data)


def _format(query: str, lang: str, data: dict[str, Any]) -> str:
    body = data.get("query") if isinstance(data.get("query"), dict) else {}
    hits = [h for h in body.get("search") or [] if isinstance(h, dict) and h.get("title")]
    pages = [p for p in _pages(body.get("pages")) if p.get("title") and not p.get("missing")]
    by_title = {str(p["title"]): p for p in pages}
    ordered: list[tuple[str, str, str]] = []
    for hit in hits:
        title = str(hit["title"])
        page = by_title.pop(title, {})
        ordered.append((title, _text_of(page, hit), _url_of(page, lang, title)))
    for page in sorted(by_title.values(), key=lambda p: p.get("index", 10**6)):
        title = str(page["title"])
        ordered.append((title, _text_of(page, {}), _url_of(page, lang, title)))
    if not ordered:
        suggestion = (body.get("searchinfo") or {}).get("suggestion")
        hint = f" Did you mean {plain_text(str(suggestion))!r}?" if suggestion else ""
        return f"No Wikipedia results for {query!r}.{hint}"
    entries = []
    for number, (title, text, url) in enumerate(ordered[:RESULT_COUNT], start=1):
        entries.append(f"[{number}] {title} ({url})\n{text or '(no summary)'}")
    return "\n\n".join(entries)


def _pages(pages: Any) -> list[dict[str, Any]]:
    if isinstance(pages, dict):  # formatversion=1: {"pageid": {...}}
        pages = list(pages.values())
    return [p for p in pages or [] if isinstance(p, dict)]


def _text_of(page: dict[str, Any], hit: dict[str, Any]) -> str:
    extract = page.get("extract")
    if isinstance(extract, str) and extract.strip():
        return shorten(extract)
    return shorten(plain_text(str(hit.get("snippet") or "")))


def _url_of(page: dict[str, Any], lang: str, title: str) -> str:
    url = page.get("fullurl") or page.get("canonicalurl")
    return (
        url
        if isinstance(url, str) and url.startswith(("https://", "http://"))
        else (article_url(lang, title))
    )


class WikipediaInput(BaseModel):
    query: str = Field(
        description="What to look up: a topic, name or short phrase, e.g. 'Alan Turing'."
    )


def _wikipedia(query: str) -> str:
    return run_sync(lambda: search_wikipedia(query))


wikipedia = StructuredTool.from_function(
    func=_wikipedia,
    coroutine=search_wikipedia,
    name="wikipedia",
    description=(
        "Search Wikipedia for encyclopedic facts about people, places, organisations, events, "
        "science and history. Returns up to 3 matching articles with a short summary and URL. "
        "Use it to check facts instead of answering from memory; search with a short topic, "
        "not a whole question."
    ),
    args_schema=WikipediaInput,
)
