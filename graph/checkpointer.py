"""Compatibility path: `graph.checkpointer` is now `graph.persistence.savers`;
scripts that import the old path keep working."""

from graph.persistence.savers import default_url, describe, open_async_saver, open_saver

__all__ = ["default_url", "describe", "open_async_saver", "open_saver"]
