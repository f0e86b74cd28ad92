"""`create_agent`'s node names taken for the nodes of ours that play them (`model` is think,
`tools` is act), wherever a caller names a node: the interrupt nodes of a build or a run, a
state update's `as_node`, a command's `goto`. So code written against `create_agent` drives
this graph unchanged (`graph.checked` and `graph.agent` call these)."""

from __future__ import annotations

from typing import Any

from langgraph.types import Send

# `create_agent`'s node names, taken for the nodes that play them (`as_node`, interrupts, a
# command's or a hook's `goto`)
CREATE_AGENT_NODES = {"model": "think", "tools": "act"}


def our_node_names(names: Any) -> Any:
    """Interrupt nodes with `create_agent`'s names taken for the nodes that play them (`"*"`,
    every node, and None as they are)."""
    if names is None or isinstance(names, str):
        return names
    return [CREATE_AGENT_NODES.get(n, n) for n in names]


def our_goto(goto: Any, names: dict[str, str] = CREATE_AGENT_NODES) -> list[Any]:
    """A command's `goto` as a list with `names` taken for ours (a hook passes its own, where
    the end is finish); None, or an empty target, is no goto."""
    targets = goto if isinstance(goto, list | tuple) else [goto]
    return [_our_node(target, names) for target in targets if target]


def _our_node(target: Any, names: dict[str, str]) -> Any:
    if isinstance(target, Send):
        return Send(names.get(target.node, target.node), target.arg)
    return names.get(target, target) if isinstance(target, str) else target


def our_update_nodes(supersteps: Any) -> list[list[Any]]:
    """The updates with `as_node` in `create_agent`'s names (`model`, `tools`) renamed."""
    return [[_renamed(update) for update in superstep or ()] for superstep in supersteps or ()]


def _renamed(update: Any) -> Any:
    if not (isinstance(update, tuple) and len(update) > 1 and update[1] in CREATE_AGENT_NODES):
        return update
    if hasattr(update, "_replace"):  # LangGraph's StateUpdate
        return update._replace(as_node=CREATE_AGENT_NODES[update[1]])
    return (update[0], CREATE_AGENT_NODES[update[1]], *update[2:])
