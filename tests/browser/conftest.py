"""Fixtures for the browser checks of Agent Chat UI against this agent under `langgraph dev`.

The checkout is read from REACT_AGENT_CHAT_UI_DIR at import (the session-wide `clean_env`
removes REACT_AGENT_* variables from each test's environment). Without a built checkout, or
without /usr/bin/chromium, every test here skips with the reason. REACT_AGENT_CHAT_UI_AGENT_SRC
may name another source tree of the agent to serve (a commit unpacked by `git archive`).

One UI server and one browser serve the module; the agent is served once per protocol
(`served`, parametrized by native and text, module scope, so pytest runs one protocol's tests
together). The agent's model is `scripted_reply`: it asks for the calculator, then answers with
what the tool said, so what the page shows is what ran.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.agent_chat_ui import (
    CHROMIUM,
    ChatPage,
    ChatUI,
    agent_chat_ui,
    checkout,
    scripted_reply,
    skip_reason,
)
from tests.support.langgraph_dev import LangGraphDev, langgraph_dev, report_failures
from tests.support.openai_server import ScriptedOpenAIServer

UI_DIR = checkout()  # before clean_env hides it
# Another source tree of this agent to serve instead of the working tree (`git archive <commit>`
# unpacked somewhere), to check a commit while the working tree is being edited.
AGENT_SRC = os.environ.get("REACT_AGENT_CHAT_UI_AGENT_SRC", "").strip() or None
PROTOCOLS = ["native", "text"]


@pytest.fixture(scope="module")
def chat_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatUI]:
    reason = skip_reason(UI_DIR)
    if reason is not None or UI_DIR is None:
        pytest.skip(reason or "no Agent Chat UI checkout")
    log = tmp_path_factory.mktemp("agent-chat-ui") / "next.log"
    with agent_chat_ui(UI_DIR, log) as ui:
        yield ui


@pytest.fixture(scope="module")
def browser(chat_ui: ChatUI) -> Iterator[Any]:
    """Debian's chromium, headless; Playwright never downloads a browser here."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Served:
    """The agent under `langgraph dev` for one protocol, and its scripted model."""

    protocol: str
    dev: LangGraphDev
    model: ScriptedOpenAIServer


@pytest.fixture(scope="module", params=PROTOCOLS)
def served(chat_ui: ChatUI, request: pytest.FixtureRequest) -> Iterator[Served]:
    protocol: str = request.param
    with ScriptedOpenAIServer(default=scripted_reply) as model:
        env = {
            "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "sk-browser-check",
            "REACT_AGENT_MODEL": "scripted",
            "REACT_AGENT_PROTOCOL": protocol,
            "REACT_AGENT_APPROVE": "calculator",
            "REACT_AGENT_LOCAL": "off",
        }
        config = None
        if AGENT_SRC is not None:
            source = Path(AGENT_SRC).resolve()
            env["PYTHONPATH"] = str(source)  # ahead of the editable install of the working tree
            config = {
                "dependencies": [str(source)],
                "graphs": {"agent": f"{source}/graph/agent.py:served_graph"},
                "python_version": "3.11",
            }
        with langgraph_dev(env, config=config) as dev, report_failures(request, dev):
            yield Served(protocol, dev, model)


@pytest.fixture
def chat(browser: Any, served: Served, chat_ui: ChatUI) -> Iterator[ChatPage]:
    """A fresh browser context on the chat page, connected to the served agent."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    try:
        yield ChatPage.open(context.new_page(), chat_ui.page_url(served.dev.url))
    finally:
        context.close()


def screenshot_path(protocol: str, case: str) -> Path:
    return Path(f"/tmp/acui-{protocol}-{case}.png")
