"""The seal on an approval: what a person decided, bound to exactly one call as it will run.

The review step seals each approved (or edited) call: its thread, id, tool name and the exact
arguments that will run, plus a decision id (one per pause and call, `seal`).
`graph.middleware.approval_check` runs a gated call only when the call it is about to run
(after HITL applied any edit) carries a seal that verifies for exactly that tool and those
arguments, and only once per decision id (the decision is spent in the call ledger,
`graph.persistence.ledger`). A seal copied onto another call, another tool or other arguments
verifies nothing; a seal restored by a fork or a replay verifies, but its decision id is
already spent, so the person is asked again.

The seal is an HMAC under a key a client never sees: the operator's `REACT_AGENT_APPROVAL_KEY`,
else a key kept in the agent's private state folder (0600), so a resume in another process, or
another worker sharing that folder, still verifies it. Its text is `<decision id>.<hmac>`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from functools import lru_cache
from pathlib import Path
from typing import Any

from tools.support.files import private_dir, private_file, state_dir

KEY_VARIABLE = "REACT_AGENT_APPROVAL_KEY"


@lru_cache(maxsize=4)
def _key(explicit: str | None, folder: str) -> bytes:
    if explicit:
        return explicit.encode()
    path = private_dir(state_dir()) / "approval.key"
    if not path.exists():
        _create_key(path)
    key = path.read_text(encoding="utf-8").strip().encode()
    if not key:  # an empty key is no secret: refuse to seal with it
        raise RuntimeError(f"The approval key file {path} is empty; delete it to make a new one.")
    return key


def _create_key(path: Path) -> None:
    """Write a new key where none is, whole or not at all: it is written to a file of its own
    and linked into place, so a process or thread reading it at the same moment never reads
    an empty or half-written key, and of two first uses at once the first link wins."""
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    private_file(draft)
    try:
        draft.write_text(secrets.token_hex(32), encoding="utf-8")
        try:
            os.link(draft, path)
        except FileExistsError:  # another first use linked its key first
            pass
        except OSError:  # a filesystem without hard links: moved into place, whole
            if not path.exists():
                os.replace(draft, path)
    finally:
        draft.unlink(missing_ok=True)


def approval_key() -> bytes:
    return _key(os.environ.get(KEY_VARIABLE, "").strip() or None, str(state_dir()))


def _mac(thread_id: str | None, call: dict[str, Any], decision: str) -> str:
    body = json.dumps(
        [thread_id or "", call.get("id"), call.get("name"), call.get("args"), decision],
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hmac.new(approval_key(), body.encode(), hashlib.sha256).hexdigest()


def seal(thread_id: str | None, call: dict[str, Any], review_task: str | None = None) -> str:
    """A seal for one approved call, as it will run. Its decision id is the review's: the task
    that asked (LangGraph gives a task the same id each time it runs from the same checkpoint)
    and the call. Two resumes of one pause at once (a double click, a retry) make the same
    decision, which runs once; a new review (a new turn, a fork before the pause) makes a new
    one. Without a task id, a fresh random one."""
    if review_task:
        body = f"{review_task}\0{call.get('id')}".encode()
        decision = hashlib.sha256(body).hexdigest()[:24]
    else:
        decision = secrets.token_hex(12)
    return f"{decision}.{_mac(thread_id, call, decision)}"


def sealed(thread_id: str | None, call: dict[str, Any], given: Any) -> str | None:
    """The decision id of `given` when it seals exactly `call` (id, tool, arguments) on this
    thread, else None."""
    if not isinstance(given, str) or given.count(".") != 1:
        return None
    decision, mac = given.split(".")
    if not decision or not hmac.compare_digest(mac, _mac(thread_id, call, decision)):
        return None
    return decision
