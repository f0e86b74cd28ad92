"""Persistence: everything that touches stored checkpoints, one concern per module.

- opening by URL: `urls` (what a URL names, shown without its password), `postgres`
  (connections and table setup), `savers` (LangGraph's checkpointers, `guarded`: failures as
  one sentence, writes fenced by the lock; `delta_cache`: the last conversation histories read,
  `delta_extend`: a new head's built from a cached ancestor's), `stores` (LangGraph's store on
  the same URL);
- one run per thread: `locks` (`file_locks` for SQLite, `advisory_locks` for PostgreSQL,
  `fencing`: no write after a lost lock), `errors`;
- going on: `resume`, `forks`, `ledger` (what ran, outside the checkpoints);
- reading back: `history` (rows and states as text), `timeline` (rows streamed through the
  `skimming` view), `threads` (listing; `queries` reads ids straight from the tables).
"""
