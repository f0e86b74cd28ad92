"""web_fetch: readable text, caps, content types and the SSRF guard.

Every test routes HTTP through a recording MockTransport and stubs DNS, so even a broken guard
could not send a packet anywhere: the tests assert what was (not) requested.
"""

from __future__ import annotations

import ipaddress

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.tools import ToolException

from tools import http_client
from tools.fetch_body import html_to_text
from tools.fetch_guard import AllowList, HostPatterns, blocked_reason, use_resolver
from tools.web_fetch import web_fetch

PUBLIC_IP = "93.184.216.34"
OTHER_PUBLIC_IP = "93.184.216.35"

DNS = {
    "public.example": [PUBLIC_IP],
    "other.example": [OTHER_PUBLIC_IP],
    "localhost": ["127.0.0.1", "::1"],
    "mixed.example": [PUBLIC_IP, "10.1.2.3"],
    "intranet.corp": ["10.20.30.40"],
    "metadata.google.internal": ["169.254.169.254"],
}

PAGE = """<!doctype html>
<html><head><title>ReAct &amp; tools</title>
<style>body { color: red }</style><script>var secret = "do not show";</script></head>
<body>
<header><a href="/">Home</a> | <a href="/about">About</a></header>
<nav><ul><li>Menu one</li><li>Menu two</li></ul></nav>
<main>
<article><header><h1>The ReAct   loop</h1></header>
<p>Models <b>think</b>, then act,
then observe.</p>
<ul><li>Thought</li><li>Action</li></ul>
<div hidden>hidden text</div>
<noscript>Enable JavaScript</noscript>
<svg><text>chart label</text></svg>
<p>Caf&eacute; &lt;3 &#8212; done.</p>
</article>
</main>
<aside>Related links</aside>
<footer>Copyright 2025</footer>
</body></html>"""

PAGE_TEXT = (
    "Title: ReAct & tools\n"
    "URL: http://public.example/react\n"
    "\n"
    "The ReAct loop\n"
    "Models think, then act, then observe.\n"
    "- Thought\n"
    "- Action\n"
    "Café <3 — done."
)


class Site:
    """A MockTransport serving pages by Host header, keeping every request."""

    def __init__(self, pages: dict[tuple[str, str], httpx.Response]) -> None:
        self.pages = pages
        self.requests: list[httpx.Request] = []
        self.transport = httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        key = (request.headers["host"], request.url.path)
        return self.pages.get(key, httpx.Response(404))


async def stub_dns(host: str, port: int) -> list[str]:
    if host not in DNS:
        raise OSError(-2, "Name or service not known")
    return DNS[host]


@pytest.fixture(autouse=True)
def fetch_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "REACT_AGENT_FETCH_ALLOW",
        "REACT_AGENT_FETCH_ALLOW_HOSTS",
        "REACT_AGENT_FETCH_MAX_CHARS",
        "REACT_AGENT_HTTP_MAX_BYTES",
        "REACT_AGENT_HTTP_RETRIES",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REACT_AGENT_HTTP_BACKOFF", "0")
    monkeypatch.setenv("REACT_AGENT_HTTP_TIMEOUT", "2")


async def fetch(site: Site, url: str) -> str:
    with http_client.use_transport(site.transport), use_resolver(stub_dns):
        return await web_fetch.ainvoke({"url": url})


async def refused(site: Site, url: str) -> str:
    with pytest.raises(ToolException) as caught:
        await fetch(site, url)
    return str(caught.value)


def html(body: str, status: int = 200, **headers: str) -> httpx.Response:
    return httpx.Response(
        status,
        content=body.encode(),
        headers={"content-type": "text/html; charset=utf-8", **headers},
    )


# --- readable text -----------------------------------------------------------------------------


async def test_page_text_drops_chrome_and_markup() -> None:
    site = Site({("public.example", "/react"): html(PAGE)})
    assert await fetch(site, "http://public.example/react") == PAGE_TEXT


