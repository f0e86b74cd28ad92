"""The benchmarks' own judges: the eval's number check and the helpers' line count. A figure in
bench/README.md is only as good as the check that scored it."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("values", "answer", "right"),
    [
        ((7,), "It is 7.", True),
        ((7,), "7.00", True),  # equal at 4 places
        ((7,), "7.5", False),  # not 7 followed by a decimal part
        ((7,), "7.4", False),  # rounding to a whole number is not asked for
        ((8.0,), "8", True),  # a JSON number written as a float
        ((62.5,), "62.50", True),
        (("2.3333",), "2.33333333", True),  # a longer decimal that rounds to it
        (("1024",), "1,024 bytes", True),
        ((12,), "120", False),  # digits glued to other digits
        ((5,), "five", False),
    ],
)
def test_the_number_check(values: tuple, answer: str, right: bool) -> None:
    check = _load("local_eval").number(*values)
    assert check(answer, []) is right


def test_code_lines_do_not_move_with_docstrings() -> None:
    measure = _load("crutch_lines").measure
    plain = "def f(x):\n    return x + 1\n"
    documented = (
        'def f(x):\n    """Add one.\n\n    Why: a reason.\n    """\n    # a note\n\n'
        "    return x + 1\n"
    )
    assert measure(plain) == (2, 2)
    assert measure(documented) == (8, 2)


@pytest.mark.parametrize(
    ("kind", "protocol"),
    [
        ("prebuilt", "native"),
        ("create_agent", "native"),
        ("ours", "native"),
        ("create_agent", "text"),  # the same scripted model, wrapped in TextReAct
        ("ours", "text"),
    ],
)
def test_every_compared_agent_does_the_work_it_is_timed_for(
    kind: str, protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CPU and instruction ratios divide one agent's run by another's: each must run the
    same tool steps and answer, or the ratio compares unequal work."""
    for name in [n for n in os.environ if n.startswith("REACT_AGENT_")]:
        monkeypatch.setenv(name, os.environ[name])  # bench.common drops them; put them back after
    common = _load("common")
    from langgraph.checkpoint.memory import InMemorySaver

    agent = common.build_agent(kind, protocol, 3, InMemorySaver())
    out = agent.invoke(common.inputs(), common.run_config(kind))
    common.check_run(out, kind, 3)
    if kind != "ours":
        assert out["messages"][-1].content == "done"
