"""The wikipedia tool against recorded-shape MediaWiki API responses (httpx.MockTransport)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from langchain_core.tools import ToolException

from tools import http_client as http
from tools.wikipedia import article_url, plain_text, shorten, wikipedia

INDIA_EXTRACT = (
    "India, officially the Republic of India, is a country in South Asia. It is the "
    "seventh-largest country by area; the most populous country since 2023; and, since its "
    "independence in 1947, the world's most populous democracy. Bounded by the Indian Ocean on "
    "the south, the Arabian Sea on the southwest, and the Bay of Bengal on the southeast, it "
    "shares land borders with Pakistan to the west; China, Nepal, and Bhutan to the north; and "
    "Bangladesh and Myanmar to the east."
)

INDIA_RESPONSE: dict[str, Any] = {
    "batchcomplete": True,
    "continue": {"gsroffset": 3, "sroffset": 3, "continue": "gsroffset||"},
    "query": {
        "searchinfo": {"totalhits": 513094},
        "search": [
            {
                "ns": 0,
                "title": "India",
                "pageid": 14533,
                "snippet": '<span class="searchmatch">India</span>, officially the Republic of '
                '<span class="searchmatch">India</span>, is a country in South Asia.',
            },
            {
                "ns": 0,
                "title": "Geography of India",
                "pageid": 13014,
                "snippet": '<span class="searchmatch">Geography</span> &amp; climate of '
                '<span class="searchmatch">India</span>: the &quot;subcontinent&quot;',
            },
            {
                "ns": 0,
                "title": "Borders of India",
                "pageid": 48532,
                "snippet": 'The Republic <span class="searchmatch">of</span> India shares borders',
            },
        ],
        "pages": [
            {
                "pageid": 48532,
                "ns": 0,
                "title": "Borders of India",
                "index": 3,
                "extract": "The Republic of India shares borders with several sovereign countries.",
                "fullurl": "https://en.wikipedia.org/wiki/Borders_of_India",
            },
            {
                "pageid": 14533,
                "ns": 0,
                "title": "India",
                "index": 1,
                "extract": INDIA_EXTRACT,
                "fullurl": "https://en.wikipedia.org/wiki/India",
            },
            {
                "pageid": 13014,
                "ns": 0,
                "title": "Geography of India",
                "index": 2,
                "extract": "",
            },
        ],
    },
}

INDIA_OBSERVATION = (
    "[1] India (https://en.wikipedia.org/wiki/India)\n"
    "India, officially the Republic of India, is a country in South Asia. It is the "
    "seventh-largest country by area; the most populous country since 2023; and, since its "
    "independence in 1947, the world's most populous democracy. …\n"
    "\n"
    "[2] Geography of India (https://en.wikipedia.org/wiki/Geography_of_India)\n"
    'Geography & climate of India: the "subcontinent"\n'
    "\n"
    "[3] Borders of India (https://en.wikipedia.org/wiki/Borders_of_India)\n"
    "The Republic of India shares borders with several sovereign countries."
)


class Recorder:
    def __init__(self, body: Any = None, status: int = 200) -> None:
        self.requests: list[httpx.Request] = []
        self.body, self.status = body, status
        self.transport = httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if isinstance(self.body, bytes | str):
            return httpx.Response(self.status, content=self.body)
        return httpx.Response(self.status, json=self.body)


@pytest.fixture(autouse=True)
def wiki_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "REACT_AGENT_WIKIPEDIA_LANG",
        "REACT_AGENT_WIKIPEDIA_URL",
        "REACT_AGENT_HTTP_MAX_BYTES",
        "REACT_AGENT_HTTP_RETRIES",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REACT_AGENT_HTTP_BACKOFF", "0")
    monkeypatch.setenv("REACT_AGENT_HTTP_TIMEOUT", "2")


async def search(recorder: Recorder, query: str) -> str:
    with http.use_transport(recorder.transport):
        return await wikipedia.ainvoke({"query": query})


async def test_search_returns_titles_extracts_and_urls() -> None:
    recorder = Recorder(INDIA_RESPONSE)
    assert await search(recorder, "India") == INDIA_OBSERVATION
    (request,) = recorder.requests
    assert str(request.url).startswith("https://en.wikipedia.org/w/api.php?")
    params = request.url.params
    assert params["action"] == "query"
    assert params["list"] == "search"
    assert params["srsearch"] == "India"
    assert params["srlimit"] == "3"
    assert params["generator"] == "search"
    assert params["gsrsearch"] == "India"
    assert params["prop"] == "extracts|info"
    assert params["exintro"] == "1"
    assert params["explaintext"] == "1"
    assert params["format"] == "json"


async def test_no_results() -> None:
    recorder = Recorder(
        {"batchcomplete": True, "query": {"searchinfo": {"totalhits": 0}, "search": []}}
    )
    assert await search(recorder, "xyzzyqwv") == "No Wikipedia results for 'xyzzyqwv'."


async def test_no_results_without_a_query_key_and_with_a_suggestion() -> None:
    recorder = Recorder({"batchcomplete": True})
    assert await search(recorder, "qqq") == "No Wikipedia results for 'qqq'."
    recorder = Recorder(
        {"query": {"searchinfo": {"totalhits": 0, "suggestion": "albert einstein"}, "search": []}}
    )
    assert await search(recorder, "albert einstien") == (
        "No Wikipedia results for 'albert einstien'. Did you mean 'albert einstein'?"
    )


async def test_chinese_wikipedia(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_WIKIPEDIA_LANG", "zh")
    recorder = Recorder(
        {
            "query": {
                "search": [
                    {
                        "title": "北京市",
                        "snippet": '<span class="searchmatch">北京</span>市，简称京',
                    }
                ],
                "pages": [
                    {
                        "title": "北京市",
                        "index": 1,
                        "extract": "北京市，简称京，是中华人民共和国的首都。",
                    }
                ],
            }
        }
    )
    assert await search(recorder, "北京") == (
        "[1] 北京市 (https://zh.wikipedia.org/wiki/北京市)\n北京市，简称京，是中华人民共和国的首都。"
    )
    assert recorder.requests[0].url.host == "zh.wikipedia.org"
    assert recorder.requests[0].url.params["srsearch"] == "北京"


async def test_base_url_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_WIKIPEDIA_URL", "http://mirror.test/")
    recorder = Recorder(INDIA_RESPONSE)
    assert await search(recorder, "India") == INDIA_OBSERVATION
    assert str(recorder.requests[0].url).startswith("http://mirror.test/w/api.php?")


async def test_bad_language_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_WIKIPEDIA_LANG", "en.evil.com/x")
    with pytest.raises(ToolException) as caught:
        await search(Recorder(INDIA_RESPONSE), "India")
    assert str(caught.value) == (
        "REACT_AGENT_WIKIPEDIA_LANG must be a Wikipedia language code like 'en' or 'zh', "
        "not 'en.evil.com/x'."
    )


async def test_api_error_object() -> None:
    recorder = Recorder({"error": {"code": "badvalue", "info": "Unrecognized value for parameter"}})
    with pytest.raises(ToolException) as caught:
        await search(recorder, "India")
    assert str(caught.value) == "Wikipedia error: Unrecognized value for parameter."


async def test_malformed_json() -> None:
    with pytest.raises(ToolException) as caught:
        await search(Recorder(b'{"query": {"search": ['), "India")
    assert str(caught.value) == "Wikipedia error: invalid JSON."


async def test_500_then_success() -> None:
    answers = [httpx.Response(500), httpx.Response(200, json=INDIA_RESPONSE)]
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers[len(seen) - 1]

    with http.use_transport(httpx.MockTransport(handler)):
        assert await wikipedia.ainvoke({"query": "India"}) == INDIA_OBSERVATION
    assert len(seen) == 2


async def test_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_TIMEOUT", "0.05")
    monkeypatch.setenv("REACT_AGENT_HTTP_RETRIES", "1")

    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(3)
        return httpx.Response(200, json=INDIA_RESPONSE)

    with http.use_transport(httpx.MockTransport(handler)), pytest.raises(ToolException) as caught:
        await wikipedia.ainvoke({"query": "India"})
    assert str(caught.value) == "Wikipedia timed out after 0.05 s."


async def test_oversize(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_MAX_BYTES", "1024")
    with pytest.raises(ToolException) as caught:
        await search(Recorder(INDIA_RESPONSE), "India")
    assert str(caught.value) == "Wikipedia error: response larger than 1 KB."


async def test_blank_query() -> None:
    with pytest.raises(ToolException) as caught:
        await wikipedia.ainvoke({"query": "  "})
    assert str(caught.value) == "Give something to search Wikipedia for, e.g. 'ReAct prompting'."


def test_sync_invoke() -> None:
    with http.use_transport(Recorder(INDIA_RESPONSE).transport):
        assert wikipedia.invoke({"query": "India"}) == INDIA_OBSERVATION


def test_plain_text_strips_markup_and_entities() -> None:
    assert plain_text('<span class="searchmatch">Tom</span> &amp; Jerry&#39;s\n  show') == (
        "Tom & Jerry's show"
    )


def test_shorten() -> None:
    assert shorten("short text") == "short text"
    words = " ".join(["word"] * 200)
    cut = shorten(words, 50)
    assert cut.endswith("…") and len(cut) <= 50 and "wor…" not in cut
    chinese = "北京是中国的首都。" * 10
    assert shorten(chinese, 40) == "北京是中国的首都。" * 4 + " …"


def test_article_url() -> None:
    assert article_url("en", "Albert Einstein") == "https://en.wikipedia.org/wiki/Albert_Einstein"
    assert article_url("en", "C# (programming language)?") == (
        "https://en.wikipedia.org/wiki/C%23_(programming_language)%3F"
    )
    assert article_url("zh", "北京市") == "https://zh.wikipedia.org/wiki/北京市"
