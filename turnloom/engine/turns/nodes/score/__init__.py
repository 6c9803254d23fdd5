"""The `score` tool decision of a ToolCall node: which tool a player's line asks for, if any,
and its arguments, each chosen by comparing the model's likelihood of the candidates rather
than by generating a call (`decision` runs it, with the tool step's prompt from
`tool_prompt`; `request` asks whether the line asks for anything at all; `arguments` fills the
call, from the numbers (`numbers`), spans (`values`, `strings`), names and how the line says
a span (`names`), words (`words`) and a boolean's sides (`booleans`) the line offers;
`calibration` scores candidates against content-free inputs; `sentences` cuts the line before
it is asked about)."""
