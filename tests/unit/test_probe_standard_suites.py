"""LangChain's own conformance suites (`langchain_tests`) run on this project's public pieces.

Covered:

* `TextReAct` (graph/protocols/text/chat_model.py) under `ChatModelUnitTests`, and under the
  whole of `ChatModelIntegrationTests` with a real `ChatOpenAI` as the inner model, talking over
  HTTP to the scripted OpenAI-compatible server (tests/support/openai_server.py), whose replies
  are written in the ReAct text format by a rule-following stand-in for an LLM
  (tests/support/standard_react_writer.py: it reads only the prompt TextReAct sends). Tests
  that need a feature TextReAct does not offer are skipped by the suite's switches (images,
  audio, PDF, JSON mode, VCR).
* The six built-in tools of the registry (`tools.TOOL_NAMES`) under `ToolsUnitTests` and
  `ToolsIntegrationTests`; the HTTP tools (weather, wikipedia, web_fetch) through one
  `httpx.MockTransport` and a DNS stub (tests/support/standard_http.py), never the internet.
* The embedded model, `LocalCompletionModel` on the in-process llama.cpp engine (loaded once
  for its class), under `ChatModelUnitTests` and the shape-only part of
  `ChatModelIntegrationTests` (invoke, ainvoke, stream, astream, batch, abatch, conversations,
  usage, stop); skipped when the `local` extra is not installed.

Found when it was written (each a strict xfail on the suite's own assertion, checked with
--runxfail); the TextReAct ones are fixed and ordinary tests now:

* TextReAct.bind_tools returned a TextReAct copy, not a RunnableBinding, so code that looks for
  tools already bound (`RunnableBinding.kwargs["tools"]`, langgraph's `_should_bind_tools`)
  bound them again and dropped the caller's tool_choice;
* TextReAct reported no `ls_model_name` in its LangSmith params (now the inner model's);
* TextReAct replies carried no `response_metadata["model_name"]` (it was renamed
  `react_inner_model`), so the usage tests and the four model-override tests failed although
  the override did reach the inner model;
* TextReAct with `tool_choice="<tool name>"` never told the model which tool is forced: the
  prompt said only "use one of the tools", so another tool was called;
* TextReAct fired `on_chat_model_start` (and `on_llm_end`, with the same usage) twice per call:
  its own run and the inner model's child run (the `with_structured_output` tests count the
  starts). The inner model is now called inside TextReAct's run (`inner_call`);
* The embedded model (`LocalCompletionModel`) had no `_stream`: `stream`/`astream` yielded a
  whole `AIMessage` (not an `AIMessageChunk` ending with `chunk_position="last"`), and
  `stream_events(version="v3")` raised `NotImplementedError` (both now stream their reply as
  one chunk: `graph/protocols/text/one_chunk.py`).

Held: TextReAct's invoke, ainvoke, batch, abatch, stream and astream (v0 and v1 output), stream
events v3, conversations, named messages, stop sequences, tool calling (sync, async, without
arguments, runnables as tools, unicode arguments), tool-message histories (string, list, error
status), few-shot examples, the agent loop, and structured output's parsed values; every
built-in tool's name, input schema, example arguments and ToolMessage output, sync and async;
the embedded model's invoke, ainvoke, batch, abatch, conversations, stop and usage_metadata with
its model_name (its tool calling and structured output are skipped through `has_tool_calling`:
it documents ReAct text replies for the agent's reader, not `tool_calls`).

Seen outside the suites' assertions, and fixed: `TextReAct(inner, temperature=0, stop=[...],
max_tokens=5)` dropped those arguments silently (they now go with each call; a client setting
such as `api_key` is said to belong to the inner model; anything else is a TypeError). The
embedded model ignored `stop` (`invoke("Say thank you", stop=["you"])` answered "Thank
you."); its reply is now cut before the first stop sequence.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langchain_openai import ChatOpenAI
from langchain_tests.integration_tests import ChatModelIntegrationTests, ToolsIntegrationTests
from langchain_tests.unit_tests import ChatModelUnitTests, ToolsUnitTests

from graph.models.local import local_available
from graph.protocols.text.chat_model import TextReAct
from tests.support.openai_server import ScriptedOpenAIServer
from tests.support.standard_http import PAGE_URL, offline_http
from tests.support.standard_react_writer import write_react
from tools import TOOL_NAMES, load_tools

# == TextReAct ===================================================================================


@functools.cache
def _react_server() -> ScriptedOpenAIServer:
    """One scripted endpoint for the module, every reply written by `write_react`."""
    return ScriptedOpenAIServer(default=write_react).start()


@pytest.fixture(scope="module", autouse=True)
def _close_react_server() -> Iterator[None]:
    yield
    if _react_server.cache_info().currsize:
        _react_server().close()
        _react_server.cache_clear()


def _inner() -> ChatOpenAI:
    return ChatOpenAI(
        base_url=_react_server().base_url,
        api_key="sk-test",
        model="scripted-react",
        max_retries=0,
        # a client of its own per model: langchain_openai's shared async client keeps pooled
        # connections bound to an earlier test's event loop
        http_client=httpx.Client(),
        http_async_client=httpx.AsyncClient(),
    )


class TestTextReActUnit(ChatModelUnitTests):
    @property
    def chat_model_class(self) -> type[BaseChatModel]:
        return TextReAct

    @property
    def chat_model_params(self) -> dict[str, Any]:
        # a real chat model, never called by these tests: its name is what LangSmith reports
        inner = ChatOpenAI(model="gpt-4o-mini", api_key="sk-test", base_url="http://127.0.0.1:9/v1")
        return {"inner": inner}


class TestTextReActIntegration(ChatModelIntegrationTests):
    @property
    def chat_model_class(self) -> type[BaseChatModel]:
        return TextReAct

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"inner": _inner()}

    @property
    def model_override_value(self) -> str | None:
        return "scripted-override"  # a per-call `model=` goes through to the inner ChatOpenAI


# == the built-in tools ==========================================================================

EXAMPLES: dict[str, dict[str, Any]] = {
    "calculator": {"expression": "17 * 23"},
    "weather": {"location": "Beijing"},
    "wikipedia": {"query": "India"},
    "knowledge_search": {"query": "checkpoint resume"},
    "web_fetch": {"url": PAGE_URL},
    "current_time": {"timezone": "Asia/Shanghai"},
}


def test_every_registered_tool_is_covered() -> None:
    assert set(EXAMPLES) == set(TOOL_NAMES)


@pytest.fixture
def _offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("REACT_AGENT_HTTP_BACKOFF", "0")
    monkeypatch.setenv("REACT_AGENT_HTTP_RETRIES", "1")
    monkeypatch.setenv("REACT_AGENT_HTTP_TIMEOUT", "2")
    with offline_http():
        yield


class _BuiltinTool:
    """The registry's tool `name`, with its example arguments."""

    name: str

    @property
    def tool_constructor(self) -> BaseTool:
        [tool] = load_tools([self.name])
        return tool

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return EXAMPLES[self.name]


