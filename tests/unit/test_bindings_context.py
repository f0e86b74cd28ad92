"""The run context is resolved once per distinct run context and environment: a cached context
must never outlive a change to the settings' environment variables."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from graph.nodes.bindings import Bindings
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
