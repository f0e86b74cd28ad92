"""The graph's own infrastructure: worker threads for work waited for with a deadline but
never interrupted (`workers`). What the graph shares with the tools lives in `tools.support`."""
