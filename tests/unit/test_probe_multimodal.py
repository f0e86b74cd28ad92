"""A probe of questions and results that are not plain text, as real clients send them: a
person attaches a ~2 MB image or a PDF in Agent Chat UI or LangGraph Studio (OpenAI's
`image_url` data URL, LangChain v1 `image` / `file` blocks, Agent Chat UI's `source_type` and
camelCase blocks, an image by URL), and tools answer with images (content blocks,
`content_and_artifact`, `image_url`). Each runs through `build_graph` under both protocols and,
where there is a counterpart, through `create_agent` on the same scripted model
(`tests/support/multimodal.py` has the shapes and tools).

What held: natively the model receives the question's blocks exactly as `create_agent` sends
them, on the first turn, after a tool step and on a second turn; under the text protocol the
inner model receives them as `create_agent(TextReAct(model))` sends them (the user's words pass
as they are, docs/text-protocol.md); a tool's image reaches a native model as `create_agent`
gives it, and the text protocol's observation names it without its bytes
(`[image/png, 1,500,000 bytes, not shown]`). A 2 MB image is not estimated as hundreds of
thousands of tokens: with a 2,048-token window the current question and its image are sent in
every request, nothing is refused, and `SummarizationMiddleware` does not summarize for it. The
answer, the trace, history rows, the threads listing, the waterfall and the step printer show
the question's words and no base64; approvals pause and resume; redaction masks a key typed
beside a 2 MB image and leaves the image alone.

Found (first strict xfails, each checked to fail on its own assertion with --runxfail), and
fixed:

- an image is counted as 0 tokens (only a message's text is measured:
  graph/policies/token_estimates.py `text_of`), where the docs promise a safe-side estimate and
  LangChain's own counter charges 85 tokens: a run of 20 screenshots sends a 2,048-token window
  20 images that no result clearing ever removes;
- cutting the newest result to fit the window turns its blocks into a string and drops its
  image without a word, the note counting only characters (graph/policies/context_fit.py
  `_cut`);
- a tool result that is an image alone reads as empty in the trace (`steps`), the CLI step
  printer, history rows and the trace waterfall ("Observation: ", "photo → "), though the text
  protocol's model is told `[image/png, ... not shown]` (each reads `message.text` alone);
- a question that is an image alone reads as empty in history ("question: ") and the threads
  listing's last question (graph/persistence/history.py `_text`);
- redaction is quadratic on a long unpadded base64url run (no `=`, hyphens in it): 53 kB of it
  takes about a second, 2 MB tens of minutes, in the span processor that cleans every traced
  tool result when tracing is on (graph/redaction.py `_NAME_THEN_SEP`, scanned from every
  hyphen to the end).

The fixes: a block that is not text counts `PER_MEDIA_BLOCK` tokens (graph/policies/
token_estimates.py `media_tokens`); a cut keeps the images where they fit and otherwise says
they were removed (`_cut`); the readers show an image-only message's blocks by name
(graph/messages.py `shown`); the pair scan starts only where a run of name characters starts
(graph/redaction.py). The window here is 4,096 tokens: an image is counted at up to what a
provider charges (about 1,600), which a 2,048-token window would not hold beside a question.

Pinned by design: `show`'s state (`state_as_dict`) is the full stored state, image bytes
included (docs/checkpoints.md: "the state at that checkpoint"); the terminal readers are the
ones that abbreviate.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import random
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graph import build_graph
from graph.cli.render import Lines, StepPrinter
from graph.persistence.history import last_question, state_as_dict
from graph.persistence.threads import athread_rows
from graph.persistence.timeline import aiter_history
from graph.policies.token_estimates import estimated_tokens, most_tokens
from graph.protocols.text.chat_model import TextReAct
from graph.redaction import _NAME_THEN_SEP, redact
from graph.steps import run_messages
from graph.tracing.redaction import clean_attributes
from graph.tracing.waterfall import rows_of, split_runs, timeline
from tests.support.multimodal import (
    BIG,
    IMAGE_BYTES,
    IMAGE_TOOLS,
    SHAPES,
    SMALL,
    TEXT,
    TOKENS_PER_IMAGE,
    attachments,
    holds_bytes,
    image_only,
    lookup,
    photo,
    question,
    screenshot,
)
from tests.support.scripted_model import ScriptedChatModel, action, answer, calls, tool_call

PROTOCOLS = ["native", "text"]
WINDOW = 4096  # a small vision model's window: the current question must still be sent whole
SHORT = 1000  # a terminal line: more than any reader should print for one message

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def cfg(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def ours(protocol: str, script: list[Any], tools: list[Any], **kw: Any) -> tuple[Any, Any]:
    model = ScriptedChatModel(script)
    agent = build_graph(
        model=model, tools=tools, checkpointer=InMemorySaver(), protocol=protocol, **kw
    )
    return model, agent


def lookup_then_answer(protocol: str) -> list[Any]:
    return [action(protocol, "lookup", {"q": "cat"}), answer(protocol, "a cat")]


def humans(messages: list[BaseMessage]) -> list[Any]:
    return [m.content for m in messages if isinstance(m, HumanMessage)]


def sent_question(model: ScriptedChatModel, index: int = 0) -> HumanMessage:
    return next(m for m in model.requests[index].messages if isinstance(m, HumanMessage))


async def history(agent: Any, thread: str = "t") -> list[str]:
    return [row.summary async for row in aiter_history(agent, thread)]


async def waterfall(agent: Any, thread: str = "t") -> list[tuple[str, ...]]:
    """The `trace` command's rows of the thread's last run, as it reads them."""
    rows = [row async for row in aiter_history(agent, thread)]
    runs = split_runs(rows)
    snapshot = await agent.aget_state(cfg(thread))
    values = snapshot.values or {}
    messages = run_messages(values["messages"], (values.get("run") or {}).get("question_id"))
    found = timeline(thread, runs, len(runs) - 1, values, messages, bool(snapshot.interrupts))
    return rows_of(found, "#")


def printed(agent: Any, payload: Any, thread: str = "t") -> tuple[str, dict[str, Any]]:
    """What the CLI's step printer writes for a run (its `custom` events), and the output."""
    out_stream = io.StringIO()
    printer = StepPrinter(Lines(out_stream))
    values: dict[str, Any] = {}
    for mode, chunk in agent.stream(payload, cfg(thread), stream_mode=["custom", "values"]):
        if mode == "custom":
            printer.event(chunk)
        else:
            values = chunk
    return out_stream.getvalue(), values


