"""The environment variables the project reads outside the run settings (`AgentContext`): the
store, the state folder, the embedded model, the tools; and reading `.env` into the environment.

Each is declared once, with its default and help, for the docs' configuration table and for a
test that checks every variable named in the source is declared. Where the code that reads a
variable holds its default as a constant, the declaration names that constant (`Constant`)
instead of copying its value, so the two cannot disagree; it is read only when shown, because
the tool modules load LangChain and HTTP clients, which importing the settings must not.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Constant:
    """A default that lives in the module reading the variable: `module.name`."""

    module: str
    name: str

    def __str__(self) -> str:
        return str(getattr(importlib.import_module(self.module), self.name))


@dataclass(frozen=True)
class EnvVar:
    """An environment variable read outside `AgentContext` (persistence, tools, local model);
    `given` is the default as text (a value or words for a computed one) or a `Constant`."""

    name: str
    given: str | Constant
    help: str

    @property
    def default(self) -> str:
        return str(self.given)


_HTTP = "tools.http_client"
ENVIRONMENT: tuple[EnvVar, ...] = (
    EnvVar("OPENAI_API_KEY", "", "The API key (the variable named by REACT_AGENT_API_KEY_ENV)."),
    EnvVar("REACT_AGENT_CHECKPOINTER", "sqlite (state folder)",
           "memory, sqlite:///file.sqlite or postgresql://..."),
    EnvVar("REACT_AGENT_STATE_DIR", "$XDG_STATE_HOME/react-agent",
           "Folder for the agent's private files: the default SQLite store, lock files, the "
           "approval key, the call ledger, the knowledge index."),
    EnvVar("REACT_AGENT_LOCAL", "on", "off: never fall back to the embedded model."),
    EnvVar("REACT_AGENT_GGUF", "the packaged model", "A GGUF file for the embedded model."),
    EnvVar("REACT_AGENT_LOCAL_TIMES", "", "1: the embedded model prints on stderr what each "
           "part of its start and each call cost (tokens evaluated, seconds)."),
    EnvVar("REACT_AGENT_APPROVAL_KEY", "a key in the state folder",
           "Secret that seals approval decisions (HMAC); workers sharing a thread need the same."),
    EnvVar("REACT_AGENT_DEBUG", "", "1: show tracebacks in the command line."),
    EnvVar("REACT_AGENT_KB_DIR", "tools/knowledge_base", "Folder knowledge_search reads."),
    EnvVar("REACT_AGENT_FETCH_ALLOW", "", "Hosts or networks web_fetch may reach though private."),
    EnvVar("REACT_AGENT_FETCH_ALLOW_HOSTS", "", "Hosts web_fetch may fetch from, redirects "
           "included (e.g. example.com,*.wikipedia.org); unset: any public host."),
    EnvVar("REACT_AGENT_FETCH_MAX_CHARS", Constant("tools.web_fetch", "DEFAULT_MAX_CHARS"),
           "Most characters web_fetch returns."),
    EnvVar("REACT_AGENT_HTTP_TIMEOUT", Constant(_HTTP, "DEFAULT_TIMEOUT"),
           "Seconds per HTTP request of the tools."),
    EnvVar("REACT_AGENT_HTTP_RETRIES", Constant(_HTTP, "DEFAULT_ATTEMPTS"),
           "Attempts in all (not retries after the first) of an HTTP request of the tools that "
           "fails to connect, times out or gets 429/5xx."),
    EnvVar("REACT_AGENT_HTTP_BACKOFF", Constant(_HTTP, "DEFAULT_BACKOFF"),
           "Seconds before the second attempt; each later wait doubles."),
    EnvVar("REACT_AGENT_HTTP_MAX_BYTES", Constant(_HTTP, "DEFAULT_MAX_BYTES"),
           "Largest HTTP body the tools read, in bytes."),
    EnvVar("REACT_AGENT_WEATHER_PROVIDER", "open-meteo", "open-meteo or cma."),
    EnvVar("REACT_AGENT_OPEN_METEO_URL", "https://api.open-meteo.com", "Open-Meteo forecast API."),
    EnvVar("REACT_AGENT_OPEN_METEO_GEOCODING_URL", "https://geocoding-api.open-meteo.com",
           "Open-Meteo geocoding API."),
    EnvVar("REACT_AGENT_CMA_BASE_URL", "", "The CMA weather API."),
    EnvVar("REACT_AGENT_WIKIPEDIA_URL", "https://{lang}.wikipedia.org", "Wikipedia's API."),
    EnvVar("REACT_AGENT_WIKIPEDIA_LANG", "en", "Wikipedia language."),
)  # fmt: skip


def shown_value(value: Any) -> str:
    """A value as it would be typed into the environment (`true`, `30`, `a,b`)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


class EnvFileError(ValueError):
    """A `.env` file that cannot be read as settings (one sentence naming it)."""


def load_env_file(path: str | os.PathLike[str] | None = None) -> Path | None:
    """Read `.env` (from the current directory upwards) without overriding the environment.
    Called by the `react-agent` entry point; `langgraph dev` reads it through langgraph.json."""
    from dotenv import find_dotenv, load_dotenv

    found = str(path) if path else find_dotenv(usecwd=True)
    if found and Path(found).is_file():
        try:
            load_dotenv(found, override=False, encoding="utf-8")
        except UnicodeDecodeError as exc:  # the settings below it would be read wrong
            raise EnvFileError(
                f"{found} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                f"{exc.start}); save it as UTF-8."
            ) from None
        return Path(found)
    return None
