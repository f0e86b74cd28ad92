"""Run settings versus operator settings, the run-level bounds (deadline, answer budget), the
trace derived from messages, and a switch of protocol between turns."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from graph import build_graph
from graph.settings import RUN_FIELDS, ConfigError, resolve_context, resolve_run_context
from tests.support.plain_tools import echo
from tests.support.scripted_model import ScriptedChatModel, action, answer
from tests.support.sentences import assert_one_sentence
from tests.unit.test_agent_loop import TOOLS


def ask(agent: Any, context: dict | None = None, question: str = "go") -> dict:
    return agent.invoke({"messages": [("user", question)]}, context=context)


@pytest.mark.parametrize(
    ("context", "named"),
    [
        ({"base_url": "http://attacker.example/v1"}, "base_url"),
        ({"api_key_env": "DATABASE_PASSWORD"}, "api_key_env"),
        ({"tool_timeout": 9999}, "tool_timeout"),
        ({"mcp_config": "/tmp/evil.json"}, "mcp_config"),
        ({"no_such_setting": 1}, "no_such_setting"),
    ],
)
def test_a_run_cannot_set_operator_settings(context: dict, named: str) -> None:
    model = ScriptedChatModel(["never asked"])
    out = ask(build_graph(model=model, tools=TOOLS, protocol="native"), context)
    assert out["status"] == "error" and named in out["error"]
    assert out["error"].startswith("Refused run context:")
    assert model.requests == []  # refused before any request


def test_run_choices_are_checked_against_the_operator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_MAX_STEPS_CAP", "20")
    with pytest.raises(ConfigError, match="above the operator's cap"):
        resolve_run_context({}, {"max_steps": 21})
    with pytest.raises(ConfigError, match="is not allowed here"):
        resolve_run_context({"model": "cheap"}, {"model": "expensive"})
    monkeypatch.setenv("REACT_AGENT_ALLOWED_MODELS", "expensive")
    assert resolve_run_context({"model": "cheap"}, {"model": "expensive"}).model == "expensive"
    with pytest.raises(ConfigError, match="import paths"):
        resolve_run_context({}, {"tools": ["os:system"]})


def test_a_run_adds_approvals_and_never_removes_the_operators() -> None:
    ctx = resolve_run_context({"approve": ["calculator"]}, {"approve": []})
    assert ctx.approve == ["calculator"]
    ctx = resolve_run_context({"approve": ["calculator"]}, {"approve": ["web_fetch"]})
    assert ctx.approve == ["calculator", "web_fetch"]


@pytest.mark.parametrize("approve", [5, 2.5, {"web_fetch": True}, True])
def test_a_malformed_approve_in_the_run_context_is_one_sentence(approve: Any) -> None:
    with pytest.raises(ConfigError) as refused:
        resolve_run_context({"approve": ["calculator"]}, {"approve": approve})
    assert_one_sentence(str(refused.value), "approve", banned=("TypeError", "(env "))
    assert str(refused.value).startswith("Refused run context: approve: ")
    model = ScriptedChatModel(["never asked"])
    out = ask(build_graph(model=model, tools=TOOLS, protocol="native"), {"approve": approve})
    assert out["status"] == "error" and "TypeError" not in out["error"]
    assert_one_sentence(out["error"], "approve")
    assert model.requests == []


def test_an_error_names_where_the_bad_value_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    flag = {"protocol": "--protocol"}
    with pytest.raises(ConfigError, match=r"^Invalid agent configuration: --protocol: ") as bad:
        resolve_context({"protocol": "foo"}, labels=flag)
    assert "REACT_AGENT_PROTOCOL" not in str(bad.value)
    monkeypatch.setenv("REACT_AGENT_PROTOCOL", "foo")
    with pytest.raises(ConfigError, match=r"protocol \(env REACT_AGENT_PROTOCOL\): ") as bad:
        resolve_context(labels=flag)
    assert "--protocol" not in str(bad.value)
    with pytest.raises(ConfigError, match=r"^Invalid agent configuration: protocol: "):
        resolve_context({"protocol": "bar"})  # a build_graph argument over the env's value
    assert resolve_context({"protocol": "text"}, labels=flag).protocol == "text"


def test_run_fields_are_only_harmless_choices() -> None:
    assert {
        "model",
        "protocol",
        "max_steps",
        "temperature",
        "system_prompt",
        "tools",
        "approve",
        "observation_limit",
        "answer_on_limit",
    } == RUN_FIELDS


def test_a_run_past_its_deadline_ends_with_the_steps_so_far() -> None:
    def slow_step(_messages: Any) -> AIMessage:
        time.sleep(0.6)
        return AIMessage(content=action("text", "echo", {"text": "hi"}))

    model = ScriptedChatModel([slow_step], cycle=True)
    agent = build_graph(model=model, tools=TOOLS, protocol="text", run_timeout=1.0)
    out = ask(agent)
    assert out["status"] == "timeout"
    assert "run_timeout=1 s" in out["answer"] and "step(s) done" in out["answer"]
    assert [s["kind"] for s in out["steps"]][-1] == "limit"
    assert any(s["kind"] == "action" for s in out["steps"])


def test_the_answer_budget_offers_no_tools_after_n_observations() -> None:
    model = ScriptedChatModel(
        [action("text", "echo", {"text": "a"}), answer("text", "done")], cycle=False
    )
    agent = build_graph(model=model, tools=TOOLS, protocol="text", answer_after=1)
    out = ask(agent)
    assert out["answer"] == "done"
    assert "(no tools: answer directly)" in model.requests[1].messages[0].content


def test_a_failed_call_does_not_spend_the_answer_budget() -> None:
    model = ScriptedChatModel(
        [
            action("text", "explode", {"text": "a"}),
            action("text", "echo", {"text": "b"}),
            answer("text", "done"),
        ]
    )
    agent = build_graph(model=model, tools=TOOLS, protocol="text", answer_after=1)
    out = ask(agent)
    assert out["answer"] == "done"
    tools_offered = [
        "(no tools: answer directly)" not in r.messages[0].content for r in model.requests
    ]
    assert tools_offered == [True, True, False]  # the failure left room to try again


def test_native_final_answer_label_is_not_part_of_the_answer() -> None:
    model = ScriptedChatModel([AIMessage(content="Thought: easy.\nFinal Answer: fine")])
    out = ask(build_graph(model=model, tools=TOOLS, protocol="native"))
    assert out["answer"] == "fine"


def test_steps_are_derived_from_standard_messages_in_both_protocols() -> None:
    for protocol in ("native", "text"):
        model = ScriptedChatModel(
            [action(protocol, "echo", {"text": "hi"}), answer(protocol, "ok")]
        )
        out = ask(build_graph(model=model, tools=TOOLS, protocol=protocol))
        kinds = [type(m) for m in out["messages"]]
        assert kinds == [HumanMessage, AIMessage, ToolMessage, AIMessage], protocol
        step, result = out["messages"][1], out["messages"][2]
        assert step.tool_calls[0]["name"] == "echo" and step.tool_calls[0]["args"] == {"text": "hi"}
        assert result.tool_call_id == step.tool_calls[0]["id"] and result.content == "echo: hi"
        assert out["steps"][0]["observation"] == "echo: hi"  # stored once, in the ToolMessage
        if protocol == "text":
            assert step.content == "I need a tool."  # the thought, not the raw labels


def test_a_thread_can_switch_protocol_between_turns() -> None:
    model = ScriptedChatModel(
        [
            action("native", "echo", {"text": "one"}),
            answer("native", "first"),
            action("text", "echo", {"text": "two"}),
            answer("text", "second"),
        ]
    )
    agent = build_graph(model=model, tools=[echo], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "switch"}}
    first = agent.invoke({"messages": [("user", "a")]}, config, context={"protocol": "native"})
    second = agent.invoke({"messages": [("user", "b")]}, config, context={"protocol": "text"})
    assert (first["answer"], second["answer"]) == ("first", "second")
    transcript = [m.content for m in model.requests[2].messages[1:]]
    assert 'Action: echo\nAction Input: {"text": "one"}' in transcript[1]  # native turn as text
    assert transcript[2] == "Observation: echo: one"


def test_malformed_state_updates_are_refused_and_the_thread_keeps_working() -> None:
    model = ScriptedChatModel(["one", "two"])
    agent = build_graph(model=model, tools=TOOLS, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "poison"}}
    agent.invoke({"messages": [("user", "a")]}, config)
    for bad in (
        {"run": "zz"},
        {"run": {"iteration": "many"}},
        {"steps": 5},
        {"status": "weird"},
        {"messages": [{"role": "robot", "content": "x"}]},
    ):
        with pytest.raises(ValueError):
            agent.update_state(config, bad)
    assert agent.invoke({"messages": [("user", "b")]}, config)["answer"] == "two"


def test_a_run_error_is_said_in_the_conversation_but_not_to_the_model() -> None:
    model = ScriptedChatModel([AIMessage(content=""), AIMessage(content=""), AIMessage(content="")])
    agent = build_graph(model=model, tools=TOOLS, protocol="native", checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "err"}}
    out = agent.invoke({"messages": [("user", "a")]}, config)
    assert out["status"] == "error" and out["answer"] is None
    assert out["messages"][-1].content == out["error"]  # a chat client shows why
    assert "error" not in {s["kind"] for s in out["steps"]}


def test_a_thread_written_by_the_first_release_goes_on(tmp_path) -> None:
    """tests/data/threads/v0.1-native.sqlite: a native run (echo, then "first") saved by the
    first release, whose state kept the trace and a `decision` in its bookkeeping."""
    import shutil

    from langgraph.checkpoint.sqlite import SqliteSaver

    from graph.steps import steps_of

    store = tmp_path / "old.sqlite"
    shutil.copy(Path(__file__).parents[1] / "data" / "threads" / "v0.1-native.sqlite", store)
    with SqliteSaver.from_conn_string(str(store)) as saver:
        agent = build_graph(model=ScriptedChatModel(["second"]), tools=[echo], checkpointer=saver)
        config = {"configurable": {"thread_id": "old"}}
        before = agent.get_state(config).values
        assert before["answer"] == "first"
        assert [s["kind"] for s in steps_of(before)][-1] == "answer"
        out = agent.invoke({"messages": [("user", "q2")]}, config)
    assert (out["status"], out["answer"]) == ("answered", "second")


def test_the_timeout_notice_counts_from_the_resume(monkeypatch: pytest.MonkeyPatch) -> None:
    """An hour paused for approval is not charged to the run (its clock starts again at the
    resume), and the stop notice says the time the run was charged, not the hour."""
    from langchain_core.tools import tool
    from langgraph.types import Command

    from graph.loop import closing, plan, turn
    from graph.policies import run_deadline

    class Clock:
        offset = 0.0

        def time(self) -> float:
            return time.time() + self.offset

    clock = Clock()
    for module in (closing, plan, turn, run_deadline):
        monkeypatch.setattr(module, "time", clock)

    @tool
    def publish(text: str) -> str:
        """Publishes the text."""
        return f"published {text}"

    @tool
    def slow(text: str) -> str:
        """Takes a minute and a half."""
        clock.offset += 90
        return f"slow {text}"

    script = [action("native", "publish", {"text": "a"}), action("native", "slow", {"text": "b"})]
    model = ScriptedChatModel([*script, answer("native", "never")])
    agent = build_graph(
        model=model,
        tools=[publish, slow],
        protocol="native",
        approve=["publish"],
        run_timeout=60,
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "paused"}}
    assert agent.invoke({"messages": [("user", "go")]}, config)["__interrupt__"]
    clock.offset += 3600  # the person answers an hour later
    out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert out["status"] == "timeout"
    assert out["answer"].startswith("I stopped after 90 s"), out["answer"]
