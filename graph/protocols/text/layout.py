"""The labelled sections of a reply that decide it, found in one linear pass; and the part
of an unreadable reply the model was entitled to write (`cut_reply`).

Echoed observations before the first label are skipped, thoughts after the first are skipped
(one scanner search each run), and an invented `Observation:` ends the reply. At most
`MAX_ITEMS` Action / Action Input / Final Answer sections are read: a reply with more is
degenerate, and the first of them decide it anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

from graph.protocols.text.labels import OBSERVATION, THOUGHT, Scanner, Section

MAX_ITEMS = 64


@dataclass
class Layout:
    """The labelled sections of a reply that matter for its decision."""

    text: str
    scanner: Scanner
    preamble: str  # text before the first label
    thought: Section | None  # the first Thought
    items: list[Section]  # Action / Action Input / Final Answer sections, up to the cut
    labelled: bool  # any label at all (an echoed Observation counts)
    capped: bool  # more sections than the reader looks at

    def body(self, section: Section) -> str:
        return self.text[section.body : section.end]


def read_layout(text: str) -> Layout:
    """Scan a reply: echoes skipped, further thoughts skipped, cut at an invented Observation.

    Skipping is one scanner search, so ten thousand `Thought:` lines cost as much as two."""
    scanner = Scanner(text)
    label = scanner.first()
    preamble = text[: label.start] if label is not None else text
    labelled = label is not None
    if label is not None and label.kind == OBSERVATION:  # echoed: skipped
        label = scanner.next_label("step", label.end)
    thought: Section | None = None
    items: list[Section] = []
    while label is not None and len(items) < MAX_ITEMS:
        section, following = scanner.section(label)
        if section.kind == OBSERVATION:
            break  # invented by the model: the reply ends here
        if section.kind == THOUGHT:
            thought = thought or section
            label = scanner.next_label("decision", section.body)
            continue
        items.append(section)
        label = following
    capped = label is not None and len(items) >= MAX_ITEMS
    return Layout(text, scanner, preamble.strip(), thought, items, labelled, capped)


def cut_reply(text: str) -> str:
    """A normalized reply up to an invented `Observation` (an echoed one at the start is kept):
    what an unreadable reply is taken to say. `reader.clean_reply` is the step as read."""
    scanner = Scanner(text)
    label = scanner.first()
    if label is not None and label.kind == OBSERVATION:
        label = scanner.next_label("step", label.end)
    invented = scanner.next_label("observation", label.end) if label is not None else None
    return text[: invented.start if invented is not None else len(text)].strip()