# -- the question's blocks reach the model ------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_native_model_receives_the_question_blocks_as_create_agent_sends_them(shape: str) -> None:
    script = [calls(tool_call("lookup", {"q": "cat"}, id="c1")), "a cat"]
    q = question(shape)
    theirs = ScriptedChatModel(list(script))
    create_agent(model=theirs, tools=[lookup]).invoke({"messages": [q]})
    model, agent = ours("native", list(script), [lookup])
    out = agent.invoke({"messages": [q]}, cfg())
    assert out["status"] == "answered" and out["answer"] == "a cat"
    assert len(model.requests) == len(theirs.requests) == 2
    for mine, its in zip(model.requests, theirs.requests, strict=True):
        assert humans(mine.messages) == humans(its.messages)
    assert len(attachments(sent_question(model, 1))) == 1  # the file, after the tool step too


@pytest.mark.parametrize("shape", SHAPES)
def test_text_inner_model_receives_the_question_blocks_as_create_agent_with_textreact(
    shape: str,
) -> None:
    """docs/text-protocol.md: the user's words go to the inner model as they are; an attached
    file is neither dropped nor flattened into text."""
    q = question(shape)
    theirs = ScriptedChatModel(lookup_then_answer("text"))
    create_agent(TextReAct(theirs), tools=[lookup]).invoke({"messages": [q]})
    model, agent = ours("text", lookup_then_answer("text"), [lookup])
    out = agent.invoke({"messages": [q]}, cfg())
    assert out["status"] == "answered" and out["answer"] == "a cat"
    for mine, its in zip(model.requests, theirs.requests, strict=True):
        assert humans(mine.messages) == humans(its.messages)
    for index in (0, 1):
        assert len(attachments(sent_question(model, index))) == 1


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_image_only_question_is_sent_and_answered(protocol: str) -> None:
    model, agent = ours(protocol, lookup_then_answer(protocol), [lookup])
    out = agent.invoke({"messages": [image_only()]}, cfg())
    assert out["status"] == "answered" and out["answer"] == "a cat"
    assert sent_question(model).content == image_only().content


