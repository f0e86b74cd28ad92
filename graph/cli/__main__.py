"""`python -m graph.cli` runs the `react-agent` command."""

from graph.cli import main

if __name__ == "__main__":
    main()
