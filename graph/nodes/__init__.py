"""The nodes of the loop, one file each: think (ask the model), review (pause for approvals),
act (run the step's tool calls), observe (join a step of several calls, end on a
`return_direct` result), finish (close the run). The loop's policies (step limit, corrections,
repeated-call guard) are middleware in `graph.policies`, not node code.

Each node is a function of the state returning a partial update; `bindings` holds what they
share for one compiled graph. Sync and async forms exist where a node does I/O.
"""
