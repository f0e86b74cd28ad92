"""Persistence: checkpoint savers chosen by URL, per-thread locks, resuming, forking and
reading a thread's history (`timeline` streams it). Everything that touches stored checkpoints
lives here."""
