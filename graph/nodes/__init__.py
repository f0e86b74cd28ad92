"""The nodes of the loop, one file each: think (ask the model), review (pause for approvals),
act (run one tool call), observe (count, correct, guard, route), finish (close the run).

Each node is a function of the state returning a partial update; `bindings` holds what they
share for one compiled graph. Sync and async forms exist where a node does I/O.
"""
