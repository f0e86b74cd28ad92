"""Place names people (and small models) write, mapped to IANA time zones.

A small model asked "what time is it in Mumbai?" calls `current_time` with "Mumbai", "São Paulo",
"New Zealand", "Moscow/Moscow" or "Hawaii": none of them an IANA name, and several not even the
last part of one. The tool should resolve what a person means, so this module holds a table of
cities, countries, regions, time-zone words and abbreviations (English and simplified Chinese)
and `zone_for_place`, which reads a place out of such text. Pure data and pure functions; the
list of zones on disk is read lazily, on first use.
"""

from __future__ import annotations

import functools
import re
import unicodedata
import zoneinfo

# Zone -> the names people use for places in it, "|"-separated. Only places that are not already
# the last part of an IANA name need to be here (a few are repeated where the table reads better).
CITIES_BY_ZONE: dict[str, str] = {
    "Asia/Kolkata": (
        "Mumbai|Bombay|Delhi|New Delhi|Bangalore|Bengaluru|Chennai|Madras|Hyderabad|Pune|"
        "Ahmedabad|Jaipur|Goa|Calcutta|孟买|新德里|德里|班加罗尔|加尔各答|金奈"
    ),
    "Asia/Shanghai": (
        "Beijing|Peking|Shenzhen|Guangzhou|Canton|Hangzhou|Chengdu|Wuhan|Xi'an|Nanjing|Tianjin|Chongqing|"
        "Suzhou|Qingdao|Xiamen|Dalian|Shenyang|Harbin|Kunming|Changsha|Zhengzhou|Lhasa|"
        "上海|北京|广州|深圳|杭州|南京|成都|武汉|西安|天津|重庆|苏州|青岛|厦门|"
        "大连|沈阳|哈尔滨|昆明|长沙|郑州|拉萨"
    ),
    "Asia/Hong_Kong": "Kowloon|香港",
    "Asia/Macau": "Macao|澳门",
    "Asia/Taipei": "Kaohsiung|Taichung|台北|臺北|高雄",
    "Asia/Tokyo": (
        "Osaka|Kyoto|Yokohama|Nagoya|Sapporo|Fukuoka|Kobe|Hiroshima|Okinawa|Naha|"
        "东京|東京|大阪|京都|横滨"
    ),
    "Asia/Seoul": "Busan|Pusan|Incheon|Daegu|首尔|汉城|釜山|서울|부산",
    "Asia/Pyongyang": "平壤",
    "Asia/Bangkok": "Phuket|Chiang Mai|Pattaya|曼谷|普吉",
    "Asia/Ho_Chi_Minh": "Hanoi|Saigon|Ho Chi Minh City|Da Nang|河内|胡志明|西贡",
    "Asia/Singapore": "新加坡",
    "Asia/Kuala_Lumpur": "KL|Penang|吉隆坡",
    "Asia/Jakarta": "Bandung|Surabaya|Yogyakarta|雅加达",
    "Asia/Makassar": "Bali|Denpasar",
    "Asia/Manila": "Cebu|Quezon City|Davao|马尼拉",
    "Asia/Dubai": "Abu Dhabi|Sharjah|迪拜|阿布扎比",
    "Asia/Qatar": "Doha|多哈",
    "Asia/Riyadh": "Jeddah|Mecca|Makkah|Medina|利雅得",
    "Asia/Tehran": "德黑兰",
    "Asia/Jerusalem": "Tel Aviv|Haifa|耶路撒冷|特拉维夫",
    "Asia/Karachi": "Lahore|Islamabad|Rawalpindi|Faisalabad|卡拉奇|伊斯兰堡",
    "Asia/Dhaka": "Chittagong|达卡",
    "Asia/Kathmandu": "加德满都",
    "Asia/Yangon": "Rangoon|Mandalay|仰光",
    "Europe/Istanbul": "Ankara|Izmir|Antalya|伊斯坦布尔|安卡拉",
    "Europe/Moscow": (
        "St Petersburg|Sankt Peterburg|Leningrad|Kazan|Nizhny Novgorod|Sochi|"
        "莫斯科|圣彼得堡|Москва|Санкт-Петербург"
    ),
    "Europe/London": (
        "Edinburgh|Manchester|Birmingham|Liverpool|Glasgow|Leeds|Bristol|Cardiff|Belfast|"
        "Oxford|Cambridge|Newcastle|伦敦|爱丁堡|曼彻斯特"
    ),
    "Europe/Dublin": "Cork|Galway|都柏林",
    "Europe/Paris": "Marseille|Lyon|Toulouse|Nice|Bordeaux|Strasbourg|Lille|Nantes|巴黎",
    "Europe/Berlin": (
        "Munich|München|Frankfurt|Hamburg|Cologne|Köln|Stuttgart|Düsseldorf|Dresden|Leipzig|"
        "Hanover|Nuremberg|Bonn|柏林|慕尼黑|法兰克福|汉堡"
    ),
    "Europe/Rome": (
        "Milan|Milano|Naples|Napoli|Turin|Torino|Florence|Firenze|Venice|Venezia|Bologna|"
        "Palermo|Genoa|罗马|米兰|威尼斯|佛罗伦萨"
    ),
    "Europe/Madrid": "Barcelona|Valencia|Seville|Sevilla|Bilbao|Malaga|马德里|巴塞罗那",
    "Europe/Lisbon": "Porto|Oporto|里斯本",
    "Europe/Amsterdam": "Rotterdam|The Hague|Hague|Den Haag|Utrecht|Eindhoven|阿姆斯特丹",
    "Europe/Brussels": "Antwerp|Ghent|Bruges|布鲁塞尔",
    "Europe/Zurich": "Zurich|Geneva|Genève|Basel|Bern|Lausanne|苏黎世|日内瓦",
    "Europe/Vienna": "Salzburg|Innsbruck|维也纳",
    "Europe/Stockholm": "Gothenburg|Göteborg|Malmö|斯德哥尔摩",
    "Europe/Oslo": "Bergen|奥斯陆",
    "Europe/Copenhagen": "København|Aarhus|哥本哈根",
    "Europe/Helsinki": "Espoo|Tampere|赫尔辛基",
    "Europe/Warsaw": "Krakow|Cracow|Gdansk|Wroclaw|Łódź|Poznan|华沙",
    "Europe/Prague": "Praha|Brno|布拉格",
    "Europe/Budapest": "布达佩斯",
    "Europe/Athens": "Thessaloniki|雅典",
    "Europe/Kyiv": "Kharkiv|Odesa|Odessa|Lviv|Dnipro|基辅",
    "Europe/Bucharest": "布加勒斯特",
    "Africa/Cairo": "Alexandria|Giza|开罗",
    "Africa/Johannesburg": "Cape Town|Durban|Pretoria|约翰内斯堡|开普敦",
    "Africa/Nairobi": "Mombasa|内罗毕",
    "Africa/Lagos": "Abuja|Ibadan|拉各斯",
    "Africa/Casablanca": "Rabat|Marrakesh|Marrakech|Fez|卡萨布兰卡",
    "Africa/Addis_Ababa": "亚的斯亚贝巴",
    "America/New_York": (
        "Washington|Washington DC|DC|NYC|Manhattan|Brooklyn|Boston|Philadelphia|Miami|Atlanta|"
        "Baltimore|Pittsburgh|Charlotte|Orlando|Tampa|Cleveland|Columbus|Cincinnati|Buffalo|"
        "Newark|Raleigh|Richmond|Jacksonville|纽约|华盛顿|波士顿|费城|迈阿密|亚特兰大"
    ),
    "America/Chicago": (
        "Houston|Dallas|San Antonio|Austin|Minneapolis|St Louis|Kansas City|New Orleans|"
        "Milwaukee|Nashville|Memphis|Oklahoma City|Fort Worth|芝加哥|休斯顿|达拉斯"
    ),
    "America/Denver": "Salt Lake City|Albuquerque|Colorado Springs|丹佛",
    "America/Phoenix": "Tucson|Scottsdale|凤凰城",
    "America/Los_Angeles": (
        "San Francisco|SF|Seattle|San Diego|Las Vegas|San Jose|Portland|Sacramento|Oakland|"
        "Silicon Valley|Palo Alto|Hollywood|LA|洛杉矶|旧金山|西雅图|拉斯维加斯|圣迭戈|圣何塞"
    ),
    "America/Anchorage": "Fairbanks",
    "Pacific/Honolulu": "Maui|Waikiki|檀香山|火奴鲁鲁",
    "America/Toronto": "Ottawa|Montreal|Montréal|Quebec City|Québec|多伦多|蒙特利尔|渥太华",
    "America/Vancouver": "温哥华",
    "America/Edmonton": "Calgary|卡尔加里",
    "America/Mexico_City": "Guadalajara|Monterrey|Puebla|墨西哥城",
    "America/Sao_Paulo": (
        "Rio de Janeiro|Rio|Brasilia|Brasília|Belo Horizonte|Curitiba|Porto Alegre|"
        "圣保罗|里约热内卢|巴西利亚"
    ),
    "America/Argentina/Buenos_Aires": "Cordoba|Córdoba|Rosario|布宜诺斯艾利斯",
    "America/Santiago": "Valparaiso|Valparaíso",
    "America/Lima": "利马",
    "America/Bogota": "Medellin|Medellín|Cali|波哥大",
    "America/Caracas": "加拉加斯",
    "America/Havana": "哈瓦那",
    "Australia/Sydney": "Canberra|悉尼|堪培拉",
    "Australia/Melbourne": "墨尔本",
    "Australia/Brisbane": "Gold Coast|布里斯班",
    "Australia/Perth": "珀斯",
    "Australia/Adelaide": "阿德莱德",
    "Pacific/Auckland": "Wellington|Christchurch|奥克兰|惠灵顿",
}

