"""Hostile HTML: pages built to make an HTML reader superlinear, and the event loop meanwhile.

CPython's `html.parser` took 17 s on a 600 KB page of `</` runs, and HTML5 tree builders walk the
open-element stack for every start tag (100,000 nested `<div>` took minutes). The reader in
`tools/fetch_body.py` must give the right text for each page here, and at most
`MAX_MARKUP_CHARS` of markup are read. No assertion is timed: the pytest timeout of each test is
a generous bound that the old reader overran by far; the bounded work is asserted instead (the
cap, the text produced).
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tools import http_client
from tools.fetch_body import MAX_MARKUP_CHARS, html_to_text
from tools.fetch_guard import use_resolver
from tools.web_fetch import web_fetch

TWO_MB = 1_990_000  # just under the cap (MAX_MARKUP_CHARS), so every page is read whole

BOMBS = {
    "runs of end-tag openers": ("<p>before</p>" + "</" * (TWO_MB // 2), "before"),
    "end tags never closed": ("<p>before</p>" + "</a" * (TWO_MB // 3), "before"),
    "a comment never closed": ("<p>before</p><!--" + "x</p>" * (TWO_MB // 5), "before"),
    "CDATA runs": ("<p>before</p><![CDATA[" + "</" * (TWO_MB // 2), "before"),
    "deep nesting": ("<div>" * (TWO_MB // 5) + "deep", "deep"),
    "deep nesting of skipped tags": ("<nav>" * (TWO_MB // 5) + "menu", ""),
    "a quote never closed": ('<p>before</p><a title="' + "<p>x" * (TWO_MB // 4), "before"),
    "a tag never closed": ("<p>before</p><a " + "b=1 " * (TWO_MB // 4), "before"),
    "a script never closed": ("<p>before</p><script>" + "<p>x" * (TWO_MB // 4), "before"),
    "many lone angle brackets": (
        "<p>a" + "< " * (TWO_MB // 2),
        "a" + "< " * (TWO_MB // 2 - 1) + "<",
    ),
    "processing instructions": ("<p>before</p>" + "<?" * (TWO_MB // 2), "before"),
    "entities": ("<p>" + "&amp;" * (TWO_MB // 5), "&" * (TWO_MB // 5)),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", list(BOMBS))
def test_hostile_pages_give_their_text(name: str) -> None:
    markup, expected = BOMBS[name]
    assert TWO_MB - 20 <= len(markup) <= MAX_MARKUP_CHARS
    title, text = html_to_text(markup)
    assert title == ""
    assert text == expected


@pytest.mark.timeout(60)
def test_markup_past_the_cap_is_not_read_and_the_text_says_so() -> None:
    markup = "<p>kept</p>" + "<div>" * (MAX_MARKUP_CHARS // 5) + "<p>beyond the cap</p>"
    assert len(markup) > MAX_MARKUP_CHARS
    _title, text = html_to_text(markup)
    assert "beyond the cap" not in text
    assert text == (
        f"kept\n[Only the first {MAX_MARKUP_CHARS:,} characters of the page's markup were read.]"
    )


def test_ordinary_markup_still_reads_as_before() -> None:
    markup = (
        "<!doctype html><html><head><title>T &amp; U</title><meta charset=utf-8></head>"
        "<body><svg><title>not the title</title></svg>"
        "<p title='a > b' data-x=\"<p>\">one <b>two</b></p><!-- note --><br/>"
        "<textarea>typed &lt;here&gt;</textarea><div aria-hidden=TRUE>gone</div>"
        "<SCRIPT type=x>if (a </b) {}</SCRIPT >three</body></html>"
    )
    assert html_to_text(markup) == ("T & U", "one two\ntyped <here>three")


async def stub_dns(host: str, port: int) -> list[str]:
    return ["93.184.216.34"]


@pytest.mark.timeout(120)
async def test_the_event_loop_keeps_running_while_a_big_page_converts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ticker task must keep ticking while web_fetch reads a 2 MB hostile page: the conversion
    runs in a worker thread. Ticks are counted, not timed: with the conversion on the loop the
    ticker would get no turn between the body's arrival and the result."""
    monkeypatch.setenv("REACT_AGENT_HTTP_BACKOFF", "0")
    monkeypatch.setenv("REACT_AGENT_HTTP_MAX_BYTES", str(3 * TWO_MB))
    page = ("<div>" * (TWO_MB // 5) + "deep").encode()
    arrived = asyncio.Event()
    ticks_after_arrival = 0

    def serve(request: httpx.Request) -> httpx.Response:
        arrived.set()
        return httpx.Response(200, content=page, headers={"content-type": "text/html"})

    async def ticker() -> None:
        nonlocal ticks_after_arrival
        while True:
            await asyncio.sleep(0)
            if arrived.is_set():
                ticks_after_arrival += 1

    task = asyncio.create_task(ticker())
    try:
        with http_client.use_transport(httpx.MockTransport(serve)), use_resolver(stub_dns):
            result = await web_fetch.ainvoke({"url": "http://public.example/deep"})
    finally:
        task.cancel()
    assert result.endswith("\n\ndeep")
    assert ticks_after_arrival > 100
