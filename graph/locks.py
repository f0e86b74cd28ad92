"""Compatibility path: `graph.locks` is now `graph.persistence.locks`;
scripts that import the old path keep working."""

from graph.persistence.locks import ThreadBusy, lock_key, thread_lock

__all__ = ["ThreadBusy", "lock_key", "thread_lock"]
