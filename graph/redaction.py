"""One redaction function for every URL and error text that can reach a terminal, a log, the API
or a checkpoint.

Secrets leak through side doors more often than through the key itself: credentials inside an
endpoint URL (`https://user:pass@host/v1`, `?api_key=...`), a bearer token quoted in an error
body, a libpq message that repeats part of a connection string. Everything the project prints or
stores about an endpoint or a failure goes through `redact`, so there is one place to get right.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "[redacted]"
# The userinfo of the example URLs in help and error texts (`postgresql://user:password@host/db`):
# words that stand for a credential, shown as they are so the example stays readable.
PLACEHOLDER = "user:password"

# userinfo in any URL: scheme://user:password@host  or  scheme://token@host; a password may hold
# spaces when the URL is quoted in an error (libpq: unexpected spaces found in "postgresql://...")
_USERINFO = re.compile(
    r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)"
    r"(?P<userinfo>[^/\s@?#]+|[^/\s@?#:]*:[^/@?#\r\n\"'<>]*?)@"
)
# query or key=value pairs whose name looks secret: ?api_key=..., &token=..., password=..., JSON
# ("api_key": "..."), headers (Authorization: Bearer ...); a quoted value runs to its quote
_SECRET_WORDS = r"key|token|secret|password|passwd|pwd|sig|signature|credential|auth"
_SECRET_NAMES = rf"[a-zA-Z0-9_\-]*(?:{_SECRET_WORDS})[a-zA-Z0-9_\-]*"
_SECRET_PAIR = re.compile(
    rf"(?P<name>\b{_SECRET_NAMES})(?P<close>[\"']?)(?P<sep>\s*[=:]\s*)"
    r"(?:(?P<quote>[\"'])(?P<quoted>[^\"'\r\n]*)(?P=quote)"
    r"|(?P<value>(?:(?:Bearer|Basic|Token)\s+)?[^\s&\"',;}]+))",
    re.IGNORECASE,
)
# Where a secret pair can start: a word followed by its separator (`name=`, `"name":`). Most
# text has few; `_SECRET_PAIR` alone tries its name pattern at every word of the text, which
# made redaction cost about 0.3 ms per kB of JSON (a traced run's spans are mostly JSON). Case
# folded as `_SECRET_PAIR` is (`[a-z]` then takes `ı`, `ſ`, the Kelvin sign, as it does there).
# It starts only where a run of name characters starts: from inside a run (after a `-`, where
# `\b` also holds) it would scan to the same end and fail the same way, and a long run with
# many dashes (unpadded base64url) would be scanned once per dash.
_NAME_THEN_SEP = re.compile(r"(?<![a-zA-Z0-9_\-])[a-zA-Z0-9_\-]+[\"']?\s*[=:]", re.IGNORECASE)
_SECRET_WORD = re.compile(_SECRET_WORDS, re.IGNORECASE)
# What any pattern below needs somewhere in the text: a secret word, a credential scheme, a
# provider key's dash, a URL's `://`. Text with none of it comes out unchanged, and most text (a
# span's JSON, an error) has none: found by substring search in lowered ASCII text (C's search,
# a tenth of a regex's time). Text that is not ASCII always gets the patterns: their case
# folding takes letters `lower()` leaves alone (`ſ` for `s`, `ı` for `i`).
_CLUES = ("key", "token", "secret", "passw", "pwd", "sig", "credential", "auth", "bearer", "basic",
          "k-", "://")  # fmt: skip
# An exception's name before its message names no secret ("KeyError: 'parameters'",
# "TokenizerError: ..."): the message is what a person needs to read
_NOT_SECRETS = ("Error", "Exception", "Warning")
_BEARER = re.compile(r"\b(?P<kind>Bearer|Basic|Token)\s+[A-Za-z0-9._~+/\-=]{4,}", re.IGNORECASE)
_PROVIDER_KEY = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-*]{6,}")


def _mask_pair(match: re.Match[str]) -> str:
    head = f"{match['name']}{match['close']}{match['sep']}"
    if match["quote"]:
        return f"{head}{match['quote']}{MASK}{match['quote']}"
    return f"{head}{MASK}"


def _mask_pairs(text: str) -> str:
    """`_SECRET_PAIR.sub(_mask_pair, text)`, trying the full pattern only where a word that
    names a secret is followed by its separator: the same matches, found in one cheap pass."""
    parts: list[str] = []
    done = 0
    for candidate in _NAME_THEN_SEP.finditer(text):
        start = candidate.start()
        while text[start] == "-":  # a name starts at a word boundary, as `_SECRET_PAIR`'s does
            start += 1
        if start < done or not _SECRET_WORD.search(text, start, candidate.end()):
            continue
        match = _SECRET_PAIR.match(text, start)
        if match is None or match["name"].endswith(_NOT_SECRETS):
            continue
        parts += [text[done:start], _mask_pair(match)]
        done = match.end()
    return "".join([*parts, text[done:]]) if parts else text


def _userinfo(match: re.Match[str]) -> str:
    """`user:password@` keeps the user; a bare `token@` is masked unless it is a short name."""
    if match["userinfo"] == PLACEHOLDER:
        return match.group(0)
    user, colon, _ = match["userinfo"].partition(":")
    if colon:
        return f"{match['scheme']}{user}:{MASK}@"
    if len(user) <= 16 and re.fullmatch(r"[A-Za-z][A-Za-z0-9_.\-]*", user):
        return match.group(0)
    return f"{match['scheme']}{MASK}@"


def redact(text: object, secrets: Iterable[str | None] = ()) -> str:
    """`text` with credentials masked: URL userinfo, secret-looking `name=value` pairs (query
    strings, connection strings, JSON), bearer/basic tokens, provider-style keys (`sk-...`), and
    any of the given `secrets` verbatim (say, the API key the run uses)."""
    out = str(text)
    for secret in secrets:
        if secret and len(secret) >= 4:
            out = out.replace(secret, MASK)
    return out if _nothing_to_mask(out) else _masked(out)


def _nothing_to_mask(text: str) -> bool:
    """Whether none of the patterns can match: ASCII text without any of `_CLUES`."""
    if not text.isascii():
        return False
    lowered = text.lower()
    return not any(clue in lowered for clue in _CLUES)


def _masked(text: str) -> str:
    """Every pattern applied, in order (what `redact` does to text that may hold a secret)."""
    out = _USERINFO.sub(_userinfo, text)
    out = _mask_pairs(out)
    out = _BEARER.sub(lambda m: f"{m['kind']} {MASK}", out)
    return _PROVIDER_KEY.sub(MASK, out)
