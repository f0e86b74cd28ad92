"""What a new user meets first: bad input is reported before any model starts, with exit 2 and
a sentence that names what they typed; the closing lines say only what is true.

"Before any model starts" is tested with the embedded model asked for and given a GGUF file
that does not exist: starting it fails with its own sentence, so seeing that sentence means the
model was started before the input was checked.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.cli import CLI, REPO, cli_env, run_cli
from tests.support.openai_server import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.integration
MODEL_START = "REACT_AGENT_GGUF"  # in the sentence the embedded model's start fails with


@pytest.fixture
def env(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> dict[str, str]:
    return cli_env(openai_server.base_url, tmp_path / "state")


@pytest.fixture
def local_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The embedded model asked for, with a model file that is not there."""
    return {
        **env,
        "REACT_AGENT_LOCAL": "on",
        "REACT_AGENT_MODEL": "local",
        "REACT_AGENT_GGUF": str(tmp_path / "missing.gguf"),
    }


def test_the_model_start_is_what_the_fixture_makes_fail(local_env: dict[str, str]) -> None:
    done = run_cli("ask", "hi", "--checkpointer", "memory", env=local_env)
    assert done.returncode == 2 and MODEL_START in done.stderr


def test_an_unknown_store_url_comes_before_the_model_and_shows_its_example(
    local_env: dict[str, str],
) -> None:
    done = run_cli("ask", "hi", "--checkpointer", "mysql://x", env=local_env)
    assert done.returncode == 2
    assert MODEL_START not in done.stderr and "[local model]" not in done.stderr
    assert "Unknown checkpointer URL 'mysql://x'" in done.stderr
    assert "'postgresql://user:password@host:5432/database'" in done.stderr


def test_resume_of_a_finished_thread_comes_before_the_model(
    openai_server: ScriptedOpenAIServer, env: dict[str, str], local_env: dict[str, str]
) -> None:
    openai_server.add(Reply(content="Thought: easy.\nFinal Answer: 4"))
    first = run_cli("ask", "2+2?", "--protocol", "text", "--thread", "done-1", env=env)
    assert first.returncode == 0, first.stderr
    again = run_cli("resume", "--thread", "done-1", env=local_env)
    assert MODEL_START not in again.stderr and "[local model]" not in again.stderr
    assert "thread 'done-1' has nothing to resume" in again.stderr
    assert again.returncode == 2


@pytest.mark.parametrize("command", ["resume", "history"])
def test_an_unknown_thread_is_bad_input(
    command: str, local_env: dict[str, str], tmp_path: Path
) -> None:
    done = run_cli(command, "--thread", "nope", env=local_env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: no thread 'nope' in ")
    assert MODEL_START not in done.stderr


def test_an_unknown_checkpoint_is_bad_input(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(Reply(content="Thought: easy.\nFinal Answer: 4"))
    assert run_cli("ask", "2+2?", "--protocol", "text", "-t", "c1", env=env).returncode == 0
    for command in ("show", "replay"):
        done = run_cli(command, "-t", "c1", "-c", "1f000000-0000-6000-8000-00000000000f", env=env)
        assert done.returncode == 2, (command, done.stderr)
        assert "no checkpoint '1f000000-0000-6000-8000-00000000000f'" in done.stderr


def test_a_bad_flag_value_names_the_flag(local_env: dict[str, str]) -> None:
    done = run_cli("ask", "hi", "--protocol", "foo", env=local_env)
    assert done.returncode == 2
    assert "--protocol: Input should be 'auto', 'native' or 'text', got 'foo'" in done.stderr
    assert "REACT_AGENT_PROTOCOL" not in done.stderr and MODEL_START not in done.stderr
    steps = run_cli("ask", "hi", "--max-steps", "0", env=local_env)
    assert steps.returncode == 2 and "--max-steps:" in steps.stderr


def test_a_bad_environment_value_names_the_variable(env: dict[str, str]) -> None:
    done = run_cli("ask", "hi", env={**env, "REACT_AGENT_PROTOCOL": "foo"})
    assert done.returncode == 2
    assert "protocol (env REACT_AGENT_PROTOCOL): Input should be" in done.stderr
    assert "--protocol" not in done.stderr


def test_a_memory_store_does_not_offer_to_continue(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(Reply(content="Thought: easy.\nFinal Answer: 4"), Reply(content="Hi."))
    done = run_cli("ask", "2+2?", "--protocol", "text", "--checkpointer", "memory", env=env)
    assert done.returncode == 0, done.stderr
    assert "continue with" not in done.stderr and "--thread" not in done.stderr
    assert "kept in memory only" in done.stderr
    chat = run_cli("chat", "--checkpointer", "memory", env=env, stdin="hello\n")
    assert chat.returncode == 0, chat.stderr
    assert "continue with" not in chat.stderr and "kept in memory only" in chat.stderr


def test_piped_chat_writes_no_prompt(
    openai_server: ScriptedOpenAIServer, env: dict[str, str]
) -> None:
    openai_server.add(Reply(content="Hello there."), Reply(content="Bye."))
    done = run_cli("chat", env=env, stdin="hello\nbye\n")
    assert done.returncode == 0, done.stderr
    assert "you>" not in done.stdout and "you>" not in done.stderr
    assert done.stdout.splitlines() == ["Final Answer: Hello there.", "Final Answer: Bye."]


def test_config_without_a_key_names_the_embedded_model(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from graph.models.local import local_available

    monkeypatch.setenv("REACT_AGENT_LOCAL", "on")  # the tests' default is off
    bare = {k: v for k, v in env.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    bare["REACT_AGENT_LOCAL"] = "on"
    if not local_available():
        pytest.skip("the local extra is not installed (uv sync --extra local)")
    done = run_cli("config", env=bare)
    assert done.returncode == 0, done.stderr
    rows = dict(line.split(None, 1) for line in done.stdout.splitlines())
    assert rows["model"].startswith("local: the embedded model (")
    assert "gpt-4o-mini" not in done.stdout and "llama.cpp" in rows["base_url"]


def test_a_reader_that_goes_away_is_no_error(env: dict[str, str]) -> None:
    reader_gone = subprocess.Popen(
        [CLI, "tools"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO
    )
    assert reader_gone.stdout is not None and reader_gone.stderr is not None
    reader_gone.stdout.close()  # like `react-agent tools | head -0`
    errors = reader_gone.stderr.read().decode()
    assert reader_gone.wait(timeout=60) == 141
    assert errors == ""
