"""StructuredAnswer: `build_graph(response_format=...)` gives the run a typed result in
`structured_response`, under either protocol.

- Native: LangChain's own strategies. `ProviderStrategy` binds the provider's JSON-schema mode
  and parses the reply; `ToolStrategy` offers the schema as an output tool the model must end
  with. A bare schema (pydantic model, TypedDict, dataclass, JSON schema) takes the provider's
  mode where the model's profile says it has structured output, else the tool.
- Text: the system prompt asks for the Final Answer as one JSON object matching the schema; the
  answer is parsed and checked by LangChain's binding for that schema, and one that does not
  match is an unusable reply: the model is told why and asked again.

Parsing is LangChain's (`OutputToolBinding`, `ProviderStrategyBinding`), so a schema means the
same here as in `create_agent`.

A model that ignores `tool_choice` and answers in plain text gave no typed result, so that
reply is unusable too (told why, asked again; the run ends with status error after
REACT_AGENT_MAX_INVALID such replies), never an `answered` run without `structured_response`.
A JSON schema is checked when the graph is built (`answer_schema.check_schema`): one that is
not a valid JSON Schema, or nests deeper than `MAX_SCHEMA_DEPTH` (converting it would exhaust
Python's recursion limit mid-run, reported as a failure of a model call that was never made),
is refused in one sentence; and every answer is checked against it (`answer_schema.checked`:
LangChain returns a JSON-schema dict's value unchecked).
"""

from __future__ import annotations

import json
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.structured_output import (
    AutoStrategy,
    MultipleStructuredOutputsError,
    OutputToolBinding,
    ProviderStrategy,
    ProviderStrategyBinding,
    StructuredOutputValidationError,
    ToolStrategy,
)
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from pydantic_core import to_jsonable_python

from graph import messages as m
from graph._compat import provider_output_with_tools
from graph.models.failures import one_line
from graph.policies.answer_schema import answer_schema, check_schema, checked
from graph.policies.base import AsyncHandler, Handler, LoopPolicy
from graph.protocols.text.chat_model import TextReAct

# what a retry says by default: LangChain's `STRUCTURED_OUTPUT_ERROR_TEMPLATE` (kept private)
RETRY_TEMPLATE = "Error: {error}\n Please fix your mistakes."
ANSWER_FORMAT = (
    "Your Final Answer must be exactly one JSON object matching this JSON schema, and nothing "
    "else:\n{schema}"
)


def strategy_of(response_format: Any) -> ToolStrategy | ProviderStrategy | AutoStrategy:
    if isinstance(response_format, (ToolStrategy, ProviderStrategy, AutoStrategy)):
        return response_format
    return AutoStrategy(schema=response_format)


