"""`build_graph` takes what `create_agent` takes: plain functions and provider tools' dicts in
`tools`, a `SystemMessage` system prompt, `interrupt_after=` and `debug=`; and the stream a
client reads names `think` and `act` where `create_agent`'s names `model` and `tools`, as
docs/middleware.md ("For stream consumers") says."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from graph import build_graph
from graph.settings import ConfigError
from tests.support.scripted_model import ScriptedChatModel, action, answer

PROTOCOLS = ["native", "text"]
DOC = Path(__file__).resolve().parents[2] / "docs" / "middleware.md"
QUESTION = {"messages": [("user", "Say hi back.")]}


def shout(text: str) -> str:
    """Repeat the text in capitals."""
    return text.upper()


@tool
def echo(text: str) -> str:
    """Repeat the text back."""
    return f"echo: {text}"


def tool_then_answer(protocol: str, name: str = "echo") -> ScriptedChatModel:
    return ScriptedChatModel([action(protocol, name, {"text": "hi"}), answer(protocol, "done")])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_plain_function_is_a_tool(protocol: str) -> None:
    model = tool_then_answer(protocol, "shout")
    out = build_graph(model, [shout], protocol=protocol).invoke(QUESTION)
    assert (out["status"], out["answer"]) == ("answered", "done")
    assert out["messages"][2].content == "HI"
    listed = str(model.requests[0].tools or model.requests[0].messages[0].content)
    assert "Repeat the text in capitals." in listed  # its docstring describes it, as in LangChain


def test_a_tool_that_is_not_one_is_refused_in_one_sentence() -> None:
    def undocumented(text: str) -> str:
        return text

    with pytest.raises(ConfigError, match=r"must be a LangChain tool, a function or .* got int"):
        build_graph(ScriptedChatModel([]), [42])
    with pytest.raises(ConfigError, match=r"'undocumented' cannot be used: .*docstring"):
        build_graph(ScriptedChatModel([]), [undocumented])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_provider_tool_is_offered_natively_and_never_run(protocol: str) -> None:
    search = {"type": "web_search_preview"}
    model = tool_then_answer(protocol)
    out = build_graph(model, [echo, search], protocol=protocol).invoke(QUESTION)
    assert (out["status"], out["answer"]) == ("answered", "done")
    assert out["messages"][2].content == "echo: hi"
    for request in model.requests:
        if protocol == "native":  # bound beside the function tools, as create_agent binds it
            assert search in request.tools
            assert "echo" in [t.get("function", {}).get("name") for t in request.tools]
        else:  # the text protocol lists only the tools the agent runs
            assert "web_search_preview" not in request.messages[0].text


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_system_message_keeps_its_content(protocol: str) -> None:
    blocks = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    given = SystemMessage(content=blocks, additional_kwargs={"origin": "caller"})
    model = tool_then_answer(protocol)
    agent = build_graph(model, [echo], protocol=protocol, system_prompt=given)
    assert agent.invoke(QUESTION)["answer"] == "done"
    for request in model.requests:
        sent = request.messages[0]
        assert isinstance(sent, SystemMessage)
        if protocol == "native":  # as create_agent sends it: the blocks and extras kept
            assert (sent.content, sent.additional_kwargs) == (blocks, {"origin": "caller"})
        else:  # the text protocol's prompt opens with its text
            assert sent.text.startswith("Be brief.\n\n")


def test_a_system_message_in_several_text_blocks_reads_as_paragraphs() -> None:
    """The text protocol writes a system message's text into its own prompt: each block a
    paragraph (LangChain's `.text` would run "Be brief.Answer in French." together), an image
    block left out. The same under create_agent with TextReAct."""
    from graph.protocols.text.chat_model import TextReAct

    blocks = [
        {"type": "text", "text": "Be brief."},
        {"type": "image", "url": "https://example.com/logo.png"},
        {"type": "text", "text": "Answer in French.", "cache_control": {"type": "ephemeral"}},
    ]
    ours = tool_then_answer("text")
    build_graph(ours, [echo], protocol="text", system_prompt=SystemMessage(blocks)).invoke(QUESTION)
    theirs = tool_then_answer("text")
    create_agent(TextReAct(theirs), [echo], system_prompt=SystemMessage(blocks)).invoke(QUESTION)
    for model in (ours, theirs):
        prompt = model.requests[0].messages[0].text
        assert prompt.startswith("Be brief.\n\nAnswer in French.\n\n"), prompt[:80]
        assert "example.com" not in prompt


def test_middleware_sees_the_callers_system_message() -> None:
    """A `wrap_model_call` reads `request.system_message` as create_agent hands it over: the
    caller's message itself, content blocks and all."""
    from langchain.agents.middleware import wrap_model_call

    seen: list[Any] = []

    @wrap_model_call
    def look(request: Any, handler: Any) -> Any:
        seen.append(request.system_message)
        return handler(request)

    blocks = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    model = ScriptedChatModel([answer("native", "done")])
    agent = build_graph(
        model, [echo], protocol="native", system_prompt=SystemMessage(blocks), middleware=[look]
    )
    agent.invoke(QUESTION)
    assert [m.content for m in seen] == [blocks]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_run_context_system_prompt_still_wins(protocol: str) -> None:
    model = ScriptedChatModel([answer(protocol, "done")])
    agent = build_graph(model, [echo], protocol=protocol, system_prompt=SystemMessage("Built."))
    agent.invoke(QUESTION, context={"system_prompt": "From the run."})
    assert model.requests[0].messages[0].text.startswith("From the run.")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_interrupt_after_pauses_after_the_node(protocol: str) -> None:
    model = tool_then_answer(protocol)
    agent = build_graph(
        model, [echo], checkpointer=InMemorySaver(), protocol=protocol, interrupt_after=["act"]
    )
    config = {"configurable": {"thread_id": f"after-{protocol}"}}
    agent.invoke(QUESTION, config)
    paused = agent.get_state(config)
    assert paused.next and paused.values["messages"][-1].content == "echo: hi"
    assert len(model.requests) == 1  # the tool ran; the model is not asked again yet
    out = agent.invoke(None, config)
    assert (out["status"], out["answer"]) == ("answered", "done")


def test_create_agents_node_names_pause_where_the_nodes_that_play_them_run() -> None:
    """Code written for `create_agent` pauses before `tools` (act) and after `model` (think)."""
    for names in ({"interrupt_before": ["tools"]}, {"interrupt_after": ["model"]}):
        model = tool_then_answer("native")
        agent = build_graph(model, [echo], checkpointer=InMemorySaver(), **names)
        config = {"configurable": {"thread_id": f"aliases-{names}"}}
        agent.invoke(QUESTION, config)
        paused = agent.get_state(config)
        assert paused.next and paused.values["messages"][-1].tool_calls, names
        assert len(model.requests) == 1  # the model asked for the call; nothing ran yet
        while agent.get_state(config).next:  # every later think pauses too, with `model`
            out = agent.invoke(None, config)
        assert (out["status"], out["answer"]) == ("answered", "done"), names


def test_debug_prints_each_step_as_create_agent_does(capsys: pytest.CaptureFixture) -> None:
    quiet = build_graph(ScriptedChatModel([answer("native", "done")]), [echo])
    quiet.invoke(QUESTION)
    assert not quiet.debug and capsys.readouterr().out == ""
    loud = build_graph(ScriptedChatModel([answer("native", "done")]), [echo], debug=True)
    loud.invoke(QUESTION)
    assert loud.debug and "'think'" in capsys.readouterr().out


def test_a_node_cache_goes_to_compile_as_create_agent_passes_it() -> None:
    from langgraph.cache.memory import InMemoryCache

    cache = InMemoryCache()
    agent = build_graph(ScriptedChatModel([answer("native", "done")]), [echo], cache=cache)
    assert agent.cache is cache
    assert agent.invoke(QUESTION)["answer"] == "done"


# -- for stream consumers --------------------------------------------------------------


def documented_roles() -> dict[str, str]:
    """`create_agent`'s node -> this agent's, as the section's table states it."""
    section = DOC.read_text().split("## For stream consumers", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \|", section, flags=re.MULTILINE)
    return dict(rows)


def message_stream(agent: Any) -> list[tuple[str, str]]:
    return [
        (meta["langgraph_node"], type(message).__name__)
        for message, meta in agent.stream(QUESTION, stream_mode="messages")
    ]


def update_stream(agent: Any) -> list[tuple[str, list[str]]]:
    shown = []
    for update in agent.stream(QUESTION, stream_mode="updates"):
        for node, values in update.items():
            written = (values or {}).get("messages") if isinstance(values, dict) else None
            if written:
                shown.append((node, [type(m).__name__ for m in written]))
    return shown


def test_the_documented_roles_are_the_nodes_that_stream() -> None:
    roles = documented_roles()
    assert roles == {"model": "think", "tools": "act"}
    ours = roles
    reference = create_agent(tool_then_answer("native"), [echo])
    expected_messages = [(ours[n], kind) for n, kind in message_stream(reference)]
    reference = create_agent(tool_then_answer("native"), [echo])
    expected_updates = [(ours[n], kinds) for n, kinds in update_stream(reference)]
    assert expected_messages == [
        ("think", "AIMessage"),
        ("act", "ToolMessage"),
        ("think", "AIMessage"),
    ]
    for protocol in PROTOCOLS:  # the same shape under both protocols
        agent = build_graph(tool_then_answer(protocol), [echo], protocol=protocol)
        assert message_stream(agent) == expected_messages
        agent = build_graph(tool_then_answer(protocol), [echo], protocol=protocol)
        assert update_stream(agent) == expected_updates


class StreamingModel(ScriptedChatModel):
    """Streams each reply word by word, as a hosted model streams its tokens."""

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        reply = self._reply(messages, stop, **kwargs).generations[0].message
        for piece in re.findall(r"\S+\s*", reply.text):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tokens_stream_from_think_natively_and_the_parsed_step_under_text(protocol: str) -> None:
    assert documented_roles()["model"] == "think"  # the table's first row, checked here
    text = "It is forty two." if protocol == "native" else answer("text", "It is forty two.")
    agent = build_graph(StreamingModel([text]), [echo], protocol=protocol)
    streamed = list(agent.stream(QUESTION, stream_mode="messages"))
    assert {meta["langgraph_node"] for _, meta in streamed} == {"think"}
    if protocol == "native":  # the model's tokens, as they come
        chunks = [m for m, _ in streamed if isinstance(m, AIMessageChunk)]
        assert len(chunks) > 1 and "".join(c.text for c in chunks) == "It is forty two."
    else:  # no raw labels: the step, parsed, as one whole message
        assert [(type(m), m.text) for m, _ in streamed] == [(AIMessage, "It is forty two.")]
