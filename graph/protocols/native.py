"""The native protocol: the model gets the tool schemas and answers with `tool_calls`."""

from __future__ import annotations

from langchain_core.messages import AIMessage

from graph.messages import new_call_id
from graph.protocols.decisions import Act, Answer, Decision, Invalid
from graph.protocols.reasoning import without_reasoning
from graph.protocols.text.reader import parse_react

DEFAULT_INSTRUCTIONS = (
    "You are a careful assistant. Work out the answer step by step and use the tools whenever "
    "they give you facts or calculations you do not have. Answer in the language of the question."
)


def native_system_prompt(instructions: str | None = None) -> str:
    return instructions or DEFAULT_INSTRUCTIONS


def native_invalid_observation(error: str) -> str:
    return f"Your last reply could not be used: {error}. Call a tool or answer the question."


def decide_native(reply: AIMessage) -> Decision:
    """Tool calls to run, the answer, or why the reply cannot be used. Calls whose arguments
    were broken JSON are kept (as `invalid_tool_calls`) so the model is told about each."""
    thought = reply.text.strip()
    if reply.tool_calls:
        calls = [
            {**call, "id": call.get("id") or new_call_id(), "args": call.get("args") or {}}
            for call in reply.tool_calls
        ]
        return Act(calls=calls, thought=thought)
    if reply.invalid_tool_calls:
        error = "; ".join(broken_call_error(bad) for bad in reply.invalid_tool_calls)
        return Invalid(error=error, thought=thought)
    answer = answer_text(reply)
    if answer:
        return Answer(text=_without_label(answer))
    if thought:  # reasoning alone
        return Invalid(error="the reply holds only reasoning: write the answer after it")
    return Invalid(error="the reply was empty (no text and no tool call)")


def answer_text(reply: AIMessage) -> str:
    """A reply's text as an answer: without reasoning a model wrote into it (`<think>`)."""
    return without_reasoning(reply.text).strip()


def broken_call_error(bad: dict) -> str:
    return (
        f"The arguments for tool '{bad.get('name')}' are not valid JSON "
        f"({bad.get('error') or 'could not be parsed'}): {bad.get('args')!r}. "
        "Send the arguments as a JSON object."
    )


def _without_label(text: str) -> str:
    """A native answer written in the text protocol's form (`Final Answer: fine`) is the
    answer `fine`: models trained on both formats mix them."""
    if "answer" not in text.lower():
        return text
    step = parse_react(text)
    return step.answer if step.kind == "final" and step.answer else text