class StructuredAnswer(LoopPolicy):
    def __init__(self, bindings: Any, response_format: Any) -> None:
        super().__init__(bindings)
        self.strategy = strategy_of(response_format)
        schema = self.strategy.schema
        if isinstance(schema, dict):
            check_schema(schema)
        self.tool_strategy = (
            self.strategy if isinstance(self.strategy, ToolStrategy) else ToolStrategy(schema)
        )
        self.outputs = {
            b.tool.name: b
            for b in map(OutputToolBinding.from_schema_spec, self.tool_strategy.schema_specs)
        }

    def shaped(self, request: ModelRequest) -> ModelRequest | ModelResponse:
        return request

    def wrap_model_call(self, request: ModelRequest, handler: Handler) -> ModelResponse:
        prepared, read = self.prepared(request)
        return read(handler(prepared))

    async def awrap_model_call(self, request: ModelRequest, handler: AsyncHandler) -> ModelResponse:
        prepared, read = self.prepared(request)
        return read(await handler(prepared))

    def prepared(self, request: ModelRequest) -> tuple[ModelRequest, Any]:
        """The request as this strategy sends it, and how its response is read."""
        text = isinstance(request.model, TextReAct)  # NativeToTextFallback's retry
        if text or (self.run(request).get("protocol") or "native") == "text":
            schema = answer_schema([spec.json_schema for spec in self.tool_strategy.schema_specs])
            text = ANSWER_FORMAT.format(schema=json.dumps(schema, ensure_ascii=False))
            system = request.system_message.text if request.system_message else ""
            shaped = request.override(system_message=SystemMessage(f"{system}\n\n{text}".strip()))
            if getattr(request.model, "completion_prompt", False):
                # the embedded model: its grammar writes the schema's object
                from graph.models.local.completion import ANSWER_SCHEMA

                settings = {**shaped.model_settings, ANSWER_SCHEMA: schema}
                shaped = shaped.override(model_settings=settings)
            return shaped, self.read_text
        provider = self.provider(request)
        if provider is not None:
            settings = {**request.model_settings, **provider.to_model_kwargs()}
            return request.override(model_settings=settings), lambda r: self.read_provider(
                r, provider
            )
        tools = [*request.tools, *(b.tool for b in self.outputs.values())]
        closing = bool(self.run(request).get("wrap_up"))  # the step limit's last answer
        return request.override(tools=tools, tool_choice="any"), lambda r: self.read_tool(
            r, plain_text_ok=closing
        )

    def provider(self, request: ModelRequest) -> ProviderStrategy | None:
        if isinstance(self.strategy, ProviderStrategy):
            return self.strategy
        if isinstance(self.strategy, ToolStrategy):
            return None
        profile = getattr(request.model, "profile", None) or {}
        if not profile.get("structured_output"):  # the profile decides: no guess by name
            return None
        if not provider_output_with_tools(request.model, list(request.tools)):
            return None  # a model that cannot combine it with tools (Gemini before 3)
        return ProviderStrategy(self.strategy.schema)

    def read_tool(self, response: ModelResponse, *, plain_text_ok: bool = False) -> ModelResponse:
        """The output tool's call as the typed answer. A reply with no call at all ignored
        `tool_choice`: unusable, except as the step limit's closing answer (`StepLimit`), which
        ends the run with status max_steps whatever it holds."""
        step = _last_step(response)
        if step is None:
            return response
        if not step.tool_calls and not step.invalid_tool_calls and not plain_text_ok:
            names = " or ".join(f"`{name}`" for name in self.outputs)
            why = f"the answer must be given by calling the {names} tool, not as plain text"
            return _unusable(step, why)
        calls = [c for c in step.tool_calls if c["name"] in self.outputs]
        if not calls:
            return response
        if len(calls) > 1:
            names = [c["name"] for c in calls]
            return self.retried(step, MultipleStructuredOutputsError(names, step), "")
        try:
            binding = self.outputs[calls[0]["name"]]
            parsed = checked(binding, binding.parse(calls[0]["args"]))
        except Exception as exc:
            error = StructuredOutputValidationError(calls[0]["name"], exc, step)
            return self.retried(step, error, _why(exc))
        return _answered(step, calls[0], parsed, self.tool_strategy.tool_message_content)

    def retried(self, step: AIMessage, error: Exception, detail: str) -> ModelResponse:
        """The reply as unusable, each call answered with what `ToolStrategy.handle_errors`
        says (LangChain's own rule, as `create_agent` applies it), or, beside ordinary calls, a
        step whose answer call is answered so; the error itself where it says not to retry,
        which ends the run."""
        said = retry_text(self.tool_strategy.handle_errors, error)
        if said is None:
            raise error
        if any(c["name"] not in self.outputs for c in step.tool_calls):
            # the ordinary calls run, as in `create_agent`; the answer's call is told why
            told = [
                ToolMessage(said, tool_call_id=c["id"], name=c["name"], status="error")
                for c in step.tool_calls
                if c["name"] in self.outputs
            ]
            return ModelResponse(result=[step, *told])
        why = f"the structured answer did not match its schema: {detail or error}"
        broken = [  # told back as this call's result, as a chat API needs one per call
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "error": why}
            for c in step.tool_calls
        ]
        step = step.model_copy(update={"tool_calls": [], "invalid_tool_calls": broken})
        return _unusable(step, why, said)

    def read_provider(self, response: ModelResponse, strategy: ProviderStrategy) -> ModelResponse:
        step = _last_step(response)
        if step is None or step.tool_calls:
            return response
        try:
            binding = ProviderStrategyBinding.from_schema_spec(strategy.schema_spec)
            parsed = checked(binding, binding.parse(step))
        except Exception as exc:
            return _unusable(step, f"the answer did not match its schema: {_why(exc)}")
        return ModelResponse(result=list(response.result), structured_response=parsed)

    def read_text(self, response: ModelResponse) -> ModelResponse:
        step = _last_step(response)
        if step is None or step.tool_calls or m.kind_of(step) != "answer":
            return response
        problems = []
        try:
            value = json.loads(step.text)
            if not isinstance(value, dict):
                raise ValueError("it is not a JSON object")
        except Exception as exc:  # not JSON, too deep to read, or not an object
            problems.append(_why(exc))
        else:
            for binding in self.outputs.values():
                try:
                    return _json_answered(step, value, checked(binding, binding.parse(value)))
                except Exception as exc:
                    problems.append(_why(exc))
        why = f"the Final Answer must be one JSON object matching the schema ({problems[0]})"
        return _unusable(step, why)


