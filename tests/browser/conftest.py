"""Fixtures for the browser checks of Agent Chat UI: one UI build, a browser, and a served agent
per (server kind, graph) pair.

The checkout is read from REACT_AGENT_CHAT_UI_DIR at import (the session-wide `clean_env`
removes REACT_AGENT_* variables from each test's environment). Without a built checkout, or
without /usr/bin/chromium, every test here skips with the reason. REACT_AGENT_CHAT_UI_AGENT_SRC
may name another source tree of the agent to serve (a commit unpacked by `git archive`).

`served` is parametrized by two things, each a table below, so a new one is one entry:

- the graph (`GRAPHS`): this agent under each protocol, and LangChain's own `create_agent` +
  `HumanInTheLoopMiddleware` (tests/support/create_agent_hitl.py) with the same calculator,
  model and approvals: the reference that tells a UI limitation from a fault of this agent;
- the server kind (`SERVERS`): how a graph is served, `langgraph dev` (in memory) and Aegra
  (PostgreSQL and Redis, tests/support/aegra.py). A kind is a context manager taking (graph,
  environment, request) and yielding an `Endpoint` (URL and API key); it skips, with the
  reason, a graph it cannot serve or a setup it cannot find.

Both are module scoped, so pytest runs one served agent's tests together. The model is
`scripted_reply`: it asks for the calculator, then answers with what the tool said, so what the
page shows is what ran.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support import create_agent_hitl
from tests.support.agent_chat_ui import (
    CHROMIUM,
    ChatPage,
    ChatUI,
    agent_chat_ui,
    checkout,
    scripted_reply,
    skip_reason,
)
from tests.support.langgraph_dev import langgraph_dev, report_failures
from tests.support.openai_server import ScriptedOpenAIServer

UI_DIR = checkout()  # before clean_env hides it
# Another source tree of this agent to serve instead of the working tree (`git archive <commit>`
# unpacked somewhere), to check a commit while the working tree is being edited.
AGENT_SRC = os.environ.get("REACT_AGENT_CHAT_UI_AGENT_SRC", "").strip() or None


@dataclass(frozen=True)
class Graph:
    """A graph the UI is checked against, and what differs in what the page should show."""

    id: str
    protocol: str
    env: dict[str, str] = field(default_factory=dict)
    # the langgraph.json that serves it (None: the repository's own, this agent's served graph)
    langgraph_config: Callable[[], dict[str, Any]] | None = None
    # Whether the tool card shows the edited arguments after an edit. This agent rewrites the
    # stored call to what ran; LangChain's HITL keeps the model's call and applies the edit when
    # the tool runs, so its card shows the model's arguments.
    card_shows_edit: bool = True
    reference: bool = False


def _agent_config() -> dict[str, Any] | None:
    """This agent's `langgraph.json`: the repository's, or AGENT_SRC's when that is set."""
    if AGENT_SRC is None:
        return None
    source = Path(AGENT_SRC).resolve()
    return {
        "dependencies": [str(source)],
        "graphs": {"agent": f"{source}/graph/agent.py:served_graph"},
        "python_version": "3.11",
    }


_AGENT_ENV = {"REACT_AGENT_APPROVE": "calculator", "REACT_AGENT_LOCAL": "off"}
GRAPHS = {
    "native": Graph("native", "native", {**_AGENT_ENV, "REACT_AGENT_PROTOCOL": "native"}),
    "text": Graph("text", "text", {**_AGENT_ENV, "REACT_AGENT_PROTOCOL": "text"}),
    "create_agent": Graph(
        "create_agent",
        "native",
        langgraph_config=create_agent_hitl.langgraph_config,
        card_shows_edit=False,
        reference=True,
    ),
}


@dataclass
class Endpoint:
    """Where the UI finds a served graph (the graph id is always `agent`)."""

    url: str
    api_key: str | None = None


ServerKind = Callable[
    [Graph, dict[str, str], pytest.FixtureRequest], contextlib.AbstractContextManager[Endpoint]
]


@contextlib.contextmanager
def serve_on_langgraph_dev(
    graph: Graph, env: dict[str, str], request: pytest.FixtureRequest
) -> Iterator[Endpoint]:
    """`langgraph dev` (in memory, one process) serving the graph as `agent`."""
    env = dict(env)
    config = graph.langgraph_config() if graph.langgraph_config else _agent_config()
    if AGENT_SRC is not None and not graph.reference:
        env["PYTHONPATH"] = str(Path(AGENT_SRC).resolve())  # ahead of the editable install
    with langgraph_dev(env, config=config) as dev, report_failures(request, dev):
        yield Endpoint(dev.url)


@contextlib.contextmanager
def serve_on_aegra(
    graph: Graph, env: dict[str, str], request: pytest.FixtureRequest
) -> Iterator[Endpoint]:
    """One Aegra instance (PostgreSQL, Redis, API key: tests/support/aegra.py) serving this
    agent as `agent`. Aegra serves deploy/aegra's graph only, so the reference and AGENT_SRC
    are skipped; the page sends the key as X-Api-Key, as a person enters it in the UI."""
    from tests.support import aegra

    if graph.reference or AGENT_SRC is not None:
        pytest.skip("Aegra serves this agent's deployed graph only (deploy/aegra/served.py)")
    problem = aegra.missing()
    if problem is not None:
        pytest.skip(problem)
    with aegra.aegra(env, instances=1) as deployment, aegra.report_failures(request, deployment):
        yield Endpoint(deployment.urls[0], deployment.api_key)


SERVERS: dict[str, ServerKind] = {"langgraph-dev": serve_on_langgraph_dev, "aegra": serve_on_aegra}
PAIRS = [(server, graph) for server in SERVERS for graph in GRAPHS]


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
    """One graph on one server kind, and the scripted model it calls."""

    server: str
    graph: Graph
    endpoint: Endpoint
    model: ScriptedOpenAIServer

    @property
    def name(self) -> str:
        return f"{self.server}-{self.graph.id}"

    def client(self) -> Any:
        """The LangGraph SDK's sync client for this server: what the tests read state with."""
        from langgraph_sdk import get_sync_client

        return get_sync_client(url=self.endpoint.url, api_key=self.endpoint.api_key, timeout=30)


@pytest.fixture(scope="module", params=PAIRS, ids=[f"{s}-{g}" for s, g in PAIRS])
def served(chat_ui: ChatUI, request: pytest.FixtureRequest) -> Iterator[Served]:
    server, graph_id = request.param
    graph = GRAPHS[graph_id]
    with ScriptedOpenAIServer(default=scripted_reply) as model:
        env = {
            "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "sk-browser-check",
            "REACT_AGENT_MODEL": "scripted",
            **graph.env,
        }
        with SERVERS[server](graph, env, request) as endpoint:
            yield Served(server, graph, endpoint, model)


@pytest.fixture
def chat(browser: Any, served: Served, chat_ui: ChatUI) -> Iterator[ChatPage]:
    """A fresh browser context on the chat page, connected to the served agent."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    try:
        page_url = chat_ui.page_url(served.endpoint.url)
        yield ChatPage.open(context.new_page(), page_url, api_key=served.endpoint.api_key)
    finally:
        context.close()


def screenshot_path(served: Served, case: str) -> Path:
    return Path(f"/tmp/acui-{served.name}-{case}.png")
