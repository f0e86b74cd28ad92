"""RunDeadline: a run that is past its time limit (`run_timeout`) makes no more model calls.

The call itself gets what is left of the run's time as its deadline (think's model call); this
policy stops the run before a call it has no time for, and the run ends with status `timeout`.
"""

from __future__ import annotations

import time

from langchain.agents.middleware import ModelRequest, ModelResponse

from graph.policies.base import LoopPolicy


class RunDeadlineReached(TimeoutError):
    """The run's time limit passed before this model call."""


class RunDeadline(LoopPolicy):
    needs = "run_timeout"

    def shaped(self, request: ModelRequest) -> ModelRequest | ModelResponse:
        limit = self.settings(request).run_timeout
        started = self.run(request).get("started_at")
        if limit and started and time.time() - started >= limit:
            raise RunDeadlineReached(f"the run passed its time limit of {limit:g} s")
        return request
