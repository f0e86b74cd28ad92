"""A module whose import is evidence: importing it appends a line to the file named by the
IMPORT_CANARY environment variable, so a test can prove that a refused `module:attribute`
tool path was never imported (not merely that its tool never ran)."""

from __future__ import annotations

import os
from pathlib import Path

from langchain_core.tools import tool

_PATH = os.environ.get("IMPORT_CANARY")
if _PATH:
    with Path(_PATH).open("a", encoding="utf-8") as handle:
        handle.write(f"imported by {os.getpid()}\n")


@tool
def canary() -> str:
    """Say that the canary ran."""
    return "the canary ran"
