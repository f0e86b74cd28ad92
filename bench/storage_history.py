"""Our checkpoints read back through the stock saver: history, state at any checkpoint, replay.

Run at the largest N after the byte counts: `get_state_history` lists every checkpoint of the
table; steps are contiguous; the middle checkpoint's messages are the start of the final
conversation; every checkpoint where `think` runs next holds exactly what the model was sent
from it; message ids are the same on every load; a replay from the middle checkpoint ends like
the original run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bench.common import build_ours, check_run, inputs, new_thread, run_config
from bench.doubles import BenchModel, fetch_tool, loop_policy


def _shape(messages: list[Any]) -> list[tuple[str, str]]:
    return [(m.type, str(m.content)) for m in messages]


def verify_history(
    saver: Any, checkpoint_ids: Callable[[str], set[str]], protocol: str, n: int
) -> dict[str, Any]:
    """History, state and replay of one of our runs, checked against independent records: the
    saver's table (`checkpoint_ids(thread)`) and the requests the model actually received."""
    model = BenchModel(loop_policy(n, protocol), record=True)
    agent = build_ours(model, [fetch_tool()], protocol=protocol, checkpointer=saver, iterations=n)
    thread = new_thread("bench-history")
    config = run_config("ours", thread)
    out = agent.invoke(inputs(), config)
    check_run(out, "ours", n)
    requests = list(model.requests)
    final_messages = out["messages"]
    ids = checkpoint_ids(thread)
    started = time.perf_counter()
    history = list(agent.get_state_history(config))
    history_s = time.perf_counter() - started
    history_ids = [s.config["configurable"]["checkpoint_id"] for s in history]
    steps = sorted(s.metadata.get("step", -99) for s in history)

    # The middle checkpoint: its conversation is the start of the final one.
    mid = history[len(history) // 2]
    started = time.perf_counter()
    state = agent.get_state(mid.config)
    get_state_s = time.perf_counter() - started
    messages = state.values.get("messages", [])
    prefix = bool(messages) and _shape(messages) == _shape(final_messages[: len(messages)])

    # Checkpoints where `think` runs next, oldest first, against the model's requests in order:
    # the state there must be exactly what the model was sent from it (system prompt aside).
    thinks = sorted(
        (s for s in history if "think" in s.next), key=lambda s: s.metadata.get("step", 0)
    )
    middle_think = thinks[len(thinks) // 2] if thinks else None
    sent = [[m for m in r.messages if m.type != "system"] for r in requests]
    think_count = len(thinks) == len(requests)
    think_messages = think_count and all(
        len(t.values.get("messages", [])) == len(r) for t, r in zip(thinks, sent, strict=True)
    )
    if protocol == "native":  # the text protocol rewrites messages as transcript text
        think_messages = think_messages and all(
            _shape(t.values.get("messages", [])) == _shape(r)
            for t, r in zip(thinks, sent, strict=True)
        )
    mid_think_state = agent.get_state(middle_think.config) if middle_think else None
    mid_think_expected = len(sent[len(thinks) // 2]) if think_count and thinks else None
    mid_think_got = len(mid_think_state.values.get("messages", [])) if mid_think_state else None

    # Message ids: the same checkpoint loaded twice, and against the final state.
    again = agent.get_state(mid.config).values.get("messages", [])
    same_load_ids = [m.id for m in messages] == [m.id for m in again]
    final_ids = [m.id for m in messages] == [m.id for m in final_messages[: len(messages)]]
    unstable = [
        f"{m.type} #{i}"
        for i, (m, f) in enumerate(zip(messages, final_messages, strict=False))
        if m.id != f.id
    ]

    replay = agent.invoke(None, mid.config)  # a fork from the middle checkpoint
    replay_ok = replay.get("status") == "answered" and _shape(replay["messages"]) == _shape(
        final_messages
    )
    saver.delete_thread(thread)
    checks = {
        "get_state_history lists every checkpoint in the table": (
            len(history) == len(ids) and set(history_ids) == ids
        ),
        "steps contiguous": steps == list(range(steps[0], steps[0] + len(steps))),
        "middle checkpoint: messages are the start of the final conversation": prefix,
        "every think checkpoint holds what the model was sent from it": think_messages,
        "middle think checkpoint: expected message count": (
            mid_think_got is not None and mid_think_got == mid_think_expected
        ),
        "message ids: same on two loads of a checkpoint": same_load_ids,
        "message ids: same at the checkpoint as in the final state": final_ids,
        "replay from the middle checkpoint ends like the run": replay_ok,
    }
    return {
        "protocol": protocol,
        "iterations": n,
        "checkpoints_in_table": len(ids),
        "history_entries": len(history),
        "middle_step": state.metadata.get("step"),
        "middle_next": list(mid.next),
        "middle_messages": len(messages),
        "middle_think_step": middle_think.metadata.get("step") if middle_think else None,
        "middle_think_messages": mid_think_got,
        "middle_think_expected_messages": mid_think_expected,
        "final_messages": len(final_messages),
        "model_requests": len(requests),
        "think_checkpoints": len(thinks),
        "messages_with_changed_ids": unstable,
        "history_s": history_s,
        "get_state_s": get_state_s,
        "checks": checks,
        "ok": all(checks.values()),
    }
