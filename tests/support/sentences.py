"""What an error or refusal shown to a person must look like, checked the same way everywhere:
one line, one sentence, short, naming what it is about, and no traceback or validation dump."""

from __future__ import annotations

DUMPS = ("Traceback", "validation error", "errors.pydantic.dev", "input_value=")


def assert_one_sentence(text: str | None, *names: str, banned: tuple[str, ...] = ()) -> None:
    assert text and "\n" not in text and text.endswith("."), text
    assert len(text) < 400, text
    for marker in (*DUMPS, *banned):
        assert marker not in text, text
    for name in names:
        assert name in text, f"{name!r} not named in: {text}"
