"""Persistence: checkpoint savers chosen by URL, per-thread locks, resuming, forking and
reading a thread's history. Everything that touches stored checkpoints lives here."""