# Countries, states and regions. A country that spans several zones gets its capital's or most
# populous zone: USA -> New York (Eastern: the capital and the most people), Canada -> Toronto,
# Australia -> Sydney, Brazil -> São Paulo, Russia -> Moscow, Indonesia -> Jakarta, Mexico ->
# Mexico City. "Georgia" (country or US state) is left out.
REGIONS_BY_ZONE: dict[str, str] = {
    "Asia/Tokyo": "Japan|日本",
    "Asia/Shanghai": "China|PRC|Mainland China|中国|中国大陆|中华人民共和国",
    "Asia/Taipei": "Taiwan|台湾|臺灣",
    "Asia/Seoul": "Korea|South Korea|Republic of Korea|ROK|韩国|南韩|한국",
    "Asia/Pyongyang": "North Korea|DPRK|朝鲜",
    "Asia/Kolkata": "India|印度",
    "Asia/Karachi": "Pakistan|巴基斯坦",
    "Asia/Dhaka": "Bangladesh|孟加拉|孟加拉国",
    "Asia/Kathmandu": "Nepal|尼泊尔",
    "Asia/Colombo": "Sri Lanka|斯里兰卡",
    "Asia/Bangkok": "Thailand|泰国",
    "Asia/Ho_Chi_Minh": "Vietnam|Viet Nam|越南",
    "Asia/Kuala_Lumpur": "Malaysia|马来西亚",
    "Asia/Jakarta": "Indonesia|Java|印度尼西亚|印尼",
    "Asia/Manila": "Philippines|菲律宾",
    "Asia/Yangon": "Myanmar|Burma|缅甸",
    "Asia/Phnom_Penh": "Cambodia|柬埔寨",
    "Asia/Dubai": "UAE|United Arab Emirates|Emirates|阿联酋",
    "Asia/Riyadh": "Saudi Arabia|Saudi|KSA|沙特|沙特阿拉伯",
    "Asia/Tehran": "Iran|伊朗",
    "Asia/Baghdad": "Iraq|伊拉克",
    "Asia/Jerusalem": "Israel|以色列",
    "Asia/Kabul": "Afghanistan|阿富汗",
    "Europe/Istanbul": "Turkey|Türkiye|土耳其",
    "Europe/Moscow": "Russia|Russian Federation|俄罗斯|Россия",
    "Europe/Kyiv": "Ukraine|乌克兰",
    "Europe/London": (
        "United Kingdom|UK|Britain|Great Britain|British|England|Scotland|Wales|"
        "Northern Ireland|英国|英格兰|苏格兰"
    ),
    "Europe/Dublin": "Ireland|Eire|爱尔兰",
    "Europe/Paris": "France|法国",
    "Europe/Berlin": "Germany|Deutschland|德国",
    "Europe/Rome": "Italy|Italia|意大利",
    "Europe/Madrid": "Spain|España|西班牙",
    "Europe/Lisbon": "Portugal|葡萄牙",
    "Europe/Amsterdam": "Netherlands|The Netherlands|Holland|荷兰",
    "Europe/Brussels": "Belgium|比利时",
    "Europe/Zurich": "Switzerland|瑞士",
    "Europe/Vienna": "Austria|奥地利",
    "Europe/Stockholm": "Sweden|瑞典",
    "Europe/Oslo": "Norway|挪威",
    "Europe/Copenhagen": "Denmark|丹麦",
    "Europe/Helsinki": "Finland|芬兰",
    "Europe/Warsaw": "Poland|波兰",
    "Europe/Prague": "Czechia|Czech Republic|捷克",
    "Europe/Budapest": "Hungary|匈牙利",
    "Europe/Athens": "Greece|希腊",
    "Europe/Bucharest": "Romania|罗马尼亚",
    "Atlantic/Reykjavik": "Iceland|冰岛",
    "Africa/Cairo": "Egypt|埃及",
    "Africa/Johannesburg": "South Africa|南非",
    "Africa/Nairobi": "Kenya|肯尼亚",
    "Africa/Lagos": "Nigeria|尼日利亚",
    "Africa/Casablanca": "Morocco|摩洛哥",
    "Africa/Addis_Ababa": "Ethiopia|埃塞俄比亚",
    "America/New_York": (
        "USA|US|United States|United States of America|America|East Coast|Florida|"
        "Massachusetts|Pennsylvania|New Jersey|Virginia|North Carolina|Ohio|美国"
    ),
    "America/Chicago": "Texas|Illinois|Minnesota|Louisiana|Midwest",
    "America/Denver": "Colorado|Utah",
    "America/Phoenix": "Arizona",
    "America/Los_Angeles": "California|West Coast|Washington State|Oregon|Nevada|加州|加利福尼亚",
    "America/Anchorage": "Alaska|阿拉斯加",
    "Pacific/Honolulu": "Hawaii|夏威夷",
    "America/Toronto": "Canada|Ontario|加拿大",
    "America/Vancouver": "British Columbia|BC",
    "America/Mexico_City": "Mexico|México|墨西哥",
    "America/Sao_Paulo": "Brazil|Brasil|巴西",
    "America/Argentina/Buenos_Aires": "Argentina|阿根廷",
    "America/Santiago": "Chile|智利",
    "America/Lima": "Peru|秘鲁",
    "America/Bogota": "Colombia|哥伦比亚",
    "America/Caracas": "Venezuela|委内瑞拉",
    "America/Havana": "Cuba|古巴",
    "Australia/Sydney": "Australia|New South Wales|NSW|澳大利亚|澳洲",
    "Australia/Brisbane": "Queensland",
    "Australia/Perth": "Western Australia",
    "Pacific/Auckland": "New Zealand|NZ|Aotearoa|新西兰",
}

