"""`--json`, JSON Lines and every JSON the CLI prints parse back to the value written, whatever
the text holds (issue 40, finding 2).

The third round found `ask --json` printing `{\\u000a  "thread_id"`: hiding characters were
escaped over the whole dumped text, structural newlines of the indented document included, so
one em dash in a tool result or a Chinese answer broke every script reading `--json`. Escapes
belong inside strings only; these tests hold each JSON writer of the CLI to that for arbitrary
Unicode, at both indents, and run `ask --json` end to end on hostile text.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graph.cli.options import Stop
from graph.cli.output import hides, json_lines, json_text, visible_json
from tests.support.cli import cli_env, run_cli
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

ANY_TEXT = st.text(alphabet=st.characters(codec=None, categories=None), max_size=20)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | ANY_TEXT
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=12,
)
# Text of each kind the finding names: non-ASCII, RTL, emoji, controls, line separators.
HOSTILE = (
    "naïve — 世界 مرحبا \u202eevil\u202c 😀👩\u200d🚀 \x00\x07\x1b[31m\x7f\x85\u2028\u2029 end"
)


def strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [*value, *(s for v in value.values() for s in strings_in(v))]
    if isinstance(value, list):
        return [s for item in value for s in strings_in(item)]
    return []


def check_document(text: str, value: Any, indent: int | None) -> None:
    """`text` parses back to `value`, holds no raw hiding character apart from the layout's
    own newlines (as many as the plain indented document has), and is what `json.dumps`
    writes when no string of `value` needs an escape."""
    assert json.loads(text) == value
    assert [c for c in text if hides(c) and c != "\n"] == []
    assert text.count("\n") == json.dumps(value, indent=indent).count("\n")
    if not any(hides(c) for s in strings_in(value) for c in s):
        assert text == json.dumps(value, ensure_ascii=False, indent=indent)


@settings(max_examples=400, deadline=None)
@given(VALUES, st.sampled_from([None, 2]))
def test_json_text_parses_back_at_both_indents(value: Any, indent: int | None) -> None:
    check_document(json_text(value, indent=indent), value, indent)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(ANY_TEXT, VALUES, max_size=3), max_size=4))
def test_json_lines_are_one_parsable_line_per_record(records: list[dict[str, Any]]) -> None:
    out = io.StringIO()
    json_lines(records, stream=out)
    lines = out.getvalue().splitlines()  # str.splitlines also breaks at U+2028, U+0085, ...
    assert len(lines) == len(records)
    for line, record in zip(lines, records, strict=True):
        check_document(line, record, None)


@settings(max_examples=200, deadline=None)
@given(VALUES)
def test_the_one_line_json_of_prompts_and_steps_parses(value: Any) -> None:
    check_document(visible_json(value), value, None)


@settings(max_examples=100, deadline=None)
@given(ANY_TEXT, ANY_TEXT, st.lists(st.dictionaries(ANY_TEXT, ANY_TEXT, max_size=2), max_size=2))
def test_the_run_summary_parses(answer: str, error: str, steps: list[dict[str, str]]) -> None:
    """`ask`, `resume` and `replay --json`: the summary `session.report` prints."""
    from graph.cli.session import report

    values = {"status": "error", "answer": answer, "error": error, "steps": steps, "usage": None}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(Stop):
        report(values, "t1", False, True, "memory")
    summary = json.loads(out.getvalue())
    assert (summary["answer"], summary["error"], summary["steps"]) == (answer, error, steps)
    assert [c for c in out.getvalue() if hides(c) and c != "\n"] == []


@pytest.mark.parametrize("indent", [None, 2])
def test_keys_json_refuses_and_circular_values_still_print(indent: int | None) -> None:
    assert json.loads(json_text({("a", 1): HOSTILE}, indent=indent)) == {"('a', 1)": HOSTILE}
    loop: list[Any] = [HOSTILE]
    loop.append(loop)
    assert isinstance(json.loads(json_text(loop, indent=indent)), str)


@pytest.mark.integration
def test_ask_json_parses_with_hostile_question_tool_result_and_answer(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    env = cli_env(openai_server.base_url, tmp_path / "state")
    openai_server.add(
        Reply(tool_calls=[ToolCall("tick", {"label": HOSTILE})]), Reply(content=HOSTILE)
    )
    tools = "tests.support.crash_tools:TOOLS"
    question = "Q " + HOSTILE.replace("\x00", "")  # an argument cannot hold NUL
    done = run_cli("ask", question, "--json", "--tools", tools, "-t", "j1", env=env)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["answer"] == HOSTILE
    assert summary["steps"][0]["observation"] == f"ticked {HOSTILE}"
    assert summary["steps"][0]["tool_input"] == {"label": HOSTILE}
    assert done.stdout.startswith('{\n  "thread_id": "j1"')
    assert [c for c in done.stdout if hides(c) and c != "\n"] == []

    for extra in ([], ["--json"]):  # `show` at the last checkpoint, indented and on one line
        listing = run_cli("history", "-t", "j1", "--json", env=env)
        last = json.loads(listing.stdout.splitlines()[-1])["checkpoint_id"]
        shown = run_cli("show", "-t", "j1", "-c", last, *extra, env=env)
        assert shown.returncode == 0, shown.stderr
        state = json.loads(shown.stdout)
        assert state["answer"] == HOSTILE
        assert state["messages"][0]["content"] == question
