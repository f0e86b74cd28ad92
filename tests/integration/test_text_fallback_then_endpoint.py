"""A run that fell back to the text protocol (the model swapped for `TextReAct`) keeps to text
when the endpoint then fails and an operator's fallback model takes over. The real ChatOpenAI
against two scripted OpenAI-compatible servers."""

from __future__ import annotations

import pytest
from langchain_core.tools import tool

from graph import build_graph
from tests.support.openai_server import HTTPError, Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.integration


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


def test_the_fallback_model_answers_in_text_after_the_switch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-primary")
    refused = HTTPError(400, "this model does not support tools", code="tools_unsupported")
    text_answer = Reply(content="Thought: ok\nFinal Answer: Fine.")
    with (
        ScriptedOpenAIServer([refused, HTTPError(503, "overloaded")]) as primary,
        ScriptedOpenAIServer([text_answer]) as backup,
    ):
        graph = build_graph(
            model="primary",
            base_url=primary.base_url,
            tools=[echo],
            protocol="auto",
            max_retries=0,
            fallback_models=[f"backup|{backup.base_url}"],
        )
        out = graph.invoke({"messages": [("user", "hi")]})
        assert (out["status"], out["answer"]) == ("answered", "Fine.")
        [request] = backup.chat_requests
        assert "tools" not in request.body and request.body.get("stop") == ["Observation:"]
        assert [s["kind"] for s in out["steps"]] == ["fallback", "answer"]