async def test_connects_to_the_checked_address_with_the_name_in_host_and_sni() -> None:
    site = Site({("public.example", "/react"): html(PAGE)})
    await fetch(site, "https://public.example/react?x=1")
    (request,) = site.requests
    assert request.url.host == PUBLIC_IP
    assert request.url.scheme == "https"
    assert request.url.params["x"] == "1"
    assert request.headers["host"] == "public.example"
    assert request.extensions["sni_hostname"] == "public.example"
    assert request.headers["user-agent"] == "react-agent/0.1 (+LangGraph ReAct agent)"


async def test_url_without_scheme_means_https() -> None:
    site = Site({("public.example", "/react"): html(PAGE)})
    result = await fetch(site, "public.example/react")
    assert result.startswith("Title: ReAct & tools\nURL: https://public.example/react\n")


async def test_plain_text_and_json_are_returned_as_text() -> None:
    site = Site(
        {
            ("public.example", "/a.txt"): httpx.Response(
                200, text="line one\nline two", headers={"content-type": "text/plain"}
            ),
            ("public.example", "/data"): httpx.Response(200, json={"city": "北京"}),
        }
    )
    assert await fetch(site, "http://public.example/a.txt") == (
        "URL: http://public.example/a.txt\n\nline one\nline two"
    )
    assert await fetch(site, "http://public.example/data") == (
        'URL: http://public.example/data\n\n{"city":"北京"}'
    )


async def test_binary_content_is_refused() -> None:
    site = Site(
        {
            ("public.example", "/logo.png"): httpx.Response(
                200, content=b"\x89PNG\r\n\x1a\n", headers={"content-type": "image/png"}
            ),
            ("public.example", "/blob"): httpx.Response(200, content=b"\x00\x01\x02binary"),
        }
    )
    assert await refused(site, "http://public.example/logo.png") == (
        "Refusing to read http://public.example/logo.png: its content type image/png is not "
        "text (web_fetch reads HTML, plain text and JSON)."
    )
    assert "content type unknown is not text" in await refused(site, "http://public.example/blob")


