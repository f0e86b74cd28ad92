"""The loop driven by a scripted chat model through every route, both protocols, sync and async."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver

from graph import build_graph, recursion_limit_for
from graph.messages import is_agent_note
from graph.settings import ConfigError
from tests.support.plain_tools import echo, explode
from tests.support.scripted_model import ScriptedChatModel, action, answer, calls, tool_call

PROTOCOLS = ["native", "text"]


def run(agent: Any, question: str | None, mode: str, config: dict | None = None, **kw: Any):
    payload = {"messages": [("user", question)]} if question is not None else None
    if mode == "async":
        return asyncio.run(agent.ainvoke(payload, config, **kw))
    return agent.invoke(payload, config, **kw)


def endless(protocol: str):
    """A model that calls echo forever, each time with a new input (not a loop the guard
    would stop: that is tested on its own)."""
    counter = itertools.count(1)

    def reply(_messages: Any) -> AIMessage:
        step = action(protocol, "echo", {"text": f"again {next(counter)}"})
        return step if isinstance(step, AIMessage) else AIMessage(content=step)

    return ScriptedChatModel([reply], cycle=True)


@tool
async def slow(seconds: float) -> str:
    """Sleep, then report."""
    await asyncio.sleep(seconds)
    return "slept"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLS = [echo, explode, slow, add]


def agent_for(script: list, protocol: str, **kw: Any):
    model = ScriptedChatModel(script)
    return model, build_graph(model=model, tools=kw.pop("tools", TOOLS), protocol=protocol, **kw)


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_answer_at_once(protocol: str, mode: str) -> None:
    model, agent = agent_for([answer(protocol, "Paris")], protocol)
    out = run(agent, "Capital of France?", mode)
    assert out["status"] == "answered"
    assert out["answer"] == "Paris"
    assert [s["kind"] for s in out["steps"]] == ["answer"]
    assert [type(m) for m in out["messages"]] == [HumanMessage, AIMessage]
    assert out["messages"][-1].content == "Paris"
    assert len(model.requests) == 1


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_one_tool_then_answer(protocol: str, mode: str) -> None:
    model, agent = agent_for(
        [action(protocol, "echo", {"text": "hi"}), answer(protocol, "It said hi.")], protocol
    )
    out = run(agent, "Echo hi", mode)
    assert out["status"] == "answered" and out["answer"] == "It said hi."
    first = out["steps"][0]
    assert first["kind"] == "action" and first["tool"] == "echo"
    assert first["tool_input"] == {"text": "hi"}
    assert first["observation"] == "echo: hi" and first["is_error"] is False
    assert first["duration_ms"] >= 0
    second_request = model.requests[1].messages
    if protocol == "native":
        tool_message = second_request[-1]
        assert isinstance(tool_message, ToolMessage)
        assert tool_message.tool_call_id == out["messages"][1].tool_calls[0]["id"]
        assert model.requests[0].tools and model.requests[0].stop is None
    else:
        assert second_request[-1].content == "Observation: echo: hi"
        assert model.requests[0].stop == ["Observation:"] and not model.requests[0].tools


def test_text_protocol_cuts_a_hallucinated_observation(mode: str) -> None:
    reply = (
        'Thought: echo it\nAction: echo\nAction Input: {"text": "x"}\n'
        "Observation: made up\nThought: done\nFinal Answer: invented"
    )
    model = ScriptedChatModel([AIMessage(content=reply), answer("text", "real")])
    # The scripted model honours `stop`, as servers do; bypass that to test our own cut.
    model.script[0] = lambda messages: AIMessage(content=reply)
    agent = build_graph(model=_ignore_stop(model), tools=TOOLS, protocol="text")
    out = run(agent, "go", mode)
    assert out["steps"][0]["tool"] == "echo"
    assert out["answer"] == "real"
    stored = out["messages"][1].content
    assert "made up" not in stored and "invented" not in stored


def _ignore_stop(model: ScriptedChatModel) -> ScriptedChatModel:
    original = model._reply

    def without_stop(messages, stop, **kwargs):
        return original(messages, None, **kwargs)

    object.__setattr__(model, "_reply", without_stop)
    return model


def test_parallel_native_calls_run_concurrently_async() -> None:
    barrier = asyncio.Barrier(3)

    async def meet(tag: str) -> str:
        await asyncio.wait_for(barrier.wait(), 5)  # only passes if all three run at once
        return f"met {tag}"

    meeting = StructuredTool.from_function(coroutine=meet, name="meet", description="Meet.")
    script = [
        calls(*(tool_call("meet", {"tag": t}) for t in "abc")),
        "All met.",
    ]
    model, agent = agent_for(script, "native", tools=[meeting], tool_timeout=10)
    out = asyncio.run(agent.ainvoke({"messages": [("user", "meet")]}))
    observations = [s["observation"] for s in out["steps"] if s["kind"] == "action"]
    assert observations == ["met a", "met b", "met c"]  # in call order
    assert {s["step"] for s in out["steps"] if s["kind"] == "action"} == {1}
    tool_messages = [m for m in model.requests[1].messages if isinstance(m, ToolMessage)]
    assert [m.content for m in tool_messages] == ["met a", "met b", "met c"]


def test_parallel_native_calls_run_concurrently_sync() -> None:
    barrier = threading.Barrier(3, timeout=5)

    def meet(tag: str) -> str:
        barrier.wait()  # raises BrokenBarrierError unless all three run at once
        return f"met {tag}"

    meeting = StructuredTool.from_function(func=meet, name="meet", description="Meet.")
    script = [calls(*(tool_call("meet", {"tag": t}) for t in "abc")), "All met."]
    _, agent = agent_for(script, "native", tools=[meeting], tool_timeout=10)
    out = agent.invoke({"messages": [("user", "meet")]})
    assert [s["observation"] for s in out["steps"][:3]] == ["met a", "met b", "met c"]
    assert not any(s["is_error"] for s in out["steps"])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_unknown_tool_lists_the_valid_ones(protocol: str, mode: str) -> None:
    _, agent = agent_for(
        [action(protocol, "teleport", {"to": "Mars"}), answer(protocol, "ok")], protocol
    )
    out = run(agent, "go", mode)
    step = out["steps"][0]
    # both protocols: the call as the model wrote it, answered by the tool runner (a text
    # model's unknown name is no longer an unusable reply: create_agent would end there)
    assert step["is_error"] is True and step["kind"] == "action"
    assert step["observation"] == "Unknown tool 'teleport'. Valid tools: echo, explode, slow, add."
    assert out["status"] == "answered"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_bad_arguments_become_an_observation(protocol: str, mode: str) -> None:
    _, agent = agent_for(
        [action(protocol, "add", {"a": "one", "b": 2}), answer(protocol, "ok")], protocol
    )
    out = run(agent, "add", mode)
    step = out["steps"][0]
    assert step["is_error"] is True
    assert step["observation"].startswith("Invalid arguments for tool 'add': a:")
    assert "Expected {a: integer, b: integer}" in step["observation"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tool_exception_becomes_an_observation(protocol: str, mode: str) -> None:
    _, agent = agent_for(
        [action(protocol, "explode", {"text": "x"}), answer(protocol, "ok")], protocol
    )
    out = run(agent, "boom", mode)
    assert out["steps"][0]["observation"] == "Tool 'explode' failed: RuntimeError: disk on fire"
    assert out["steps"][0]["is_error"] is True
    assert out["status"] == "answered"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tool_timeout_becomes_an_observation(protocol: str, mode: str) -> None:
    _, agent = agent_for(
        [action(protocol, "slow", {"seconds": 30}), answer(protocol, "ok")],
        protocol,
        tool_timeout=0.2,
    )
    started = time.monotonic()
    out = run(agent, "wait", mode)
    assert out["steps"][0]["observation"] == "Tool 'slow' timed out after 0.2 s."
    assert time.monotonic() - started < 20  # the 30 s sleep was abandoned, not awaited


def test_plain_string_input_fills_a_one_argument_tool(mode: str) -> None:
    _, agent = agent_for(["Action: echo: hello there", answer("text", "done")], "text")
    out = run(agent, "go", mode)
    assert out["steps"][0]["observation"] == "echo: hello there"


def test_text_invalid_reply_then_recovery(mode: str) -> None:
    model, agent = agent_for(["Action:", answer("text", "4")], "text")
    out = run(agent, "2+2?", mode)
    assert out["status"] == "answered" and out["answer"] == "4"
    invalid = out["steps"][0]
    assert invalid["kind"] == "invalid" and invalid["is_error"] is True
    feedback = model.requests[1].messages[-1].content
    assert feedback.startswith(
        "Observation: Your reply could not be used: the Action names no tool"
    )
    assert "Action: <one of: echo, explode, slow, add>" in feedback
    assert "Final Answer: <the answer>" in feedback


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_three_invalid_replies_end_with_error(protocol: str, mode: str) -> None:
    bad = "Action:" if protocol == "text" else AIMessage(content="")
    model, agent = agent_for([bad, bad, bad], protocol)
    out = run(agent, "?", mode)
    assert out["status"] == "error"
    assert out["error"].startswith("The model's last 3 replies could not be parsed")
    assert len(model.requests) == 3
    assert [s["kind"] for s in out["steps"]] == ["invalid"] * 3


def test_native_broken_arguments_are_answered_and_recovered(mode: str) -> None:
    broken = AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "name": "echo",
                "args": '{"text": ',
                "id": "call_bad",
                "error": "bad json",
                "type": "invalid_tool_call",
            }
        ],
    )
    model, agent = agent_for([broken, calls(tool_call("echo", {"text": "ok"})), "fine"], "native")
    out = run(agent, "go", mode)
    assert out["status"] == "answered"
    reply = model.requests[1].messages[-1]
    assert isinstance(reply, ToolMessage) and reply.tool_call_id == "call_bad"
    assert "not valid JSON" in reply.content
    assert [s["kind"] for s in out["steps"]] == ["invalid", "action", "answer"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_max_steps_ends_gracefully(protocol: str, mode: str) -> None:
    agent = build_graph(model=endless(protocol), tools=TOOLS, protocol=protocol, max_steps=3)
    out = run(agent, "loop forever", mode)
    assert out["status"] == "max_steps"
    assert out["answer"].startswith("I stopped after 3 steps without reaching a final answer")
    assert "max_steps=3" in out["answer"]
    assert len([s for s in out["steps"] if s["kind"] == "action"]) == 3
    assert out["steps"][-1]["kind"] == "limit"
    assert out["messages"][-1].content == out["answer"]


def test_answer_on_limit_asks_once_for_the_best_answer(mode: str) -> None:
    looping = action("text", "echo", {"text": "again"})
    model = ScriptedChatModel([looping, looping, answer("text", "Best guess: 42")])
    agent = build_graph(
        model=model, tools=TOOLS, protocol="text", max_steps=2, answer_on_limit=True
    )
    out = run(agent, "?", mode)
    assert out["status"] == "max_steps"
    assert out["answer"] == "Best guess: 42"
    assert "You have used all 2 steps" in model.requests[-1].messages[-1].content


@pytest.mark.parametrize("limit", range(2, 16))
def test_small_recursion_limit_still_stops_gracefully(limit: int, mode: str) -> None:
    agent = build_graph(model=endless("native"), tools=TOOLS, protocol="native", max_steps=10)
    out = run(agent, "loop", mode, {"recursion_limit": limit})
    assert out["status"] == "max_steps"
    assert "recursion_limit" in out["answer"]


def test_recursion_limit_is_derived_from_max_steps() -> None:
    agent = build_graph(model=ScriptedChatModel([]), tools=TOOLS, max_steps=7)
    assert agent.config["recursion_limit"] == recursion_limit_for(7)
    out = build_graph(model=endless("native"), tools=TOOLS, protocol="native", max_steps=25).invoke(
        {"messages": [("user", "loop")]}
    )
    assert out["status"] == "max_steps" and "max_steps=25" in out["answer"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_multi_turn_on_one_thread(protocol: str, mode: str) -> None:
    model = ScriptedChatModel(
        [answer(protocol, "Nice to meet you, Ada."), answer(protocol, "Your name is Ada.")]
    )
    agent = build_graph(model=model, tools=TOOLS, protocol=protocol, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"t-{protocol}-{mode}"}}
    run(agent, "I am Ada.", mode, config)
    out = run(agent, "What is my name?", mode, config)
    assert out["answer"] == "Your name is Ada."
    seen = [m.content for m in model.requests[1].messages]
    assert "I am Ada." in seen and "What is my name?" in seen
    assert any("Nice to meet you, Ada." in text for text in seen)
    assert [s["kind"] for s in out["steps"]] == ["answer"]  # a fresh trace per run


def test_limit_counters_reset_between_turns() -> None:
    model = ScriptedChatModel(
        [
            action("native", "echo", {"text": "1"}),
            action("native", "echo", {"text": "2"}),
            "A",
            action("native", "echo", {"text": "3"}),
            action("native", "echo", {"text": "4"}),
            "B",
        ]
    )
    agent = build_graph(
        model=model, tools=TOOLS, protocol="native", max_steps=2, checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "reset"}}
    # the limit is checked after observing, so two tool steps use the budget of 2
    first = agent.invoke({"messages": [("user", "one")]}, config)
    assert first["status"] == "max_steps"
    model.script[2:3] = []  # the "A" answer is never asked for
    second = agent.invoke({"messages": [("user", "two")]}, config)
    assert second["status"] == "max_steps"
    assert [s["tool_input"] for s in second["steps"] if s["kind"] == "action"] == [
        {"text": "3"},
        {"text": "4"},
    ]


def test_observations_are_truncated_with_a_note(mode: str) -> None:
    _, agent = agent_for(
        [action("native", "echo", {"text": "x" * 5000}), "ok"], "native", observation_limit=100
    )
    out = run(agent, "long", mode)
    observation = out["steps"][0]["observation"]
    assert observation.startswith("echo: " + "x" * 94)
    assert observation.endswith("[... 4,906 more characters cut; 5,006 in all]")


IMAGE = {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}


@tool
def chart(title: str) -> list:
    """Draw a chart: its caption, the image, a long legend."""
    return [{"type": "text", "text": f"chart: {title}"}, IMAGE, {"type": "text", "text": "y" * 500}]


def test_a_results_content_blocks_stay_blocks_and_only_their_text_is_cut(mode: str) -> None:
    """An image block reaches the model as the tool wrote it; the observation limit cuts the
    text alone, from the block that reaches it, and says how much of the whole went."""
    model, agent = agent_for(
        [action("native", "chart", {"title": "sales"}), "ok"],
        "native",
        tools=[chart],
        observation_limit=100,
    )
    run(agent, "draw", mode)
    caption, image, legend = model.requests[1].messages[-1].content
    assert caption == {"type": "text", "text": "chart: sales"} and image == IMAGE
    assert legend["text"] == "y" * 88 + "\n[... 412 more characters cut; 512 in all]"


def test_custom_stream_carries_step_events() -> None:
    _, agent = agent_for([action("text", "echo", {"text": "hi"}), answer("text", "bye")], "text")
    events = [chunk for chunk in agent.stream({"messages": [("user", "hi")]}, stream_mode="custom")]
    kinds = [e["event"] for e in events]
    assert kinds == ["thought", "action", "observation", "thought", "answer", "final"]
    assert events[1] == {"event": "action", "tool": "echo", "input": {"text": "hi"}}
    assert events[2]["text"] == "echo: hi"
    assert events[-1]["status"] == "answered"


def test_updates_stream_in_node_order() -> None:
    _, agent = agent_for([action("native", "echo", {"text": "hi"}), "bye"], "native")
    nodes = [
        next(iter(u)) for u in agent.stream({"messages": [("user", "hi")]}, stream_mode="updates")
    ]
    assert nodes == ["think", "act", "think", "finish"]  # nothing to observe: act -> think


def test_observe_runs_when_a_step_leaves_something_to_tell() -> None:
    """Two calls in one step (each its own act task), then the same call three times: observe
    runs after the pair (it alone sees both results); the repeat guard, a policy in think's
    chain, tells the model before its call after the second repeat and ends the run without a
    call after the third."""
    pair = AIMessage(
        content="",
        tool_calls=[
            {"name": "echo", "args": {"text": "a"}, "id": "c1"},
            {"name": "echo", "args": {"text": "b"}, "id": "c2"},
        ],
    )
    same = [action("native", "echo", {"text": "x"}) for _ in range(3)]
    _, agent = agent_for([pair, *same, "bye"], "native")
    updates = list(agent.stream({"messages": [("user", "hi")]}, stream_mode="updates"))
    nodes = [next(iter(u)) for u in updates]
    assert nodes == [
        "think", "act", "act", "observe",  # the pair: observe sees both results
        "think", "act", "think", "act",  # two identical steps
        "think", "act",  # told before the call, the model makes it a third time
        "think", "finish",  # stuck: no call
    ]  # fmt: skip
    assert updates[-2]["think"]["status"] == "stuck"
    told = [x for x in updates[8]["think"]["messages"] if is_agent_note(x)]
    assert len(told) == 1 and "exactly this result" in told[0].text


def test_tools_unsupported_falls_back_to_text_under_auto(mode: str) -> None:
    class ToolsRejected(Exception):
        status_code = 400

    model = ScriptedChatModel(
        [
            ToolsRejected("This model does not support tools"),
            action("text", "echo", {"text": "hi"}),
            answer("text", "done"),
        ]
    )
    agent = build_graph(model=model, tools=TOOLS, protocol="auto")
    out = run(agent, "hi", mode)
    assert out["status"] == "answered" and out["answer"] == "done"
    assert model.requests[0].tools and model.requests[1].stop == ["Observation:"]
    assert [s["kind"] for s in out["steps"]] == ["fallback", "action", "answer"]
    assert "does not support tools" in out["steps"][0]["observation"]
    assert {s["protocol"] for s in out["steps"][1:]} == {"text"}


def test_native_protocol_never_falls_back() -> None:
    class ToolsRejected(Exception):
        status_code = 400

    model = ScriptedChatModel([ToolsRejected("This model does not support tools")])
    out = build_graph(model=model, tools=TOOLS, protocol="native").invoke(
        {"messages": [("user", "hi")]}
    )
    assert out["status"] == "error"
    assert "refused the request with HTTP 400" in out["error"]


def test_model_exception_ends_with_error_and_keeps_state(mode: str) -> None:
    model = ScriptedChatModel([action("native", "echo", {"text": "a"}), ConnectionError("down")])
    saver = InMemorySaver()
    agent = build_graph(model=model, tools=TOOLS, protocol="native", checkpointer=saver)
    config = {"configurable": {"thread_id": f"fail-{mode}"}}
    out = run(agent, "go", mode, config)
    assert out["status"] == "error"
    # the caller's own model: named as given, with no hint about the endpoint's settings
    assert out["error"] == "Could not reach the model ScriptedChatModel: down."
    assert [s["observation"] for s in out["steps"]] == ["echo: a"]  # the work so far is kept


def test_a_quoted_library_message_does_not_double_the_stop(mode: str) -> None:
    """httpx ends its own sentence with a stop; quoted inside ours it must not read `.;`."""
    failure = ConnectionError("Request URL is missing an 'http://' or 'https://' protocol.")
    model = ScriptedChatModel([failure])
    out = run(build_graph(model=model, tools=TOOLS, protocol="native"), "go", mode)
    assert out["error"].endswith("'https://' protocol.") and ".." not in out["error"]


def test_missing_endpoint_is_one_clear_sentence(mode: str) -> None:
    agent = build_graph(tools=TOOLS)
    out = run(agent, "hi", mode)
    assert out["status"] == "error"
    assert out["error"].startswith("No model endpoint is configured: set OPENAI_API_KEY")


def test_bad_environment_setting_is_reported_by_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_MAX_STEPS", "lots")
    agent = build_graph(model=ScriptedChatModel(["hi"]), tools=TOOLS)
    out = agent.invoke({"messages": [("user", "hi")]})
    assert out["status"] == "error"
    assert out["error"].startswith(
        "Invalid agent configuration: max_steps (env REACT_AGENT_MAX_STEPS)"
    )


def test_bad_build_argument_fails_at_build() -> None:
    with pytest.raises(ConfigError, match="protocol"):
        build_graph(protocol="smoke-signals")


def test_run_context_overrides_build_settings() -> None:
    agent = build_graph(model=endless("native"), tools=TOOLS, protocol="native", max_steps=5)
    out = agent.invoke({"messages": [("user", "loop")]}, context={"max_steps": 2})
    assert out["status"] == "max_steps" and "max_steps=2" in out["answer"]


def test_registry_tools_are_the_default() -> None:
    model = ScriptedChatModel([action("native", "calculator", {"expression": "17 * 23"}), "391"])
    out = build_graph(model=model, protocol="native").invoke(
        {"messages": [("user", "What is 17 * 23?")]}
    )
    assert out["steps"][0]["observation"] == "391"
    offered = {spec["function"]["name"] for spec in model.requests[0].tools}
    assert "calculator" in offered


def test_unknown_registry_tool_name_is_a_run_error() -> None:
    agent = build_graph(model=ScriptedChatModel(["hi"]))
    out = agent.invoke({"messages": [("user", "hi")]}, context={"tools": ["calculator", "nope"]})
    assert out["status"] == "error"
    assert "Unknown tool 'nope'" in out["error"] and "calculator" in out["error"]


def test_token_usage_is_recorded_once_per_iteration() -> None:
    reply = calls(tool_call("echo", {"text": "a"}), tool_call("echo", {"text": "b"}))
    reply.usage_metadata = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    _, agent = agent_for([reply, "done"], "native")
    out = agent.invoke({"messages": [("user", "go")]})
    usages = [s["usage"] for s in out["steps"] if s["kind"] == "action"]
    assert usages == [{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}, None]


def test_auto_starts_known_text_only_models_on_the_text_protocol() -> None:
    model = ScriptedChatModel([answer("text", "42")])
    agent = build_graph(model=model, tools=TOOLS, protocol="auto")
    out = agent.invoke({"messages": [("user", "?")]}, context={"model": "deepseek-r1"})
    assert out["answer"] == "42" and out["steps"][0]["protocol"] == "text"
    assert model.requests[0].stop == ["Observation:"] and not model.requests[0].tools


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_loop_guard_nudges_then_stops_a_repeated_call(protocol: str, mode: str) -> None:
    same = action(protocol, "echo", {"text": "same"})
    model = ScriptedChatModel([same, same, same])
    agent = build_graph(model=model, tools=TOOLS, protocol=protocol, max_steps=10)
    out = run(agent, "repeat", mode)
    assert out["status"] == "stuck"
    assert out["answer"].startswith(
        'I stopped: the same call (echo with input {"text": "same"})'
        " was made 3 times in a row with the same result"
    )
    assert [s["kind"] for s in out["steps"]] == ["action", "action", "repeat", "action", "limit"]
    nudge = model.requests[2].messages[-1].content
    assert "You already called echo with exactly this input and got exactly this result" in nudge
    assert len(model.requests) == 3


def test_loop_guard_forgets_after_a_different_call() -> None:
    script = [
        action("native", "echo", {"text": "a"}),
        action("native", "echo", {"text": "a"}),
        action("native", "echo", {"text": "b"}),
        action("native", "echo", {"text": "a"}),
        "done",
    ]
    _, agent = agent_for(script, "native")
    out = agent.invoke({"messages": [("user", "go")]})
    assert out["status"] == "answered"
    assert [s["kind"] for s in out["steps"]].count("repeat") == 1


def test_message_ids_are_stable_across_loads() -> None:
    _, agent = agent_for(["Hello."], "native", checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "ids"}}
    out = agent.invoke({"messages": [("user", "Hi")]}, config)
    first = [m.id for m in agent.get_state(config).values["messages"]]
    second = [m.id for m in agent.get_state(config).values["messages"]]
    assert first == second == [m.id for m in out["messages"]]
    assert all(first)


def test_sync_tool_timeout_in_a_sync_run() -> None:
    def nap(seconds: float) -> str:
        time.sleep(seconds)
        return "rested"

    napping = StructuredTool.from_function(func=nap, name="nap", description="Sleep.")
    _, agent = agent_for(
        [action("native", "nap", {"seconds": 5}), "ok"],
        "native",
        tools=[napping],
        tool_timeout=0.2,
    )
    out = agent.invoke({"messages": [("user", "nap")]})
    assert out["steps"][0]["observation"] == "Tool 'nap' timed out after 0.2 s."


def test_usage_counting_adds_no_callback_hook_per_step() -> None:
    """Each `get_usage_metadata_callback()` registers a configure hook for good; the agent's
    counter is registered once, however many steps run."""
    from langchain_core.tracers.context import _configure_hooks

    _, agent = agent_for([action("native", "echo", {"text": "hi"}), "bye"], "native")
    agent.invoke({"messages": [("user", "hi")]})
    hooks = len(_configure_hooks)
    _, agent = agent_for(
        [action("native", "echo", {"text": str(i)}) for i in range(5)] + ["ok"], "native"
    )
    out = agent.invoke({"messages": [("user", "hi")]})
    assert out["status"] == "answered" and len(_configure_hooks) == hooks


def test_an_ordinary_step_writes_its_messages_alone() -> None:
    """The step limit counts the number think writes on each step, so a step that changes no
    other bookkeeping writes no `run` (each write is a stored row per step)."""
    script = [action("native", "echo", {"text": str(i)}) for i in range(3)] + ["done"]
    _, agent = agent_for(script, "native", max_steps=3)
    updates = list(agent.stream({"messages": [("user", "hi")]}, stream_mode="updates"))
    thinks = [u["think"] for u in updates if "think" in u]
    assert all(set(t) == {"messages"} for t in thinks[1:3])
    steps = [t["messages"][-1].response_metadata.get("react_step") for t in thinks[:3]]
    assert steps == [1, 2, 3]