# Time-zone words and abbreviations that are unambiguous enough. Left out on purpose: CST (US
# Central, China or Cuba), AST (Atlantic or Arabia), GST (Gulf or South Georgia), SST, MST (tzdata
# has an "MST" zone: Arizona, no daylight saving). EST maps to New York, not tzdata's fixed "EST",
# so that daylight saving is right. IST is India's (not Ireland's or Israel's); BST is Britain's.
ABBREVIATIONS_BY_ZONE: dict[str, str] = {
    "UTC": "UTC|GMT|Zulu|Coordinated Universal|Universal|Greenwich Mean",
    "America/Los_Angeles": "Pacific|Pacific Time|PT|PST|PDT",
    "America/New_York": "Eastern|Eastern Time|ET|EST|EDT",
    "America/Chicago": "Central|Central Time|CT|CDT",
    "America/Denver": "Mountain|Mountain Time|MT|MDT",
    "America/Anchorage": "Alaska Time|AKST|AKDT",
    "Pacific/Honolulu": "Hawaii Time|HST",
    "America/Halifax": "Atlantic Time|ADT",
    "Asia/Tokyo": "JST",
    "Asia/Seoul": "KST",
    "Asia/Kolkata": "IST|Indian",
    "Asia/Shanghai": "Beijing Time|北京时间",
    "Asia/Hong_Kong": "HKT",
    "Asia/Singapore": "SGT",
    "Asia/Jakarta": "WIB",
    "Asia/Bangkok": "ICT|Indochina",
    "Europe/London": "BST|UK Time",
    "Europe/Paris": "CET|CEST|Central European|MEZ",
    "Europe/Athens": "EET|EEST|Eastern European",
    "Europe/Lisbon": "WET|Western European",
    "Europe/Moscow": "MSK",
    "Australia/Sydney": "AEST|AEDT|Australian Eastern",
    "Australia/Adelaide": "ACST|ACDT",
    "Australia/Perth": "AWST",
    "Pacific/Auckland": "NZST|NZDT|NZT",
    "Africa/Johannesburg": "SAST",
    "Africa/Lagos": "WAT",
    "Africa/Nairobi": "EAT",
    "America/Sao_Paulo": "BRT",
    "America/Argentina/Buenos_Aires": "ART",
}

