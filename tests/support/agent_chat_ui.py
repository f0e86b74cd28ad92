"""Agent Chat UI (langchain-ai/agent-chat-ui) as a subprocess, for the browser checks.

CI cannot fetch the UI, so nothing here downloads it: the caller names a checkout that already
has its `node_modules` and a production build (`.next/BUILD_ID`) in REACT_AGENT_CHAT_UI_DIR.
`skip_reason()` says in one sentence why the browser checks cannot run (no checkout, not built,
no chromium), and `build_command()` is the offline build: the UI's layout loads the Inter font
from Google Fonts at build time, so the build is pointed at a mocked font response (Next.js's own
NEXT_FONT_GOOGLE_MOCKED_RESPONSES) and the page falls back to a local font.

    python -m tests.support.agent_chat_ui build /path/to/agent-chat-ui

The server is `next start` bound to 127.0.0.1 on a free port, in its own process group, ready
when `GET /` answers. The UI is pointed at a LangGraph server by its query parameters
(`?apiUrl=...&assistantId=agent`), so one build serves any port.

`scripted_reply` is the model for these checks, served by tests/support/openai_server.py: it
asks for the calculator, then answers with what the tool said, in the format of the request's
protocol (native tool calls when the request offers tools, else the text protocol's
`Thought:/Action:/Action Input:`). The answer quotes the observation on one line, so the page
shows what ran in one paragraph.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.langgraph_dev import free_port, stop_group
from tests.support.openai_server import Reply, ToolCall

ENV_DIR = "REACT_AGENT_CHAT_UI_DIR"
CHROMIUM = Path("/usr/bin/chromium")
EXPRESSION = "17 * 23"
API_KEY_STORAGE = "lg:chat:apiKey"  # the UI's localStorage key for the deployment's API key
# Any Google Fonts CSS URL gets a font face without a download (the page then uses a local font).
_FONT_MOCK = """\
const css = "@font-face { font-family: 'Inter'; font-style: normal; font-weight: 100 900; \
font-display: swap; src: local('Inter'); }";
module.exports = new Proxy({}, { get: () => css });
"""


def checkout() -> Path | None:
    """The UI checkout named by REACT_AGENT_CHAT_UI_DIR, if any."""
    value = os.environ.get(ENV_DIR, "").strip()
    return Path(value).expanduser() if value else None


def skip_reason(directory: Path | None = None) -> str | None:
    """Why the browser checks cannot run here, in one sentence; None when they can."""
    directory = directory or checkout()
    if directory is None:
        return f"{ENV_DIR} is not set (a checkout of langchain-ai/agent-chat-ui, built)"
    if not (directory / "package.json").is_file():
        return f"{ENV_DIR}={directory} is not an Agent Chat UI checkout (no package.json)"
    if not _next_bin(directory).exists():
        return f"{ENV_DIR}={directory} has no node_modules (run `pnpm install` there)"
    if not (directory / ".next" / "BUILD_ID").is_file():
        return (
            f"{ENV_DIR}={directory} is not built "
            f"(run `python -m tests.support.agent_chat_ui build {directory}`)"
        )
    if shutil.which("node") is None:
        return "node is not installed"
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    return None


def _next_bin(directory: Path) -> Path:
    return directory / "node_modules" / ".bin" / "next"


def _quiet_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXT_PUBLIC_", "LANGSMITH"))}
    env.update({"NEXT_TELEMETRY_DISABLED": "1", "NO_COLOR": "1"})
    env.update(extra or {})
    return env


def build_command(directory: Path, font_mock: Path) -> tuple[list[str], dict[str, str]]:
    """The offline production build of the checkout: the command and its environment."""
    font_mock.write_text(_FONT_MOCK, encoding="utf-8")
    env = _quiet_env({"NEXT_FONT_GOOGLE_MOCKED_RESPONSES": str(font_mock)})
    return [str(_next_bin(directory)), "build"], env


class ChatUIError(RuntimeError):
    """The UI server did not start; the message has the tail of its log."""


@dataclass
class ChatUI:
    """A running `next start` of Agent Chat UI."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    _log_file: Any = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def page_url(self, api_url: str, assistant_id: str = "agent") -> str:
        """The chat page, connected to `api_url` without the setup form."""
        query = urllib.parse.urlencode({"apiUrl": api_url, "assistantId": assistant_id})
        return f"{self.url}/?{query}"

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise self._fail(f"next start exited with status {self.process.returncode}")
            try:
                with urllib.request.urlopen(self.url, timeout=5) as response:
                    if response.status == 200:
                        return
                    last = f"HTTP {response.status}"
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.25)
        raise self._fail(
            f"Agent Chat UI was not ready at {self.url} within {timeout:.0f}s ({last})"
        )

    def _fail(self, message: str) -> ChatUIError:
        return ChatUIError(f"{message}\n--- next log ({self.log_path}) ---\n{self.log_tail()}")

    def stop(self, grace: float = 5.0) -> None:
        if self.process.poll() is None:
            stop_group(self.process, grace)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


