"""Aegra's authentication hook for this project: every request needs a key the operator set.

Aegra loads this file by path (`deploy/aegra/aegra.json`, `"auth": {"path": ...}`) and calls
`authenticate` with the request's headers before any protocol route runs; `/health`, `/ready`,
`/info` and `/metrics` stay open for load balancers and probes. Without a configured auth hook
Aegra serves everyone as one anonymous user, so a deployment would be open by default.

The accepted keys come from `AGENT_API_KEYS` (comma-separated, so a new key can be added before
the old one is removed); a client sends one in the `x-api-key` header, which is what
`langgraph_sdk.get_client(url=..., api_key=...)` and Agent Chat UI's "API key" field send, or
as `Authorization: Bearer <key>`. Every key maps to one identity, so threads created with one
key stay visible to the others (Aegra scopes threads by identity). With no key set, every
request is refused with a sentence saying so, never served open.
"""

from __future__ import annotations

import hmac
import os

from langgraph_sdk import Auth

KEYS_VARIABLE = "AGENT_API_KEYS"
IDENTITY = "agent-api-key"

auth = Auth()


def accepted_keys(environ: dict[str, str] | None = None) -> list[str]:
    """The keys this server accepts, read on every request so a restart is the only step
    between editing the variable and the change taking effect (it is read from the process
    environment, which the launcher fills from `.env`)."""
    raw = (os.environ if environ is None else environ).get(KEYS_VARIABLE, "")
    return [key.strip() for key in raw.split(",") if key.strip()]


def presented_key(headers: dict[str, str]) -> str | None:
    """The key a request carries: `x-api-key`, else an `Authorization: Bearer` token."""
    lowered = {name.lower(): value for name, value in headers.items()}
    if lowered.get("x-api-key"):
        return lowered["x-api-key"].strip()
    scheme, _, token = lowered.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


def key_matches(given: str, keys: list[str]) -> bool:
    """Whether `given` is one of `keys`, compared in constant time (no timing oracle)."""
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(given.encode(), key.encode())
    return matched


@auth.authenticate
async def authenticate(headers: dict[str, str]) -> Auth.types.MinimalUserDict:
    """Admit a request carrying one of the operator's keys; refuse any other with 401."""
    keys = accepted_keys()
    if not keys:
        raise Auth.exceptions.HTTPException(
            status_code=401,
            detail=f"This server accepts no requests until {KEYS_VARIABLE} names at least one key.",
        )
    given = presented_key(headers)
    if given is None:
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="Send your key in the x-api-key header."
        )
    if not key_matches(given, keys):
        raise Auth.exceptions.HTTPException(status_code=401, detail="The key is not accepted.")
    return {"identity": IDENTITY, "display_name": "API key", "is_authenticated": True}
