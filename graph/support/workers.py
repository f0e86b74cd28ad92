"""Threads for work that must be waited for with a deadline but cannot be interrupted: a sync
model call, a sync tool. The caller stops waiting at its deadline; the thread finishes (or
not) on its own."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class DaemonWorkers:
    """Worker threads, reused while idle and never a fixed number: a job stuck for good (an
    endpoint that trickles forever, a tool that hangs) must not hold a slot every later job
    waits for, as in a fixed pool, and a daemon thread never keeps the process from exiting."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, func: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._jobs.put((lambda: func(*args), future))
        with self._lock:
            if self._idle:
                self._idle -= 1
                return future
        threading.Thread(target=self._work, name=self.name, daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            job, future = self._jobs.get()
            if future.set_running_or_notify_cancel():  # else cancelled before it started
                try:
                    future.set_result(job())
                except BaseException as exc:  # handed to the waiting run, which reports it
                    future.set_exception(exc)
            # let go of the job before waiting for the next: an idle worker must not keep the
            # last run's context (its config, its loop, its messages) alive, as
            # `ThreadPoolExecutor`'s workers do not
            del job, future
            with self._lock:
                self._idle += 1


# Sync tool calls the graph waits for with a deadline, in sync and async runs
BLOCKING = DaemonWorkers("react-agent-worker")
