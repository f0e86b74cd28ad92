"""What the nodes share for one compiled graph, and nothing they do themselves: the bindings
(model, tools, middleware, settings), a step's plan and its model request, where a run begins
(`turn`), how it ends (`closing`), and which calls act runs (`tasks`). The nodes import these;
these never import a node."""
