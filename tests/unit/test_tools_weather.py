"""The weather tool against recorded-shape Open-Meteo and CMA responses (httpx.MockTransport)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from langchain_core.tools import ToolException

from tools import http_client as http
from tools.weather import compass, describe_weather_code, weather

# --- recorded shapes ---------------------------------------------------------------------------

GEOCODING = {
    "beijing": {
        "id": 1816670,
        "name": "Beijing",
        "latitude": 39.9075,
        "longitude": 116.39723,
        "elevation": 63.0,
        "feature_code": "PPLC",
        "country_code": "CN",
        "admin1_id": 2038349,
        "timezone": "Asia/Shanghai",
        "population": 11716620,
        "country_id": 1814991,
        "country": "China",
        "admin1": "Beijing",
    },
    "guangzhou": {
        "id": 1809858,
        "name": "Guangzhou",
        "latitude": 23.11667,
        "longitude": 113.25,
        "elevation": 11.0,
        "feature_code": "PPLA",
        "country_code": "CN",
        "admin1_id": 1809935,
        "timezone": "Asia/Shanghai",
        "population": 11071424,
        "country_id": 1814991,
        "country": "China",
        "admin1": "Guangdong",
    },
}
GEOCODING["北京"] = GEOCODING["beijing"]
GEOCODING["广州"] = GEOCODING["guangzhou"]

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
FORECASTS = {
    "39.9075": {
        "time": "2025-04-26T15:00",
        "interval": 900,
        "temperature_2m": 23.4,
        "apparent_temperature": 23.1,
        "relative_humidity_2m": 43,
        "wind_speed_10m": 2.7,
        "wind_direction_10m": 216,
        "precipitation": 0.0,
        "weather_code": 2,
    },
    "23.11667": {
        "time": "2025-04-26T15:00",
        "interval": 900,
        "temperature_2m": 24.2,
        "apparent_temperature": 27.1,
        "relative_humidity_2m": 79,
        "wind_speed_10m": 1.3,
        "wind_direction_10m": 31,
        "precipitation": 0.4,
        "weather_code": 61,
    },
}

CMA_STATIONS = {
    "北京": ["54511|北京|Beijing|中国", "54398|顺义|Shunyi|中国"],
    "北京市": ["54511|北京|Beijing|中国"],
    "beijing": ["54416|密云|Miyun|中国", "54511|北京|Beijing|中国"],
    "广州": ["59287|广州|Guangzhou|中国", "59284|花都|Huadu|中国"],
    "guangzhou city": ["59284|花都|Huadu|中国", "59287|广州|Guangzhou|中国"],
    "朝阳": ["54433|朝阳|Chaoyang|中国", "54324|朝阳|Chaoyang|中国"],
}
CMA_NOW = {
    "54511": {
        "location": {"id": "54511", "name": "北京", "path": "中国, 北京, 北京"},
        "now": {
            "precipitation": 0.0,
            "temperature": 23.4,
            "pressure": 1005.0,
            "humidity": 43.0,
            "windDirection": "西南风",
            "windDirectionDegree": 216.0,
            "windSpeed": 2.7,
            "windScale": "微风",
            "feelst": 23.1,
        },
        "alarm": [],
        "jieQi": "",
        "lastUpdate": "2025/04/26 15:00",
    },
    "59287": {
        "location": {"id": "59287", "name": "Guangzhou", "path": "China, Guangdong, Guangzhou"},
        "now": {
            "precipitation": 0.0,
            "temperature": 24.2,
            "pressure": 1005.0,
            "humidity": 79.0,
            "windDirection": "Northeast Wind",
            "windDirectionDegree": 31.0,
            "windSpeed": 1.3,
            "windScale": "Breeze",
            "feelst": 27.1,
        },
        "alarm": [
            {"id": "44010041600000_20250426", "title": "广州市气象台发布雷雨大风黄色预警信号"}
        ],
        "jieQi": "",
        "lastUpdate": "2025/04/26 15:00",
    },
}

BEIJING_OPEN_METEO = (
    "Beijing (China, Beijing), 2025-04-26 15:00 GMT+8: partly cloudy, 23.4°C, "
    "feels like 23.1°C, humidity 43%, wind Southwest 2.7 m/s, precipitation 0.0 mm"
)
GUANGZHOU_OPEN_METEO = (
    "Guangzhou (China, Guangdong), 2025-04-26 15:00 GMT+8: slight rain, 24.2°C, "
    "feels like 27.1°C, humidity 79%, wind Northeast 1.3 m/s, precipitation 0.4 mm"
)
BEIJING_CMA = (
    "北京 (中国, 北京), 2025-04-26 15:00: 23.4°C, feels like 23.1°C, humidity 43%, "
    "wind 西南风 2.7 m/s (微风), precipitation 0.0 mm, no alerts"
)
GUANGZHOU_CMA = (
    "Guangzhou (China, Guangdong), 2025-04-26 15:00: 24.2°C, feels like 27.1°C, humidity 79%, "
    "wind Northeast Wind 1.3 m/s (Breeze), precipitation 0.0 mm, "
    "alerts: 广州市气象台发布雷雨大风黄色预警信号"
)


def open_meteo_handler(request: httpx.Request) -> httpx.Response:
    if request.url.host == "geocoding-api.open-meteo.com" and request.url.path == "/v1/search":
        place = GEOCODING.get(request.url.params["name"].casefold())
        body: dict[str, Any] = {"generationtime_ms": 0.5}
        if place:
            body["results"] = [place]
        return httpx.Response(200, json=body)
    if request.url.host == "api.open-meteo.com" and request.url.path == "/v1/forecast":
        current = FORECASTS[request.url.params["latitude"]]
        return httpx.Response(
            200,
            json={
                "latitude": 39.875,
                "longitude": 116.375,
                "generationtime_ms": 0.05,
                "utc_offset_seconds": 28800,
                "timezone": "Asia/Shanghai",
                "timezone_abbreviation": "GMT+8",
                "elevation": 47.0,
                "current_units": CURRENT_UNITS,
                "current": current,
            },
        )
    return httpx.Response(404)


def cma_handler(request: httpx.Request) -> httpx.Response:
    assert request.url.host == "weather.cma.cn"
    if request.url.path == "/api/autocomplete":
        stations = CMA_STATIONS.get(request.url.params["q"].casefold(), [])
        return httpx.Response(200, json={"code": 0, "data": stations})
    if request.url.path.startswith("/api/now/"):
        station = request.url.path.rsplit("/", 1)[1]
        if station not in CMA_NOW:
            return httpx.Response(200, json={"msg": "no data", "code": 1, "data": None})
        return httpx.Response(200, json={"msg": "success", "code": 0, "data": CMA_NOW[station]})
    return httpx.Response(404)


Handler = Callable[[httpx.Request], httpx.Response]


class Recorder:
    """A MockTransport around a handler that keeps every request."""

    def __init__(self, handler: Handler) -> None:
        self.requests: list[httpx.Request] = []
        self.handler = handler
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.handler(request)


@pytest.fixture(autouse=True)
def weather_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "REACT_AGENT_WEATHER_PROVIDER",
        "REACT_AGENT_OPEN_METEO_URL",
        "REACT_AGENT_OPEN_METEO_GEOCODING_URL",
        "REACT_AGENT_CMA_BASE_URL",
        "REACT_AGENT_HTTP_MAX_BYTES",
        "REACT_AGENT_HTTP_RETRIES",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REACT_AGENT_HTTP_BACKOFF", "0")
    monkeypatch.setenv("REACT_AGENT_HTTP_TIMEOUT", "2")


@pytest.fixture
def cma(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_WEATHER_PROVIDER", "cma")


async def ask(handler: Handler, location: str) -> tuple[str, Recorder]:
    recorder = Recorder(handler)
    with http.use_transport(recorder.transport):
        return await weather.ainvoke({"location": location}), recorder


# --- Open-Meteo --------------------------------------------------------------------------------


async def test_open_meteo_beijing() -> None:
    result, recorder = await ask(open_meteo_handler, "Beijing")
    assert result == BEIJING_OPEN_METEO
    geocode, forecast = recorder.requests
    assert dict(geocode.url.params) == {
        "name": "Beijing",
        "count": "1",
        "language": "en",
        "format": "json",
    }
    assert forecast.url.params["latitude"] == "39.9075"
    assert forecast.url.params["longitude"] == "116.39723"
    assert forecast.url.params["timezone"] == "auto"
    assert forecast.url.params["current"] == (
        "temperature_2m,apparent_temperature,relative_humidity_2m,wind_speed_10m,"
        "wind_direction_10m,precipitation,weather_code"
    )


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("北京", BEIJING_OPEN_METEO),
        ("  beijing ", BEIJING_OPEN_METEO),
        ("Guangzhou", GUANGZHOU_OPEN_METEO),
        ("广州", GUANGZHOU_OPEN_METEO),
    ],
)
async def test_open_meteo_english_and_chinese_names(location: str, expected: str) -> None:
    result, recorder = await ask(open_meteo_handler, location)
    assert result == expected
    assert recorder.requests[0].url.params["name"] == location.strip()


async def test_open_meteo_unknown_place_is_a_plain_result() -> None:
    result, recorder = await ask(open_meteo_handler, "Xyzzyville")
    assert result == "No weather station found for 'Xyzzyville'."
    assert len(recorder.requests) == 1


async def test_open_meteo_base_urls_are_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_OPEN_METEO_GEOCODING_URL", "http://geo.test/")
    monkeypatch.setenv("REACT_AGENT_OPEN_METEO_URL", "http://wx.test")

    def handler(request: httpx.Request) -> httpx.Response:
        host = {"geo.test": "geocoding-api.open-meteo.com", "wx.test": "api.open-meteo.com"}
        return open_meteo_handler(
            request.__class__(
                request.method, request.url.copy_with(host=host[request.url.host], scheme="https")
            )
        )

    result, recorder = await ask(handler, "Beijing")
    assert result == BEIJING_OPEN_METEO
    assert [str(r.url).split("?")[0] for r in recorder.requests] == [
        "http://geo.test/v1/search",
        "http://wx.test/v1/forecast",
    ]


async def test_open_meteo_missing_values_are_left_out() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/search":
            return open_meteo_handler(request)
        return httpx.Response(
            200,
            json={
                "current_units": {"temperature_2m": "°F"},
                "current": {"time": "2025-04-26T15:00", "temperature_2m": 74.1},
            },
        )

    result, _ = await ask(handler, "Beijing")
    assert result == "Beijing (China, Beijing), 2025-04-26 15:00: 74.1°F"


async def test_malformed_json_is_a_tool_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text='{"results": [')

    with pytest.raises(ToolException) as caught:
        await ask(handler, "Beijing")
    assert str(caught.value) == "Weather service (Open-Meteo geocoding) error: invalid JSON."


async def test_500_then_success_is_retried() -> None:
    failures = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/forecast" and not failures:
            failures.append(request)
            return httpx.Response(500, text="upstream error")
        return open_meteo_handler(request)

    result, recorder = await ask(handler, "Guangzhou")
    assert result == GUANGZHOU_OPEN_METEO
    assert [r.url.path for r in recorder.requests] == ["/v1/search", "/v1/forecast", "/v1/forecast"]


async def test_persistent_503_is_a_tool_error() -> None:
    with pytest.raises(ToolException) as caught:
        await ask(lambda request: httpx.Response(503), "Beijing")
    assert str(caught.value) == (
        "Weather service (Open-Meteo geocoding) error: HTTP 503 Service Unavailable."
    )


async def test_network_down_is_a_tool_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused")

    with pytest.raises(ToolException) as caught:
        await ask(handler, "Beijing")
    assert str(caught.value) == (
        "Weather service (Open-Meteo geocoding) unreachable: connection refused."
    )


async def test_timeout_is_a_tool_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_TIMEOUT", "0.05")
    monkeypatch.setenv("REACT_AGENT_HTTP_RETRIES", "2")

    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/forecast":
            await asyncio.sleep(3)
        return open_meteo_handler(request)

    recorder = Recorder(handler)  # type: ignore[arg-type]
    with http.use_transport(recorder.transport), pytest.raises(ToolException) as caught:
        await weather.ainvoke({"location": "Beijing"})
    assert str(caught.value) == "Weather service (Open-Meteo) timed out after 0.05 s."


async def test_oversize_response_is_a_tool_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_MAX_BYTES", "1024")

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/forecast":
            return httpx.Response(200, json={"current": {}, "padding": "x" * 5000})
        return open_meteo_handler(request)

    with pytest.raises(ToolException) as caught:
        await ask(handler, "Beijing")
    assert str(caught.value) == "Weather service (Open-Meteo) error: response larger than 1 KB."


def test_sync_invoke() -> None:
    recorder = Recorder(open_meteo_handler)
    with http.use_transport(recorder.transport):
        assert weather.invoke({"location": "Beijing"}) == BEIJING_OPEN_METEO


# --- CMA ---------------------------------------------------------------------------------------


@pytest.mark.usefixtures("cma")
@pytest.mark.parametrize(
    ("location", "station", "expected"),
    [
        ("北京", "54511", BEIJING_CMA),
        ("北京市", "54511", BEIJING_CMA),
        ("Beijing", "54511", BEIJING_CMA.replace("北京 (", "Beijing (", 1)),
        ("广州", "59287", GUANGZHOU_CMA),
        ("Guangzhou City", "59287", GUANGZHOU_CMA),
    ],
)
async def test_cma_picks_the_matching_station(location: str, station: str, expected: str) -> None:
    result, recorder = await ask(cma_handler, location)
    assert result == expected
    autocomplete, now = recorder.requests
    assert str(autocomplete.url).startswith("http://weather.cma.cn/api/autocomplete?q=")
    assert autocomplete.url.params["q"] == location
    assert now.url.path == f"/api/now/{station}"


@pytest.mark.usefixtures("cma")
async def test_cma_without_an_exact_match_takes_the_first_station() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/autocomplete":
            return httpx.Response(200, json={"code": 0, "data": ["54511|北京|Beijing|中国"]})
        return cma_handler(request)

    result, recorder = await ask(handler, "Peking")
    assert recorder.requests[1].url.path == "/api/now/54511"
    assert result.startswith("Beijing (中国, 北京), 2025-04-26 15:00: 23.4°C")


@pytest.mark.usefixtures("cma")
async def test_cma_unknown_place_is_a_plain_result() -> None:
    result, recorder = await ask(cma_handler, "Xyz")
    assert result == "No weather station found for 'Xyz'."
    assert len(recorder.requests) == 1


@pytest.mark.usefixtures("cma")
async def test_cma_error_code_is_a_tool_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/autocomplete":
            return httpx.Response(200, json={"code": 0, "data": ["99999|无站|Nowhere|中国"]})
        return cma_handler(request)

    with pytest.raises(ToolException) as caught:
        await ask(handler, "无站")
    assert str(caught.value) == (
        "Weather service (CMA) error: no current conditions for station 99999 (no data)."
    )


@pytest.mark.usefixtures("cma")
async def test_cma_base_url_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_CMA_BASE_URL", "http://cma.test/")

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.host == "cma.test"
        return cma_handler(
            request.__class__(request.method, request.url.copy_with(host="weather.cma.cn"))
        )

    result, _ = await ask(handler, "北京")
    assert result == BEIJING_CMA


@pytest.mark.usefixtures("cma")
async def test_cma_malformed_json() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/autocomplete":
            return cma_handler(request)
        return httpx.Response(200, text="{'msg': 'success'")

    with pytest.raises(ToolException) as caught:
        await ask(handler, "北京")
    assert str(caught.value) == "Weather service (CMA) error: invalid JSON."


@pytest.mark.usefixtures("cma")
async def test_cma_500_then_success() -> None:
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if seen.count("/api/autocomplete") == 1 and request.url.path == "/api/autocomplete":
            return httpx.Response(500)
        return cma_handler(request)

    result, _ = await ask(handler, "广州")
    assert result == GUANGZHOU_CMA
    assert seen == ["/api/autocomplete", "/api/autocomplete", "/api/now/59287"]


@pytest.mark.usefixtures("cma")
async def test_cma_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_TIMEOUT", "0.05")
    monkeypatch.setenv("REACT_AGENT_HTTP_RETRIES", "1")

    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(3)
        return httpx.Response(200)

    with http.use_transport(httpx.MockTransport(handler)), pytest.raises(ToolException) as caught:
        await weather.ainvoke({"location": "北京"})
    assert str(caught.value) == "Weather service (CMA) timed out after 0.05 s."


@pytest.mark.usefixtures("cma")
async def test_cma_oversize(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_MAX_BYTES", "2048")

    def handler(request: httpx.Request) -> httpx.Response:
        stations = [f"{i:05d}|站{i}|Station {i}|中国" for i in range(500)]
        return httpx.Response(200, content=json.dumps({"code": 0, "data": stations}).encode())

    with pytest.raises(ToolException) as caught:
        await ask(handler, "北京")
    assert str(caught.value) == "Weather service (CMA) error: response larger than 2 KB."


# --- input and configuration -------------------------------------------------------------------


async def test_blank_location_is_refused() -> None:
    with pytest.raises(ToolException) as caught:
        await weather.ainvoke({"location": "   "})
    assert str(caught.value) == "Give a place name, e.g. 'Beijing', '北京' or 'Guangzhou'."


async def test_unknown_provider_is_a_tool_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_WEATHER_PROVIDER", "accuweather")
    with pytest.raises(ToolException) as caught:
        await weather.ainvoke({"location": "Beijing"})
    assert str(caught.value) == (
        "REACT_AGENT_WEATHER_PROVIDER must be one of open-meteo, cma, not 'accuweather'."
    )


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (0, "clear sky"),
        (3, "overcast"),
        (63, "moderate rain"),
        (95, "thunderstorm"),
        (42, "weather code 42"),
        (None, None),
    ],
)
def test_weather_codes(code: int | None, words: str | None) -> None:
    assert describe_weather_code(code) == words


@pytest.mark.parametrize(
    ("degrees", "word"),
    [(0, "North"), (31, "Northeast"), (216, "Southwest"), (350, "North"), (270, "West")],
)
def test_compass(degrees: float, word: str) -> None:
    assert compass(degrees) == word
