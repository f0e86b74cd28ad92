"""The `react-agent` commands, one module per group. Each module imports only Typer and the
light CLI helpers at import time; what a command needs is imported when it runs."""
