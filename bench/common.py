"""Shared pieces of the benchmarks: one scripted model and the same tools for both agents, the
two builders (ours and LangGraph's prebuilt `create_react_agent`), timing, tables and JSON.

The model is a dedicated, minimal `BaseChatModel`: its reply depends only on the request (how
many assistant messages it already holds), so any number of runs can share it, concurrently,
and the model's own cost is identical and tiny on both sides. Both agents go through
`BaseChatModel.invoke` / `ainvoke` (callbacks included), exactly as with a real model.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import os
import platform
import random
import statistics
import string
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import PrivateAttr

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
POSTGRES_URL = os.environ.get(
    "BENCH_POSTGRES", os.environ.get("REACT_AGENT_TEST_POSTGRES", "")
) or ("postgresql://postgres@127.0.0.1:5432/test")
QUESTION = "Fetch the items one by one, then say done."
OBSERVATION_CHARS = 2000
PREBUILT_RECURSION_LIMIT = 10_000

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from graph import build_graph  # noqa: E402  (importing `graph` reads .env: cleared below)
from tests.support.scripted_model import ReplyingChatModel, Request  # noqa: E402

# The benchmarks measure the defaults: no REACT_AGENT_* setting from the shell or a .env file.
for _name in [n for n in os.environ if n.startswith("REACT_AGENT_")]:
    del os.environ[_name]


def _observations(count: int = 64, chars: int = OBSERVATION_CHARS) -> list[str]:
    """Distinct pseudo-random texts: nothing for PostgreSQL's TOAST compression to squeeze, so
    the stored bytes are what the savers really write."""
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + " .,"
    return ["".join(rng.choices(alphabet, k=chars)) for _ in range(count)]


OBSERVATIONS = _observations()


# -- the model ------------------------------------------------------------------------------
Policy = Callable[[list[BaseMessage]], AIMessage]


class BenchModel(ReplyingChatModel):
    """An instant chat model whose reply is `policy(request messages)`.

    `delay` sleeps per call (`asyncio.sleep` in `ainvoke`, `time.sleep` in `invoke`); with
    `record=True` every request (messages, tool schemas, stop) is kept in `requests`.
    """

    _policy: Policy = PrivateAttr()
    _record: bool = PrivateAttr(default=False)
    _requests: list[Request] = PrivateAttr(default_factory=list)

    def __init__(self, policy: Policy, *, delay: float = 0.0, record: bool = False) -> None:
        super().__init__(delay=delay)
        self._policy = policy
        self._record = record

    @property
    def _llm_type(self) -> str:
        return "bench"

    @property
    def requests(self) -> list[Request]:
        return self._requests

    def _reply(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> Any:
        if self._record:
            tools = list(kwargs.get("tools") or [])
            self._requests.append(Request(list(messages), stop, tools))
        return ChatResult(generations=[ChatGeneration(message=self._policy(messages))])


USAGE = {"input_tokens": 120, "output_tokens": 20, "total_tokens": 140}


def loop_policy(
    iterations: int,
    protocol: str = "native",
    *,
    calls_per_step: int = 1,
    tool: str = "fetch",
    args: Callable[[int, int], dict[str, Any]] | None = None,
) -> Policy:
    """`iterations` tool-calling replies (`calls_per_step` calls each under native), then a
    final answer. The step number is the count of assistant messages in the request."""
    make_args = args or (lambda step, _call: {"index": step})

    def policy(messages: list[BaseMessage]) -> AIMessage:
        step = sum(1 for m in messages if m.type == "ai")
        if step >= iterations:
            if protocol == "text":
                return AIMessage(
                    content="Thought: I have everything.\nFinal Answer: done",
                    usage_metadata=USAGE,
                )
            return AIMessage(content="done", usage_metadata=USAGE)
        if protocol == "text":
            arguments = json.dumps(make_args(step, 0))
            return AIMessage(
                content=f"Thought: I need item {step}.\nAction: {tool}\nAction Input: {arguments}",
                usage_metadata=USAGE,
            )
        calls = [
            {
                "name": tool,
                "args": make_args(step, j),
                "id": f"call_{step}_{j}",
                "type": "tool_call",
            }
            for j in range(calls_per_step)
        ]
        return AIMessage(content="", tool_calls=calls, usage_metadata=USAGE)

    return policy


# -- tools ----------------------------------------------------------------------------------
def fetch_tool() -> BaseTool:
    """Instant tool: item `index` is a distinct 2,000-character text (sync and async forms)."""

    def fetch(index: int) -> str:
        return OBSERVATIONS[index % len(OBSERVATIONS)]

    async def afetch(index: int) -> str:
        return OBSERVATIONS[index % len(OBSERVATIONS)]

    return StructuredTool.from_function(
        func=fetch, coroutine=afetch, name="fetch", description="Fetch one item by its index."
    )


def sleep_tool(seconds: float, kind: str) -> BaseTool:
    """A tool that takes `seconds`: `kind="async"` awaits `asyncio.sleep` (no sync form),
    `kind="sync"` blocks in `time.sleep` (no async form: async runs use a worker thread)."""

    def wait(label: str) -> str:
        time.sleep(seconds)
        return f"{label}: waited {seconds} s"

    async def await_(label: str) -> str:
        await asyncio.sleep(seconds)
        return f"{label}: waited {seconds} s"

    if kind == "async":
        return StructuredTool.from_function(
            coroutine=await_, name="wait", description="Wait a moment."
        )
    return StructuredTool.from_function(func=wait, name="wait", description="Wait a moment.")


# -- the two agents -------------------------------------------------------------------------
def build_ours(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    *,
    protocol: str = "native",
    checkpointer: Any = None,
    iterations: int = 10,
) -> Any:
    """Our agent; `max_steps` leaves room for `iterations` tool steps and the answer."""
    return build_graph(
        model=model,
        tools=list(tools),
        protocol=protocol,
        checkpointer=checkpointer,
        max_steps=min(iterations + 1, 200),
    )


def build_prebuilt(model: BaseChatModel, tools: Sequence[BaseTool], *, checkpointer: Any = None):
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():  # deprecated in favour of langchain.agents.create_agent
        warnings.simplefilter("ignore")
        return create_react_agent(model, list(tools), checkpointer=checkpointer)


def run_config(agent_kind: str, thread_id: str | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id or new_thread()}}
    if agent_kind == "prebuilt":
        config["recursion_limit"] = PREBUILT_RECURSION_LIMIT
    return config


def new_thread(prefix: str = "bench") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def inputs(question: str = QUESTION) -> dict[str, Any]:
    return {"messages": [("user", question)]}


def tool_results(out: dict[str, Any], agent_kind: str) -> int:
    """Tool results a finished run holds (ours: its trace; the prebuilt: its ToolMessages)."""
    if agent_kind == "prebuilt":
        return sum(isinstance(m, ToolMessage) for m in out["messages"])
    return sum(1 for s in out.get("steps", []) if s.get("kind") == "action")


def check_run(out: dict[str, Any], agent_kind: str, expected_results: int) -> None:
    """Fail loudly when a run did not do the work it is timed for."""
    got = tool_results(out, agent_kind)
    status = out.get("status", "answered") if agent_kind != "prebuilt" else "answered"
    if got != expected_results or status != "answered":
        raise RuntimeError(
            f"{agent_kind}: expected {expected_results} tool results and an answer, got {got} "
            f"(status {status!r}, error {out.get('error')!r})"
        )


# -- timing -------------------------------------------------------------------------------
@dataclass
class Sample:
    wall: float
    cpu: float


def timed(fn: Callable[[], Any]) -> Sample:
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return Sample(time.perf_counter() - wall, time.process_time() - cpu)


def interleaved(
    variants: dict[str, Callable[[], Any]], rounds: int, warmup: int = 1
) -> dict[str, list[Sample]]:
    """Each round runs every variant once, in a rotated order, so drifting machine load hits
    all of them alike. Compare medians over rounds."""
    names = list(variants)
    for _ in range(warmup):
        for name in names:
            variants[name]()
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(timed(variants[name]))
    return samples


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def spread(values: Sequence[float]) -> float:
    """Interquartile range relative to the median (a rough noise figure)."""
    if len(values) < 4:
        return float("nan")
    q = statistics.quantiles(values, n=4)
    return (q[2] - q[0]) / statistics.median(values)


def paired_ratio(ours: Sequence[float], theirs: Sequence[float]) -> float:
    """Median over rounds of ours/theirs, each pair measured back to back."""
    return statistics.median(a / b for a, b in zip(ours, theirs, strict=True) if b > 0)


# -- output -------------------------------------------------------------------------------
def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table (right-aligned numbers), ready for a README."""
    text_rows = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in text_rows)) for i, h in enumerate(headers)]
    numeric = [all(_numberish(r[i]) for r in text_rows) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        parts = [
            c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cells, widths, numeric, strict=True)
        ]
        return "| " + " | ".join(parts) + " |"

    rule = (
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if n else "-" * (w + 2)
            for w, n in zip(widths, numeric, strict=True)
        )
        + "|"
    )
    return "\n".join([line(headers), rule, *(line(r) for r in text_rows)])


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _numberish(text: str) -> bool:
    stripped = text.replace(",", "").replace("×", "").replace("%", "").strip()
    try:
        float(stripped)
    except ValueError:
        return stripped in ("", "n/a", "-", "nan")
    return True


