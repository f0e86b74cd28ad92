"""Compatibility path: `graph.parser` is now `graph.protocols.text.reader`;
scripts that import the old path keep working."""

from graph.protocols.text.reader import ReactStep, clean_reply, parse_react

__all__ = ["ReactStep", "clean_reply", "parse_react"]
