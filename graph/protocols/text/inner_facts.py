"""What `TextReAct` says about itself that is a fact of the model it wraps: its profile (the
context window a middleware sizes a conversation by) and its token counts.

LangChain's defaults would be wrong for a wrapper: no profile at all (so
`SummarizationMiddleware(trigger=("fraction", 0.8))` refuses the model), and GPT-2 token counts
(needing `transformers`) where the inner model has its own tokenizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.model_profile import ModelProfile
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.runnables import Runnable

from graph.protocols.text.inner_call import model_of
from graph.protocols.text.prompts import provider_tool, text_transcript, tool_spec


class InnerFacts:
    """Mixed in before `BaseChatModel` by `TextReAct`, whose `inner` and `request` it uses."""

    inner: Runnable[LanguageModelInput, BaseMessage]

    def request(
        self, messages: Sequence[BaseMessage], tools: list[dict[str, Any]] | None = None,
        forced: str | None = None, response_format: Any = None,
    ) -> list[BaseMessage]:  # fmt: skip
        raise NotImplementedError

    def _resolve_model_profile(self) -> ModelProfile | None:
        """The inner model's profile, with what TextReAct changes: it calls tools (in text),
        and has no provider structured output, so `create_agent` given a bare schema uses its
        tool strategy (the forced call TextReAct reads, with its retries on a bad answer)."""
        model = model_of(self.inner)
        profile = model.profile if model is not None else None
        if not profile:
            return None
        return ModelProfile(**{**profile, "tool_calling": True, "structured_output": False})

    def get_token_ids(self, text: str) -> list[int]:
        """The inner model's tokens of the text, where it can count them."""
        model = model_of(self.inner)
        if model is None:
            return super().get_token_ids(text)  # type: ignore[misc]  # BaseChatModel's, after this mixin
        return model.get_token_ids(text)

    def get_num_tokens(self, text: str) -> int:
        """The inner model's count (a provider's count may not be `len(get_token_ids)`)."""
        model = model_of(self.inner)
        if model is None:
            return super().get_num_tokens(text)  # type: ignore[misc]
        return model.get_num_tokens(text)

    def get_num_tokens_from_messages(
        self, messages: list[BaseMessage], tools: Sequence[Any] | None = None
    ) -> int:
        """The inner model's count of the conversation as it reads it: in the text protocol
        (calls as Action lines, results as Observations); with `tools`, the system prompt
        that lists them too (under this protocol the tools are prompt text)."""
        model = model_of(self.inner)
        if model is None:
            return super().get_num_tokens_from_messages(messages, tools)  # type: ignore[misc]
        if tools is not None:
            specs = [tool_spec(tool) for tool in tools if not provider_tool(tool)]
            sent = self.request(messages, specs)
        else:
            system = [m for m in messages if isinstance(m, SystemMessage)]
            sent = [*system, *text_transcript(messages)]
        return model.get_num_tokens_from_messages(sent)
