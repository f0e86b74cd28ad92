"""Compatibility path: `graph.context` is now `graph.settings`;
scripts that import the old path keep working."""

from graph.settings import AgentContext, ConfigError, load_env_file, resolve_context

__all__ = ["AgentContext", "ConfigError", "load_env_file", "resolve_context"]