async def test_long_text_is_cut_and_says_how_much(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_FETCH_MAX_CHARS", "20")
    site = Site({("public.example", "/long"): html("<p>" + "abcdefghij" * 5 + "</p>")})
    assert await fetch(site, "http://public.example/long") == (
        "URL: http://public.example/long\n\nabcdefghijabcdefghij\n"
        "[Cut: showing the first 20 of 50 characters.]"
    )


async def test_default_char_cap_is_8000() -> None:
    site = Site({("public.example", "/long"): html("<p>" + "x" * 20_000 + "</p>")})
    result = await fetch(site, "http://public.example/long")
    assert result.endswith("\n[Cut: showing the first 8,000 of 20,000 characters.]")


async def test_oversize_page_is_truncated_not_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_MAX_BYTES", "1024")
    site = Site({("public.example", "/big"): html("<p>" + "y" * 5000 + "</p>")})
    result = await fetch(site, "http://public.example/big")
    assert result.startswith(
        "URL: http://public.example/big\n"
        "[The page is larger than 1 KB; only the first 1 KB were read.]\n\nyyy"
    )
    assert result.split("\n\n", 1)[1] == "y" * (1024 - len("<p>"))


async def test_http_errors_are_tool_errors() -> None:
    site = Site({})
    assert await refused(site, "http://public.example/missing") == (
        "Could not fetch http://public.example/missing: HTTP 404 Not Found."
    )


async def test_unresolvable_host() -> None:
    message = await refused(Site({}), "http://no-such-host.example/")
    assert message == (
        "Could not fetch http://no-such-host.example/: the host name no-such-host.example could "
        "not be resolved (Name or service not known)."
    )


async def test_unreachable_address_falls_back_to_the_next_one() -> None:
    DNS["two.example"] = [OTHER_PUBLIC_IP, PUBLIC_IP]
    hits: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        hits.append(request.url.host)
        if request.url.host == OTHER_PUBLIC_IP:
            raise httpx.ConnectError("[Errno 111] Connection refused")
        return html("<p>second address</p>")

    try:
        with http_client.use_transport(httpx.MockTransport(handler)), use_resolver(stub_dns):
            result = await web_fetch.ainvoke({"url": "http://two.example/"})
    finally:
        del DNS["two.example"]
    assert result == "URL: http://two.example/\n\nsecond address"
    assert hits == [OTHER_PUBLIC_IP] * 3 + [PUBLIC_IP]


async def test_all_addresses_unreachable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused")

    with (
        http_client.use_transport(httpx.MockTransport(handler)),
        use_resolver(stub_dns),
        pytest.raises(ToolException) as caught,
    ):
        await web_fetch.ainvoke({"url": "http://public.example/"})
    assert str(caught.value) == (
        "Could not fetch http://public.example/: unreachable: connection refused."
    )


def test_sync_invoke() -> None:
    site = Site({("public.example", "/react"): html(PAGE)})
    with http_client.use_transport(site.transport), use_resolver(stub_dns):
        assert web_fetch.invoke({"url": "http://public.example/react"}) == PAGE_TEXT


def test_html_to_text_handles_broken_markup() -> None:
    title, text = html_to_text("<p>one<p>two<br>three<script>x</script><div>four")
    assert (title, text) == ("", "one\ntwo\nthree\nfour")
    title, text = html_to_text("<h1>Only a heading</h1><table><tr><td>a</td><td>b</td></tr>")
    assert (title, text) == ("Only a heading", "Only a heading\na b")


# --- the SSRF guard ----------------------------------------------------------------------------

GUARD_NOTE = "(allowed only if listed in REACT_AGENT_FETCH_ALLOW)."


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1/", f"127.0.0.1 is a loopback address {GUARD_NOTE}"),
        ("http://127.0.0.1:8080/admin", f"127.0.0.1 is a loopback address {GUARD_NOTE}"),
        ("http://public.example@127.0.0.1/", f"127.0.0.1 is a loopback address {GUARD_NOTE}"),
        ("http://localhost/", f"localhost resolves to 127.0.0.1, a loopback address {GUARD_NOTE}"),
        ("http://10.0.0.5/", f"10.0.0.5 is a private address {GUARD_NOTE}"),
        ("http://192.168.1.1/", f"192.168.1.1 is a private address {GUARD_NOTE}"),
        ("http://172.16.0.1/", f"172.16.0.1 is a private address {GUARD_NOTE}"),
        ("http://[::1]/", f"::1 is a loopback address {GUARD_NOTE}"),
        ("http://[::ffff:127.0.0.1]/", f"::ffff:7f00:1 is a loopback address {GUARD_NOTE}"),
        ("http://[::ffff:10.0.0.1]/", f"::ffff:a00:1 is a private address {GUARD_NOTE}"),
        (
            "http://169.254.169.254/latest/meta-data/",
            f"169.254.169.254 is a cloud metadata address {GUARD_NOTE}",
        ),
        ("http://[fd00:ec2::254]/", f"fd00:ec2::254 is a cloud metadata address {GUARD_NOTE}"),
        (
            "http://metadata.google.internal/",
            f"metadata.google.internal resolves to 169.254.169.254, a cloud metadata address "
            f"{GUARD_NOTE}",
        ),
        ("http://169.254.10.1/", f"169.254.10.1 is a link-local address {GUARD_NOTE}"),
        ("http://100.64.1.1/", f"100.64.1.1 is a carrier-grade NAT address {GUARD_NOTE}"),
        ("http://0.0.0.0/", f"0.0.0.0 is an unspecified address {GUARD_NOTE}"),
        ("http://224.0.0.1/", f"224.0.0.1 is a multicast address {GUARD_NOTE}"),
        ("http://240.0.0.1/", f"240.0.0.1 is a private address {GUARD_NOTE}"),
        ("http://[2002:7f00:1::]/", f"2002:7f00:1:: is a loopback address {GUARD_NOTE}"),
        ("http://[64:ff9b::a00:1]/", f"64:ff9b::a00:1 is a private address {GUARD_NOTE}"),
        (
            "http://mixed.example/",
            f"mixed.example resolves to 10.1.2.3, a private address {GUARD_NOTE}",
        ),
    ],
)
async def test_private_targets_are_refused_before_any_request(url: str, message: str) -> None:
    site = Site({})
    assert await refused(site, url) == f"Refusing to fetch {url}: {message}"
    assert site.requests == []