# -- context fitting and token estimates --------------------------------------------------------


@tool("photo")
def small_photo(page: str) -> list[dict[str, str]]:
    """Take a photo of a page: the image alone."""
    return [{"type": "image", "base64": SMALL, "mime_type": "image/png"}]


@tool
def long_shot(page: str) -> list[dict[str, str]]:
    """Take a screenshot of a page: a long caption and the image."""
    caption = "the caption of the page goes on " * 400
    return [
        {"type": "text", "text": caption},
        {"type": "image", "base64": SMALL, "mime_type": "image/png"},
    ]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_2mb_attachment_is_not_estimated_as_hundreds_of_thousands_of_tokens(shape: str) -> None:
    q = question(shape)
    assert estimated_tokens([q]) < 5000 and most_tokens([q]) < 5000


def test_an_image_counts_at_least_what_langchain_counts() -> None:
    """docs/state-and-context.md: tokens are estimated on the safe side. LangChain's own
    `count_tokens_approximately` charges a fixed 85 tokens per image (OpenAI's low-detail cost,
    the least any provider charges; a 1,500 kB screenshot costs ~1,100 at OpenAI's high detail,
    ~1,600 at Anthropic)."""
    words = HumanMessage(TEXT)
    with_image = question("v1_image")
    assert count_tokens_approximately([with_image]) - count_tokens_approximately([words]) >= 85
    assert estimated_tokens([with_image]) - estimated_tokens([words]) >= TOKENS_PER_IMAGE


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_small_window_still_sends_the_question_with_its_image(protocol: str) -> None:
    """With a 4,096-token window, three steps and a second turn: every request of the run
    carries the current question with its attachment, unchanged, and nothing is refused."""
    script = [action(protocol, "lookup", {"q": f"cat {i}"}) for i in range(3)]
    script += [answer(protocol, "a cat"), answer(protocol, "grey")]
    model, agent = ours(protocol, script, [lookup], context_window=WINDOW)
    q = question("openai_image_url")
    out = agent.invoke({"messages": [q]}, cfg())
    assert out["status"] == "answered" and out["answer"] == "a cat", out.get("error")
    for request in model.requests:
        assert q.content in humans(request.messages)
    out = agent.invoke({"messages": [("user", "What colour is it?")]}, cfg())
    assert out["status"] == "answered" and out["answer"] == "grey", out.get("error")
    assert humans(model.requests[-1].messages)[-1] == "What colour is it?"


def test_many_image_results_fit_the_window_counting_each_image() -> None:
    """20 screenshots in one run with a 4,096-token window: counted at LangChain's 85 tokens an
    image (real models charge more), the last request must still fit the window, as old
    results are cleared to make it fit (docs/state-and-context.md)."""
    script = [calls(tool_call("photo", {"page": f"p{i}"})) for i in range(20)] + ["done"]
    model = ScriptedChatModel(script)
    agent = build_graph(
        model=model, tools=[small_photo], context_window=WINDOW, max_steps=30, protocol="native"
    )
    out = agent.invoke({"messages": [("user", "Look at twenty pages.")]})
    assert out["status"] == "answered", out.get("error")
    sent = model.requests[-1].messages
    images = sum(len(attachments(m)) for m in sent)
    assert estimated_tokens(sent) + TOKENS_PER_IMAGE * images <= WINDOW, images


