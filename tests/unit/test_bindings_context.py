"""The run context is resolved once per distinct run context and environment: a cached context
must never outlive a change to the settings' environment variables."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from graph.loop.bindings import Bindings
from graph.settings import ENV_VARS


def _bindings() -> Bindings:
    model = GenericFakeChatModel(messages=iter([AIMessage("done")]))
    return Bindings(model, [], {}, lambda _names, _mcp: [])


def test_a_changed_environment_variable_gives_a_new_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bindings = _bindings()
    monkeypatch.setenv(ENV_VARS["max_steps"], "3")
    first = bindings.context(None)
    assert first.max_steps == 3
    assert bindings.context(None) is first  # the same settings: resolved once
    monkeypatch.setenv(ENV_VARS["max_steps"], "5")
    assert bindings.context(None).max_steps == 5
    monkeypatch.delenv(ENV_VARS["max_steps"])
    assert bindings.context(None).max_steps == _bindings().context(None).max_steps
    assert bindings.context(None).max_steps != 5


def test_a_run_keeps_the_settings_it_started_with_and_the_next_turn_reads_them_anew(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The environment is read when a turn starts: a variable changed while a run is under way
    (here by the tool itself) applies from the next turn, not from the run's next step."""
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from graph import build_graph
    from tests.support.scripted_model import ScriptedChatModel, calls, tool_call

    variable = ENV_VARS["system_prompt"]
    monkeypatch.setenv(variable, "You are the first prompt.")

    @tool
    def switch() -> str:
        """Change the operator's system prompt."""
        monkeypatch.setenv(variable, "You are the second prompt.")
        return "switched"

    model = ScriptedChatModel([calls(tool_call("switch", {})), "done", "done again"])
    agent = build_graph(model=model, tools=[switch], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [("user", "switch")]}, config)
    agent.invoke({"messages": [("user", "again")]}, config)
    prompts = [request.messages[0].text for request in model.requests]
    assert prompts == [
        "You are the first prompt.",
        "You are the first prompt.",  # the same run, after the tool changed the variable
        "You are the second prompt.",  # the next turn
    ]
