"""One GGUF model and its context through llama.cpp's C API (llama-cpp-python's low-level
bindings), for the engine in this process: load, tokenize, evaluate, sample, save and restore.

Why not llama-cpp-python's `Llama` class: two things the embedded model needs are out of its
reach.

- **Plain weight buffers.** A llama.cpp built natively on a CPU that advertises AMX puts the
  weights in AMX buffers; on virtual machines that advertise AMX without enabling it the first
  matrix product dies (SIGILL: this project's 2-core machines are such). `Llama` takes no
  `use_extra_bufts`; here it is off where the build has AMX kernels, on elsewhere.
- **A cheap grammar.** `Llama` applies a call's grammar to all 262,144 candidates of Gemma's
  vocabulary at every token (about half of a short call). Greedy decoding needs only the best
  candidate the grammar allows, so the best one overall is checked first and the vocabulary
  filtered only when the grammar refuses it: the same token, the first highest logit allowed.

The rest follows `Llama.create_completion` (flash attention off, batches of 512, logits of the
last token only, the KV cache cut back to the longest shared prefix, llama.cpp's sampler chain
when the request is not greedy), so a reply is the one `Llama` gives on the same buffers.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

BATCH = 512  # llama-cpp-python's n_batch and n_ubatch
PENALTY_WINDOW = 64  # llama-cpp-python's last_n_tokens_size
_CANDIDATE = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class NativeModel:
    """A loaded model, its context and the tokens its KV cache holds (`held`)."""

    def __init__(
        self, llama: Any, path: Path, *, n_ctx: int, threads: int, plain_buffers: bool
    ) -> None:
        self.llama = llama
        self.plain = plain_buffers
        llama.llama_backend_init()
        params = llama.llama_model_default_params()
        if plain_buffers:
            params.use_extra_bufts = False
        self.model = llama.llama_model_load_from_file(str(path).encode(), params)
        if not self.model:
            raise ValueError(f"Failed to load model from file: {path}")
        context = llama.llama_context_default_params()
        context.n_ctx = n_ctx
        context.n_batch = context.n_ubatch = min(n_ctx, BATCH)
        context.n_threads = context.n_threads_batch = threads
        context.flash_attn_type = llama.LLAMA_FLASH_ATTN_TYPE_DISABLED
        context.swa_full = True
        self.ctx = llama.llama_init_from_model(self.model, context)
        if not self.ctx:
            llama.llama_model_free(self.model)
            raise ValueError("Failed to create a llama.cpp context")
        self.vocab = llama.llama_model_get_vocab(self.model)
        self.n_vocab = llama.llama_vocab_n_tokens(self.vocab)
        self.held: list[int] = []
        self._candidates = np.zeros(self.n_vocab, dtype=_CANDIDATE)
        self._candidates["id"] = np.arange(self.n_vocab, dtype=np.int32)

    def n_ctx(self) -> int:
        return int(self.llama.llama_n_ctx(self.ctx))

    def close(self) -> None:
        """Free the context and the model; idempotent."""
        ctx, model, self.ctx, self.model = self.ctx, self.model, None, None
        if ctx:
            self.llama.llama_free(ctx)
        if model:
            self.llama.llama_model_free(model)

    # -- tokens ---------------------------------------------------------------------------------

    def tokenize(self, text: bytes) -> list[int]:
        """The tokens of `text`, BOS first, special tokens parsed (as `Llama.tokenize`)."""
        llama = self.llama
        size = len(text) + 2
        buffer = (llama.llama_token * size)()
        count = llama.llama_tokenize(self.vocab, text, len(text), buffer, size, True, True)
        if count < 0:
            size = -count
            buffer = (llama.llama_token * size)()
            count = llama.llama_tokenize(self.vocab, text, len(text), buffer, size, True, True)
        return list(buffer[:count])

    def piece(self, token: int) -> bytes:
        buffer = ctypes.create_string_buffer(64)
        size = self.llama.llama_token_to_piece(self.vocab, token, buffer, 64, 0, False)
        if size > 64:
            buffer = ctypes.create_string_buffer(size)
            size = self.llama.llama_token_to_piece(self.vocab, token, buffer, size, 0, False)
        return buffer.raw[: max(size, 0)]

    def cached(self, tokens: Sequence[int]) -> int:
        """How many of `tokens` stand at the start of the KV cache already."""
        same, most = 0, min(len(self.held), len(tokens))
        while same < most and self.held[same] == tokens[same]:
            same += 1
        return same

    # -- the KV cache ---------------------------------------------------------------------------

    def evaluate(self, tokens: Sequence[int]) -> int:
        """Make the KV cache hold exactly `tokens`, with the logits of the last one: keep the
        longest shared prefix (at least the last token is evaluated again, for its logits),
        evaluate the rest. Returns how many tokens were evaluated."""
        llama = self.llama
        keep = min(self.cached(tokens), len(tokens) - 1)
        llama.llama_memory_seq_rm(llama.llama_get_memory(self.ctx), -1, keep, -1)
        self.held = self.held[:keep]
        rest = list(tokens[keep:])
        for start in range(0, len(rest), BATCH):
            self._decode(rest[start : start + BATCH])
        return len(rest)

    def _decode(self, tokens: list[int]) -> None:
        llama = self.llama
        array = (llama.llama_token * len(tokens))(*tokens)
        status = llama.llama_decode(self.ctx, llama.llama_batch_get_one(array, len(tokens)))
        if status != 0:
            raise RuntimeError(f"llama_decode returned {status}")
        self.held.extend(tokens)

    def state(self) -> bytes:
        """llama.cpp's state of the context (the KV cache and the last logits)."""
        llama = self.llama
        size = llama.llama_state_get_size(self.ctx)
        buffer = (ctypes.c_uint8 * size)()
        written = llama.llama_state_get_data(self.ctx, buffer, size)
        return bytes(memoryview(buffer)[:written])

    def restore(self, state: bytearray, tokens: list[int]) -> bool:
        """Set the context's state to `state`, made for `tokens`; False when llama.cpp
        refuses it (the cache is then empty)."""
        llama = self.llama
        buffer = (ctypes.c_uint8 * len(state)).from_buffer(state)
        if llama.llama_state_set_data(self.ctx, buffer, len(state)) != len(state):
            llama.llama_memory_clear(llama.llama_get_memory(self.ctx), True)
            self.held = []
            return False
        self.held = list(tokens)
        return True

    # -- a completion ---------------------------------------------------------------------------

    def grammar(self, text: str) -> Any:
        """llama.cpp's grammar sampler for `text`; ValueError when llama.cpp cannot parse it."""
        sampler = self.llama.llama_sampler_init_grammar(self.vocab, text.encode(), b"root")
        if not sampler:
            raise ValueError(f"llama.cpp cannot parse the grammar: {text[:200]!r}")
        return sampler

    def complete(
        self,
        tokens: list[int],
        *,
        max_tokens: int,
        stop: Sequence[str],
        temperature: float,
        repeat_penalty: float,
        grammar: str | None,
        past_deadline: Callable[[], bool],
    ) -> tuple[str, int, str]:
        """Continue `tokens`: (the text written, the tokens written, why it ended: `stop` or
        `length`). Raises ValueError for a prompt longer than the context or a grammar
        llama.cpp cannot parse."""
        n_ctx = self.n_ctx()
        if len(tokens) > n_ctx:
            raise ValueError(f"Requested tokens ({len(tokens)}) exceed context window of {n_ctx}")
        llama = self.llama
        constraint = self.grammar(grammar) if grammar else None
        greedy = temperature == 0.0 and repeat_penalty == 1.0
        chain = None if greedy else self._chain(temperature, repeat_penalty, constraint)
        written: list[int] = []
        text, reason = "", "length"
        try:
            self.evaluate(tokens)
            limit = max_tokens if max_tokens > 0 else n_ctx
            while len(written) < limit and len(self.held) < n_ctx:
                if chain is not None:
                    token = llama.llama_sampler_sample(chain, self.ctx, -1)
                else:
                    token = self._greedy(constraint)
                if llama.llama_vocab_is_eog(self.vocab, token):
                    reason = "stop"
                    break
                written.append(token)
                text = b"".join(self.piece(t) for t in written).decode("utf-8", "ignore")
                cut = min((text.find(s) for s in stop if s and s in text), default=-1)
                if cut >= 0:
                    text, reason = text[:cut], "stop"
                    break
                if past_deadline() or len(written) >= limit:
                    reason = "stop" if len(written) < limit else "length"
                    break
                self._decode([token])
        finally:
            if chain is not None:
                llama.llama_sampler_free(chain)  # the grammar with it
            elif constraint is not None:
                llama.llama_sampler_free(constraint)
        return text, len(written), reason

    def _greedy(self, constraint: Any) -> int:
        """The first highest logit the grammar allows: the best one overall when it does
        (one candidate checked), else the best of the whole vocabulary it leaves."""
        llama = self.llama
        logits = np.ctypeslib.as_array(llama.llama_get_logits_ith(self.ctx, -1), (self.n_vocab,))
        best = int(np.argmax(logits))
        if constraint is None:
            return best
        one = (llama.llama_token_data * 1)(llama.llama_token_data(best, float(logits[best]), 0.0))
        if _allowed(llama, constraint, one, 1)[0]["logit"] == -np.inf:
            candidates = self._candidates
            candidates["logit"] = logits
            candidates["p"] = 0.0
            allowed = _allowed(llama, constraint, candidates, self.n_vocab)
            best = int(allowed["id"][int(np.argmax(allowed["logit"]))])
        llama.llama_sampler_accept(constraint, best)
        return best

    def _chain(self, temperature: float, repeat_penalty: float, constraint: Any) -> Any:
        """llama-cpp-python's sampler chain for a request that is not plain greedy."""
        llama = self.llama
        chain = llama.llama_sampler_chain_init(llama.llama_sampler_chain_default_params())
        penalties = llama.llama_sampler_init_penalties(
            self.n_vocab, PENALTY_WINDOW, repeat_penalty, 0.0, 0.0
        )
        samplers = [penalties]
        if constraint is not None:
            samplers.append(constraint)
        if temperature == 0.0:
            samplers.append(llama.llama_sampler_init_greedy())
        elif temperature < 0.0:
            samplers.append(llama.llama_sampler_init_dist(llama.LLAMA_DEFAULT_SEED))
        else:
            samplers += [
                llama.llama_sampler_init_top_k(40),
                llama.llama_sampler_init_typical(1.0, 1),
                llama.llama_sampler_init_top_p(0.95, 1),
                llama.llama_sampler_init_min_p(0.05, 1),
                llama.llama_sampler_init_temp(temperature),
                llama.llama_sampler_init_dist(llama.LLAMA_DEFAULT_SEED),
            ]
        for sampler in samplers:
            llama.llama_sampler_chain_add(chain, sampler)
        return chain