def test_cutting_the_newest_result_keeps_or_names_its_image() -> None:
    """A screenshot with a long caption in a 2,048-token window: the caption may be cut (the
    note says how much), but the image, which the estimate counts as no room at all, goes as
    the act node's own cut keeps it ("Content blocks stay blocks"), or its loss is said."""
    model = ScriptedChatModel([calls(tool_call("long_shot", {"page": "a"})), "ok"])
    agent = build_graph(model=model, tools=[long_shot], context_window=WINDOW, protocol="native")
    out = agent.invoke({"messages": [("user", "Look.")]})
    assert out["status"] == "answered", out.get("error")
    result = model.requests[-1].messages[-1]
    assert isinstance(result, ToolMessage)
    assert "cut to fit the context window" in result.text  # the cut happened
    assert attachments(result) or "image" in result.text


def test_summarization_is_not_triggered_by_an_attached_image() -> None:
    """SummarizationMiddleware set to summarize past 4,000 tokens: a 2 MB image question is no
    reason to (LangChain's counter charges 85 tokens for it); the summarizer is never called."""
    summarizer = ScriptedChatModel([])
    middleware = SummarizationMiddleware(model=summarizer, trigger=("tokens", 4000))
    model = ScriptedChatModel(lookup_then_answer("native"))
    agent = build_graph(
        model=model, tools=[lookup], middleware=[middleware], checkpointer=InMemorySaver()
    )
    out = agent.invoke({"messages": [question("chat_ui_image")]}, cfg())
    assert out["status"] == "answered" and not summarizer.requests
    assert len(attachments(sent_question(model, 1))) == 1


# -- the stored thread and its readers -------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_readers_show_the_question_words_not_its_bytes(protocol: str) -> None:
    _, agent = ours(protocol, lookup_then_answer(protocol), [lookup])
    out = agent.invoke({"messages": [question("openai_image_url")]}, cfg())
    assert out["answer"] == "a cat"
    trace = json.dumps(out["steps"], default=str)
    assert len(trace) < 2 * SHORT and not holds_bytes(trace)
    rows = asyncio.run(history(agent))
    assert f"question: {TEXT}" in rows
    assert all(len(r) < SHORT and not holds_bytes(r) for r in rows)
    listed, unreadable = asyncio.run(athread_rows(agent, 10))
    assert not unreadable and listed[0]["last_question"] == TEXT
    drawn = [" ".join(row) for row in asyncio.run(waterfall(agent))]
    assert all(len(r) < SHORT and not holds_bytes(r) for r in drawn)
    assert any("lookup" in r and "found cat" in r for r in drawn)


@pytest.mark.parametrize("reader", ["history", "threads"])
def test_an_image_only_question_is_named_in_the_readers(reader: str) -> None:
    """A screenshot pasted with no words is a question: a reader says an image was asked
    about (as the text protocol tells its model `[image/png, ... not shown]`), never an empty
    question, never the bytes."""
    _, agent = ours("native", lookup_then_answer("native"), [lookup])
    agent.invoke({"messages": [image_only()]}, cfg())
    if reader == "history":
        shown = next(r for r in asyncio.run(history(agent)) if r.startswith("question:"))
    else:
        listed, _ = asyncio.run(athread_rows(agent, 10))
        shown = listed[0]["last_question"]
    assert "image" in shown and not holds_bytes(shown), shown


def test_last_question_reads_every_shape_as_its_words() -> None:
    for shape in SHAPES:
        q = question(shape)
        assert last_question([q]) == q.content[0]["text"]


