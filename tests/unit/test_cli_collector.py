"""The command line pauses the cyclic garbage collector while a command starts and turns it on
again once the model is ready, so a long `chat` is collected as usual."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from graph.cli.session import Session


def test_the_collector_is_on_again_once_the_model_is_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    import graph.models.factory as factory

    monkeypatch.setattr(factory, "resolve_model", lambda ctx: object())
    session: Any = SimpleNamespace(started=False, ctx=SimpleNamespace(), run=None)
    gc.disable()
    try:
        asyncio.run(Session.ready(session))
        assert gc.isenabled() and session.started
    finally:
        gc.unfreeze()
        gc.enable()


def test_a_collector_left_on_is_not_touched(monkeypatch: pytest.MonkeyPatch) -> None:
    import graph.models.factory as factory

    monkeypatch.setattr(factory, "resolve_model", lambda ctx: object())
    session: Any = SimpleNamespace(started=False, ctx=SimpleNamespace(), run=None)
    frozen = gc.get_freeze_count()
    asyncio.run(Session.ready(session))
    assert gc.isenabled() and gc.get_freeze_count() == frozen  # a library caller's process


def test_the_command_line_pauses_the_collector_while_a_command_runs() -> None:
    probe = (
        "import gc, sys\n"
        "import graph.cli.app as app\n"
        "app.app = lambda: print(gc.isenabled())\n"
        "app.main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"
