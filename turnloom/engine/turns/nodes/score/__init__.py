"""The `score` tool decision of a ToolCall node: which tool a player's line asks for, if any,
and its arguments, each chosen by comparing the model's likelihood of the candidates rather
than by generating a call (`decision` runs it, with the tool step's prompt from
`tool_prompt`; `request` asks whether the line asks for anything at all; `arguments` fills the
call; `calibration` scores candidates against content-free inputs). What the line says, read
without the model (its numbers, spans, names, sentences, the words it shares with each tool,
the side of a flag it says), is the `reading` room's."""
