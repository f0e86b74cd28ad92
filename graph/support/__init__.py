"""Infrastructure that both the graph and the tools use: the project's private files, running a
coroutine from sync code. It imports nothing heavy and nothing from the rest of the project."""
