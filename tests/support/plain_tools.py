"""Small tools the loop tests share: one that answers, one that always fails, one that needs
approval (its name is what the tests' approval policy names)."""

from __future__ import annotations

from langchain_core.tools import tool


@tool
def echo(text: str) -> str:
    """Repeat the text back."""
    return f"echo: {text}"


@tool
def explode(text: str) -> str:
    """Always fails."""
    raise RuntimeError("disk on fire")


@tool
def publish(text: str) -> str:
    """Publish the text (needs approval)."""
    return f"published {text}"
