"""The model in this process answers what llama.cpp refuses as its server would (HTTP 400),
never by crashing the process, and a call's deadline ends it between two tokens. Needs the
`local` extra (CI installs it)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graph.models.local import local_available

pytestmark = [
    pytest.mark.local_llm,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not local_available(), reason="the local extra is not installed"),
]

REFUSALS = textwrap.dedent(
    """
    from graph.models.local.engine import LocalEngine
    from graph.models.local.wire import LocalModelRequestError

    engine = LocalEngine(progress=None).start()
    for body in (
        {"prompt": "Hi", "grammar": "root ::= ("},  # llama-cpp-python 0.3 crashed on this
        {"prompt": "word " * 5000, "max_tokens": 4},  # longer than the context
    ):
        try:
            engine.complete(body, 60)
        except LocalModelRequestError as refused:
            print(refused.status_code, refused)
    try:
        engine.complete({"prompt": "Count: 1 2 3", "max_tokens": 2000, "temperature": 0.0}, 0.3)
    except TimeoutError as late:
        print("timeout", late)
    reply = engine.complete({"prompt": "2 + 2 =", "max_tokens": 3, "temperature": 0.0}, 60)
    print("still answers", bool(reply["choices"][0]["text"]))
    """
)


def test_what_llama_cpp_refuses_is_a_400_and_a_deadline_ends_a_call() -> None:
    done = subprocess.run(
        [sys.executable, "-c", REFUSALS],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("400 HTTP 400: llama.cpp cannot parse the grammar"), lines
    assert lines[1].startswith("400 HTTP 400: Requested tokens"), lines
    assert lines[2].startswith("timeout llama.cpp did not answer within 0.3 s"), lines
    assert lines[3] == "still answers True", lines


AFTER_AN_ENGINE = textwrap.dedent(
    """
    import gc

    import llama_cpp

    from graph.models.local import model_path
    from graph.models.local.engine import LocalEngine

    engine = LocalEngine(progress=None).start()
    engine.stop()
    del engine
    gc.collect()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True  # llama.cpp logs while it loads: through the engine's callback
    model = llama_cpp.llama_model_load_from_file(str(model_path(None)).encode(), params)
    print("loaded", bool(model))
    """
)


def test_llama_cpp_can_log_after_an_engine_is_gone() -> None:
    """llama.cpp keeps its log callback's address for the life of the process: an engine that
    was stopped and collected must not leave it pointing at freed memory (the next model load
    in the process crashed)."""
    done = subprocess.run(
        [sys.executable, "-c", AFTER_AN_ENGINE],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "loaded True"


# -- greedy decoding under a grammar --------------------------------------------------------

GRAMMARS = [
    'root ::= " " ("calculator" | "current_time" | "none") "\\n"?',  # the model's pick allowed
    'root ::= " zebra" | " yellow submarine"',  # its pick refused: the whole vocabulary filtered
    'root ::= " " [0-9]+ " * " [0-9]+ "\\n"',  # several tokens, some refused
]
PROMPT = "Question: What is 17 * 23?\nTool: calculator\nInput:"


def _reference(model, tokens: list[int], grammar: str, max_tokens: int) -> str:
    """llama.cpp's own chain for the same request, the grammar applied to every candidate at
    every token, then the greedy pick (what llama-cpp-python's `Llama` runs at temperature 0)."""
    llama = model.llama
    chain = llama.llama_sampler_chain_init(llama.llama_sampler_chain_default_params())
    llama.llama_sampler_chain_add(chain, model.grammar(grammar))
    llama.llama_sampler_chain_add(chain, llama.llama_sampler_init_greedy())
    written: list[int] = []
    try:
        model.evaluate(tokens)
        while len(written) < max_tokens:
            token = llama.llama_sampler_sample(chain, model.ctx, -1)
            if llama.llama_vocab_is_eog(model.vocab, token):
                break
            written.append(token)
            model.evaluate([*tokens, *written])
    finally:
        llama.llama_sampler_free(chain)
    text = b"".join(model.piece(t) for t in written).decode("utf-8", "ignore")
    return text.split("\n")[0]


@pytest.mark.parametrize("grammar", GRAMMARS, ids=["allowed", "refused", "several"])
def test_greedy_under_a_grammar_picks_what_filtering_every_candidate_picks(grammar: str) -> None:
    """The best token is checked against the grammar first and the vocabulary filtered only
    when it is refused: every reply equals llama.cpp's grammar-then-greedy chain's."""
    from graph.models.local.engine import LocalEngine

    engine = LocalEngine(progress=None, save_prefix=False).start()
    try:
        body = {"prompt": PROMPT, "max_tokens": 12, "stop": ["\n"], "grammar": grammar}
        reply = engine.complete({**body, "temperature": 0.0, "repeat_penalty": 1.0}, 120)
        model = engine._llm
        expected = _reference(model, engine.tokens(PROMPT), grammar, 12)
    finally:
        engine.stop()
    assert reply["choices"][0]["text"] == expected
    assert expected.strip()  # the grammar allowed something and the model wrote it
