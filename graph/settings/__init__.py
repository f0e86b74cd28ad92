"""Every setting of the agent, declared once: its default, its environment variable, its help
and who may set it.

Two kinds, one declaration (`AgentContext` in `fields.py`, each field marked `scope`; resolved
and checked in `resolve.py`):

* **run** settings are what a caller may choose per run: the run context of LangGraph (what a
  run's `context`, an assistant's config and Studio's form carry). The served API is reachable
  by whoever can call it, so these are only harmless choices: a model from the operator's
  allow-list, temperature, protocol, `max_steps` within the operator's cap, the system prompt,
  tools from the registry by name, and tools to *add* to the approval list.
* **operator** settings come only from the environment (and `.env`), the `react-agent` command
  line, or `build_graph(...)` arguments: the endpoint, the name of the key variable, import
  paths, MCP servers, upper bounds of timeouts and steps, approvals that always apply. No
  request can reach them; a run context that names one is refused with one sentence.

Precedence, highest first: the run context (run settings only), `build_graph(...)` arguments,
the environment, the defaults. The API key is never a setting, only the name of its variable.
`ENVIRONMENT` (`graph.environment`) lists every other variable the project reads.
"""

from __future__ import annotations

from graph.environment import ENVIRONMENT, EnvVar, load_env_file, shown_value
from graph.settings.fields import (
    EMBEDDED_DEFAULTS,
    ENV_VARS,
    RUN_FIELDS,
    AgentContext,
    ConfigError,
    RunContext,
)
from graph.settings.resolve import env_overrides, resolve_context, resolve_run_context

__all__ = ["EMBEDDED_DEFAULTS", "ENVIRONMENT", "ENV_VARS", "RUN_FIELDS", "AgentContext",
           "ConfigError", "EnvVar", "RunContext", "env_overrides", "load_env_file",
           "resolve_context", "resolve_run_context", "shown_value"]  # fmt: skip
