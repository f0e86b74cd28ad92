"""Questions and tool results that are not plain text, as real clients send them.

A question is a `HumanMessage` whose content is a list of blocks: the text typed and the file
attached. The shapes are those a LangGraph client sends: OpenAI's `image_url` with a data URL
(LangGraph Studio, any OpenAI-style client), LangChain v1's standard `image` / `file` blocks
(`base64` + `mime_type`), Agent Chat UI's blocks (`source_type: "base64"`, `data`, `metadata`
with the file's name; its newer camelCase `mimeType`), and an image given by URL. The attached
bytes are deterministic random data behind a PNG signature: about 2 MB of base64, the size of a
phone photo or a screenshot a person drops into the chat.

Tools that answer with an image: a screenshot with a caption, an image alone, a
`content_and_artifact` result, and OpenAI's `image_url` shape.
"""

from __future__ import annotations

import base64
import random
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import tool

IMAGE_BYTES = 1_500_000  # the attached file, before base64
PNG = b"\x89PNG\r\n\x1a\n"
TEXT = "What is in this picture?"
PDF_TEXT = "Summarize this document."
TOKENS_PER_IMAGE = 85  # langchain_core's count_tokens_approximately: OpenAI's low-detail image


def png_base64(size: int = IMAGE_BYTES, seed: int = 7) -> str:
    """`size` bytes of a PNG-looking file as standard base64 (what a browser's data URL holds)."""
    data = PNG + random.Random(seed).randbytes(size - len(PNG))
    return base64.b64encode(data).decode("ascii")


BIG = png_base64()
SMALL = png_base64(600, seed=3)


def attachment(shape: str, data: str = BIG) -> dict[str, Any]:
    """The block a client sends for an attached file, in `shape`."""
    if shape == "openai_image_url":
        return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}
    if shape == "v1_image":
        return {"type": "image", "base64": data, "mime_type": "image/png"}
    if shape == "chat_ui_image":
        return {
            "type": "image",
            "source_type": "base64",
            "mime_type": "image/png",
            "data": data,
            "metadata": {"name": "cat.png"},
        }
    if shape == "chat_ui_image_camel":
        return {"type": "image", "mimeType": "image/png", "data": data}
    if shape == "v1_file_pdf":
        return {"type": "file", "base64": data, "mime_type": "application/pdf", "filename": "a.pdf"}
    if shape == "chat_ui_pdf":
        return {
            "type": "file",
            "source_type": "base64",
            "mime_type": "application/pdf",
            "data": data,
            "metadata": {"filename": "report.pdf"},
        }
    if shape == "image_link":
        return {"type": "image", "url": "https://example.com/cat.png"}
    raise ValueError(shape)


SHAPES = [
    "openai_image_url",
    "v1_image",
    "chat_ui_image",
    "chat_ui_image_camel",
    "v1_file_pdf",
    "chat_ui_pdf",
    "image_link",
]


def question(shape: str = "v1_image", data: str = BIG, text: str | None = None) -> HumanMessage:
    """A person's question: the words typed, then the file attached."""
    words = text if text is not None else (PDF_TEXT if "pdf" in shape else TEXT)
    return HumanMessage([{"type": "text", "text": words}, attachment(shape, data)])


def image_only(data: str = BIG) -> HumanMessage:
    """A question that is an image alone (a screenshot pasted with no words)."""
    return HumanMessage([attachment("v1_image", data)])


def attachments(message: BaseMessage) -> list[Any]:
    """The blocks of a message that are not text."""
    content = message.content
    if isinstance(content, str):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") != "text"]


def holds_bytes(text: str, data: str = BIG) -> bool:
    """Whether `text` repeats any of the attached file's base64 (a dump of it)."""
    return data[1000:1064] in text or data[-64:] in text


# -- tools that answer with an image ------------------------------------------------------------


def _image(data: str = BIG) -> dict[str, str]:
    return {"type": "image", "base64": data, "mime_type": "image/png"}


@tool
def screenshot(page: str) -> list[dict[str, str]]:
    """Take a screenshot of a page: a caption and the image."""
    return [{"type": "text", "text": f"screenshot of {page}"}, _image()]


@tool
def photo(page: str) -> list[dict[str, str]]:
    """Take a photo of a page: the image alone."""
    return [_image()]


@tool(response_format="content_and_artifact")
def snap(page: str) -> tuple[list[dict[str, str]], dict[str, int]]:
    """Snap a page: a caption and the image, the size as the artifact."""
    return [{"type": "text", "text": f"snap of {page}"}, _image()], {"bytes": IMAGE_BYTES}


@tool
def picture_url(page: str) -> list[dict[str, Any]]:
    """A picture of a page as OpenAI's image_url block."""
    return [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{BIG}"}}]


@tool
def lookup(q: str) -> str:
    """Look q up."""
    return f"found {q}"


IMAGE_TOOLS = {t.name: t for t in (screenshot, photo, snap, picture_url)}
