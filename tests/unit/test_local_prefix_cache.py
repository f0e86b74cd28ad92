"""The worked records' saved state (graph.models.local.prefix_cache), without llama.cpp: a
state is used only by the model file, prompt, llama.cpp build and context that made it, and a
damaged or foreign file is refused with a reason before llama.cpp sees a byte of it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graph.models.local import prefix_cache
from graph.models.local.prefix_cache import PrefixKey, Refused, read_state, state_path, write_state

TOKENS = [2, 9413, 236787, 2900, 563, 236743, 236770, 236778]
STATE = bytes(range(256)) * 40


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 60)
    return path


def key(
    model: Path, prompt: str = "Question: What is 12 * 9?\n", build: str = "0.3.36"
) -> PrefixKey:
    return PrefixKey.make(model, prompt, build, "n_ctx=4096")


def test_a_saved_state_reads_back_as_it_was_written(model: Path) -> None:
    k = key(model)
    path = state_path(model, k)
    write_state(path, k, TOKENS, STATE)
    assert path.parent == model.parent and path.name.startswith("tiny.gguf.")
    tokens, state = read_state(path, k)
    assert tokens == TOKENS and bytes(state) == STATE


@pytest.mark.parametrize(
    "change",
    [
        lambda m: key(m, prompt="Question: What is 13 * 9?\n"),  # the records changed
        lambda m: key(m, build="0.3.37"),  # llama.cpp was upgraded
        lambda m: (os.utime(m, ns=(1, 1)), key(m))[1],  # the model file was replaced
        lambda m: (m.write_bytes(b"GGUF" + b"\1" * 80), key(m))[1],
    ],
)
def test_any_change_of_model_prompt_or_build_names_another_file(model: Path, change) -> None:
    """So the state is made again, not restored: nothing is saved under the new name yet."""
    old = key(model)
    write_state(state_path(model, old), old, TOKENS, STATE)
    new = change(model)
    assert new != old and state_path(model, new) != state_path(model, old)
    with pytest.raises(FileNotFoundError):
        read_state(state_path(model, new), new)


def test_a_file_made_for_another_key_is_refused(model: Path) -> None:
    """A copy (or a digest collision) under this key's name: its header holds its own key."""
    mine, theirs = key(model), key(model, build="another build")
    write_state(state_path(model, mine), theirs, TOKENS, STATE)
    with pytest.raises(Refused, match=r"another model file, prompt or llama\.cpp build"):
        read_state(state_path(model, mine), mine)


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda raw: raw[:-100], "length"),  # a torn write
        (lambda raw: raw + b"\0", "length"),
        (lambda raw: raw[:-7] + bytes([raw[-7] ^ 1]) + raw[-6:], "checksum"),  # a flipped bit
        (lambda raw: b"not a state at all", "not a prefix state"),
        (lambda raw: raw[: len(prefix_cache.MAGIC) + 2], "cut short"),
        (lambda raw: raw.replace(b'"tokens": 8', b'"tokens": "8"'), "header"),
    ],
)
def test_a_damaged_file_is_refused_with_its_reason(model: Path, damage, reason: str) -> None:
    k = key(model)
    path = state_path(model, k)
    write_state(path, k, TOKENS, STATE)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(Refused, match=reason):
        read_state(path, k)


def test_only_the_most_recently_used_states_of_a_model_are_kept(model: Path) -> None:
    """One state per tool set in use; a prompt that changed leaves its old state unused."""
    paths = []
    for n in range(prefix_cache.KEEP + 2):
        k = key(model, prompt=f"records {n}\n")
        paths.append(state_path(model, k))
        write_state(paths[-1], k, TOKENS, STATE)
        os.utime(paths[-1], ns=(n * 10**9, n * 10**9))
    kept = sorted(model.parent.glob(f"*{prefix_cache.SUFFIX}"))
    assert kept == sorted(paths[-prefix_cache.KEEP :])
    assert not list(model.parent.glob(".tiny.gguf.*"))  # no temporary file left behind