def _suites(name: str) -> tuple[type, type]:
    unit = type(f"TestTool_{name}_Unit", (_BuiltinTool, ToolsUnitTests), {"name": name})
    integration = type(
        f"TestTool_{name}_Integration",
        (_BuiltinTool, ToolsIntegrationTests),
        {"name": name, "pytestmark": [pytest.mark.usefixtures("_offline")]},
    )
    return unit, integration


TestToolCalculatorUnit, TestToolCalculatorIntegration = _suites("calculator")
TestToolWeatherUnit, TestToolWeatherIntegration = _suites("weather")
TestToolWikipediaUnit, TestToolWikipediaIntegration = _suites("wikipedia")
TestToolKnowledgeUnit, TestToolKnowledgeIntegration = _suites("knowledge_search")
TestToolWebFetchUnit, TestToolWebFetchIntegration = _suites("web_fetch")
TestToolClockUnit, TestToolClockIntegration = _suites("current_time")


# == the embedded model ==========================================================================

HAS_LOCAL = importlib.util.find_spec("llama_cpp") is not None and local_available()
local = pytest.mark.skipif(not HAS_LOCAL, reason="the local extra is not installed")


def _local_class() -> type[BaseChatModel]:
    from graph.models.local import LocalCompletionModel

    return LocalCompletionModel


def _local_params() -> dict[str, Any]:
    from graph.models.local import IN_PROCESS_URL

    return {"base_url": IN_PROCESS_URL, "tools": load_tools(["calculator", "current_time"])}


@local
class TestLocalModelUnit(ChatModelUnitTests):
    @property
    def chat_model_class(self) -> type[BaseChatModel]:
        return _local_class()

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return _local_params()


@pytest.fixture(scope="class")
def _embedded() -> Iterator[None]:
    """The in-process model, loaded once for the class and freed after it (a later user of the
    process-wide model starts it again: `local_server()` restarts a stopped one)."""
    from graph.models.local import local_server, stop_local_server

    local_server(progress=None)
    yield
    stop_local_server()


@local
@pytest.mark.local_llm
@pytest.mark.usefixtures("_embedded")
class TestLocalModelIntegration(ChatModelIntegrationTests):
    @property
    def chat_model_class(self) -> type[BaseChatModel]:
        return _local_class()

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return _local_params()

    @property
    def has_tool_calling(self) -> bool:
        return False  # documented: replies are ReAct text for the agent's reader, not tool_calls

    @property
    def supports_model_override(self) -> bool:
        return False  # one GGUF model per process; `model` only labels the replies


@local
@pytest.mark.local_llm
@pytest.mark.usefixtures("_embedded")
def test_the_embedded_model_stops_at_a_stop_sequence() -> None:
    """A caller's `stop`: the constrained requests cannot take it, so the reply is cut before
    the first one (found ignored: "Say thank you" with stop ["you"] answered "Thank you.")."""
    model = _local_class()(**_local_params())
    whole = model.invoke("Say thank you").text
    assert "you" in whole.lower(), whole
    cut = model.invoke("Say thank you", stop=["you"]).text
    assert "you" not in cut and whole.startswith(cut), (whole, cut)