async def test_decimal_ip_hosts_are_checked_after_resolution() -> None:
    site = Site({})
    with http_client.use_transport(site.transport), pytest.raises(ToolException) as caught:
        await web_fetch.ainvoke({"url": "http://2130706433/"})  # the system resolver: 127.0.0.1
    assert str(caught.value) == (
        f"Refusing to fetch http://2130706433/: 2130706433 resolves to 127.0.0.1, a loopback "
        f"address {GUARD_NOTE}"
    )
    assert site.requests == []


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://public.example/file",
        "gopher://public.example:70/",
        "data:text/plain,hello",
        "javascript:alert(1)",
        "mailto:someone@public.example",
    ],
)
async def test_non_http_schemes_are_refused(url: str) -> None:
    site = Site({})
    message = await refused(site, url)
    assert message.startswith(f"Refusing to fetch {url}")
    assert message.endswith(": only http and https URLs are allowed.")
    assert site.requests == []


async def test_redirect_to_loopback_is_refused() -> None:
    site = Site({("public.example", "/go"): html("", 302, location="http://127.0.0.1/admin")})
    assert await refused(site, "http://public.example/go") == (
        "Refusing to follow the redirect from http://public.example/go to "
        f"http://127.0.0.1/admin: 127.0.0.1 is a loopback address {GUARD_NOTE}"
    )
    assert [r.url.host for r in site.requests] == [PUBLIC_IP]


async def test_redirect_to_a_name_resolving_to_metadata_is_refused() -> None:
    site = Site(
        {("public.example", "/go"): html("", 301, location="http://metadata.google.internal/x")}
    )
    message = await refused(site, "http://public.example/go")
    assert message.endswith(f"resolves to 169.254.169.254, a cloud metadata address {GUARD_NOTE}")
    assert len(site.requests) == 1


async def test_redirect_to_file_is_refused() -> None:
    site = Site({("public.example", "/go"): html("", 307, location="file:///etc/passwd")})
    assert await refused(site, "http://public.example/go") == (
        "Refusing to follow the redirect from http://public.example/go to file:///etc/passwd: "
        "only http and https URLs are allowed."
    )


async def test_public_redirects_are_followed_and_rechecked() -> None:
    site = Site(
        {
            ("public.example", "/old"): html("", 301, location="/new"),
            ("public.example", "/new"): html("", 302, location="https://other.example/final"),
            ("other.example", "/final"): html("<title>Final</title><p>arrived</p>"),
        }
    )
    assert await fetch(site, "http://public.example/old") == (
        "Title: Final\nURL: https://other.example/final\n\narrived"
    )
    assert [(r.url.host, r.headers["host"], r.url.path) for r in site.requests] == [
        (PUBLIC_IP, "public.example", "/old"),
        (PUBLIC_IP, "public.example", "/new"),
        (OTHER_PUBLIC_IP, "other.example", "/final"),
    ]


# --- the operator's host allow-list ----------------------------------------------------------

HOSTS_NOTE = "is not one of the hosts the operator allows (REACT_AGENT_FETCH_ALLOW_HOSTS)."


async def test_host_allow_list_refuses_other_hosts_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REACT_AGENT_FETCH_ALLOW_HOSTS", "public.example, *.wiki.example")
    site = Site({("public.example", "/a"): html("<p>allowed</p>")})
    assert (await fetch(site, "http://PUBLIC.example/a")).endswith("\n\nallowed")
    for url in ("http://other.example/a", "http://wiki.example/a", "http://93.184.216.35/"):
        message = await refused(site, url)
        assert message.startswith(f"Refusing to fetch {url}: ") and message.endswith(HOSTS_NOTE)
    assert len(site.requests) == 1


