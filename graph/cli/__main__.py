"""`python -m graph.cli` runs the `react-agent` command."""

from graph.cli import main

main()
