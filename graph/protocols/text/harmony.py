"""OpenAI's harmony format (gpt-oss), rewritten as the text protocol before it is read.

gpt-oss writes channels: `analysis` (its reasoning), `commentary to=functions.NAME` (a tool
call whose message is the JSON arguments) and `final` (the answer), each between
`<|channel|>` ... `<|message|>` ... `<|end|>`/`<|call|>`/`<|return|>`. Servers that drop the
special tokens leave `analysis...assistantcommentary to=functions.search json{...}` or
`analysis...assistantfinal...`: the same channels without their markers. Both become
`Thought:` / `Action:` / `Action Input:` or `Final Answer:` lines, so one reader decides.
"""

from __future__ import annotations

import re

_END = re.compile(r"<\|(?:end|call|return|start|channel)\|>")  # tokens that end a message
_LABEL_LINE = re.compile(r"^[ \t*#]*(?:action|final answer)[ \t*]*[:：]", re.MULTILINE | re.I)
_RECIPIENT = re.compile(r"\bto=(?:functions\.)?(?P<name>[^\s<]+)")
_STRIPPED_CALL = re.compile(
    r"commentary\s+to=(?:functions\.)?(?P<name>[^\s<{]+)\s*(?:<\|constrain\|>)?\s*(?:json)?\s*"
)


def translate_harmony(text: str) -> str:
    """The reply in the text protocol when it is written in harmony channels, else as is."""
    if text.lstrip().startswith(("<|channel|>", "<|start|>")):
        return _from_tokens(text)
    if text.startswith("analysis"):
        return _from_stripped(text)
    return text


def _from_tokens(text: str) -> str:
    """One forward pass over the messages: each header, then its body up to the next token
    that ends a message (other `<|...|>` text inside a body is kept)."""
    thoughts: list[str] = []
    pos = 0
    while (channel_at := text.find("<|channel|>", pos)) != -1:
        message_at = text.find("<|message|>", channel_at)
        if message_at == -1:
            break
        start_at = text.rfind("<|start|>", pos, channel_at)
        role = text[start_at + len("<|start|>") : channel_at] if start_at != -1 else ""
        header = text[channel_at + len("<|channel|>") : message_at].split("<|constrain|>")[0]
        end = body_at = message_at + len("<|message|>")
        ending = _END.search(text, end)
        end = ending.start() if ending else len(text)
        body, pos = text[body_at:end].strip(), end
        recipient = _RECIPIENT.search(f"{role} {header}")
        if recipient is not None:
            return _step(thoughts, f"Action: {recipient.group('name')}\nAction Input: {body}")
        if header.strip().split(" ", 1)[0] == "final":
            return _step(thoughts, f"Final Answer: {body}")
        thoughts.append(body)
    return _step(thoughts, "") if thoughts else text  # reasoning only: no step was written


def _from_stripped(text: str) -> str:
    final = text.find("assistantfinal")
    call = text.find("assistantcommentary")
    if labelled_before(text, max(final, call)):
        return text
    if call != -1 and (final == -1 or call < final):
        head = _STRIPPED_CALL.match(text, call + len("assistant"))
        if head is None:
            return text
        action = f"Action: {head.group('name')}\nAction Input: {text[head.end() :].strip()}"
        return _step([text[len("analysis") : call]], action)
    if final != -1:
        answer = text[final + len("assistantfinal") :].strip()
        return _step([text[len("analysis") : final]], f"Final Answer: {answer}")
    return text


def labelled_before(text: str, pos: int) -> bool:
    """A line-start Action or Final Answer label before `pos`: the reply is written in the
    text protocol, so what follows is text, not another dialect."""
    return _LABEL_LINE.search(text, 0, pos) is not None


def _step(thoughts: list[str], decision: str) -> str:
    thought = " ".join(" ".join(t.split()) for t in thoughts if t.strip())  # one line: no labels
    return (f"Thought: {thought}\n" if thought else "") + decision
