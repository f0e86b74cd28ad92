"""Words a question and a note use for the same thing: query expansion for `knowledge_search`.

Why: the search is lexical, and people rarely ask in the words their notes were written in.
"Which setting picks the tools?" finds the note's "`REACT_AGENT_TOOLS` picks…" by itself, but
"Which variable chooses the tools that are switched on?" shares no word with it. A small model
copies the user's question into the query, so it cannot bridge the gap either. A thesaurus of
everyday technical English can: each query word also searches for the other words of its group,
at `RELATED_WEIGHT` (less than the word itself or one of its stems), and a few two-word phrases
("switched on", "short for") stand for one word.

The groups are general usage, not tuned to any note: words that are interchangeable in
questions about software and its documentation. A word may sit in one group only.
"""

from __future__ import annotations

import re

GROUPS = (
    "choose pick select",
    "enable activate",
    "disable deactivate",
    "store save keep persist",
    "remember memory recall",
    "new fresh",
    "start begin",
    "stop end finish halt",
    "allow permit whitelist",
    "refuse reject block deny forbid",
    "slow sluggish laggy",
    "network internet connection online offline",
    "wait timeout",
    "folder directory",
    "file document",
    "crash die dies fail fails",
    "retry attempt",
    "delete remove erase",
    "limit maximum cap",
    "error failure problem",
    "answer reply response",
    "place location city town",
    "machine computer laptop",
    "several multiple many",
    "mean means stand stands",
    "fetch download",
    "quit exit",
    "setting option variable",
    "abbreviation acronym",
)

# Two words that together mean one of the words above.
PHRASES = {
    "switch on": "enable",
    "switched on": "enable",
    "turn on": "enable",
    "turned on": "enable",
    "switch off": "disable",
    "switched off": "disable",
    "turn off": "disable",
    "turned off": "disable",
    "short for": "stands",
    "stand for": "stands",
    "let through": "allow",
    "let in": "allow",
    "give up": "timeout",
    "giving up": "timeout",
    "gives up": "timeout",
}

_GROUP_OF = {word: group.split() for group in GROUPS for word in group.split()}
_WORD_PAIR = re.compile(r"(?=\b([^\W\d_]+) ([^\W\d_]+)\b)")


def related_words(word: str) -> list[str]:
    """The other words of `word`'s group (case-folded input), or nothing."""
    return [other for other in _GROUP_OF.get(word, ()) if other != word]


def phrase_words(text: str) -> list[tuple[str, str]]:
    """(phrase, the word it stands for) for each known two-word phrase in `text`, in order."""
    folded = text.casefold()
    found = []
    for match in _WORD_PAIR.finditer(folded):
        phrase = f"{match.group(1)} {match.group(2)}"
        if phrase in PHRASES:
            found.append((phrase, PHRASES[phrase]))
    return found
