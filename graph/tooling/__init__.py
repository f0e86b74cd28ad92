"""Tools as the agent uses them: which tools a run gets (`registry`), a call run through
LangGraph's `ToolNode` with the wrappers composed around it (`execution`), and a call's
arguments fitted to its tool and its failures worded as observations (`runner`). Approvals are
middleware (`graph.middleware.approvals`, `approval_check`); the tools themselves live in the
top-level `tools` package."""
