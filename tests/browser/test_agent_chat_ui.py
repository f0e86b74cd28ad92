"""Approvals in a real browser: Agent Chat UI's current source against served agents.

For each served graph (this agent under both protocols, and LangChain's `create_agent` +
`HumanInTheLoopMiddleware` as the reference; see conftest.py) a person asks a question, sees
the approval panel with the calculator and its argument, and then approves, edits the argument
or rejects with a reason. Each case checks three things: what the page shows (the tool card,
the result, the answer), what the page sent to resume the run (LangChain's human-in-the-loop
decisions), and what ran (the thread's tool result on the server, read through the LangGraph
SDK, and what the model was sent next). A screenshot of each case goes to
/tmp/acui-<server>-<graph>-<case>.png.

The reference runs the same steps so that a failure here says whether the UI or this agent is
at fault: a step that fails for both is the UI's.

Needs a built checkout of langchain-ai/agent-chat-ui in REACT_AGENT_CHAT_UI_DIR and
/usr/bin/chromium; skips otherwise (see tests/support/agent_chat_ui.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import Served, screenshot_path
from tests.support.agent_chat_ui import EXPRESSION, ChatPage

pytestmark = [pytest.mark.integration, pytest.mark.browser, pytest.mark.timeout(300)]

QUESTION = "What is 17 * 23?"
EDITED = "17 * 24"
REASON = "use the abacus instead"
ANSWER = r"^The tool said:"


def thread_values(served: Served, chat: ChatPage) -> dict[str, Any]:
    state = served.client().threads.get_state(chat.thread_id())
    return dict(state["values"])


def tool_messages(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in values["messages"] if m["type"] == "tool"]


def tool_texts(values: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in tool_messages(values)]


def ask_and_see_the_panel(chat: ChatPage, served: Served) -> None:
    """Ask; the panel names the calculator and shows the model's argument, nothing has run.

    Then wait for the page to stop redrawing (`ChatPage.settle`): the UI throws a typed edit
    away at every redraw, for any graph (see test_an_edit_survives_a_redraw_of_the_page)."""
    chat.ask(QUESTION)
    chat.wait_for_panel()
    assert chat.panel_title() == "calculator"
    assert chat.edit_box("Expression").input_value() == EXPRESSION
    chat.settle()
    assert chat.edit_box("Expression").input_value() == EXPRESSION
    client = served.client()
    assert client.threads.get(chat.thread_id())["status"] == "interrupted"
    # the pause as the UI reads it once the stream is over: the thread head's task interrupts
    state = client.threads.get_state(chat.thread_id())
    (pause,) = [interrupt for task in state["tasks"] for interrupt in task["interrupts"]]
    [request] = pause["value"]["action_requests"]
    assert request["name"] == "calculator" and request["args"] == {"expression": EXPRESSION}
    [config] = pause["value"]["review_configs"]
    assert {"approve", "edit", "reject"} <= set(config["allowed_decisions"])
    assert not tool_texts(thread_values(served, chat))  # the calculator has not run


def last_model_input(served: Served) -> str:
    """The last message the model was sent (the tool's result or the user's rejection)."""
    return str(served.model.chat_requests[-1].messages[-1]["content"])


def test_approve_runs_the_call_and_answers(chat: ChatPage, served: Served) -> None:
    ask_and_see_the_panel(chat, served)
    chat.screenshot(screenshot_path(served, "panel"))
    chat.approve()
    answer = chat.wait_for_text(ANSWER)
    chat.screenshot(screenshot_path(served, "approve"))

    assert chat.resumes == [{"decisions": [{"type": "approve"}]}]
    assert "391" in answer
    assert ("expression", EXPRESSION) in chat.tool_call_args()
    assert any("391" in card for card in chat.tool_results())
    values = thread_values(served, chat)
    assert tool_texts(values) == ["391"]
    assert "391" in last_model_input(served)


def test_edit_runs_the_edited_call(chat: ChatPage, served: Served) -> None:
    ask_and_see_the_panel(chat, served)
    chat.edit("Expression", EDITED)
    answer = chat.wait_for_text(ANSWER)
    chat.screenshot(screenshot_path(served, "edit"))

    edit = {"type": "edit", "edited_action": {"name": "calculator", "args": {"expression": EDITED}}}
    assert chat.resumes == [{"decisions": [edit]}]
    # what ran: the calculator's one result on the server is 17 * 24's, and the model got it
    values = thread_values(served, chat)
    (message,) = tool_messages(values)
    assert message["name"] == "calculator"
    assert "408" in message["content"] and "391" not in message["content"]
    (call,) = [c for m in values["messages"] if m["type"] == "ai" for c in m["tool_calls"]]
    assert message["tool_call_id"] == call["id"]
    assert "408" in last_model_input(served)
    assert "408" in answer and "391" not in answer
    assert any("408" in card for card in chat.tool_results())
    # This agent's tool card shows the call that ran; LangChain's HITL keeps the model's call in
    # the message and applies the edit when the tool runs, so its card shows the model's.
    shown = [value for name, value in chat.tool_call_args() if name == "expression"]
    assert shown == [EDITED if served.graph.card_shows_edit else EXPRESSION]


def test_reject_tells_the_model_and_answers(chat: ChatPage, served: Served) -> None:
    ask_and_see_the_panel(chat, served)
    chat.reject(REASON)
    answer = chat.wait_for_text(ANSWER)
    chat.screenshot(screenshot_path(served, "reject"))

    assert chat.resumes == [{"decisions": [{"type": "reject", "message": REASON}]}]
    assert REASON in answer
    values = thread_values(served, chat)
    (result,) = tool_texts(values)
    assert REASON in result and "391" not in result  # the calculator never ran
    assert REASON in last_model_input(served)


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="Agent Chat UI resets the approval panel on every redraw, for any graph (the "
    "create_agent reference fails the same way): the SDK's `thread.interrupt` is a new object "
    "at each render and use-interrupted-actions.tsx rebuilds the panel state in a useEffect "
    "on it, so a typed edit is lost. The page redraws by itself ~4 s after a new thread (it "
    "re-fetches the thread list): an edit typed before then is sent as a plain approve. "
    "Keying those effects (there and in thread-actions-view.tsx) on the interrupt's id and "
    "value instead of the object makes this and the next test pass on upstream fdc87e6",
)
def test_an_edit_survives_a_redraw_of_the_page(chat: ChatPage, served: Served) -> None:
    if served.graph.protocol != "native":
        pytest.skip("the reset is in the UI alone; the native protocol and the reference show it")
    ask_and_see_the_panel(chat, served)
    box = chat.edit_box("Expression")
    box.fill(EDITED)
    assert box.input_value() == EDITED
    toggle = chat.page.get_by_text("Hide Tool Calls")  # any redraw of the conversation
    toggle.click()
    toggle.click()
    chat.page.wait_for_timeout(500)
    chat.screenshot(screenshot_path(served, "edit-after-redraw"))
    assert box.input_value() == EDITED


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="Agent Chat UI re-fetches the thread list ~4 s after a new thread and that redraw "
    "resets the approval panel (see the test above): an edit typed as soon as the panel "
    "appears is gone, and the button reads Approve again, for this agent and for the "
    "create_agent reference alike (issue 40's finding 7 is this UI bug)",
)
def test_an_edit_typed_before_the_thread_list_refresh_survives(
    chat: ChatPage, served: Served
) -> None:
    if served.graph.protocol != "native":
        pytest.skip("the reset is in the UI alone; the native protocol and the reference show it")
    chat.ask(QUESTION)
    chat.wait_for_panel()
    if chat.thread_lists > chat.lists_before_ask:
        pytest.skip("the panel came after the thread list refresh: nothing left to reset it")
    box = chat.edit_box("Expression")
    box.fill(EDITED)
    submit = chat.page.get_by_role("button", name="Submit", exact=True)
    submit.wait_for(timeout=5_000)  # the edit took: the button reads Submit
    chat.settle()  # the refresh comes and goes
    chat.screenshot(screenshot_path(served, "edit-before-refresh"))
    assert box.input_value() == EDITED
    assert submit.count() == 1