def test_by_design_show_state_keeps_the_image_as_stored() -> None:
    """`show` prints "the state at that checkpoint" (docs/checkpoints.md), the whole of it for
    `--json` readers: the image is there byte for byte, and the state still serializes. The
    readers meant for a terminal (history, threads, trace, the step printer) abbreviate."""
    _, agent = ours("native", lookup_then_answer("native"), [lookup])
    q = question("v1_image")
    agent.invoke({"messages": [q]}, cfg())
    state = state_as_dict(agent.get_state(cfg()).values)
    assert state["messages"][0]["content"] == q.content
    assert len(json.dumps(state, default=str)) > len(BIG)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_step_printer_and_trace_show_a_screenshot_by_its_caption(protocol: str) -> None:
    script = [action(protocol, "screenshot", {"page": "home"}), answer(protocol, "a page")]
    _, agent = ours(protocol, script, [screenshot])
    text, out = printed(agent, {"messages": [question("chat_ui_image")]})
    assert out["answer"] == "a page"
    assert "Observation: screenshot of home" in text
    assert all(len(line) < SHORT for line in text.splitlines()) and not holds_bytes(text)
    assert out["steps"][0]["observation"] == "screenshot of home"


@pytest.mark.parametrize("reader", ["steps", "printer", "history", "waterfall"])
def test_an_image_only_result_is_named_in_every_reader(reader: str) -> None:
    """A tool that answers with an image alone: the text protocol's model is told
    `[image/png, 1,500,000 bytes, not shown]`; a person reading the run is owed as much, not
    an empty observation that reads as "the tool returned nothing"."""
    script = [action("native", "photo", {"page": "home"}), answer("native", "a page")]
    _, agent = ours("native", script, [photo])
    text, out = printed(agent, {"messages": [("user", "Photograph home.")]})
    assert out["status"] == "answered"
    if reader == "steps":
        shown = str(out["steps"][0]["observation"])
    elif reader == "printer":
        shown = next(line for line in text.splitlines() if line.startswith("Observation:"))
    elif reader == "history":
        shown = next(r for r in asyncio.run(history(agent)) if r.startswith("photo →"))
    else:
        shown = next(r[-1] for r in asyncio.run(waterfall(agent)) if r[1].strip() == "tool")
    assert "image" in shown and not holds_bytes(shown), shown


# -- redaction ------------------------------------------------------------------------------------


def test_redaction_masks_a_typed_key_and_keeps_the_image() -> None:
    """A key pasted beside a 2 MB image, as a span holds the question: the key is masked and
    the image is left whole (how long the scan takes is the next test's, counted in work)."""
    q = question("openai_image_url", text="my api_key=sk-abcdef1234567890 what is this?")
    cleaned = clean_attributes({"input.value": json.dumps(q.model_dump())}, [])
    shown = cleaned["input.value"]
    assert "sk-abcdef1234567890" not in shown and BIG in shown


def test_redaction_of_an_unpadded_base64url_result_scans_each_run_once() -> None:
    """A tool result holding a file as unpadded base64url (as JWS/JWT and many web APIs carry
    bytes, RFC 7515): a 40 kB file, 53 kB of text. Its redaction took about a second and grew
    with the square (2 MB: tens of minutes, in the span processor, on the run's own thread):
    the pair scan started again after every `-` inside the run and read to its end each time.
    Counted in work, not time: no candidate may start inside a run of name characters (here
    followed by a separator, where one starting there would match), and the text comes back
    whole."""
    data = random.Random(5).randbytes(40_000)
    payload = base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")
    assert "=" not in payload and ":" not in payload and "-" in payload
    assert redact(payload) == payload
    head = payload[:4_000] + "=v"
    inside = [i + 1 for i, ch in enumerate(head[:-2]) if ch == "-" and head[i + 1] != "-"]
    assert inside and all(_NAME_THEN_SEP.match(head, i) is None for i in inside)
    assert _NAME_THEN_SEP.match(head, 0) is not None  # the run's own start is a candidate


# -- turns and approvals -------------------------------------------------------------------------


