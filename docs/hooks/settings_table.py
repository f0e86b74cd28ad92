"""The configuration table of the docs, generated from the settings declaration.

`graph/settings/fields.py` declares every setting once (`AgentContext`: each field's environment
variable, default, scope and help) and lists the other environment variables the project reads
(`ENVIRONMENT`). A hand-copied table drifts from it (it once showed defaults the code never
used), so the docs page holds a marker, `<!-- settings-table -->`, and this mkdocs hook puts the
table there at build time. `tests/docs/test_settings_table.py` checks the table against the
declaration and against what the tools really use.
"""

from __future__ import annotations

from typing import Any

MARKER = "<!-- settings-table -->"
HEADER = (
    "| setting | environment variable | default | who sets it | what it does |\n"
    "|---|---|---|---|---|"
)


def shown_default(value: Any) -> str:
    """A default as a reader would type it into the environment; empty for none."""
    if value is None or value == [] or value == "":
        return ""
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, list):
        return "`" + ",".join(str(item) for item in value) + "`"
    return f"`{value}`"


def cell(text: str) -> str:
    """Text safe inside one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def settings_rows() -> list[tuple[str, str, str, str, str]]:
    """One row per setting: (field, environment variable, default, scope, help).

    Fields of `AgentContext` first, in declaration order, then the variables of `ENVIRONMENT`,
    which only the operator sets (the environment or `.env`).
    """
    from graph.settings import ENVIRONMENT, AgentContext

    rows = []
    for name, info in AgentContext.model_fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        default = info.get_default(call_default_factory=True)
        scope = "run or operator" if extra.get("scope") == "run" else "operator"
        rows.append(
            (name, str(extra["env"]), shown_default(default), scope, info.description or "")
        )
    for var in ENVIRONMENT:  # defaults here are text: a value, or words for a computed one
        default = var.default if " " in var.default else shown_default(var.default)
        rows.append(("", var.name, default, "operator", var.help))
    return rows


def settings_table() -> str:
    """The Markdown table of every setting (what replaces the marker)."""
    lines = [HEADER]
    for name, env, default, scope, help_text in settings_rows():
        field = f"`{name}`" if name else "—"
        lines.append(f"| {field} | `{env}` | {default} | {scope} | {cell(help_text)} |")
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs hook: fill the marker of any page with the generated table."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, settings_table())
