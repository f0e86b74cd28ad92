"""Offline HTTP for the standard tool suites (tests/unit/test_probe_standard_suites.py): one
`httpx.MockTransport` that answers as Open-Meteo, MediaWiki and a public web page would, in the
shapes the tools' own tests record, and a DNS stub for web_fetch's address check. Nothing here
opens a socket: every request an HTTP tool makes goes through `offline_http()`, and a request
to any other host is a 404, never a packet."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import httpx

from tools import http_client
from tools.fetch_guard import use_resolver

PUBLIC_IP = "93.184.216.34"
PAGE_URL = "http://public.example/react"
PAGE = (
    "<!doctype html><html><head><title>ReAct &amp; tools</title></head><body><main>"
    "<h1>The ReAct loop</h1><p>Models think, then act, then observe.</p></main></body></html>"
)
GEOCODING = {
    "id": 1816670,
    "name": "Beijing",
    "latitude": 39.9075,
    "longitude": 116.39723,
    "country_code": "CN",
    "timezone": "Asia/Shanghai",
    "country": "China",
    "admin1": "Beijing",
}
CURRENT_UNITS = {
    "time": "iso8601",
    "interval": "seconds",
    "temperature_2m": "°C",
    "apparent_temperature": "°C",
    "relative_humidity_2m": "%",
    "wind_speed_10m": "m/s",
    "wind_direction_10m": "°",
    "precipitation": "mm",
    "weather_code": "wmo code",
}
CURRENT = {
    "time": "2025-04-26T15:00",
    "interval": 900,
    "temperature_2m": 23.4,
    "apparent_temperature": 23.1,
    "relative_humidity_2m": 43,
    "wind_speed_10m": 2.7,
    "wind_direction_10m": 216,
    "precipitation": 0.0,
    "weather_code": 2,
}
WIKIPEDIA: dict[str, Any] = {
    "batchcomplete": True,
    "query": {
        "search": [{"ns": 0, "title": "India", "pageid": 14533, "snippet": "India is a country"}],
        "pages": [
            {
                "pageid": 14533,
                "ns": 0,
                "title": "India",
                "index": 1,
                "extract": "India, officially the Republic of India, is a country in South Asia.",
                "fullurl": "https://en.wikipedia.org/wiki/India",
            }
        ],
    },
}


def handle(request: httpx.Request) -> httpx.Response:
    """The one offline internet: the three services the HTTP tools call."""
    host = request.headers.get("host", request.url.host)
    path = request.url.path
    if host == "geocoding-api.open-meteo.com" and path == "/v1/search":
        return httpx.Response(200, json={"results": [GEOCODING], "generationtime_ms": 0.5})
    if host == "api.open-meteo.com" and path == "/v1/forecast":
        body = {
            "latitude": 39.875,
            "longitude": 116.375,
            "utc_offset_seconds": 28800,
            "timezone": "Asia/Shanghai",
            "timezone_abbreviation": "GMT+8",
            "current_units": CURRENT_UNITS,
            "current": CURRENT,
        }
        return httpx.Response(200, json=body)
    if host.endswith("wikipedia.org") and path == "/w/api.php":
        return httpx.Response(200, json=WIKIPEDIA)
    if host == "public.example" and path == "/react":
        headers = {"content-type": "text/html; charset=utf-8"}
        return httpx.Response(200, content=PAGE.encode(), headers=headers)
    return httpx.Response(404)


async def _resolve(host: str, port: int) -> list[str]:
    if host == "public.example":
        return [PUBLIC_IP]
    raise OSError(-2, "Name or service not known")


@contextlib.contextmanager
def offline_http() -> Iterator[None]:
    """Every HTTP tool's client goes through `handle`; web_fetch resolves names by `_resolve`."""
    with http_client.use_transport(httpx.MockTransport(handle)), use_resolver(_resolve):
        yield
