"""Runnable samples of using the agent the ways the README describes, each run by a test.

`from_code` builds and runs the graph in-process (a chat model object, your own tools, a SQLite
checkpointer, an approval pause, streamed updates); `sdk_client` drives a `langgraph dev` server
through the LangGraph SDK the way a chat client does. They import only the project's
public API (`graph`, `tools`), never the tests' doubles, so they stay what a reader can copy.
"""
