"""The loop's own policies (corrections, the repeated-call guard, the step limit) are
`wrap_model_call` layers of think's chain, outermost, composed with a user's middleware by the
same chain: what they tell the model reaches a user's `wrap_model_call` in the request, and a
run they end makes no model call a user's middleware would see."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import AIMessage, ToolMessage

from graph import build_graph
from graph.messages import is_agent_note
from tests.support.scripted_model import ScriptedChatModel, action, answer, calls, tool_call
from tests.unit.test_agent_loop import TOOLS, run


class Seen(AgentMiddleware):
    """A user's middleware that records every request it is handed."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[ModelRequest] = []

    def wrap_model_call(self, request: ModelRequest, handler: Any) -> Any:
        self.requests.append(request)
        return handler(request)

    async def awrap_model_call(self, request: ModelRequest, handler: Any) -> Any:
        self.requests.append(request)
        return await handler(request)


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def test_a_broken_native_call_is_answered_before_the_user_middleware_sees_the_request(
    mode: str,
) -> None:
    broken = AIMessage(
        content="",
        invalid_tool_calls=[{"name": "echo", "args": "{oops", "id": "b1", "error": "bad JSON"}],
    )
    seen = Seen()
    model = ScriptedChatModel([broken, calls(tool_call("echo", {"text": "ok"})), "done"])
    agent = build_graph(model=model, tools=TOOLS, protocol="native", middleware=[seen])
    out = run(agent, "go", mode)
    assert out["status"] == "answered" and out["answer"] == "done"
    second = seen.requests[1].messages
    answered = [x for x in second if isinstance(x, ToolMessage) and x.tool_call_id == "b1"]
    assert len(answered) == 1 and answered[0].status == "error"
    assert "could not be used" in answered[0].text
    stored = [x for x in out["messages"] if isinstance(x, ToolMessage) and x.tool_call_id == "b1"]
    assert len(stored) == 1  # told once, stored once


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_too_many_unusable_replies_end_the_run_without_another_call(
    protocol: str, mode: str
) -> None:
    unusable = AIMessage(content="") if protocol == "native" else "Action:"
    seen = Seen()
    model = ScriptedChatModel([unusable] * 5)
    agent = build_graph(
        model=model, tools=TOOLS, protocol=protocol, middleware=[seen], max_invalid=2
    )
    out = run(agent, "go", mode)
    assert out["status"] == "error" and "last 2 replies could not be parsed" in out["error"]
    assert len(model.requests) == len(seen.requests) == 2
    notes = [x for x in seen.requests[1].messages if is_agent_note(x)]
    assert len(notes) == 1  # the correction, sent with the second call


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_the_step_limit_closing_call_reaches_the_user_middleware_without_tools(
    protocol: str, mode: str
) -> None:
    seen = Seen()
    script = [
        action(protocol, "echo", {"text": "a"}),
        action(protocol, "echo", {"text": "b"}),
        answer(protocol, "best so far"),
    ]
    model = ScriptedChatModel(script)
    agent = build_graph(
        model=model,
        tools=TOOLS,
        protocol=protocol,
        middleware=[seen],
        max_steps=2,
        answer_on_limit=True,
    )
    out = run(agent, "go", mode)
    assert out["status"] == "max_steps" and out["answer"] == "best so far"
    assert [bool(r.tools) for r in seen.requests] == [True, True, False]
    assert "You have used all 2 steps" in seen.requests[-1].messages[-1].text


def test_a_correction_the_closing_call_was_told_is_stored_with_it(mode: str) -> None:
    """An unusable last step, then the limit: the closing call is sent with the correction,
    and the thread keeps the correction where the model read it (before the closing answer)."""
    model = ScriptedChatModel([AIMessage(""), answer("native", "my best guess")])
    agent = build_graph(
        model=model, tools=TOOLS, protocol="native", max_steps=1, answer_on_limit=True
    )
    out = run(agent, "go", mode)
    assert out["status"] == "max_steps" and out["answer"] == "my best guess"
    sent = model.requests[-1].messages
    assert is_agent_note(sent[-2]) and "could not be used" in sent[-2].text
    stored = out["messages"]
    notes = [i for i, x in enumerate(stored) if is_agent_note(x)]
    assert notes and stored[-1].text == "my best guess" and notes[-1] < len(stored) - 1