def _allowed(llama: Any, constraint: Any, candidates: Any, size: int) -> np.ndarray:
    """The candidates after the grammar: those it refuses have a logit of -inf."""
    view = np.frombuffer(candidates, dtype=_CANDIDATE, count=size)
    data = ctypes.cast(view.ctypes.data, ctypes.POINTER(llama.llama_token_data))
    array = llama.llama_token_data_array(data, size, -1, False)
    llama.llama_sampler_apply(constraint, ctypes.byref(array))
    return view


# llama.cpp's log callback is one per process and llama.cpp keeps its address for good: it is
# made once and never freed (a callback owned by an engine that was collected crashed the next
# model load in this process), and it writes into the log of the engine that loaded last.
_LOG: dict[str, Any] = {"callback": None, "into": None}


def log_into(llama_cpp: Any, log: deque[str]) -> None:
    if _LOG["callback"] is None:
        _LOG["callback"] = llama_cpp.llama_log_callback(_on_log)
        llama_cpp.llama_log_set(_LOG["callback"], None)
    _LOG["into"] = log


def _on_log(_level: int, text: bytes, _user_data: Any) -> None:
    into = _LOG["into"]
    if into is not None:
        with contextlib.suppress(Exception):
            into.append(text.decode("utf-8", "replace"))


def amx_kernels(llama_cpp: Any) -> bool:
    """Whether this llama.cpp build has AMX kernels: then the weights stay in plain CPU
    buffers (the module's docstring says why)."""
    return b"AMX" in llama_cpp.llama_print_system_info()


def import_llama() -> Any:
    """llama_cpp, with passive OpenMP workers unless the environment chose: the policy is read
    once, when llama.cpp's library loads, which is this import."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import llama_cpp

    return llama_cpp
