"""The seal on an approval: a call that needs approval runs only with a decision recorded for
exactly that call (its thread, id, tool and arguments) by the review step.

Whatever else reaches the tool node (a state update that adds a tool call as some node, a
`Command(goto=Send("act", ...))`, a fork, an edited step), it carries no seal the review step
made, so act refuses it. The seal is an HMAC under a key a client never sees: the operator's
`REACT_AGENT_APPROVAL_KEY`, else a key kept in the agent's private state folder (0600), so a
resume in another process, or another worker sharing that folder, still verifies it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from functools import lru_cache
from typing import Any

from graph.support.files import private_dir, private_file, state_dir

KEY_VARIABLE = "REACT_AGENT_APPROVAL_KEY"


@lru_cache(maxsize=4)
def _key(explicit: str | None, folder: str) -> bytes:
    if explicit:
        return explicit.encode()
    path = private_dir(state_dir()) / "approval.key"
    if private_file(path):
        path.write_text(secrets.token_hex(32), encoding="utf-8")
    return path.read_text(encoding="utf-8").strip().encode()


def approval_key() -> bytes:
    return _key(os.environ.get(KEY_VARIABLE, "").strip() or None, str(state_dir()))


def seal(thread_id: str | None, call: dict[str, Any]) -> str:
    """The seal of one approved call, as it will run."""
    body = json.dumps(
        [thread_id or "", call.get("id"), call.get("name"), call.get("args")],
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hmac.new(approval_key(), body.encode(), hashlib.sha256).hexdigest()


def sealed(thread_id: str | None, call: dict[str, Any], given: Any) -> bool:
    return isinstance(given, str) and hmac.compare_digest(given, seal(thread_id, call))
