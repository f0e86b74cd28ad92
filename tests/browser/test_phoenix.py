"""A real run of the agent in Arize Phoenix's own UI, in headless Chromium.

Phoenix runs in an environment of its own (`uv tool run --from arize-phoenix`: installing it
into the project's environment would lift `mcp` past its pin), started here on free ports with
its data in a temporary folder and its telemetry off. The agent runs in this process with the
real `ChatOpenAI` against the scripted OpenAI-compatible server (tokens included), its tools
from the registry, and tracing switched on the documented way (`enable_tracing`, spans over
OTLP/HTTP to Phoenix). The model asks for two calculations in one step (so observe runs), then
answers. The page must show the run's tree with its think, act and observe spans, and, on the
calculator's span, the tool's result. The screenshot of that page is the one docs/tracing.md
shows (docs/img/phoenix-trace.png).

Skipped with the reason when Chromium, `uv` or Phoenix's environment is missing (`uv tool run
--offline`: a test never downloads; `.ci/run` installs it); CI (REACT_AGENT_REQUIRE_SERVICES=1)
fails instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = [pytest.mark.integration, pytest.mark.browser, pytest.mark.timeout(600)]

# The Phoenix release the docs and .ci/run name; the same cut-off date as pyproject.toml.
PHOENIX = "arize-phoenix==20.26.1"
EXCLUDE_NEWER = "2026-11-26T00:00:00Z"
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "phoenix-trace.png"
REQUIRED = os.environ.get("REACT_AGENT_REQUIRE_SERVICES", "").strip() not in ("", "0")
START_TIMEOUT = 300  # seconds: the first start of a fresh environment migrates its database


def phoenix_command(*args: str) -> list[str]:
    """`args` run in Phoenix's environment (`phoenix serve`, or its `python`)."""
    return [
        "uv", "tool", "run", "--offline", "--exclude-newer", EXCLUDE_NEWER, "--from", PHOENIX,
        *args,
    ]  # fmt: skip


def unavailable() -> str | None:
    """Why the test cannot run here, in one sentence; None when it can."""
    if not CHROMIUM.exists():
        return f"the Phoenix browser test needs {CHROMIUM} (apt-get install chromium)"
    if shutil.which("uv") is None:
        return "the Phoenix browser test starts Phoenix with uv, which is not on PATH"
    probe = subprocess.run(  # half a second when the environment is there, offline
        phoenix_command("python", "-c", ""), capture_output=True, text=True, timeout=120
    )
    if probe.returncode != 0:
        return (
            f"Phoenix's environment is not installed (run `uv tool run --exclude-newer "
            f"{EXCLUDE_NEWER} --from '{PHOENIX}' phoenix --help` once, as .ci/run does)"
        )
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Phoenix server of this test's own; its URL."""
    reason = unavailable()
    if reason is not None:
        if REQUIRED:
            pytest.fail(f"{reason} (REACT_AGENT_REQUIRE_SERVICES is set).", pytrace=False)
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_WORKING_DIR": str(folder),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (folder / "phoenix.log").open("w")
    server = subprocess.Popen(
        phoenix_command("phoenix", "serve"), env=env, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if server.poll() is not None:
                pytest.fail(f"Phoenix exited: {(folder / 'phoenix.log').read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            time.sleep(1)
        else:
            pytest.fail(f"Phoenix did not answer on {url} within {START_TIMEOUT} s")
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def run_the_agent(phoenix: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """One traced run: two calculator calls in one step (act twice, then observe), the answer."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from graph import build_graph
    from graph.tracing import enable_tracing

    script = [
        Reply(
            tool_calls=[
                ToolCall("calculator", {"expression": "17 * 23"}),
                ToolCall("calculator", {"expression": "2 ** 10"}),
            ],
            usage=(120, 30),
        ),
        Reply(content="17 * 23 = 391 and 2 ** 10 = 1024.", usage=(180, 14)),
    ]
    with ScriptedOpenAIServer(script) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-phoenix-test-000000")
        exporter = OTLPSpanExporter(endpoint=f"{phoenix}/v1/traces")
        tracing = enable_tracing(exporter=exporter, batch=False, environ=dict(os.environ))
        assert tracing is not None
        try:
            agent = build_graph(model="scripted", tools=None, protocol="native")
            out = agent.invoke(
                {"messages": [("user", "What are 17 * 23 and 2 ** 10?")]},
                {"configurable": {"thread_id": "phoenix-demo"}},
            )
        finally:
            tracing.shutdown()
    return out


def project_traces_url(phoenix: str) -> str:
    projects = httpx.get(f"{phoenix}/v1/projects", timeout=10).json()["data"]
    (project,) = [p for p in projects if p["name"] == "default"]
    return f"{phoenix}/projects/{project['id']}/traces"


def test_the_run_is_a_tree_in_phoenix(phoenix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from playwright.sync_api import expect, sync_playwright

    out = run_the_agent(phoenix, monkeypatch)
    assert out["status"] == "answered", out.get("error")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(project_traces_url(phoenix), timeout=60_000)
            page.get_by_role("link", name="react-agent").first.click(timeout=60_000)
            for node in ("think", "act", "observe", "finish"):
                expect(page.get_by_text(node, exact=True).first).to_be_visible(timeout=30_000)
            # Phoenix may open the trace with a span selected, whose name its details pane then
            # shows once more: select the run's root span, so names are counted in the tree
            page.get_by_text("react-agent", exact=True).filter(visible=True).last.click()
            expect(page.get_by_text("act", exact=True)).to_have_count(2)  # one task per call
            expect(page.get_by_text("calculator", exact=True)).to_have_count(2)
            page.get_by_text("calculator", exact=True).first.click()
            # the span's output, in Phoenix's code view (one element per token, read whole)
            result = page.locator(".cm-content").filter(has_text='"content": "391"')
            try:
                expect(result.first).to_be_visible(timeout=30_000)
            except AssertionError:
                page.screenshot(path="/tmp/phoenix-failed.png")
                raise
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT))
        finally:
            browser.close()