_DELETED = re.compile(r"['’‘`´.]")  # Xi'an -> xian, St. -> st, D.C. -> dc
_SEPARATORS = "/,;|()\\[\\]、"
_NOT_KEPT = re.compile(rf"[^\w{_SEPARATORS}]+|_")  # hyphens, underscores, punctuation -> space
_SAINT = re.compile(r"\bsaint\b")
_CJK = "\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_GAP = re.compile(rf"(?<=[{_CJK}]) (?=[{_CJK}])")
_PIECE = re.compile(rf"([^{_SEPARATORS}]*)([{_SEPARATORS}]?)")


def _names(text: str) -> list[str]:
    return text.split("|")


# Words around a place that are not part of it: "time in Berlin", "Tokyo time now".
_FILLER_WORDS = frozenset(
    _names(
        "time|times|now|current|currently|zone|timezone|tz|in|the|city|local|what|whats|is|it|"
        "at|right|today|date|day|clock|standard|daylight|summer|saving|savings|please|of|for"
    )
)
# Chinese around a place (no spaces to split on): stripped from either end, "北京市" -> 北京.
_CJK_FILLERS = _names(
    "现在|目前|当前|请问|今天|时间|时区|几点了|几点|几号|日期|星期几|标准|是|的|在|市|吗|呢|了"
)
_CJK_ALTERNATIVES = "|".join(sorted(_CJK_FILLERS, key=len, reverse=True))
_CJK_AROUND = re.compile(rf"^(?:{_CJK_ALTERNATIVES})+|(?:{_CJK_ALTERNATIVES})+$")
# IANA areas: "Europe" in "Europe/Atlantis" is not a place asked about.
_AREAS = frozenset(
    _names(
        "africa|america|antarctica|arctic|asia|atlantic|australia|brazil|canada|chile|etc|"
        "europe|indian|mexico|pacific|us"
    )
)
# Zone areas a person's city most likely means; the legacy ones (US/, Canada/, ...) come last.
_CANONICAL_AREAS = ("Africa/", "America/", "Antarctica/", "Arctic/", "Asia/", "Atlantic/")
_CANONICAL_AREAS += ("Australia/", "Europe/", "Indian/", "Pacific/")


