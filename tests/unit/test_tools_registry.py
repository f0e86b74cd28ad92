"""The tool registry: names, loading, REACT_AGENT_TOOLS."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.tools import BaseTool, StructuredTool

import tools
from tools import TOOL_NAMES, UnknownToolError, default_tools, load_tools, tools_from_env

ALL = ("calculator", "weather", "wikipedia", "knowledge_search", "web_fetch", "current_time")


def test_tool_names() -> None:
    assert TOOL_NAMES == ALL
    assert [tool.name for tool in default_tools()] == list(ALL)


def test_every_tool_is_async_capable_with_a_schema_and_a_description() -> None:
    for tool in default_tools():
        assert isinstance(tool, StructuredTool)
        assert tool.coroutine is not None and tool.func is not None
        assert tool.args_schema is not None
        assert len(tool.description) > 60


def test_load_tools_in_order_without_duplicates() -> None:
    loaded = load_tools(["current_time", " weather ", "current_time", ""])
    assert [tool.name for tool in loaded] == ["current_time", "weather"]
    assert all(isinstance(tool, BaseTool) for tool in loaded)


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownToolError) as caught:
        load_tools(["weather", "search_web"])
    assert str(caught.value) == (
        "Unknown tool 'search_web'; known tools: calculator, weather, wikipedia, "
        "knowledge_search, web_fetch, current_time."
    )


def test_tools_from_env_unset_or_empty_means_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REACT_AGENT_TOOLS", raising=False)
    assert [tool.name for tool in tools_from_env()] == list(ALL)
    monkeypatch.setenv("REACT_AGENT_TOOLS", " , ")
    assert [tool.name for tool in tools_from_env()] == list(ALL)


def test_tools_from_env_selects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_TOOLS", "weather, current_time")
    assert [tool.name for tool in tools_from_env()] == ["weather", "current_time"]
    assert [t.name for t in tools_from_env({"REACT_AGENT_TOOLS": "calculator"})] == ["calculator"]


def test_tools_from_env_unknown_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_TOOLS", "calculator,browser")
    with pytest.raises(UnknownToolError) as caught:
        tools_from_env()
    assert str(caught.value) == (
        "REACT_AGENT_TOOLS: Unknown tool 'browser'; known tools: calculator, weather, "
        "wikipedia, knowledge_search, web_fetch, current_time."
    )


def test_importing_tools_loads_no_tool_module() -> None:
    code = (
        "import sys, tools; "
        "print(sorted(m for m in sys.modules if m.startswith('tools.')), 'httpx' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    ).stdout
    assert out.strip() == "[] False"


def test_public_api() -> None:
    assert set(tools.__all__) >= {
        "TOOL_NAMES",
        "UnknownToolError",
        "load_tools",
        "default_tools",
        "tools_from_env",
    }
