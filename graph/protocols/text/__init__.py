"""The text ReAct protocol, for models without function calling: the prompt that asks for
Thought / Action / Action Input / Final Answer (`prompts`), the reader that turns a reply back
into a step (`reader`) and the grammar that constrains decoding where the server allows it
(`grammar`). All pure functions: text in, typed value out."""