def fold(text: str) -> str:
    """One key for the spellings of a name: 'São Paulo', 'sao_paulo', 'SAO-PAULO' -> 'sao paulo'.

    Accents and case go, hyphens and underscores become spaces, apostrophes and dots go, 'saint'
    becomes 'st', spaces between Chinese characters go; '/', ',', '(' and such are kept."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(char for char in text if not unicodedata.combining(char)).casefold()
    text = _SAINT.sub("st", _NOT_KEPT.sub(" ", _DELETED.sub("", text)))
    return _CJK_GAP.sub("", " ".join(text.split()))


def _flatten(*groups: dict[str, str]) -> dict[str, str]:
    table: dict[str, str] = {}
    for group in groups:
        for zone, names in group.items():
            for name in _names(names):
                table.setdefault(fold(name), zone)
    return table


CITIES = _flatten(CITIES_BY_ZONE)
REGIONS = _flatten(REGIONS_BY_ZONE, ABBREVIATIONS_BY_ZONE)
PLACES = {**REGIONS, **CITIES}  # every folded name in the tables -> its zone


@functools.cache
def _zone_index() -> dict[str, str]:
    """Folded full IANA names ('america/sao paulo') and last parts ('sao paulo') -> zone name.

    Zones with digits (Etc/GMT+8 is UTC-8: a trap) and top-level legacy names are left out;
    for a shared last part the canonical areas win over the legacy ones (US/Pacific)."""
    names = sorted(
        (name for name in zoneinfo.available_timezones() if "/" in name),
        key=lambda name: (not name.startswith(_CANONICAL_AREAS), name),
    )
    index: dict[str, str] = {}
    for name in names:
        if not re.search(r"\d", name) and not name.startswith("Etc/"):
            index.setdefault(fold(name), name)
            index.setdefault(fold(name.rsplit("/", 1)[-1]), name)
    return index


def _strip_fillers(key: str) -> str:
    """'time in berlin' -> 'berlin'; '现在北京市时间' -> '北京'."""
    key = " ".join(word for word in key.split() if word not in _FILLER_WORDS)
    return _CJK_AROUND.sub("", key).strip()


def _lookup(key: str, table: dict[str, str]) -> str | None:
    if not key:
        return None
    return table.get(key) or _zone_index().get(key)


def zone_for_place(text: str) -> str | None:
    """The IANA zone for a place as people write it ('Mumbai' -> 'Asia/Kolkata'), else None.

    Tries the whole text (table, then IANA full names and last parts), the text without filler
    words ('Berlin time'), then its pieces split at '/', ',' or '(' ('Paris, France',
    'Moscow/Moscow'): cities before countries, so 'USA/Chicago' is Chicago."""
    key = fold(text)
    for candidate in (key, _strip_fillers(key)):
        if zone := _lookup(candidate, PLACES):
            return zone
    pieces = [
        _strip_fillers(piece.strip())
        for piece, separator in _PIECE.findall(key)
        if not (separator == "/" and piece.strip() in _AREAS)
    ]
    for table in (CITIES, PLACES):
        for piece in pieces:
            if zone := _lookup(piece, table):
                return zone
    return None
