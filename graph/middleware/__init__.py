"""LangChain v1 `AgentMiddleware` on the think/act/observe graph.

- `hooks`: which hooks a middleware implements; node hooks (`before_agent`, `before_model`,
  `after_model`, `after_agent`) as graph nodes, with their jumps;
- `chain`: `wrap_model_call` layers around think's model call, `wrap_tool_call` layers around
  each of act's tool calls;
- `schema`: the agent's state extended by the middleware's `state_schema`s;
- `approvals`: `HumanInTheLoopMiddleware` built per run from the approval policy;
- `loading`: middleware named by import path (the operator's `REACT_AGENT_MIDDLEWARE`);
- `_compat`: the one LangChain internal read here (a hook's declared jumps).
"""
