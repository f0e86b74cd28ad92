"""Worked examples and argument hints for the built-in tools, kept with the embedded model (the
tools themselves are plain LangChain tools and know nothing of it).

Each record shows the tool's real output layout. The questions are made up for these records:
none comes from the evaluation sets (bench/data), which must stay unseen. The direct records
teach the model to answer on its own, briefly, when no tool is needed.
"""

from __future__ import annotations

import functools

from graph.models.local.hints import Example, Step, ToolHints

DIRECT_EXAMPLES: tuple[Example, ...] = (
    Example("Translate 'good morning' into French.", answer="Bonjour."),
    Example("What is the plural of 'mouse'?", answer="Mice."),
    Example("你好，你是谁？", answer="你好！我是一个可以使用工具的助手。"),
    Example("Who wrote Romeo and Juliet?", answer="William Shakespeare."),
    Example("Is a tomato a fruit or a vegetable?", answer="A fruit."),
    Example("Good morning! How are you?", answer="Good morning! I'm fine, thank you."),
)


def _clock_knows(piece: str) -> bool:
    """A piece of the question that is, all of it, a place or a zone the clock knows
    ("Asia/Kolkata", not "Asia/Kolkata please")."""
    if piece in ("UTC", "GMT") or piece in _zones():
        return True
    return _place(piece)


@functools.cache
def _zones() -> frozenset[str]:
    import zoneinfo

    return frozenset(zoneinfo.available_timezones())


def _calculated(piece: str) -> str | None:
    """What the calculator makes of a piece of the question as it stands ("15 percent of 80":
    12), None when it refuses it ("40 miles") or it calculates nothing ("35 what is": 35)."""
    from graph.models.local.constrain import question_numbers
    from tools.calculator import calculator

    try:
        value = float(calculator.func(piece).split("\n", 1)[0])
    except Exception:
        return None
    numbers = question_numbers(piece)
    return None if len(numbers) == 1 and float(numbers[0]) == value else repr(value)


def _url(piece: str) -> bool:
    """A piece of the question that is a web address: no spaces, a dot in its host."""
    from urllib.parse import urlsplit

    if " " in piece:
        return False
    host = urlsplit(piece if "://" in piece else f"https://{piece}").hostname or ""
    return "." in host and host.replace(".", "").replace("-", "").isalnum()


BIG_CITY = 1_000_000  # people: a lower-case single word names a place only if one this big


def _place(piece: str) -> bool:
    """A piece of the question that is, all of it, a place GeoNames knows. A place in Latin
    letters is a proper noun, capitalised ("Date" and "Time" are towns, "date" and "time" are
    not), unless it is several words ("los angeles") or a city or country of a million people
    or more ("mumbai", "kenya"); one in Chinese is two characters or more."""
    from tools.zone_names import population, zone_for_place

    if piece.isascii() and not piece[:1].isupper() and " " not in piece:
        return population(piece) >= BIG_CITY
    if not piece.isascii() and len(piece) < 2:
        return False
    return zone_for_place(piece, whole=True) is not None


_NOTES_HIT = (
    "[1] servers.md — Servers\nThe staging server listens on port 8443.\n"
    "We run three servers: staging, production and backup."
)

