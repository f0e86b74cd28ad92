"""Code fences in model replies: where one opened inside a section closes.

A label inside a fenced block (a prompt file a tool should write, a code comment) is text, not
a label. The scanner asks `Fences` whether a fence opened between a section's start and a
candidate label, and where it closes; each fence is found with one search, so walking them is
linear.
"""

from __future__ import annotations

import re

_FENCE_RUN = re.compile(r"`{3,}")
_FENCE_CLOSE = re.compile(r"^[^\n]*?`{3,}[ \t]*$", re.MULTILINE)
_INFO_STRING = re.compile(r"[\w+.#-]*[ \t]*$")
FENCE_LINE = re.compile(r"^[ \t]*`{3,}", re.MULTILINE)


class Fences:
    """Finds where a fence opened in a section closes, with one forward search per fence.

    A fence is a run of three or more backticks that starts a line, or ends one (followed at
    most by an info string, as in `Action: ```json`). A line with an even number of runs holds
    inline code, not a fence."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._close_from = -1  # the last closing search: where it started, what it found
        self._close_at: tuple[int, int] | None = None

    def opener(self, start: int, stop: int) -> int | None:
        """Where the first fence opened in text[start:stop] begins."""
        text = self.text
        pos = start
        while True:
            run = _FENCE_RUN.search(text, pos, stop)
            if run is None:
                return None
            line_start = text.rfind("\n", 0, run.start()) + 1
            line_end = text.find("\n", run.end())
            line_end = len(text) if line_end == -1 else line_end
            odd = text.count("```", line_start, line_end) % 2 == 1
            starts_line = not text[line_start : run.start()].strip()
            if odd and (starts_line or _INFO_STRING.fullmatch(text, run.end(), line_end)):
                return run.start()
            pos = max(line_end, run.end())

    def closer(self, after: int) -> tuple[int, int] | None:
        """The first line after `after` that ends with a fence: (its start, its end)."""
        cached = self._close_at
        if 0 <= self._close_from <= after and (cached is None or cached[0] >= after):
            return cached
        match = _FENCE_CLOSE.search(self.text, after)
        self._close_from = after
        self._close_at = (match.start(), match.end()) if match else None
        return self._close_at