@contextlib.contextmanager
def agent_chat_ui(directory: Path, log_path: Path, *, timeout: float = 60.0) -> Iterator[ChatUI]:
    """`next start` of a built checkout on 127.0.0.1 and a free port; stopped on exit."""
    port = free_port()
    log_file = open(log_path, "wb")  # noqa: SIM115 - closed by ChatUI.stop
    process = subprocess.Popen(
        [str(_next_bin(directory)), "start", "--hostname", "127.0.0.1", "--port", str(port)],
        cwd=directory,
        env=_quiet_env(),
        stdin=subprocess.DEVNULL,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    ui = ChatUI(process, port, log_path, _log_file=log_file)
    try:
        ui.wait_ready(timeout)
        yield ui
    finally:
        ui.stop()


# --------------------------------------------------------------------------- the page

PANEL_TIMEOUT_MS = 45_000


@dataclass
class ChatPage:
    """Agent Chat UI's chat page in a Playwright (sync API) page: what a person does and sees.

    It records the body of every run the page starts (`runs`; the approval decisions are in
    `resumes`) and when the page asked the server for its thread list: Agent Chat UI fetches
    that list again four seconds after a new thread, and every such redraw puts the approval
    panel back to the model's arguments (see `settle`).
    """

    page: Any
    runs: list[dict[str, Any]] = field(default_factory=list)
    thread_lists: int = 0
    lists_before_ask: int = 0
    asked_at: float = 0.0

    @classmethod
    def open(cls, page: Any, url: str, *, api_key: str | None = None) -> ChatPage:
        """The chat page at `url`; `api_key`, if any, is stored where the UI reads it (the UI
        sends it as X-Api-Key), as its settings form would."""
        chat = cls(page)
        if api_key is not None:
            page.add_init_script(
                f"window.localStorage.setItem({json.dumps(API_KEY_STORAGE)}, {json.dumps(api_key)})"
            )
        page.on("request", chat._on_request)
        page.on("response", chat._on_response)
        page.goto(url)
        chat.composer.wait_for(timeout=PANEL_TIMEOUT_MS)
        return chat

    def _on_request(self, request: Any) -> None:
        if request.method == "POST" and request.url.endswith("/runs/stream"):
            self.runs.append(json.loads(request.post_data or "{}"))

    def _on_response(self, response: Any) -> None:
        if response.request.method == "POST" and response.url.endswith("/threads/search"):
            self.thread_lists += 1

    @property
    def resumes(self) -> list[Any]:
        """What each resume sent as `command.resume`, in order."""
        return [run["command"]["resume"] for run in self.runs if "resume" in run.get("command", {})]

    @property
    def composer(self) -> Any:
        return self.page.get_by_placeholder("Type your message...")

    def ask(self, question: str) -> None:
        self.lists_before_ask = self.thread_lists
        self.asked_at = time.monotonic()
        self.composer.fill(question)
        self.page.get_by_role("button", name="Send").click()

    def wait_for_panel(self) -> None:
        self.page.get_by_text("Edit/Approve", exact=True).wait_for(timeout=PANEL_TIMEOUT_MS)

    def settle(self, timeout: float = 20.0, list_wait: float = 8.0) -> None:
        """Wait until the page has stopped redrawing: the run's stream is over and the thread
        list fetched after the new thread has come back (or `list_wait` seconds have passed
        since the question, should a later UI not fetch it). Agent Chat UI builds the panel's
        state from `thread.interrupt`, which the SDK returns as a new object at every render,
        and resets that state whenever the object changes; an edit typed before a redraw is
        lost."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listed = self.thread_lists > self.lists_before_ask
            waited = time.monotonic() - self.asked_at > list_wait
            if (listed or waited) and not self.streaming():
                self.page.wait_for_timeout(500)
                return
            self.page.wait_for_timeout(100)
        raise AssertionError(f"the page was still streaming after {timeout:.0f}s")

    def panel_title(self) -> str:
        return self.page.locator("p.text-2xl").first.inner_text().strip()

    def edit_box(self, label: str) -> Any:
        """The panel's text box for one argument, found by its label (`Expression`)."""
        heading = self.page.locator("p", has_text=re.compile(f"^{re.escape(label)}$"))
        return heading.locator("xpath=following-sibling::textarea").first

    def approve(self) -> None:
        self.page.get_by_role("button", name="Approve", exact=True).click()

    def edit(self, label: str, value: str) -> None:
        box = self.edit_box(label)
        box.fill(value)
        submit = self.page.get_by_role("button", name="Submit", exact=True)
        submit.wait_for(timeout=5_000)  # the card's button reads Submit once an edit is made
        submit.click()

    def reject(self, reason: str) -> None:
        self.page.get_by_placeholder("Share feedback with the agent...").fill(reason)
        self.page.get_by_role("button", name="Submit rejection").click()

    def streaming(self) -> bool:
        """Whether a run is streaming into the page (the composer shows Cancel meanwhile)."""
        return bool(self.page.get_by_role("button", name="Cancel").count() > 0)

    def wait_for_text(self, pattern: str, timeout: float = 45.0) -> str:
        """The last paragraph matching `pattern`, read once the run's stream is over: the
        answer arrives token by token, so a paragraph read as soon as it appears may hold only
        its first words (on a loaded machine, the part before the tool's result)."""
        found = self.page.get_by_text(re.compile(pattern)).last
        found.wait_for(timeout=timeout * 1000)
        deadline = time.monotonic() + timeout
        while self.streaming():
            if time.monotonic() > deadline:
                raise AssertionError(f"the page was still streaming after {timeout:.0f}s")
            self.page.wait_for_timeout(100)
        return str(self.page.get_by_text(re.compile(pattern)).last.inner_text())

    def tool_call_args(self) -> list[tuple[str, str]]:
        """Every argument row of the tool call cards on the page, as (name, value)."""
        rows = self.page.locator("table tr").all()
        cells = [row.locator("td").all_inner_texts() for row in rows]
        return [(c[0].strip(), c[1].strip()) for c in cells if len(c) == 2]

    def tool_results(self) -> list[str]:
        """The text of every tool result card on the page."""
        cards = self.page.locator("div.rounded-lg", has_text="Tool Result")
        return [text.strip() for text in cards.all_inner_texts()]

    def thread_id(self) -> str:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.page.url).query)
        return query["threadId"][0]

    def screenshot(self, path: Path) -> None:
        self.page.screenshot(path=str(path))