BUILTIN_HINTS: dict[str, ToolHints] = {
    "calculator": ToolHints(
        examples=(
            Example("What is 12 * 9?", {"expression": "12 * 9"}, "108", "108"),
            Example(
                "What is forty-two divided by six?",
                {"expression": "forty-two divided by six"},
                "7\n(read as 42 / 6)",
                "7",
            ),
            Example(
                "A bus has 40 seats. How many seats do 3 buses have?",
                {"expression": "40 * 3"},
                "120",
                "120",
            ),
            Example(
                "What is 20% of 45?", {"expression": "20% of 45"}, "9\n(read as 20 * 45 / 100)", "9"
            ),
            Example(
                "What is half of 90?", {"expression": "half of 90"}, "45\n(read as 90 / 2)", "45"
            ),
            Example(
                "125 加 37 等于多少？",
                {"expression": "125 加 37"},
                "162\n(read as 125 + 37)",
                "162",
            ),
            Example(
                "What is the square root of 196?",
                {"expression": "the square root of 196"},
                "14\n(read as sqrt(196))",
                "14",
            ),
        ),
        arithmetic_argument="expression",
        reads=_calculated,
    ),
    "current_time": ToolHints(
        examples=(
            Example(
                "What time is it in Madrid?",
                {"timezone": "Madrid"},
                "2025-03-14 10:26:53 CET (Europe/Madrid, UTC+01:00), Friday",
                "2025-03-14 10:26:53 CET (Europe/Madrid, UTC+01:00), Friday",
            ),
            Example(
                "what's the time in karachi now",
                {"timezone": "karachi"},
                "2025-06-02 14:41:07 PKT (Asia/Karachi, UTC+05:00), Monday",
                "2025-06-02 14:41:07 PKT (Asia/Karachi, UTC+05:00), Monday",
            ),
            Example(
                "纽约今天星期几？",
                {"timezone": "纽约"},
                "2024-12-30 07:05:42 EST (America/New_York, UTC-05:00), Monday",
                "2024-12-30 07:05:42 EST (America/New_York, UTC-05:00), Monday",
            ),
        ),
        piece_argument="timezone",
        accepts=_clock_knows,
    ),
    "knowledge_search": ToolHints(
        examples=(
            Example(
                "Which port does the staging server use? Check my notes.",
                {"query": "Which port does the staging server use? Check my notes."},
                _NOTES_HIT,
                "The staging server listens on port 8443.",
            ),
            Example(
                "When is my dentist appointment?",
                {"query": "When is my dentist appointment?"},
                "[1] appointments.md — Appointments\nEye test: booked for June.\n"
                "Dentist: Tuesday 14 May at 9:30 with Dr Okafor.",
                "Dentist: Tuesday 14 May at 9:30 with Dr Okafor.",
            ),
            Example(
                "Which day do they collect the bins?",
                {"query": "Which day do they collect the bins?"},
                "[1] house.md — House\nBins: collected every Tuesday morning.\n"
                "Recycling goes out every other week.",
                "Bins: collected every Tuesday morning.",
            ),
            Example(
                "数据库多久备份一次？",
                {"query": "数据库多久备份一次？"},
                "[1] backup-zh.md — 备份策略\n数据库每天凌晨两点自动备份一次。",
                "数据库每天凌晨两点自动备份一次。",
            ),
            Example(
                "How many servers do we run? Multiply that by 4.",
                {"query": "How many servers do we run? Multiply that by 4."},
                _NOTES_HIT,
                "12",
                more=(Step("calculator", {"expression": "3 * 4"}, "12"),),
            ),
        ),
        question_argument="query",
    ),
    "weather": ToolHints(
        examples=(
            Example(
                "Is it raining in Oslo right now?",
                {"location": "Oslo"},
                "Oslo (Norway, Oslo), 2025-10-12 08:00 Europe/Oslo: light drizzle, 9.8°C, "
                "humidity 93%, wind W 14.0 km/h",
                "Oslo (Norway, Oslo), 2025-10-12 08:00 Europe/Oslo: light drizzle, 9.8°C, "
                "humidity 93%, wind W 14.0 km/h",
            ),
        ),
        piece_argument="location",
        accepts=_place,
    ),
    "wikipedia": ToolHints(
        examples=(
            Example(
                "Look up the Eiffel Tower on Wikipedia.",
                {"query": "Eiffel Tower"},
                "[1] Eiffel Tower (https://en.wikipedia.org/wiki/Eiffel_Tower)\nThe Eiffel "
                "Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
                "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in "
                "Paris, France.",
            ),
        ),
        piece_argument="query",
    ),
    "web_fetch": ToolHints(
        examples=(
            Example(
                "What does the page https://example.com/ say?",
                {"url": "https://example.com/"},
                "Title: Example Domain\nURL: https://example.com/\n\nThis domain is for use in "
                "illustrative examples in documents.",
                "This domain is for use in illustrative examples in documents.",
            ),
        ),
        piece_argument="url",
        accepts=_url,
    ),
}
