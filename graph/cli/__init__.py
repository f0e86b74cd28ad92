"""The `react-agent` command: ask, chat, resume, and inspect runs from a terminal.

Heavy libraries (LangChain, LangGraph, the savers) are imported inside the commands that need
them, so `react-agent --help` and `react-agent config` start fast. Importing this package
imports nothing else.
"""


def main() -> None:
    """Console-script entry point (`react-agent = "graph.cli:main"`)."""
    from graph.cli.app import main as run

    run()
