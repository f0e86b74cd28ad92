"""`react-agent config` says which model a run would use: with no key and no endpoint that is the
embedded model, not `gpt-4o-mini` at `base_url None`. It decides without importing the model
factory (which loads LangChain), so this test keeps its decision in step with the factory's."""

from __future__ import annotations

import pytest

from graph.cli.commands.info import _embedded
from graph.models.factory import wants_local
from graph.settings import resolve_context

CASES = [
    ({}, {}),
    ({"OPENAI_API_KEY": "sk-test"}, {}),
    ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, {}),
    ({"OPENAI_API_KEY": "sk-test"}, {"model": "local"}),
    ({"REACT_AGENT_LOCAL": "off"}, {}),
    ({"REACT_AGENT_LOCAL": "off", "REACT_AGENT_API_KEY_ENV": "MY_KEY", "MY_KEY": "x"}, {}),
    ({"REACT_AGENT_API_KEY_ENV": "MY_KEY", "OPENAI_API_KEY": "sk-test"}, {}),
]


@pytest.mark.parametrize(("env", "layer"), CASES)
def test_config_and_the_factory_agree_on_the_embedded_model(
    env: dict[str, str], layer: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REACT_AGENT_LOCAL", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    ctx = resolve_context(layer)
    shown = _embedded(ctx)
    assert bool(shown) == wants_local(ctx)
    if shown:
        assert shown["model"].startswith("local: the embedded model (")
        assert "llama.cpp" in shown["base_url"]
