"""A ReAct agent as a LangGraph state machine.

    from graph import build_graph, graph
    agent = build_graph(model="gpt-4o-mini", tools=[...], checkpointer=saver)
    out = agent.invoke({"messages": [("user", "What is 17 * 23?")]},
                       {"configurable": {"thread_id": "t1"}})
    out["answer"], out["status"], out["steps"]

`graph` is `build_graph()` with defaults and no checkpointer, for `langgraph.json` (the
LangGraph server supplies its own checkpointer). Importing it needs no key and no network.
"""

from graph.agent import build_graph, recursion_limit_for
from graph.context import AgentContext, ConfigError, load_env_file

load_env_file()  # .env in the working directory (or above); never overrides the environment
graph = build_graph()

__all__ = ["AgentContext", "ConfigError", "build_graph", "graph", "recursion_limit_for"]
