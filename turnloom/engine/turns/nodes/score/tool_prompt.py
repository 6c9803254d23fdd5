"""The prompts of the `score` decision. Its tool step's (`decision`): per tool, its description
said by the player (that tool) and two remarks about its object (talk), with plain talk around,
in the tools' order and then reversed; and the words each option is called by. Its argument
steps' header (`arguments`): calls written from player lines (`EXAMPLES`), then the recent
exchanges that called the tool, written the same way (`recent_calls`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ....graph.params import ToolDefinition
from ...dialog.projection import Interaction
from .reading.values import FILLER, WORD, one_line, spelled

__all__ = [
    "DIALOG_CHARS",
    "DIALOG_TURNS",
    "EXAMPLES",
    "NO_TOOL_EXAMPLES",
    "REMARKS",
    "first_verb",
    "last_call_of",
    "last_exchange",
    "recent_calls",
    "tool_header",
    "tool_labels",
]

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


#: Calls written from player lines: how a line becomes arguments, for any tools.
EXAMPLES = """Player: Could you sharpen my old axe?
Call: sharpen(item="old axe")
Player: Send word to Tom that the bread is ready.
Call: send_word(recipient="Tom", message="the bread is ready")
Player: Fetch the guard, a thief took my bag!
Call: fetch_guard(urgent=true, reason="a thief took my bag")
Player: Bake me three loaves of rye.
Call: bake(bread="rye", count=3)
Player: Douse the fire, it's too warm.
Call: set_fire(lit=false)
Player: When you have a moment, tell the cook the soup is cold.
Call: tell_cook(urgent=false, message="the soup is cold")
Player: Light the candles.
Call: set_candles(lit=true)
Player: I'd like a room for two nights.
Call: rent_room(nights=2)
"""
#: How much of the dialog the arguments read: the last few exchanges, within a budget.
DIALOG_TURNS = 3
DIALOG_CHARS = 600


def last_exchange(dialog: Sequence[Interaction]) -> str:
    """The words of the dialog's last exchange: the player's line, then the replies."""
    if not dialog:
        return ""
    last = dialog[-1]
    replies = [m.get("content") for m in last.messages if m.get("role") == "assistant"]
    return " ".join([last.user_message, *(r for r in replies if isinstance(r, str) and r)])


def recent_calls(dialog: Sequence[Interaction], tool: ToolDefinition) -> str:
    """The last exchanges that called `tool`, written as the examples are (each line and its
    call), oldest first, within `DIALOG_TURNS` and `DIALOG_CHARS`: "and two more" repeats
    the drink the last call served."""
    parts: list[str] = []
    used = 0
    for past in reversed(dialog[-DIALOG_TURNS:]):
        text = ""
        for message in past.messages:
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                if function.get("name") != tool.name:
                    continue
                given = function.get("arguments") or {}
                shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in given.items())
                text += f"Player: {one_line(past.user_message)}\nCall: {tool.name}({shown})\n"
        if used + len(text) > DIALOG_CHARS:
            break
        parts.append(text)
        used += len(text)
    return "".join(reversed(parts))


def last_call_of(past: Interaction) -> str | None:
    """The name of the last tool `past` called, or None."""
    calls = [call for m in past.messages for call in m.get("tool_calls") or ()]
    return str((calls[-1].get("function") or {}).get("name")) if calls else None


def first_verb(tool: ToolDefinition) -> str:
    """The first word of `tool`'s description, lowercase: what it does."""
    first = WORD.findall(tool.description.lower())[:1]
    return first[0] if first else ""
