"""RunDeadline: a run that is past its time limit (`run_timeout`) makes no more model calls.

The call itself gets what is left of the run's time as its deadline (think's model call); this
policy stops the run before a call it has no time for, and the run ends with status `timeout`.

The clock runs from the run's start, or from the call of the graph that resumed it, whichever
is later (`clock_start`): a run is never charged for the time it sat paused for a person's
decision, or stopped by a failure until someone resumed it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langgraph.config import get_config

from graph.policies.base import LoopPolicy

# when this call of the graph started (`invoked`); "__" keeps it out of checkpoint metadata
INVOKED_AT = "__react_agent_invoked_at__"


class RunDeadlineReached(TimeoutError):
    """The run's time limit passed before this model call."""


class RunDeadline(LoopPolicy):
    needs = "run_timeout"

    def shaped(self, request: ModelRequest) -> ModelRequest | ModelResponse:
        limit = self.settings(request).run_timeout
        started = clock_start(self.run(request))
        if limit and started and time.time() - started >= limit:
            raise RunDeadlineReached(f"the run passed its time limit of {limit:g} s")
        return request


def invoked(config: Any) -> Any:
    """The config of a call of the graph (a question or a resume), stamped with its start. A
    config with no `configurable` (no thread: nothing to resume) is left as it is, so
    LangGraph still says a checkpointer needs a thread id."""
    if not (config or {}).get("configurable"):
        return config
    config = dict(config)
    config["configurable"] = {**config["configurable"], INVOKED_AT: time.time()}
    return config


def clock_start(run: Mapping[str, Any]) -> float | None:
    """When the run's clock started: the run's start, or this call's when it resumed the run."""
    started = run.get("started_at")
    try:
        resumed = (get_config().get("configurable") or {}).get(INVOKED_AT)
    except RuntimeError:  # outside a run of the graph
        resumed = None
    return max(started, resumed) if started and resumed else started
