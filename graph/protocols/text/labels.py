"""The labels of the text ReAct protocol and the linear scanner that finds them.

Every dialect a model may write (`Thought:`/`Action:`, `Tool:`/`Tool Input:`, the ReAct
paper's `Thought 1:`, markdown `**Action:**` or `### Final Answer`, Chinese `思考：`/`行动：`)
is one row of `TABLE`: a kind, whether the label is *strong*, and its spellings. To read a new
dialect, add its spellings to the table; nothing else changes.

What the scanner calls a label:

* It opens a line: only indentation and markdown decoration (`-`, `*`, `+`, `>`, `#`, `1.`,
  `**`, `__`) may stand before it. `Legislative Action: signed` is prose, not a label.
* An `Observation` word alone on its line is a label even without a colon (models invent
  observations that way too).
* Any case, words joined by space, `_`, `-` or nothing, an optional step number (`Action 2:`),
  then an ASCII or full-width colon. A heading or bold label (`### Final Answer`,
  `**Answer**`) may drop the colon when nothing else is on its line.
* A section runs from its label to the next label, but never ends inside a code fence that
  opened within it and closes later (a fence that never closes hides nothing). A final answer
  ends only at a *strong* label, so it may hold lines such as `Answer: yes` or `Tool: a hammer`.

Cost: the scanner searches a lower-cased copy of the text that starts with a newline, so every
pattern begins with a literal `\\n` the regex engine skips to quickly, and no pattern needs
IGNORECASE. Each search starts where the previous one ended and each fence is walked once, so
reading a reply is linear in its length; the reader also stops asking once it has decided.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from graph.protocols.reasoning import without_reasoning
from graph.protocols.text.fences import FENCE_LINE, Fences

THOUGHT, ACTION, INPUT, FINAL, OBSERVATION = "thought", "action", "input", "final", "observation"

# kind, strong, spellings (lower case; a space matches space, "_", "-" or nothing)
TABLE: tuple[tuple[str, bool, tuple[str, ...]], ...] = (
    (THOUGHT, True, ("thought", "thoughts", "思考", "想法", "思路", "思考过程")),
    (THOUGHT, True, ("考え", "생각", "pensamiento", "pensée", "gedanke", "pensamento")),
    (THOUGHT, False, ("thinking", "reasoning", "推理")),
    (ACTION, True, ("action", "行动", "动作", "行動", "행동", "acción", "aktion", "ação")),
    (ACTION, False, ("tool", "tool name", "action name", "act", "function", "✿function✿")),
    (ACTION, False, ("工具", "工具名称", "操作", "调用工具")),
    (INPUT, True, ("action input", "tool input", "行动输入", "动作输入", "工具输入", "操作输入")),
    (INPUT, True, ("行動入力", "행동 입력", "entrada de acción", "entrada de la acción")),
    (INPUT, True, ("entrée de l'action", "aktionseingabe", "entrada da ação")),
    (INPUT, False, ("action inputs", "action args", "tool args", "tool arguments", "arguments")),
    (INPUT, False, ("input", "act input", "✿args✿", "输入", "参数")),
    (FINAL, True, ("final answer", "最终答案", "最终回答", "最终答复", "最后答案", "最终结果")),
    (FINAL, True, ("最終回答", "最終的な答え", "최종 답변", "최종 답")),
    (FINAL, True, ("respuesta final", "réponse finale", "endgültige antwort", "resposta final")),
    (FINAL, False, ("answer", "final response", "ai", "✿return✿", "答案", "回答")),  # AI: convo
    (OBSERVATION, True, ("observation", "observations", "✿result✿", "观察", "观察结果")),
    (OBSERVATION, True, ("観察", "관찰", "observación", "beobachtung", "observação")),
)

KIND_OF: dict[str, tuple[str, bool]] = {
    spelling: (kind, strong) for kind, strong, spellings in TABLE for spelling in spellings
}
ALL_KINDS = (THOUGHT, ACTION, INPUT, FINAL, OBSERVATION)

_SEPARATORS = re.compile(r"[ \t_-]+")
_BY_LETTERS = {_SEPARATORS.sub("", s): v for s, v in KIND_OF.items()}


def kind_of(word: str) -> tuple[str, bool]:
    """The kind and strength of a label word as written ("Action_Input" -> input, strong)."""
    return _BY_LETTERS[_SEPARATORS.sub("", word.lower())]


def _trie(spellings: list[str]) -> str:
    """The spellings as one regular expression shaped like a trie: a line that starts with no
    label fails at its first letter instead of trying every spelling in turn."""
    tree: dict[str, dict] = {}
    for spelling in spellings:
        node = tree
        for char in " ".join(spelling.split()):
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict[str, dict]) -> str:
        branches = [
            (r"[ \t_-]*" if char == " " else re.escape(char)) + emit(child)
            for char, child in sorted(node.items())
            if char
        ]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return emit(tree)


def _pattern(kinds: tuple[str, ...], flags: int, *, strong_only: bool = False) -> re.Pattern[str]:
    spellings = [s for s, (k, strong) in KIND_OF.items() if k in kinds and strong >= strong_only]
    return re.compile(
        r"\n(?P<deco>[ \t\-*+>#_\d.)]*+)(?P<word>" + _trie(spellings) + r")"
        r"(?:[ \t]*\#?\d{1,3})?[ \t]*(?P<close>\*\*|__|\*|_)?[ \t]*"
        r"(?P<colon>[:：]|[ \t][-–—](?=[ \t])|(?=[ \t]*(?:\*\*|__)?[ \t]*(?:\n|\Z)))"
        r"(?:[ \t]*(?:\*\*|__)(?=[ \t]*\S))?[ \t]*",
        flags,
    )


def _patterns(flags: int) -> dict[str, re.Pattern[str]]:
    return {
        "any": _pattern(ALL_KINDS, flags),
        "strong": _pattern(ALL_KINDS, flags, strong_only=True),
        "step": _pattern((THOUGHT, ACTION, INPUT, FINAL), flags),  # all but Observation
        "decision": _pattern((ACTION, INPUT, FINAL, OBSERVATION), flags),  # all but Thought
        "observation": _pattern((OBSERVATION,), flags),
        # a label word and a colon anywhere, even mid-line: the model tried the format
        "word": re.compile(
            r"(?:" + _trie(list(KIND_OF)) + r")[ \t]*\d{0,3}[ \t]*(?:\*\*)?[ \t]*[:：]", flags
        ),
    }


_LOWER = _patterns(0)  # for the lower-cased copy
_ANY_CASE = _patterns(re.IGNORECASE)  # when lower-casing would change the text's length

# Labels written in the middle of a line. Read only when no line starts with a decision, and
# only in the protocol's own spelling, after a space or a sentence end.
_MIDLINE = re.compile(
    r"([ \t.!?。！？；])(?=(?:\*\*)?(?:Thought|Action Input|Action|Final Answer|Observation"
    r"|Tool Input|Tool|思考|行动输入|行动|最终答案|观察)(?:\*\*)?[ \t]*[:：])"
)

_COLON = re.compile(r"[:：]")
_COLON_WINDOWS = 256  # colons whose preceding text is searched one by one
_WALK_LIMIT = 256  # fences walked one by one before the rest are paired by counting
_PAUSE_LINE = re.compile(r"^[ \t]*PAUSE[ \t]*$\n?", re.MULTILINE)
_TRAILING_OBSERVATION = re.compile(
    r"[ \t]*(?:\*\*)?obs(?:e(?:r(?:v(?:a(?:t(?:i(?:on?)?)?)?)?)?)?)?(?:\*\*)?[ \t]*", re.I
)


def normalize(text: str) -> str:
    """Unix newlines, no reasoning (`without_reasoning`), no `PAUSE` lines, no half-written
    `Observation` tail."""
    text = without_reasoning(text.replace("\r\n", "\n").replace("\r", "\n").removeprefix("\ufeff"))
    if "PAUSE" in text:
        text = _PAUSE_LINE.sub("", text)
    text = text.rstrip()
    last = text.rfind("\n")
    if last != -1 and _TRAILING_OBSERVATION.fullmatch(text, last + 1):
        text = text[:last]
    return text


def split_midline(text: str) -> str:
    """Put each mid-line protocol label on a line of its own (the fallback reading)."""
    return _MIDLINE.sub("\\1\n", text, count=256)  # a reply with more is degenerate


@dataclass(frozen=True)
class Label:
    """A label found at a line start: `text[start:end]` is the label and what decorates it."""

    kind: str
    strong: bool
    start: int  # where its line begins
    end: int  # where the text after it begins
    bare: bool  # a heading or bold label without a colon


@dataclass(frozen=True)
class Section:
    """One label and the text it governs: `text[body:end]`."""

    kind: str
    strong: bool
    start: int  # where the label's line begins
    body: int  # where the text after the label begins
    end: int
    bare: bool


class Scanner:
    """Finds labels in one text, outside the fences opened after a given position.

    The reader drives it: `first` finds the first label, `section` reads the section a label
    opens and the label that ends it, `next_label` jumps to the next label of some kinds, so
    runs of sections the reader does not need (more thoughts, echoes) cost one search."""

    def __init__(self, text: str) -> None:
        self.text = text
        lowered = text.lower()
        same = len(lowered) == len(text)
        self._hay = "\n" + (lowered if same else text)  # position p in text is p + 1 here
        self._patterns = _LOWER if same else _ANY_CASE
        self._fences = Fences(text)

    def first(self) -> Label | None:
        """The first label; a fence before any label hides nothing (some models fence their
        whole reply)."""
        return self.next_label("any", 0, fenced=False)

    def has_label_word(self) -> bool:
        """A label word followed by a colon anywhere, even mid-line or mid-sentence (but not
        inside a longer word: `transaction:` is no label). Few colons: only the text just
        before each is searched; many: one search of the whole text."""
        hay, word = self._hay, self._patterns["word"]
        windows: Iterable[tuple[int, int]] = [(1, len(hay))]
        if hay.count(":") + hay.count("：") <= _COLON_WINDOWS:
            windows = ((max(1, c.start() - 64), c.end()) for c in _COLON.finditer(hay))
        return any(self._word_start(m) for a, b in windows for m in word.finditer(hay, a, b))

    def _word_start(self, match: re.Match[str]) -> bool:
        before = self._hay[match.start() - 1]
        return not (before.isalpha() and before.isascii())

    def next_label(self, which: str, pos: int, *, fenced: bool = True) -> Label | None:
        """The next label of a kind set (`any`, `strong`, `step`, `decision`, `observation`)
        whose line starts at or after pos, not inside a fence opened after pos. The label
        search restarts only after a fence that hides its candidate: the cost stays linear."""
        label = self._search(which, pos)
        walked = 0
        while label is not None and fenced:
            walked += 1
            if walked > _WALK_LIMIT:  # a degenerate run of fences: pair them by counting
                if len(FENCE_LINE.findall(self.text, pos, label.start)) % 2 == 0:
                    return label
                closed = self._fences.closer(label.start)
                if closed is None:
                    return label
                pos = closed[1]
                label = self._search(which, pos)
                continue
            opened = self._fences.opener(pos, label.start)
            if opened is None:
                return label
            line_end = self.text.find("\n", opened)
            closed = self._fences.closer(line_end + 1) if line_end != -1 else None
            if closed is None:  # a fence that never closes hides nothing
                return label
            pos = closed[1]
            if closed[1] > label.start:
                label = self._search(which, pos)
        return label

    def _search(self, which: str, pos: int) -> Label | None:
        pattern = self._patterns[which]
        match = pattern.search(self._hay, pos)
        while match is not None and not _accept(match):
            match = pattern.search(self._hay, match.end() - 1)
        if match is None:
            return None
        kind, strong = kind_of(match.group("word"))
        return Label(kind, strong, match.start(), match.end() - 1, not match.group("colon"))

    def section(self, label: Label) -> tuple[Section, Label | None]:
        """The section `label` opens and the label that ends it (None: the text's end)."""
        following = self.next_label("strong" if label.kind == FINAL else "any", label.end)
        end = following.start if following is not None else len(self.text)
        section = Section(label.kind, label.strong, label.start, label.end, end, label.bare)
        return section, following


def _accept(match: re.Match[str]) -> bool:
    """A colon, a heading or bold decoration makes a label; so does an Observation word alone
    on its line (`Observation`, `OBSERVATION 2`): models invent one without its colon, and what
    follows it is the invented result, never part of the step."""
    if match.group("colon"):
        return True
    decoration = match.group("deco") + (match.group("close") or "")
    if "#" in decoration or "**" in decoration or "__" in decoration:
        return True
    return kind_of(match.group("word"))[0] == OBSERVATION
