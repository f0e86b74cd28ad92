"""An MCP tool result as the text an observation can carry.

The agent's observations are text, so binary content (images, audio, blobs) becomes a short
note with its type and size instead of kilobytes of base64, a result past `max_chars` is cut
with a note saying how much was cut, and a result flagged `isError` raises `ToolException`
with the server's message, which the agent reports as an error observation.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.tools import ToolException
from mcp import types

DEFAULT_MAX_CHARS = 20_000


def result_text(
    result: types.CallToolResult, *, tool: str, server: str, max_chars: int = DEFAULT_MAX_CHARS
) -> str:
    """The result's content as one text; raises `ToolException` when the tool reported an error."""
    parts = [block_text(block) for block in result.content]
    text = "\n".join(part for part in parts if part)
    if not text and result.structuredContent is not None:
        text = json.dumps(result.structuredContent, ensure_ascii=False, default=str)
    if result.isError:
        detail = truncate(text.strip(), 1000) or "no details given"
        raise ToolException(f"MCP tool '{tool}' (server '{server}') failed: {detail}")
    return truncate(text, max_chars) if text else "(the tool returned no content)"


def block_text(block: Any) -> str:
    """One content block: text as is, anything binary as a note."""
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return binary_note(block.mimeType or "image", _decoded_size(block.data))
    if isinstance(block, types.AudioContent):
        return binary_note(block.mimeType or "audio", _decoded_size(block.data))
    if isinstance(block, types.ResourceLink):
        kind = f", {block.mimeType}" if block.mimeType else ""
        return f"[resource {block.name}: {block.uri}{kind}]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return resource.text
        mime = getattr(resource, "mimeType", None) or "binary"
        return binary_note(mime, _decoded_size(getattr(resource, "blob", "")), str(resource.uri))
    return f"[{getattr(block, 'type', type(block).__name__)} content, not shown]"


def binary_note(mime: str, size: int, source: str | None = None) -> str:
    """`[image/png, 12 kB, not shown]`: what there was, without the bytes."""
    shown = f"{size} bytes" if size < 1000 else f"{size / 1000:,.0f} kB"
    origin = f", {source}" if source else ""
    return f"[{mime}, {shown}{origin}, not shown]"


def truncate(text: str, limit: int) -> str:
    """At most `limit` characters of `text`, with a note saying how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit:,} more characters cut; {len(text):,} in all]"


def _decoded_size(data: str) -> int:
    """Bytes in base64 `data`, without decoding it."""
    data = data.strip()
    return max(len(data) * 3 // 4 - data[-2:].count("="), 0) if data else 0