def test_second_turn_sends_the_first_questions_image_as_create_agent_does() -> None:
    script = [calls(tool_call("lookup", {"q": "cat"}, id="c1")), "a cat", "grey"]
    q = question("chat_ui_image")
    follow = {"messages": [("user", "What colour is it?")]}
    theirs = ScriptedChatModel(list(script))
    theirs_agent = create_agent(model=theirs, tools=[lookup], checkpointer=InMemorySaver())
    theirs_agent.invoke({"messages": [q]}, cfg())
    theirs_agent.invoke(follow, cfg())
    model, agent = ours("native", list(script), [lookup])
    agent.invoke({"messages": [q]}, cfg())
    out = agent.invoke(follow, cfg())
    assert out["status"] == "answered" and out["answer"] == "grey"
    assert humans(model.requests[-1].messages) == humans(theirs.requests[-1].messages)
    assert len(attachments(sent_question(model, -1))) == 1


def test_second_turn_under_the_text_protocol_keeps_the_image() -> None:
    script = [*lookup_then_answer("text"), answer("text", "grey")]
    model, agent = ours("text", script, [lookup])
    q = question("v1_image")
    agent.invoke({"messages": [q]}, cfg())
    out = agent.invoke({"messages": [("user", "What colour is it?")]}, cfg())
    assert out["status"] == "answered" and out["answer"] == "grey"
    sent = humans(model.requests[-1].messages)
    assert sent[0] == q.content and sent[-1] == "What colour is it?"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_approval_pauses_and_resumes_with_an_image_question(protocol: str) -> None:
    model, agent = ours(protocol, lookup_then_answer(protocol), [lookup])
    q = question("v1_file_pdf")
    paused = agent.invoke({"messages": [q]}, cfg(), context={"approve": ["lookup"]})
    pause = paused["__interrupt__"][0].value
    assert pause["action_requests"][0]["args"] == {"q": "cat"}
    assert len(json.dumps(pause, default=str)) < SHORT
    out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg())
    assert out["status"] == "answered" and out["answer"] == "a cat"
    assert out["steps"][0]["observation"] == "found cat"
    assert sent_question(model, -1).content == q.content
    rows = asyncio.run(history(agent))
    assert any("waiting for approval: lookup" in r for r in rows)
    assert all(len(r) < SHORT and not holds_bytes(r) for r in rows)


# -- a tool's image -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(IMAGE_TOOLS))
def test_native_model_gets_a_tool_image_as_create_agent_gives_it(name: str) -> None:
    script = [calls(tool_call(name, {"page": "home"}, id="c1")), "a page"]
    theirs = ScriptedChatModel(list(script))
    create_agent(model=theirs, tools=[IMAGE_TOOLS[name]]).invoke({"messages": [("user", "Look.")]})
    model, agent = ours("native", list(script), [IMAGE_TOOLS[name]])
    out = agent.invoke({"messages": [("user", "Look.")]}, cfg())
    assert out["status"] == "answered" and out["answer"] == "a page"
    mine, its = model.requests[-1].messages[-1], theirs.requests[-1].messages[-1]
    assert isinstance(mine, ToolMessage) and isinstance(its, ToolMessage)
    assert mine.content == its.content and len(attachments(mine)) == 1


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("screenshot", "Observation: screenshot of home\n[image/png, 1,500,000 bytes, not shown]"),
        ("photo", "Observation: [image/png, 1,500,000 bytes, not shown]"),
        ("snap", "Observation: snap of home\n[image/png, 1,500,000 bytes, not shown]"),
        ("picture_url", "Observation: [image_url, not shown]"),
    ],
)
def test_text_observation_names_a_tool_image_without_its_bytes(name: str, said: str) -> None:
    """graph/protocols/text/prompts.py `_observed`: a model that reads text is told the block
    was there, what it was and its size, not sent its bytes (tests/unit/test_parity_probe_tools
    pins a tiny image; this one is 1.5 MB)."""
    script = [action("text", name, {"page": "home"}), answer("text", "a page")]
    model, agent = ours("text", script, [IMAGE_TOOLS[name]])
    out = agent.invoke({"messages": [("user", "Look.")]}, cfg())
    assert out["status"] == "answered" and out["answer"] == "a page"
    observed = model.requests[-1].messages[-1]
    assert observed.content == said
    assert IMAGE_BYTES == 1_500_000