def test_without_a_closing_answer_the_limit_makes_no_call(mode: str) -> None:
    seen = Seen()
    script = [action("native", "echo", {"text": str(i)}) for i in range(5)]
    model = ScriptedChatModel(script)
    agent = build_graph(model=model, tools=TOOLS, protocol="native", middleware=[seen], max_steps=2)
    out = run(agent, "go", mode)
    assert out["status"] == "max_steps" and "max_steps=2" in out["answer"]
    assert len(model.requests) == len(seen.requests) == 2


def test_the_repeat_note_is_in_the_request_the_user_middleware_sees(mode: str) -> None:
    seen = Seen()
    same = action("native", "echo", {"text": "same"})
    model = ScriptedChatModel([same, same, answer("native", "ok, stopping")])
    agent = build_graph(model=model, tools=TOOLS, protocol="native", middleware=[seen])
    out = run(agent, "go", mode)
    assert out["status"] == "answered"
    told = [x for x in seen.requests[2].messages if is_agent_note(x)]
    assert len(told) == 1 and "exactly this input" in told[0].text
    assert [is_agent_note(x) for x in out["messages"]].count(True) == 1


def test_a_policy_whose_setting_is_off_is_not_in_the_runs_chain() -> None:
    """`LoopPolicy.needs`: with no `run_timeout` and no `fallback_models` (the defaults) those
    policies are not layers of the call; a run that sets them has them, in their place, and a
    user's middleware stays innermost."""
    from graph.loop.bindings import Bindings
    from graph.policies.endpoint_fallback import EndpointFallback
    from graph.policies.run_deadline import RunDeadline

    def chain(operator: dict[str, Any]) -> list[type]:
        b = Bindings(ScriptedChatModel([]), TOOLS, operator, lambda *_: [], [Seen()])
        wraps = b.model_wraps(b.context(None))
        assert len(wraps) == len(b.model_awraps(b.context(None)))
        # each layer's bound `wrap_model_call` (a user's inside its span)
        return [type(inspect.unwrap(wrap).__self__) for wrap in wraps]

    default = chain({})
    assert RunDeadline not in default and EndpointFallback not in default
    both = chain({"run_timeout": 30, "fallback_models": ["other-model"]})
    assert both[0] is RunDeadline and both[-2:] == [EndpointFallback, Seen]


def test_a_broken_native_call_is_corrected_in_one_clean_sentence() -> None:
    """The parser's message is quoted without LangChain's troubleshooting link and without a
    doubled stop ("JSON object.. Call a tool")."""
    error = (
        "Function tick arguments:\n\n{broken\n\nare not valid JSON. Received JSONDecodeError "
        "Expecting property name enclosed in double quotes.\nFor troubleshooting, visit: "
        "https://docs.langchain.com/oss/python/langchain/errors/OUTPUT_PARSING_FAILURE "
    )
    broken = AIMessage(
        "",
        invalid_tool_calls=[
            {
                "name": "tick",
                "args": "{broken",
                "id": "c1",
                "error": error,
                "type": "invalid_tool_call",
            }
        ],
    )
    model = ScriptedChatModel([broken, "done"])
    out = build_graph(model=model, tools=TOOLS, protocol="native").invoke(
        {"messages": [("user", "go")]}
    )
    assert out["answer"] == "done"
    [told] = [x for x in model.requests[1].messages if isinstance(x, ToolMessage)]
    assert "troubleshooting" not in told.text and ".." not in told.text, told.text
    assert "are not valid JSON" in told.text
