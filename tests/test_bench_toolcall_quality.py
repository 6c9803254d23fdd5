"""The tool-call benchmark's comparison of six tools with three on the same lines
(bench/toolcall_quality.py, `first_tools`): the lines stay, only the tools go."""

from __future__ import annotations

from bench.toolcall_quality import first_tools
from bench.toolcall_sets import SETS


def test_first_tools_keeps_the_lines_and_only_the_first_tools_with_their_enums() -> None:
    whole = SETS["printworks"]
    fewer = first_tools(whole, 3)
    assert [tool[0] for tool in fewer.tools] == [tool[0] for tool in whole.tools[:3]]
    assert fewer.cases == whole.cases
    assert fewer.system_prompt == whole.system_prompt
    kept = {tool[0] for tool in fewer.tools}
    assert {tool for tool, _ in fewer.enums} <= kept
    assert fewer.enums == {key: v for key, v in whole.enums.items() if key[0] in kept}
    assert fewer.name == "printworks/3 tools"
    assert len(whole.tools) == 6  # the set itself is left whole
