"""What the tools and the graph share, kept on the tools' side so a tool imports nothing of the
graph: the project's private files (`files`), running a coroutine from sync code (`blocking`),
and a tool's settings read from the environment at call time (`settings`). It imports nothing
heavy and nothing from the rest of the project."""
