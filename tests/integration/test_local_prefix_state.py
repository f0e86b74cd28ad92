"""The worked records are evaluated once per machine: the real model in this process saves the
KV state of a prompt's fixed part next to the model file, a later process restores it and
evaluates only its question's tokens, and gets the same answer as a fresh evaluation. A change
of prompt or model file makes a new state; a damaged or foreign file is ignored with one line.

Each test works on its own copy of the model file, so the states it makes are its own. Needs
the `local` extra (CI installs it).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph.models.local import chat_model, local_available, model_path, prefix_cache
from graph.models.local.engine import LocalEngine
from tools import load_tools

pytestmark = [
    pytest.mark.local_llm,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not local_available(), reason="the local extra is not installed"),
]

TOOLS = load_tools(["calculator", "current_time"])
RECORDS = chat_model("http://127.0.0.1:9/v1", TOOLS).prefix_for([], TOOLS)
QUESTION = RECORDS + "Question: What is 17 * 23?\nTool:"
CHOICE = 'root ::= " " ("calculator" | "current_time" | "none") "\\n"?\n'


@pytest.fixture
def model(tmp_path: Path) -> Path:
    copy = tmp_path / "model.gguf"
    shutil.copyfile(model_path(progress=None), copy)
    return copy


@pytest.fixture
def engines() -> Iterator[list[LocalEngine]]:
    started: list[LocalEngine] = []
    yield started
    for engine in started:
        engine.stop()


def start(engines: list[LocalEngine], model: Path, lines: list[str]) -> LocalEngine:
    engine = LocalEngine(model, progress=lines.append).start()
    engines.append(engine)
    return engine


def ask(engine: LocalEngine) -> dict:
    body = {"prompt": QUESTION, "max_tokens": 8, "stop": ["\n"], "grammar": CHOICE}
    return engine.complete({**body, "temperature": 0.0, "repeat_penalty": 1.0}, timeout=120)


def states(model: Path) -> list[Path]:
    return sorted(model.parent.glob(f"*{prefix_cache.SUFFIX}"))


def test_a_later_process_restores_the_records_and_evaluates_only_its_question(
    model: Path, engines: list[LocalEngine]
) -> None:
    first_lines: list[str] = []
    first = start(engines, model, first_lines)
    first.warm(RECORDS)
    (saved,) = states(model)
    assert [line for line in first_lines if "saved for the next runs" in line], first_lines
    fresh = ask(first)
    first.stop()

    later_lines: list[str] = []
    later = start(engines, model, later_lines)
    later.warm(RECORDS)
    assert later_lines == [] and states(model) == [saved]  # restored: nothing evaluated, said
    reply = ask(later)
    records = len(later.tokens(RECORDS))
    assert 0 < reply["usage"]["evaluated_tokens"] < 30 < records, reply["usage"]
    assert reply["choices"][0]["text"] == fresh["choices"][0]["text"]  # the same answer


def test_a_new_prompt_or_a_new_model_file_makes_a_new_state(
    model: Path, engines: list[LocalEngine]
) -> None:
    engine = start(engines, model, [])
    engine.warm(RECORDS)
    engine.warm(RECORDS.replace("What is", "What's"))  # the records changed
    assert len(states(model)) == 2
    engine.stop()
    os.utime(model)  # the model file was replaced
    lines: list[str] = []
    start(engines, model, lines).warm(RECORDS)
    assert len(states(model)) == 3
    assert [line for line in lines if line.startswith("evaluated the worked examples once")]


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda raw: raw[:-1000], "its length is not the one its header gives"),
        (lambda raw: raw[:-9] + bytes([raw[-9] ^ 0xFF]) + raw[-8:], "its checksum does not match"),
        (lambda raw: b"GGUF" + raw[4:], "not a prefix state file"),
        (
            lambda raw: raw.replace(b'"llama_cpp": "0.', b'"llama_cpp": "9.', 1),
            "made for another model file, prompt or llama.cpp build",
        ),
    ],
    ids=["torn", "flipped", "not-a-state", "another-build"],
)
def test_a_damaged_or_foreign_state_is_ignored_with_one_line(
    model: Path, engines: list[LocalEngine], damage, reason: str
) -> None:
    engine = start(engines, model, [])
    engine.warm(RECORDS)
    fresh = ask(engine)
    engine.stop()
    (saved,) = states(model)
    saved.write_bytes(damage(saved.read_bytes()))

    lines: list[str] = []
    again = start(engines, model, lines)
    again.warm(RECORDS)
    ignored = [line for line in lines if line.startswith("ignored ")]
    assert len(ignored) == 1 and reason in ignored[0] and "\n" not in ignored[0], lines
    assert ask(again)["choices"][0]["text"] == fresh["choices"][0]["text"]
    lines.clear()
    start(engines, model, lines).warm(RECORDS)  # made anew: the next process restores it
    assert lines == []