async def test_host_allow_list_applies_to_every_redirect_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REACT_AGENT_FETCH_ALLOW_HOSTS", "public.example")
    site = Site(
        {
            ("public.example", "/go"): html("", 302, location="https://other.example/leak?q=1"),
            ("other.example", "/leak"): html("<p>leaked</p>"),
        }
    )
    assert await refused(site, "http://public.example/go") == (
        "Refusing to follow the redirect from http://public.example/go to "
        f"https://other.example/leak?q=1: other.example {HOSTS_NOTE}"
    )
    assert [r.headers["host"] for r in site.requests] == ["public.example"]


async def test_host_allow_list_wildcards_match_subdomains(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_FETCH_ALLOW_HOSTS", "*.example")
    site = Site({("other.example", "/"): html("<p>sub</p>")})
    assert (await fetch(site, "http://other.example/")).endswith("\n\nsub")


def test_host_patterns() -> None:
    patterns = HostPatterns.parse("example.com, *.wikipedia.org, 10.0.0.1, [::1], bücher.de")
    allowed = ["http://example.com/", "http://Example.COM.:81/", "https://en.m.wikipedia.org/x"]
    allowed += [
        "http://10.0.0.1/",
        "http://[::1]/",
        "http://xn--bcher-kva.de/",
        "http://bücher.de/",
    ]
    refused = ["http://www.example.com/", "http://wikipedia.org/", "http://evilwikipedia.org/"]
    refused += ["http://example.com.evil/", "http://10.0.0.2/", "http://[::2]/"]
    assert [patterns.permits(httpx.URL(u)) for u in allowed] == [True] * len(allowed)
    assert [patterns.permits(httpx.URL(u)) for u in refused] == [False] * len(refused)
    assert HostPatterns.parse(" , ").permits(httpx.URL("http://anything.example/"))


@pytest.mark.parametrize(
    "entry", ["*", "*.", "a b", "http://example.com/", "example.com:80", "*x.org"]
)
async def test_bad_host_allow_list_entry_is_one_sentence(
    monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    monkeypatch.setenv("REACT_AGENT_FETCH_ALLOW_HOSTS", f"example.com,{entry}")
    message = await refused(Site({}), "http://public.example/")
    assert message == (
        f"REACT_AGENT_FETCH_ALLOW_HOSTS has an entry {entry!r} that is not a host name, an "
        "address or '*.' and a domain (e.g. example.com,*.wikipedia.org)."
    )


async def test_too_many_redirects() -> None:
    site = Site({("public.example", "/loop"): html("", 302, location="/loop")})
    assert await refused(site, "http://public.example/loop") == (
        "Could not fetch http://public.example/loop: more than 5 redirects."
    )
    assert len(site.requests) == 6


async def test_allow_list_permits_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_FETCH_ALLOW", "127.0.0.1/32, 10.0.0.0/8")
    site = Site(
        {
            ("127.0.0.1:8080", "/status"): html("<p>local ok</p>"),
            ("10.9.8.7", "/"): html("<p>lan ok</p>"),
        }
    )
    assert await fetch(site, "http://127.0.0.1:8080/status") == (
        "URL: http://127.0.0.1:8080/status\n\nlocal ok"
    )
    assert await fetch(site, "http://10.9.8.7/") == "URL: http://10.9.8.7/\n\nlan ok"
    assert "192.168.0.1 is a private address" in await refused(site, "http://192.168.0.1/")
    assert "::1 is a loopback address" in await refused(site, "http://[::1]/")


async def test_allow_list_permits_host_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_FETCH_ALLOW", ".corp,localhost")
    site = Site(
        {
            ("intranet.corp", "/wiki"): html("<p>internal wiki</p>"),
            ("localhost", "/"): html("<p>home</p>"),
        }
    )
    assert await fetch(site, "http://intranet.corp/wiki") == (
        "URL: http://intranet.corp/wiki\n\ninternal wiki"
    )
    assert site.requests[0].url.host == "10.20.30.40"
    assert await fetch(site, "http://localhost/") == "URL: http://localhost/\n\nhome"
    assert "127.0.0.1 is a loopback address" in await refused(site, "http://127.0.0.1/")


async def test_bad_allow_list_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_FETCH_ALLOW", "localhost, http://bad/")
    assert await refused(Site({}), "http://public.example/") == (
        "REACT_AGENT_FETCH_ALLOW has an entry 'http://bad/' that is neither a host name nor an "
        "address or network like 10.0.0.0/8."
    )


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
        ("127.0.0.2", "loopback"),
        ("::ffff:169.254.169.254", "cloud metadata"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("ff02::1", "multicast"),
        ("::", "unspecified"),
        ("100.100.100.200", "cloud metadata"),
        ("192.0.2.1", "private"),
    ],
)
def test_blocked_reason(address: str, reason: str | None) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) == reason


