"""`react-agent config` says which model a run would use: with no key and no endpoint that is the
embedded model, not `gpt-4o-mini` at `base_url None`. It decides without importing the model
factory (which loads LangChain), so this test keeps its decision in step with the factory's."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from graph.cli.commands.info import _embedded, _rows, _source
from graph.cli.options import RunOptions
from graph.models.factory import wants_local
from graph.settings import EMBEDDED_DEFAULTS, ENV_VARS, AgentContext, resolve_context, shown_value

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


# -- one value per setting: the embedded model's defaults ------------------------------------

EMBEDDED_PAGE = Path(__file__).resolve().parents[2] / "docs" / "embedded-model.md"


def _page_defaults() -> dict[str, str]:
    """The embedded-model page's table of defaults: setting -> value as written."""
    rows = re.findall(r"^\| `(\w+)` \| `([^`]+)` \|", EMBEDDED_PAGE.read_text(), re.M)
    return dict(rows)


def test_the_embedded_defaults_are_one_value_wherever_they_are_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The settings' help (and so the docs' generated table), `config`, the embedded-model
    page, the constants the bench and tests read, and the bounds a run really gets: once
    `answer_after` was 1 in the help and the table, 2 in the code and that page, and `config`
    showed `None` for all four."""
    import graph.models.local as local
    from graph.loop.bindings import LOCAL_DEFAULTS
    from tests.docs.test_settings_table import table_rows

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    ctx = resolve_context({"model": "local"})
    shown = _rows(ctx, RunOptions(model="local"), frozenset())
    table = table_rows()
    assert set(EMBEDDED_DEFAULTS) == {"answer_after", "max_tokens", "run_timeout", "quoted_answers"}
    for name, value in EMBEDDED_DEFAULTS.items():
        typed = shown_value(value)
        sentence = f"The embedded model's default: {typed}."
        assert AgentContext.model_fields[name].description.endswith(sentence), name
        assert table[ENV_VARS[name]][3].endswith(sentence), name
        assert shown[name] == (typed, "embedded-model default"), name
        assert _page_defaults()[name] == typed, name
        assert LOCAL_DEFAULTS[name] == value, name
    constants = (local.ANSWER_AFTER, local.STEP_TOKENS, local.RUN_DEADLINE, local.QUOTED_ANSWERS)
    assert constants == tuple(
        EMBEDDED_DEFAULTS[n]
        for n in ("answer_after", "max_tokens", "run_timeout", "quoted_answers")
    )


def test_config_says_where_each_value_comes_from(monkeypatch: pytest.MonkeyPatch) -> None:
    """An option wins over the environment, which wins over `.env` (read without overriding
    it: a variable it set was not there before); an operator's value replaces the embedded
    model's default, and what nobody set is the default."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    for variable in ENV_VARS.values():
        if variable.startswith("REACT_AGENT_"):
            monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("REACT_AGENT_MAX_STEPS", "7")  # environment, but the option wins
    monkeypatch.setenv("REACT_AGENT_RUN_TIMEOUT", "12")  # environment
    monkeypatch.setenv("REACT_AGENT_MAX_TOKENS", "64")  # as if .env had set it
    monkeypatch.setenv("REACT_AGENT_CHECKPOINTER", "memory")
    before = frozenset(os.environ) - {"REACT_AGENT_MAX_TOKENS"}
    run = RunOptions(model="local", max_steps=4)
    rows = _rows(resolve_context(run.settings()), run, before)
    assert rows["model"][1] == "option --model"
    assert rows["max_steps"] == ("4", "option --max-steps")
    assert rows["run_timeout"] == ("12", "environment REACT_AGENT_RUN_TIMEOUT")
    assert rows["max_tokens"] == ("64", ".env REACT_AGENT_MAX_TOKENS")
    assert rows["answer_after"] == ("2", "embedded-model default")
    assert rows["tool_timeout"] == ("30", "default")
    assert rows["system_prompt"] == ("(none)", "default")
    assert _source(run, before)["checkpointer"] == "environment REACT_AGENT_CHECKPOINTER"
