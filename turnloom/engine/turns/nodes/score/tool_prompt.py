"""The prompt of the `score` decision's tool step (`decision`): per tool, its description said
by the player (that tool) and two remarks about its object (talk), with plain talk around, in
the tools' order and then reversed; and the words each option is called by.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....graph.params import ToolDefinition
from .calibration import one_line
from .values import FILLER, WORD, spelled

__all__ = ["NO_TOOL_EXAMPLES", "REMARKS", "tool_header", "tool_labels"]

#: Plain talk around the tools' examples.
NO_TOOL_EXAMPLES = ("Hello there, how are you?", "Tell me about this town.", "What a nice day.")
#: Remarks that mention a tool's object without asking for anything. Statements, not
#: questions: a tool that looks something up is asked for by a question ("Do you sell swords?").
REMARKS = (
    "I once saw a {} like that.",
    "My uncle told me about a {}.",
    "The {} here is old.",
    "I dreamt about a {} last night.",
)


def tool_labels(tools: Sequence[ToolDefinition]) -> list[str]:
    """What the prompt calls each tool, then the no-tool option (always last).

    Names are spelled as words ("open_door" -> "open door"): a small model knows words far
    better than identifiers. "talk" names the no-tool option, which the prompt's examples of
    plain talk then match better than an abstract "none".
    """
    words = [" ".join(spelled(tool.name).split()) for tool in tools]
    if len({w.lower() for w in words}) < len(words) or not all(words):
        words = [tool.name for tool in tools]
    taken = {w.lower() for w in words}
    none = next(label for label in ("talk", "just talk", "no tool") if label not in taken)
    return [*words, none]


def tool_header(tools: Sequence[ToolDefinition], labels: list[str]) -> str:
    """The few-shot examples, twice: with the tools in their declared order, then reversed.

    A small model favours the label of the examples nearest the line (recency bias), which
    calibration does not cancel; with both orders every tool is once near the line.
    """
    ordered = _examples(tools, labels)
    if len(tools) < 2:
        return ordered
    return ordered + _examples(list(reversed(tools)), [*reversed(labels[:-1]), labels[-1]])


def _examples(tools: Sequence[ToolDefinition], labels: list[str]) -> str:
    """Per tool, its description said by the player (that tool) and two remarks about its
    object (no tool, so words alone do not make a call); plain talk around."""
    none = labels[-1]
    examples = [(NO_TOOL_EXAMPLES[0], none)]
    for i, (tool, label) in enumerate(zip(tools, labels, strict=False)):
        said = one_line(tool.description) or label
        topic = _topic(tool, label)
        examples.append((said, label))
        for k in (0, 2):
            remark = REMARKS[(i + k) % len(REMARKS)].format(topic)
            examples.append((remark, none))
    examples += [(said, none) for said in NO_TOOL_EXAMPLES[1:]]
    return "".join(f"Player: {said}\nAction: {action}\n" for said, action in examples)


def _topic(tool: ToolDefinition, label: str) -> str:
    """The last notable word of a tool's description (its object, usually), else its label."""
    notable = [w for w in WORD.findall(tool.description) if len(w) >= 4 and w.lower() not in FILLER]
    return (notable[-1] if notable else label.split()[-1]).lower()
