"""LangChain v1 `AgentMiddleware` on the think/act/observe graph.

- `hooks`: which hooks a middleware implements; node hooks (`before_agent`, `before_model`,
  `after_model`, `after_agent`) as graph nodes, with their jumps;
- `chain`: `wrap_model_call` layers around think's model call (act's `wrap_tool_call` layers
  are composed by `graph.tooling.execution`);
- `schema`: the agent's state extended by the middleware's `state_schema`s;
- `approvals`: `HumanInTheLoopMiddleware` built per run from the approval policy;
  `approval_check`: the `wrap_tool_call` layer that runs a gated call only on its decision;
  `approval_seal`: the seal binding a decision to one call;
- `loading`: middleware named by import path (the operator's `REACT_AGENT_MIDDLEWARE`);
- `spans`: a user's wrap traced as `create_agent` traces it; `streaming`: the stream
  transformers `create_agent` registers.

What LangChain offers no public way to read is read in `graph._compat`, with upgrade canaries.
"""