def _last_step(response: ModelResponse) -> AIMessage | None:
    return next((x for x in reversed(response.result) if isinstance(x, AIMessage)), None)


def _answered(
    step: AIMessage, call: dict[str, Any], parsed: Any, content: str | None
) -> ModelResponse:
    """The output tool's call and its result, as `create_agent` writes them (the result says
    `ToolStrategy.tool_message_content`, else that the structured response is returned). A
    step that also called ordinary tools is a step: they run, then the run ends
    (`graph.nodes.observe`, on the result's `STRUCTURED` mark), as in `create_agent`."""
    alone = len(step.tool_calls) == 1
    meta = {**step.response_metadata, **({m.MARK: "answer"} if alone else {})}
    answer = step.model_copy(update={"response_metadata": meta})
    said = content or f"Returning structured response: {parsed}"
    result = ToolMessage(
        content=said,
        tool_call_id=call["id"],
        name=call["name"],
        response_metadata={m.STRUCTURED: as_json(parsed, call["args"])},
    )
    return ModelResponse(result=[answer, result], structured_response=parsed)


def _json_answered(step: AIMessage, value: dict[str, Any], parsed: Any) -> ModelResponse:
    """A text Final Answer that is the schema's object: its JSON is the answer."""
    text = as_json(parsed, value)
    meta = {**step.response_metadata, m.MARK: "answer"}
    answer = step.model_copy(update={"content": text, "response_metadata": meta})
    return ModelResponse(result=[answer], structured_response=parsed)


def as_json(parsed: Any, given: Any) -> str:
    """The typed result as the answer's JSON: what validation made of the model's arguments
    (coerced values, defaults filled in), else the arguments as given."""
    try:
        value = to_jsonable_python(parsed)
    except Exception:  # a type pydantic cannot write as JSON: the model's own arguments
        value = given
    return json.dumps(value, ensure_ascii=False, default=str)


def retry_text(handle: Any, error: Exception) -> str | None:
    """What `ToolStrategy(handle_errors=...)` tells the model about `error`, or None: do not
    retry (LangChain's rule: True, a message, a callable, or the exception types to retry)."""
    if handle is True or (
        isinstance(handle, (type, tuple)) and isinstance(error, handle)  # type: ignore[arg-type]
    ):
        return RETRY_TEMPLATE.format(error=error)
    if isinstance(handle, str):
        return handle
    if callable(handle) and not isinstance(handle, type):
        return str(handle(error))
    return None


def _unusable(step: AIMessage, why: str, said: str | None = None) -> ModelResponse:
    meta = {**step.response_metadata, m.MARK: "invalid", m.ERROR: why}
    if said is not None:
        meta[m.TOLD] = said
    return ModelResponse(result=[step.model_copy(update={"response_metadata": meta})])


def _why(exc: BaseException) -> str:
    """The first problem, on one line (a validation error's field and message; a JSON Schema
    error's path and message). Only an explicit cause is followed: the implicit context of a
    JSON parse error is the scanner's internal `StopIteration(0)`, which says nothing."""
    if exc.__cause__ is not None and not callable(getattr(exc, "errors", None)):
        return _why(exc.__cause__)
    path = getattr(exc, "absolute_path", None)
    if path is not None and getattr(exc, "message", None):  # jsonschema's ValidationError
        where = "/".join(str(part) for part in path) or "value"
        return f"{where}: {one_line(exc.message, 160)}"
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "value"
            return f"{where}: {first['msg']}"
        except Exception:
            pass
    return str(exc).split("\n", 1)[0][:200]
