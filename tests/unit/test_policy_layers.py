"""The loop policies that only shape the request run as one layer of think's chain, in order;
one that wraps the call keeps its own layer where it stands."""

from __future__ import annotations

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage

from graph.policies.base import LoopPolicy, Shapers, fused


class Tag(LoopPolicy):
    def __init__(self, label: str, answer: bool = False) -> None:
        super().__init__(None)
        self.label, self.answer = label, answer

    def shaped(self, request: ModelRequest) -> ModelRequest | ModelResponse:
        if self.answer:
            return ModelResponse(result=[AIMessage(content=f"answered by {self.label}")])
        return request.override(messages=[*request.messages, HumanMessage(self.label)])


class Around(Tag):
    def wrap_model_call(self, request, handler):  # type: ignore[no-untyped-def]
        return handler(request)


def request() -> ModelRequest:
    return ModelRequest(model=None, messages=[], system_message=None, tools=[], state={})  # type: ignore[arg-type]


def test_shaping_policies_are_one_layer_in_order_and_a_wrapper_keeps_its_place() -> None:
    a, b, c, d = Tag("a"), Tag("b"), Around("c"), Tag("d")
    layers = fused(None, [a, b, c, d])
    assert isinstance(layers[0], Shapers) and layers[0].policies == [a, b]
    assert layers[1:] == [c, d]
    shaped = layers[0].shaped(request())
    assert [m.text for m in shaped.messages] == ["a", "b"]  # type: ignore[union-attr]


def test_a_policy_that_answers_stops_the_ones_after_it() -> None:
    (layer,) = fused(None, [Tag("a"), Tag("b", answer=True), Tag("c")])
    response = layer.shaped(request())
    assert isinstance(response, ModelResponse)
    assert response.result[0].text == "answered by b"