def percent(value: float) -> str:
    return "-" if value != value else f"{value * 100:.0f}%"


def ratio(value: float) -> str:
    return f"{value:.2f}×"


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.2f} {unit}"
        n /= 1000
    return f"{n:.2f} GB"


def environment() -> dict[str, Any]:
    """What the numbers depend on: versions, cores, load, and the exact graph/ sources."""
    digest = hashlib.sha1()
    for path in sorted((ROOT / "graph").glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        head = ""
    versions = {}
    for package in ("langgraph", "langgraph-prebuilt", "langgraph-checkpoint", "langchain-core"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "git_head": head,
        "graph_sources_sha1": digest.hexdigest()[:12],
        "versions": versions,
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def write_json(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"benchmark": name, "environment": environment(), **data}
    path.write_text(json.dumps(payload, indent=2, default=_json_default) + "\n")
    return path


def _json_default(value: Any) -> Any:
    if isinstance(value, Sample):
        return asdict(value)
    return str(value)


def summary(samples: Sequence[Sample]) -> dict[str, Any]:
    walls = [s.wall for s in samples]
    cpus = [s.cpu for s in samples]
    return {
        "wall_median_s": median(walls),
        "cpu_median_s": median(cpus),
        "wall_spread": spread(walls),
        "cpu_spread": spread(cpus),
        "samples": [asdict(s) for s in samples],
    }
