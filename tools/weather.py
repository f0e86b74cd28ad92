"""Current weather for a place, from Open-Meteo (global, no key) or the China Meteorological
Administration (weather.cma.cn, stations in China).

`REACT_AGENT_WEATHER_PROVIDER` picks the provider: `open-meteo` (default) or `cma`. Base URLs:
`REACT_AGENT_OPEN_METEO_GEOCODING_URL` (default https://geocoding-api.open-meteo.com),
`REACT_AGENT_OPEN_METEO_URL` (default https://api.open-meteo.com) and `REACT_AGENT_CMA_BASE_URL`
(default http://weather.cma.cn). Each observation is one compact line, never raw JSON; a place
no provider knows is a normal result ("No weather station found for 'Xyz'."), network and
service failures are `ToolException`s.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, Field

from tools import http_client as http
from tools.support.blocking import run_sync
from tools.support.settings import env_str

DEFAULT_OPEN_METEO_URL = "https://api.open-meteo.com"
DEFAULT_OPEN_METEO_GEOCODING_URL = "https://geocoding-api.open-meteo.com"
DEFAULT_CMA_BASE_URL = "http://weather.cma.cn"
PROVIDERS = ("open-meteo", "cma")
MAX_LOCATION_CHARS = 100

OPEN_METEO_CURRENT = (
    "temperature_2m,apparent_temperature,relative_humidity_2m,wind_speed_10m,"
    "wind_direction_10m,precipitation,weather_code"
)

# WMO weather interpretation codes, as documented by Open-Meteo.
WMO_CODES: dict[int, str] = {
    0: "clear sky",
    1: "mainly clear",
    2: "partly cloudy",
    3: "overcast",
    45: "fog",
    48: "depositing rime fog",
    51: "light drizzle",
    53: "moderate drizzle",
    55: "dense drizzle",
    56: "light freezing drizzle",
    57: "dense freezing drizzle",
    61: "slight rain",
    63: "moderate rain",
    65: "heavy rain",
    66: "light freezing rain",
    67: "heavy freezing rain",
    71: "slight snowfall",
    73: "moderate snowfall",
    75: "heavy snowfall",
    77: "snow grains",
    80: "slight rain showers",
    81: "moderate rain showers",
    82: "violent rain showers",
    85: "slight snow showers",
    86: "heavy snow showers",
    95: "thunderstorm",
    96: "thunderstorm with slight hail",
    99: "thunderstorm with heavy hail",
}

_COMPASS = ("North", "Northeast", "East", "Southeast", "South", "Southwest", "West", "Northwest")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def describe_weather_code(code: Any) -> str | None:
    """'partly cloudy' for 2; None when there is no code; 'weather code N' when unknown."""
    if not isinstance(code, int | float) or isinstance(code, bool):
        return None
    return WMO_CODES.get(int(code), f"weather code {int(code)}")


def compass(degrees: Any) -> str | None:
    """The 8-point compass word for a wind direction in degrees (216 -> 'Southwest')."""
    if not isinstance(degrees, int | float) or isinstance(degrees, bool):
        return None
    return _COMPASS[round((float(degrees) % 360) / 45) % 8]


def _number(value: Any, digits: int) -> str | None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return f"{float(value):.{digits}f}"


def _not_found(location: str) -> str:
    return f"No weather station found for {location!r}."


def _provider() -> str:
    raw = env_str("REACT_AGENT_WEATHER_PROVIDER", "open-meteo")
    name = raw.lower().replace("_", "-")
    if name == "openmeteo":
        name = "open-meteo"
    if name not in PROVIDERS:
        raise ToolException(
            f"REACT_AGENT_WEATHER_PROVIDER must be one of {', '.join(PROVIDERS)}, not {raw!r}."
        )
    return name


# --- Open-Meteo --------------------------------------------------------------------------------


async def _open_meteo(location: str) -> str:
    geocoding = env_str("REACT_AGENT_OPEN_METEO_GEOCODING_URL", DEFAULT_OPEN_METEO_GEOCODING_URL)
    forecast = env_str("REACT_AGENT_OPEN_METEO_URL", DEFAULT_OPEN_METEO_URL)
    async with http.make_client() as client:
        try:
            found = await http.get_json(
                f"{geocoding.rstrip('/')}/v1/search",
                params={"name": location, "count": 1, "language": "en", "format": "json"},
                client=client,
            )
        except http.HTTPFailure as exc:
            raise ToolException(exc.sentence("Weather service (Open-Meteo geocoding)")) from None
        results = found.get("results") if isinstance(found, dict) else None
        if not isinstance(results, list) or not results or not isinstance(results[0], dict):
            return _not_found(location)
        place = results[0]
        latitude, longitude = place.get("latitude"), place.get("longitude")
        if _number(latitude, 4) is None or _number(longitude, 4) is None:
            return _not_found(location)
        try:
            data = await http.get_json(
                f"{forecast.rstrip('/')}/v1/forecast",
                params={
                    "latitude": latitude,
                    "longitude": longitude,
                    "current": OPEN_METEO_CURRENT,
                    "wind_speed_unit": "ms",
                    "timezone": "auto",
                },
                client=client,
            )
        except http.HTTPFailure as exc:
            raise ToolException(exc.sentence("Weather service (Open-Meteo)")) from None
    current = data.get("current") if isinstance(data, dict) else None
    if not isinstance(current, dict):
        raise ToolException(
            "Weather service (Open-Meteo) error: the response has no current conditions."
        )
    units = data.get("current_units") if isinstance(data.get("current_units"), dict) else {}
    return _format_open_meteo(place, current, units, data.get("timezone_abbreviation"))


def _format_open_meteo(
    place: dict[str, Any], current: dict[str, Any], units: dict[str, Any], zone: Any
) -> str:
    name = str(place.get("name") or "?")
    region = []
    for key in ("country", "admin1"):
        value = place.get(key)
        if isinstance(value, str) and value and value not in region:
            region.append(value)
    label = f"{name} ({', '.join(region)})" if region else name
    when = str(current.get("time") or "").replace("T", " ")
    if when and isinstance(zone, str) and zone:
        when = f"{when} {zone}"

    def unit(key: str, default: str) -> str:
        value = units.get(key)
        return value if isinstance(value, str) and value else default

    parts: list[str] = []
    condition = describe_weather_code(current.get("weather_code"))
    if condition:
        parts.append(condition)
    temperature = _number(current.get("temperature_2m"), 1)
    if temperature is not None:
        parts.append(f"{temperature}{unit('temperature_2m', '°C')}")
    feels = _number(current.get("apparent_temperature"), 1)
    if feels is not None:
        parts.append(f"feels like {feels}{unit('apparent_temperature', '°C')}")
    humidity = _number(current.get("relative_humidity_2m"), 0)
    if humidity is not None:
        parts.append(f"humidity {humidity}{unit('relative_humidity_2m', '%')}")
    speed = _number(current.get("wind_speed_10m"), 1)
    if speed is not None:
        direction = compass(current.get("wind_direction_10m"))
        wind = f"{direction} {speed}" if direction else speed
        parts.append(f"wind {wind} {unit('wind_speed_10m', 'm/s')}")
    precipitation = _number(current.get("precipitation"), 1)
    if precipitation is not None:
        parts.append(f"precipitation {precipitation} {unit('precipitation', 'mm')}")
    head = f"{label}, {when}" if when else label
    return f"{head}: {', '.join(parts) or 'no current measurements'}"


# --- China Meteorological Administration ----------------------------------------------------


def _pick_station(location: str, entries: list[Any]) -> tuple[str, str, str] | None:
    """(id, Chinese name, English name) of the best autocomplete entry, or None.

    An entry is 'id|中文名|English name|...'. A match on the Chinese name or the English name
    (any case, with or without '市' / ' city') wins; otherwise the first entry.
    """
    stations = []
    for entry in entries:
        fields = [f.strip() for f in str(entry).split("|")]
        if fields and fields[0]:
            fields += ["", ""]
            stations.append((fields[0], fields[1], fields[2]))
    if not stations:
        return None
    wanted = _bare_name(location)
    for station in stations:
        _, chinese, english = station
        if wanted and wanted in (_bare_name(chinese), _bare_name(english)):
            return station
    return stations[0]


def _bare_name(name: str) -> str:
    """'北京市' -> '北京', 'Beijing City' -> 'beijing': the forms a station name is matched in."""
    bare = name.strip().casefold()
    for suffix in ("市", " city"):
        if bare.endswith(suffix) and len(bare) > len(suffix):
            bare = bare[: -len(suffix)].strip()
    return bare


async def _cma(location: str) -> str:
    base = env_str("REACT_AGENT_CMA_BASE_URL", DEFAULT_CMA_BASE_URL).rstrip("/")
    service = "Weather service (CMA)"
    async with http.make_client() as client:
        try:
            found = await http.get_json(
                f"{base}/api/autocomplete", params={"q": location}, client=client
            )
        except http.HTTPFailure as exc:
            raise ToolException(exc.sentence(service)) from None
        if not isinstance(found, dict):
            raise ToolException(f"{service} error: unexpected autocomplete response.")
        if found.get("code") not in (0, "0"):
            raise ToolException(f"{service} error: autocomplete answered code {found.get('code')}.")
        entries = found.get("data")
        station = _pick_station(location, entries if isinstance(entries, list) else [])
        if station is None:
            return _not_found(location)
        station_id, chinese, english = station
        try:
            data = await http.get_json(
                f"{base}/api/now/{quote(station_id, safe='')}", client=client
            )
        except http.HTTPFailure as exc:
            raise ToolException(exc.sentence(service)) from None
    if not isinstance(data, dict) or data.get("code") not in (0, "0"):
        message = data.get("msg") if isinstance(data, dict) else None
        raise ToolException(
            f"{service} error: no current conditions for station {station_id}"
            f"{f' ({message})' if message else ''}."
        )
    body = data.get("data") if isinstance(data.get("data"), dict) else {}
    prefer_english = not _CJK.search(location) and bool(english)
    return _format_cma(body, chinese, english if prefer_english else "")


def _format_cma(body: dict[str, Any], chinese: str, english: str) -> str:
    place = body.get("location") if isinstance(body.get("location"), dict) else {}
    name = str(place.get("name") or chinese or "?")
    path = [p.strip() for p in str(place.get("path") or "").split(",") if p.strip()]
    if path and path[-1] in (name, chinese, english):
        path.pop()
    label = english or name
    label = f"{label} ({', '.join(path)})" if path else label
    when = str(body.get("lastUpdate") or "").replace("/", "-")
    now = body.get("now") if isinstance(body.get("now"), dict) else {}
    parts: list[str] = []
    temperature = _number(now.get("temperature"), 1)
    if temperature is not None:
        parts.append(f"{temperature}°C")
    feels = _number(now.get("feelst"), 1)
    if feels is not None:
        parts.append(f"feels like {feels}°C")
    humidity = _number(now.get("humidity"), 0)
    if humidity is not None:
        parts.append(f"humidity {humidity}%")
    speed = _number(now.get("windSpeed"), 1)
    if speed is not None:
        direction = str(now.get("windDirection") or "").strip()
        scale = str(now.get("windScale") or "").strip()
        wind = f"wind {direction} {speed} m/s" if direction else f"wind {speed} m/s"
        parts.append(f"{wind} ({scale})" if scale else wind)
    precipitation = _number(now.get("precipitation"), 1)
    if precipitation is not None:
        parts.append(f"precipitation {precipitation} mm")
    alarms = body.get("alarm")
    if isinstance(alarms, list) and alarms:
        parts.append(f"alerts: {'; '.join(_alarm_text(a) for a in alarms)}")
    else:
        parts.append("no alerts")
    head = f"{label}, {when}" if when else label
    return f"{head}: {', '.join(parts)}"


def _alarm_text(alarm: Any) -> str:
    if isinstance(alarm, dict):
        for key in ("title", "headline", "name"):
            if alarm.get(key):
                return str(alarm[key]).strip()
        kind = " ".join(str(alarm.get(k, "")).strip() for k in ("signaltype", "signallevel"))
        if kind.strip():
            return kind.strip()
    return str(alarm).strip()


# --- the tool ----------------------------------------------------------------------------------


async def current_weather(location: str) -> str:
    """The current conditions at `location` from the configured provider, as one line."""
    place = " ".join(location.split())
    if not place:
        raise ToolException("Give a place name, e.g. 'Beijing', '北京' or 'Guangzhou'.")
    if len(place) > MAX_LOCATION_CHARS:
        raise ToolException(f"The place name is longer than {MAX_LOCATION_CHARS} characters.")
    if _provider() == "cma":
        return await _cma(place)
    return await _open_meteo(place)


class WeatherInput(BaseModel):
    location: str = Field(
        description=(
            "A city or place name in English or Chinese, e.g. 'Beijing', '北京', 'Guangzhou'."
        )
    )


def _weather(location: str) -> str:
    return run_sync(lambda: current_weather(location))


weather = StructuredTool.from_function(
    func=_weather,
    coroutine=current_weather,
    name="weather",
    description=(
        "Get the current weather (temperature, feels-like, humidity, wind, precipitation) for "
        "one city or place, named in English or Chinese. Use it whenever the user asks about "
        "weather or conditions right now; call it once per place. It has no forecasts."
    ),
    args_schema=WeatherInput,
)