def test_allow_list_parsing() -> None:
    allow = AllowList.parse("LocalHost, .corp.example, 10.0.0.0/8, ::1")
    assert allow.permits_host("localhost")
    assert allow.permits_host("wiki.corp.example")
    assert allow.permits_host("corp.example")
    assert not allow.permits_host("evilcorp.example")
    assert allow.permits_address(ipaddress.ip_address("10.255.0.1"))
    assert allow.permits_address(ipaddress.ip_address("::ffff:10.0.0.1"))
    assert allow.permits_address(ipaddress.ip_address("::1"))
    assert not allow.permits_address(ipaddress.ip_address("127.0.0.1"))


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from("<>/=\"' abcdiv pscriptnavtitle&;#x1\n"), max_size=200))
def test_html_to_text_never_fails_and_never_shows_script_bodies(markup: str) -> None:
    title, text = html_to_text("<style>SECRET</style><script>SECRET</script>" + markup)
    assert "SECRET" not in text and "SECRET" not in title
    assert "\n\n" not in text and text == text.strip()


# --- bounded output and hostile bodies -----------------------------------------------------------


async def test_charset_idna_falls_back_to_utf8() -> None:
    body = "<title>Café</title><p>北京</p>".encode()
    site = Site(
        {
            ("public.example", "/idna"): httpx.Response(
                200, content=body, headers={"content-type": "text/html; charset=idna"}
            ),
            ("public.example", "/meta"): httpx.Response(
                200,
                content=b'<meta charset="idna">' + body,
                headers={"content-type": "text/html"},
            ),
        }
    )
    expected = "Title: Café\nURL: http://public.example/{}\n\n北京"
    assert await fetch(site, "http://public.example/idna") == expected.format("idna")
    assert await fetch(site, "http://public.example/meta") == expected.format("meta")


async def test_title_and_long_redirect_urls_are_shortened() -> None:
    long_path = "/" + "p" * 50_000
    site = Site(
        {
            ("public.example", "/title"): html(f"<title>{'T' * 10_000}</title><p>body</p>"),
            ("public.example", "/go"): html("", 302, location=f"http://127.0.0.1{long_path}"),
        }
    )
    titled = await fetch(site, "http://public.example/title")
    assert titled.startswith("Title: " + "T" * 199 + "…\nURL: ")
    message = await refused(site, "http://public.example/go")
    assert len(message) < 1000
    assert message.endswith(f"127.0.0.1 is a loopback address {GUARD_NOTE}")


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=3000), st.sampled_from(["text/html", "text/plain", ""]))
def test_any_body_gives_bounded_text_or_a_refusal(body: bytes, content_type: str) -> None:
    headers = {"content-type": content_type} if content_type else {}
    site = Site({("public.example", "/x"): httpx.Response(200, content=body, headers=headers)})
    with http_client.use_transport(site.transport), use_resolver(stub_dns):
        try:
            result = web_fetch.invoke({"url": "http://public.example/x"})
        except ToolException as exc:
            assert str(exc).startswith("Refusing to read http://public.example/x: its content type")
        else:
            assert len(result) < 8000 + 300