# --------------------------------------------------------------------------- the model


def _last(body: Mapping[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    return messages[-1] if messages and isinstance(messages[-1], dict) else {}


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _one_line(text: str) -> str:
    """The observation on one line, so the page shows the whole answer as one paragraph."""
    return " ".join(text.split())


def scripted_reply(body: dict[str, Any]) -> Reply:
    """Ask for the calculator once, then answer with the tool's observation, quoted.

    Native when the request offers tools, the text protocol otherwise."""
    last = _last(body)
    native = bool(body.get("tools"))
    if native:
        if last.get("role") == "tool":
            return Reply(content=f"The tool said: {_one_line(_text(last))}")
        return Reply(tool_calls=[ToolCall("calculator", {"expression": EXPRESSION})])
    text = _text(last)
    if last.get("role") == "user" and text.startswith("Observation:"):
        said = _one_line(text.removeprefix("Observation:"))
        return Reply(content=f"Thought: I have it.\nFinal Answer: The tool said: {said}")
    return Reply(
        content="Thought: I should use the calculator.\nAction: calculator\n"
        f'Action Input: {{"expression": "{EXPRESSION}"}}'
    )


def main(argv: list[str] | None = None) -> int:
    """`build DIR`: the offline production build of an Agent Chat UI checkout."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "build":
        print("usage: python -m tests.support.agent_chat_ui build DIR", file=sys.stderr)
        return 2
    directory = Path(args[1]).resolve()
    if not _next_bin(directory).exists():
        print(f"{directory} has no node_modules/.bin/next: run `pnpm install` there first")
        return 2
    mock = directory / ".next-google-fonts-offline.cjs"
    command, env = build_command(directory, mock)
    return subprocess.run(command, cwd=directory, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
