"""The main thread's deadline by timer signal (graph/support/alarm.py): it breaks a blocked
call, leaves no timer or handler behind, and stands aside wherever it could disturb another
timer, where the sync model call waits on a reader thread instead."""

from __future__ import annotations

import concurrent.futures
import signal
import socket
import time

import pytest
from langchain_core.messages import HumanMessage

from graph.nodes import model_call
from graph.support import alarm
from tests.support.scripted_model import ScriptedChatModel

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="no SIGALRM here")


def test_a_blocked_read_is_broken_at_the_deadline_and_nothing_is_left_armed() -> None:
    assert alarm.available()
    left, right = socket.socketpair()  # a read that never gets a byte
    started = time.monotonic()
    with pytest.raises(alarm.Expired), left, right, alarm.deadline(0.2):
        left.recv(1)
    assert time.monotonic() - started < 5
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    time.sleep(0.3)  # no late signal once the block is left


def test_it_keeps_firing_through_a_library_that_swallows_the_first_one() -> None:
    swallowed = 0
    with pytest.raises(alarm.Expired), alarm.deadline(0.1):
        while True:
            try:
                time.sleep(1)
            except alarm.Expired:
                swallowed += 1
                if swallowed > 2:
                    raise
    assert swallowed == 3


def test_it_stands_aside_for_another_timer_and_outside_the_main_thread() -> None:
    with concurrent.futures.ThreadPoolExecutor(1) as worker:
        assert worker.submit(alarm.available).result() is False
    previous = signal.signal(signal.SIGALRM, lambda *_: None)
    try:
        assert not alarm.available()
    finally:
        signal.signal(signal.SIGALRM, previous)
    signal.setitimer(signal.ITIMER_REAL, 30)
    try:
        assert not alarm.available()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    assert alarm.available()


@pytest.mark.parametrize("where", ["main thread", "worker thread"])
def test_a_sync_model_call_ends_at_its_deadline_in_either_thread(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed_off: list[object] = []
    submit = model_call._READERS.submit
    monkeypatch.setattr(
        model_call._READERS, "submit", lambda *a: handed_off.append(a) or submit(*a)
    )
    model = ScriptedChatModel(["late"], delay=30)  # a call that blocks far past the deadline

    def call() -> None:
        model_call.call_model(model, [HumanMessage("hi")], None, timeout=0.3, max_chars=1000)

    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"no complete reply within 0\.3 s"):
        if where == "main thread":
            call()
        else:
            with concurrent.futures.ThreadPoolExecutor(1) as worker:
                worker.submit(call).result()
    assert time.monotonic() - started < 10
    assert bool(handed_off) == (where == "worker thread")  # the main thread needs no reader
