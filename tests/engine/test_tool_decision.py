"""The ToolCall node's `decision` option: `score` on a backend that scores (a scripted scorer
over the mock), its fall-back to `generate` where the backend cannot, its steps (a request or
talk, which tool, the arguments) and the candidate values it chooses among. The real model's
scoring is in test_tool_decision_llama.py."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from typing import Any

import pytest

import turnloom as tl
from tests.helpers import SET_LIGHT, Recorder, graph_of
from turnloom.engine.turns.nodes.score import arguments as sa
from turnloom.engine.turns.nodes.score import calibration as sc
from turnloom.engine.turns.nodes.score import decision as td
from turnloom.engine.turns.nodes.score import request as sr
from turnloom.engine.turns.nodes.score import tool_prompt as tp
from turnloom.engine.turns.nodes.score.reading import booleans as sb
from turnloom.engine.turns.nodes.score.reading import names as sn_names
from turnloom.engine.turns.nodes.score.reading import numbers as sn
from turnloom.engine.turns.nodes.score.reading import quotes as sq
from turnloom.engine.turns.nodes.score.reading import sentences as sse
from turnloom.engine.turns.nodes.score.reading import strings as ss
from turnloom.engine.turns.nodes.score.reading import values as sv
from turnloom.engine.turns.nodes.score.reading import words as sw

D = tl.ToolCallDisposition

GIVE = tl.ToolDefinition(
    name="give_item",
    description="Give the player some items.",
    parameters=[
        tl.ToolParamDefinition("item", "string", "The item."),
        tl.ToolParamDefinition("count", "integer", "How many."),
    ],
)
MOVE = tl.ToolDefinition(
    name="move",
    description="Walk in a direction.",
    parameters=[tl.ToolParamDefinition("direction", "string", "One of: north, south, 'east'.")],
)
TOOLS = [SET_LIGHT, GIVE, MOVE]


#: Words that make the scripted scorer hear talk rather than a request.
SOCIAL = {"thanks", "thank", "hello", "hi", "goodbye", "bye", "farewell", "nice", "lovely", "good",
          "great", "cheers", "wonderful", "weather", "love", "uncle"}  # fmt: skip


class ScoringMock(tl.MockModel):
    """A mock that scores: each choice by how many of its words (tool label or value, without
    the call's punctuation) the prompt's last player line has ("talk" half a point on a line
    of words), plus a small bias that calibration must cancel; and " request" over " talk" by
    +1 for a line without social words that is no question (or asks "could you"), else -1.
    Records what it scored."""

    def __init__(self, *args: Any, decision: str = "score", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.decision = decision
        self.scored: list[tuple[str, list[str], bool]] = []

    def default_tool_decision(self) -> str:
        return self.decision

    def scoring_error(self) -> str | None:
        return None

    async def score_choices(
        self, prompt: str, choices: Sequence[str], *, greedy: bool = False, agent_id: int = 0
    ) -> list[float]:
        self.scored.append((prompt, list(choices), greedy))
        line = prompt.rsplit("Player: ", 1)[1].split("\n", 1)[0].lower()
        said = line.split()
        if list(choices) == [" request\n", " talk\n"]:
            polite = said[:1] in (["could"], ["can"], ["would"])
            talk = bool(SOCIAL & {w.strip(",.!?") for w in said})
            asks = not talk and (not line.endswith("?") or polite)
            return [1.0 if asks else -1.0, 0.0]
        scores = []
        for i, choice in enumerate(choices):
            words = choice.strip().rstrip(",)").strip('"').lower().split()
            talk = 0.5 * (words == ["talk"] and len(said) > 1)  # a real line, no tool word
            scores.append(sum(w in said for w in words) + talk + 0.01 * i + len(words) * 1e-3)
        if greedy:
            best = max(range(len(scores)), key=scores.__getitem__)
            scores = [s if i == best else float("-inf") for i, s in enumerate(scores)]
        return scores


def hermes(tool: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': arguments})}</tool_call>"


def node(disposition: D = D.Notify, **more: Any) -> tl.ToolCallParams:
    return tl.ToolCallParams(
        tools=more.pop("tools", TOOLS),
        disposition=disposition,
        mode=more.pop("mode", tl.ToolCallMode.DetectOnly),
        tool_called_exit="answer",
        no_tool_called_exit="answer",
        **more,
    )


def run(model: tl.MockModel, params: tl.ToolCallParams, line: str) -> dict[str, Any]:
    """One turn (resumed with a result if it pauses): events, calls, pauses, node diagnostics."""
    graph = graph_of(("detect", params), ("answer", tl.CannedResponseParams(lines=["done"])))
    with tl.Engine(model) as engine:
        agent = engine.create_agent(graph, enable_diagnostics=True)
        rec, calls = Recorder(agent), []
        agent.set_on_tool_call_event(calls.append)
        step = agent.send_message(line)
        pauses = []
        if step.pause is not None:
            pauses.append((step.pause.node_name, [c.call_id for c in step.pause.pending_calls]))
            results = [(c.call_id, "ok") for c in step.pause.pending_calls]
            step = agent.resume(tool_results=results if step.pause.awaits_results else [])
        debug = step.final.debug_info
        assert debug is not None
    return {
        "events": rec.events,
        "calls": calls,
        "pauses": pauses,
        "diagnostics": debug["nodes"][0]["diagnostics"],
        "text": step.final.text,
    }


@pytest.mark.parametrize("disposition", list(D))
def test_score_matches_generate_in_events_ids_dispositions_and_pauses(disposition: D) -> None:
    line = "Give me 3 apples"
    generated = run(tl.MockModel("mock", script=[hermes("give_item", item="apples", count=3)]),
                    node(disposition, decision="generate"), line)  # fmt: skip
    scorer = ScoringMock("mock", script=["unused"])
    scored = run(scorer, node(disposition, decision="score"), line)
    assert scorer.requests == type(scorer.requests)()  # nothing was generated
    assert scored["calls"] == generated["calls"]
    assert scored["events"] == generated["events"]
    assert scored["pauses"] == generated["pauses"]
    assert scored["text"] == generated["text"] == "done"
    assert scored["diagnostics"]["decision"] == "score"
    assert scored["diagnostics"]["detected_calls"] == generated["diagnostics"]["detected_calls"]


def test_score_is_the_default_where_the_model_says_so_and_decides_no_call() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    out = run(scorer, node(), "What a nice evening")
    assert out["diagnostics"]["decision"] == "score"
    assert out["diagnostics"]["exit"] == "no_tool_called"
    assert out["calls"] == []
    # Talk is known as talk before any tool is asked about.
    assert {tuple(choices) for _, choices, _ in scorer.scored} == {(" request\n", " talk\n")}
    run(scorer, node(), "please move east")
    # The tools' labels are spelled as words, the no-tool option last; the decision and the
    # enum are scored in full.
    choices = [choices for _, choices, _ in scorer.scored]
    assert [" set light\n", " give item\n", " move\n", " talk\n"] in choices
    assert all(not greedy for _, _, greedy in scorer.scored)


def test_calibration_runs_once_per_tool_set_and_boundaries_once_per_backend() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    params = tl.ToolCallParams(tools=[GET_LAMP], mode=tl.ToolCallMode.DetectOnly)
    run(scorer, params, "lamp please")
    first = len(scorer.scored)
    run(scorer, params, "lamp again")
    # The boundaries' lines after each request prompt, the line's request (the scripted
    # scorer is sure of it: one prompt), the content-free lines, the line's tool.
    boundaries = 2 * (len(sr.CALIBRATION) + len(sr.CALIBRATION_AFTER_CALL))
    assert first == boundaries + 1 + len(sc._CONTENT_FREE) + 1
    assert len(scorer.scored) == first + 2  # boundaries and content-free scores were cached


GET_LAMP = tl.ToolDefinition(name="get_lamp", description="Fetch the lamp.")


def test_arguments_are_filled_by_type() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    out = run(scorer, node(), "please move east")
    assert [(c.tool_name, c.arguments) for c in out["calls"]] == [("move", {"direction": "east"})]
    out = run(scorer, node(), "set light on the porch")
    (call,) = out["calls"]
    assert call.tool_name == "set_light"
    assert set(call.arguments) == {"name", "on"}
    assert isinstance(call.arguments["on"], bool) and isinstance(call.arguments["name"], str)
    assert call.arguments["name"] in sv.spans("set light on the porch", frozenset(), False)


def test_call_or_answer_without_a_call_replies_with_a_plain_generation() -> None:
    scorer = ScoringMock("mock", script=["Nice weather indeed."])
    out = run(scorer, node(mode=tl.ToolCallMode.CallOrAnswer), "What a nice evening")
    assert out["diagnostics"]["exit"] == "no_tool_called"
    (request,) = scorer.requests
    assert request.tools is None  # nothing offered: the reply cannot be a call
    assert ("text", "Nice weather indeed.", True, False) in out["events"]


@pytest.mark.parametrize("decision", ["score", ""])
def test_a_backend_that_cannot_score_generates_instead(decision: str) -> None:
    mock = tl.MockModel("mock", script=[hermes("move", direction="north")])
    out = run(mock, node(decision=decision), "go north")
    assert [c.tool_name for c in out["calls"]] == ["move"]
    assert out["diagnostics"]["decision"] == "generate"
    if decision == "score":  # asked for by the node: the diagnostics say why it was not had
        assert "cannot score" in out["diagnostics"]["score_unavailable"]
    else:  # the mock's own default is generate: nothing was refused
        assert "score_unavailable" not in out["diagnostics"]


def test_tools_with_array_or_object_arguments_generate_instead() -> None:
    tags = tl.ToolDefinition("tag", "Tag things.", [tl.ToolParamDefinition("tags", "array")])
    scorer = ScoringMock("mock", script=[hermes("tag", tags=["a"])])
    params = tl.ToolCallParams(tools=[tags], mode=tl.ToolCallMode.DetectOnly)
    out = run(scorer, params, "tag it")
    assert out["diagnostics"]["decision"] == "generate"
    assert "array" in out["diagnostics"]["score_unavailable"]
    assert scorer.scored == []


def test_an_unknown_decision_is_refused_at_creation() -> None:
    graph = graph_of(("detect", node(decision="vote")))
    with tl.Engine(tl.MockModel("mock")) as engine, pytest.raises(tl.InvalidParamValue) as info:
        engine.create_agent(graph)
    assert "decision" in str(info.value) and "'vote'" in str(info.value)


def test_spans_skip_filler_action_words_numbers_and_punctuation() -> None:
    spans = sv.spans("Open the kitchen door, quick!", frozenset({"open"}), False)
    assert "kitchen door" in spans and "kitchen" in spans
    assert not any(s.startswith(("Open", "the")) or "," in s for s in spans)
    assert "apples" in sv.spans("Give me 3 apples", frozenset(), True)
    assert "3 apples" not in sv.spans("Give me 3 apples", frozenset(), True)
    # A number inside a span is as wrong as one at its edge; the first word is the verb.
    assert sv.spans("Hand me 2 torches, please", frozenset(), True) == ["torches"]
    assert "2 torches" in sv.spans("Hand me 2 torches", frozenset(), False)  # no count
    assert sv.spans("the a", frozenset(), False) == ["the", "the a", "a"]  # only filler: any
    assert sv.spans("Swords!", frozenset(), False) == ["Swords"]  # nothing else: any
    assert sv.spans("", frozenset(), False) == []


COUNT = GIVE.parameters[1]
DAYS = tl.ToolParamDefinition("days", "integer", "For how many days.")


def test_numbers_enums_and_labels() -> None:
    assert sn.numbers("give me two, no 5 of them", COUNT) == [5, 2]
    assert sn.numbers("2.5 pints", tl.ToolParamDefinition("pints", "number")) == [2.5]
    assert sn.numbers("a dagger", COUNT) == []  # nothing said: `_fill` decides
    assert td.enum_values(MOVE.parameters[0]) == ("north", "south", "east")
    assert td.enum_values(GIVE.parameters[0]) == ()
    talk = tl.ToolDefinition(name="talk", description="Talk.")
    assert tp.tool_labels([talk, GIVE]) == ["talk", "give item", "just talk"]
    assert tp.tool_labels([tl.ToolDefinition(name="openDoor")]) == ["open Door", "talk"]


def test_examples_show_the_tools_in_both_orders_and_remarks_ask_nothing() -> None:
    labels = tp.tool_labels(TOOLS)
    header = tp.tool_header(TOOLS, labels)
    said = [tool.description for tool in TOOLS]
    first = [header.index(s) for s in said]
    second = [header.index(s, max(first) + 1) for s in said]
    assert first == sorted(first) and second == sorted(second, reverse=True)
    assert min(second) > max(first)  # the reversed run follows the declared one
    # Remarks name a tool's object but ask for nothing: no question marks among them.
    remarks = [line for line in header.splitlines() if line.startswith("Player: ")]
    assert not [r for r in remarks if r.endswith("?") and "how are you" not in r]
    assert tp.tool_header(TOOLS[:1], tp.tool_labels(TOOLS[:1])).count(TOOLS[0].description) == 1


LESSON = tl.ToolDefinition(
    "teach_lesson",
    "Teach a lesson on the stars.",
    [
        tl.ToolParamDefinition("pupils", "integer", "How many pupils come to the lesson."),
        tl.ToolParamDefinition(
            "evenings", "integer", "How many evenings the lessons run for: 1 (the default)."
        ),
    ],
)


@pytest.mark.parametrize(
    ("line", "pupils", "evenings"),
    [
        ("Could you teach my lads? There's four of them.", 4, 1),  # one number, one count
        ("Just me, mind. Three evenings should do it.", 1, 3),  # evenings count time
        ("Teach the four of us for four evenings.", 4, 4),  # said in its own unit
        ("can u teach me n my wife about the moon", 2, 1),  # pupils are people
    ],
)
def test_a_number_goes_to_one_count_unless_said_in_the_others_unit(
    line: str, pupils: int, evenings: int
) -> None:
    filled = asyncio.run(sa.fill_arguments(ScoringMock("m", script=["x"]), LESSON, line, (), 0))
    assert filled.values == {"pupils": pupils, "evenings": evenings}
    assert sn.counts_time(LESSON.parameters[1]) and sn.counts_people(LESSON.parameters[0])


def test_twice_counts_two_and_another_opens_a_unit_as_a_does() -> None:
    times = tl.ToolParamDefinition("repeats", "integer", "How many times it is flashed.")
    assert sn.numbers("Send it twice more, would you?", times) == [2]
    assert sn.numbers("Flash it twice as many times.", times) == []  # a multiplier, no count
    nights = tl.ToolParamDefinition("nights", "integer", "How many nights to book.")
    assert sn.numbers("And another couple of nights for my sister.", nights) == [2]
    assert sn.numbers("And another week, then.", nights) == [7]
    assert sn.numbers("And another ale.", COUNT) == []  # "another" alone: `says_one`'s


def test_numbers_count_dozens_and_spans_of_time_in_days() -> None:
    assert sn.numbers("Hammer out a dozen nails", COUNT) == [12]
    assert sn.numbers("two pairs of boots", COUNT) == [4]
    # A count said in pairs counts pairs.
    pairs = tl.ToolParamDefinition("quantity", "integer", "How many to make (pairs, for trousers).")
    assert sn.numbers("Three pairs of wool trousers.", pairs) == [3]
    assert sn.numbers("a horse for two weeks", DAYS) == [14]
    assert sn.numbers("a horse for two weeks", COUNT) == [2]  # not a count of days
    assert sn.numbers("Lend me a horse for a day", DAYS) == [1]
    assert sn.numbers("three horses for a week", DAYS) == [7]  # how long, not how many
    assert sn.numbers("forty arrows", COUNT) == [40]
    assert sn.numbers("twenty-five arrows", COUNT) == sn.numbers("twenty five arrows", COUNT)
    assert sn.numbers("twenty five arrows", COUNT) == [25]
    assert sn.numbers("a horse for forty two days", DAYS) == [42]
    assert sn.numbers("Half a dozen candles", COUNT) == [6]


def test_numbers_read_ordinals_after_the_counts() -> None:
    level = tl.ToolParamDefinition("level", "integer", "Which level.")
    assert sn.numbers("Send the cage to the fifth level", level) == [5]
    assert sn.numbers("the 9th level, please", level) == [9]
    assert sn.numbers("up to the twenty-first floor", level) == [21]
    # A count said outright comes first: the ordinal says which, not how many.
    assert sn.numbers("the second crate: three coils", COUNT) == [3, 2]
    assert sn.numbers("the 3rd cellar", level) == [3]


def test_a_count_the_line_does_not_say_is_one_and_flagged_unread() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    (call,) = run(scorer, node(), "give apples")["calls"]
    assert (call.tool_name, call.arguments) == ("give_item", {"item": "apples", "count": 1})
    assert call.unread_arguments == ("count",)
    (call,) = run(scorer, node(), "give an apple")["calls"]
    assert call.arguments["count"] == 1 and call.unread_arguments == ()  # "an" is one
    (call,) = run(scorer, node(), "give 3 apples")["calls"]
    assert call.arguments["count"] == 3 and call.unread_arguments == ()


def test_unread_arguments_cross_the_wire_only_when_there_are_some() -> None:
    from turnloom.protocol.records import tool_call_from_wire, tool_call_to_wire

    event = tl.ToolCallEvent("c1", "give_item", "{}", "n", "notify", {"count": 1}, ("count",))
    assert tool_call_to_wire(event)["unread_arguments"] == ["count"]
    assert tool_call_from_wire(tool_call_to_wire(event)) == event
    read = tl.ToolCallEvent("c2", "give_item", "{}", "n", "notify", {"count": 2})
    assert "unread_arguments" not in tool_call_to_wire(read)
    assert tool_call_from_wire(tool_call_to_wire(read)) == read


def test_diagnostics_say_how_close_the_decision_was() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    score = run(scorer, node(), "please move east")["diagnostics"]["score"]
    assert score["tool"] == "move" and score["margin"] > 0
    # "east" is the one value the line names: nothing to choose between, no margin.
    assert score["arguments"] == {}
    lit = run(scorer, node(), "set light on the porch")["diagnostics"]["score"]
    assert lit["tool"] == "set_light" and "on" in lit["arguments"]  # a boolean: scored
    assert score["request"] > 0  # "please move east" asks for something
    talk = run(scorer, node(), "What a nice evening")["diagnostics"]["score"]
    assert talk["request"] < 0 and "tool" not in talk and "margin" not in talk


#: An earlier turn that gave three apples (a call and its result), as a seeded dialog.
APPLES_GIVEN = [
    {"role": "user", "content": "Give me 3 apples"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c0", "type": "function",
     "function": {"name": "give_item", "arguments": {"item": "apples", "count": 3}}}]},
    {"role": "tool", "tool_call_id": "c0", "name": "give_item", "content": "ok"},
]  # fmt: skip


def test_the_decision_reads_the_recent_dialog_and_earlier_values() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    earlier = [
        *APPLES_GIVEN,
        {"role": "user", "content": "Lovely weather."},
        {"role": "assistant", "content": "It is."},
    ]
    graph = graph_of(("detect", node()), ("answer", tl.CannedResponseParams(lines=["done"])))
    with tl.Engine(scorer) as engine:
        agent = engine.create_agent(graph, dialog=earlier)
        calls: list[tl.ToolCallEvent] = []
        agent.set_on_tool_call_event(calls.append)
        agent.send_message("give two more")
        # The value an earlier call gave is the item of a line that names none ("more" is
        # filler): nothing to choose between.
        (call,) = calls
        assert call.tool_name == "give_item" and call.arguments == {"item": "apples", "count": 2}
        assert not any(p.endswith('item="') for p, _, _ in scorer.scored)
        agent = engine.create_agent(graph, dialog=earlier)
        agent.send_message("give two more ripe pears")
    prompt = next(p for p, _, g in scorer.scored if g and p.endswith('item="'))
    # The arguments' prompt: the examples, the dialog's calls of the tool written as they
    # are (its talk left out), the line and the call so far.
    recent = (
        'Player: Give me 3 apples\nCall: give_item(item="apples", count=3)\n'
        "Player: give two more ripe pears\nCall: give_item("
    )
    assert prompt.startswith(tp.EXAMPLES) and recent in prompt
    assert tp.recent_calls([], GIVE) == ""


def test_a_message_is_the_clause_after_its_verb_not_the_recipient() -> None:
    text = tl.ToolParamDefinition("text", "string", "What the letter says.")
    fill = ss.Fill("", "", ")", "Write to my sister that I arrived safely.",
                    frozenset({"write"}), False, taken=frozenset({"sister"}))  # fmt: skip
    values = ss.string_values(fill, text)
    assert values[0] == "I arrived safely"
    assert not [v for v in values if "sister" in v]
    door = tl.ToolParamDefinition("door", "string", "Which door.")
    long = ss.Fill("", "", ")", "Open the big old heavy iron door", frozenset({"open"}), False)
    assert max(len(v.split()) for v in ss.string_values(long, door)) == 4  # a name is short


def test_where_a_message_goes_is_a_place_not_what_the_line_quotes() -> None:
    where = tl.ToolParamDefinition("destination", "string", "Where the message is sent to.")
    what = tl.ToolParamDefinition("message", "string", "The message to send.")
    assert ss.is_message(what) and not ss.is_message(where)
    line = "Can you signal the abbey at Greymoor? Tell them 'Brother Anselm arrives Thursday'."
    fill = ss.Fill("", "", ")", line, frozenset({"signal"}), False,
                   taken=frozenset({"brother", "anselm", "arrives", "thursday"}))  # fmt: skip
    assert ss.string_values(fill, what) == ["Brother Anselm arrives Thursday"]
    assert ss.string_values(fill, where) == ["Greymoor"]


def test_a_possessive_offers_its_owner_and_a_counted_noun_is_a_whole_word() -> None:
    found = sv.spans("Add 10 silver to Farmer Hobb's tab.", frozenset({"tab"}), True)
    assert "Farmer Hobb" in found and "Hobb" in found
    assert not [v for v in found if v.endswith("'s")]
    assert "mayor's account" in sv.spans("Put it on the mayor's account", frozenset(), False)
    item = tl.ToolParamDefinition("item", "string", "The item.")
    haggle = ss.Fill("", "", ")", "Can you go down to 5 gold for the torch?",
                      frozenset({"haggle", "gold"}), True)  # fmt: skip
    # "gold" follows the number, but "go" is not "gold": every span stays a candidate.
    assert "torch" in ss.string_values(haggle, item)


def test_a_chosen_span_takes_the_words_describing_it_back_to_its_determiner() -> None:
    def widened(line: str, value: str) -> str:
        return sv.widened(line, value, frozenset({"buy"}), True)

    assert widened("Could I buy some willow bark? Just one bundle.", "bark") == "willow bark"
    assert widened("Sharpen my old axe", "axe") == "old axe"
    assert widened("Fetch the smith's boy", "boy") == "smith's boy"
    assert widened("Two red apples", "apples") == "red apples"  # a number opens it too
    assert widened("Do you sell swords?", "swords") == "swords"  # a verb, no determiner
    assert widened("Find me a book about dragons", "dragons") == "dragons"  # a preposition
    assert widened("I buy willow bark", "bark") == "bark"  # "buy" names the tool
    assert widened("Some bark", "bark") == "bark"  # the line's first word


def test_a_span_right_before_the_arguments_name_is_its_value() -> None:
    locker = tl.ToolParamDefinition("locker", "string", "What to open, e.g. 'rope locker'.")
    line = "Unlock the galley locker, the cook needs his knives."
    fill = ss.Fill("", "", ")", line, frozenset({"unlock", "locker", "open"}), False)
    assert ss.string_values(fill, locker) == ["galley"]
    door = tl.ToolParamDefinition("door", "string", "Which door.")
    fill = ss.Fill("", "", ")", "Open the cellar, not the doors", frozenset({"open"}), False)
    assert "cellar" in ss.string_values(fill, door)  # nothing right before "door": all


def test_an_earlier_value_is_kept_only_when_the_line_names_nothing() -> None:
    who = tl.ToolParamDefinition("sailor", "string", "Who is paid.")
    fill = ss.Fill("", "", ")", "And pay Sal the same.", frozenset({"pay"}), True, ("Jonah",))
    assert ss.string_values(fill, who) == ["Sal"]
    again = ss.Fill("", "", ")", "And two more.", frozenset(), True, ("ale",))
    assert "ale" in ss.string_values(again, who)
    friend = ss.Fill("", "", ")", "And two more for my friend.", frozenset(), True, ("ale",))
    drink = tl.ToolParamDefinition("drink", "string", "What to pour.")
    assert "ale" in ss.string_values(friend, drink)  # whom it is for names no drink
    # But it is whom a person argument is for: not whom the earlier call was for.
    sister = ss.Fill("", "", ")", "And one for my sister Wenna too.", frozenset(), True, ("Osric",))
    lit_for = tl.ToolParamDefinition("for_whom", "string", "The person the candle is lit for.")
    assert ss.string_values(sister, lit_for) == ["sister Wenna"]
    assert ss.string_values(friend, who) == ["friend"]


def test_a_says_one_even_after_a_call_that_gave_more() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    graph = graph_of(("detect", node()), ("answer", tl.CannedResponseParams(lines=["done"])))
    counts = []
    for line in ("give a pear too", "give the same", "give another"):
        with tl.Engine(scorer) as engine:
            agent = engine.create_agent(graph, dialog=APPLES_GIVEN)
            calls: list[tl.ToolCallEvent] = []
            agent.set_on_tool_call_event(calls.append)
            agent.send_message(line)
        (call,) = calls
        counts.append((call.arguments["count"], call.unread_arguments))
    # "a pear" and "another": one; "the same": the earlier three.
    assert counts == [(1, ()), (3, ()), (1, ())]


def test_a_value_another_argument_declares_is_not_a_string_value() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    equip = tl.ToolDefinition(
        name="equip",
        description="Equip a weapon in one hand.",
        parameters=[
            tl.ToolParamDefinition("item", "string", "The item to hold."),
            tl.ToolParamDefinition("hand", "string", "Which hand, one of: left, right."),
        ],
    )
    (call,) = run(scorer, node(tools=[equip]), "Put the dagger in my left hand")["calls"]
    assert call.arguments == {"item": "dagger", "hand": "left"}


CHECK_STOCK = tl.ToolDefinition(
    name="check_stock",
    description="Look up how many of an item the shop has.",
    parameters=[tl.ToolParamDefinition("item", "string", "The item.")],
)
SET_LAMP = tl.ToolDefinition(
    name="set_lamp",
    description="Light or put out the lamp.",
    parameters=[tl.ToolParamDefinition("lit", "boolean", "true to light it, false to put it out.")],
)


def test_talk_calls_nothing_whatever_tools_it_names() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    for line in ("Thanks for the lovely light", "Goodbye, give my love to the apples"):
        out = run(scorer, node(), line)
        assert out["calls"] == [] and out["diagnostics"]["score"]["request"] < 0


def test_a_question_calls_only_a_tool_that_looks_something_up() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    params = node(tools=[CHECK_STOCK, MOVE])
    (call,) = run(scorer, params, "any swords in stock?")["calls"]
    assert (call.tool_name, call.arguments) == ("check_stock", {"item": "swords"})
    # Moving answers no question, whatever the question names.
    assert run(scorer, params, "is the move north long?")["calls"] == []
    assert [tp.first_verb(t) in td._LOOKUP_VERBS for t in (CHECK_STOCK, MOVE, GIVE)] == [
        True,
        False,
        False,
    ]


def test_each_kind_of_line_has_its_own_boundary() -> None:
    assert sr.line_kind("Any rope in stock?", after_call=True) == "question"
    assert sr.line_kind("Any rope in stock.", after_call=False) == "statement"
    assert sr.line_kind("And two more.", after_call=True) == "after call"
    kinds = {sr.line_kind(line, False) for line, _ in sr.CALIBRATION}
    assert kinds == {"question", "statement"}  # both measured on lines of their own
    for lines in (sr.CALIBRATION, sr.CALIBRATION_AFTER_CALL):
        assert {asks for _, asks in lines} == {True, False}
    # The examples of the prompts are not among the lines that measure their boundaries.
    calibration = {line for line, _ in sr.CALIBRATION + sr.CALIBRATION_AFTER_CALL}
    assert not {line for line, _ in sr.EXAMPLES + sr.LONG_EXAMPLES} & calibration


def test_a_request_right_after_a_call_follows_it_up() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    earlier = APPLES_GIVEN
    graph = graph_of(("detect", node()), ("answer", tl.CannedResponseParams(lines=["done"])))
    with tl.Engine(scorer) as engine:
        calls: list[tl.ToolCallEvent] = []
        for line in ("And two more.", "Thanks, great."):
            agent = engine.create_agent(graph, dialog=earlier)
            agent.set_on_tool_call_event(calls.append)
            agent.send_message(line)
    # "And two more." names no tool: the last call's, with the earlier item; thanks: nothing.
    assert [(c.tool_name, c.arguments) for c in calls] == [
        ("give_item", {"item": "apples", "count": 2})
    ]


def test_words_the_line_shares_with_a_tool_count_by_stem_and_rarity() -> None:
    horse = tl.ToolDefinition("hire_horse", "Hire out a horse from the stable.")
    forge = tl.ToolDefinition(
        "forge_item",
        "Forge metal goods.",
        [tl.ToolParamDefinition("item", "string", "What.", enum=["horseshoe", "nails"])],
    )
    both = tl.ToolDefinition("hire_smith", "Hire the smith.")
    weights = sw.shared_words([horse, forge, both], "I need four horseshoes for my mare.")
    assert weights[0] == 0 and weights[1] > 0 and weights[2] == 0  # "horseshoes" = horseshoe
    # "out" says nothing ("hire out"); a word two tools share weighs less than one only has.
    assert sw.shared_words([horse, forge], "Hammer out a dozen nails") == [
        0.0,
        pytest.approx(math.log(3)),
    ]
    rare = sw.shared_words([horse, both, forge], "hire a horse")
    assert rare[0] > rare[1] > 0 and rare[2] == 0


def test_counted_nouns_are_the_words_right_after_a_count() -> None:
    assert sv.counted_nouns("Hand me 2 torches, please.") == [("torches",)]
    assert sv.counted_nouns("I'd like three old maps and 2 pints of ale") == [
        ("old", "maps"),
        ("pints",),
    ]
    # Counting words and what may stand between the count and its noun.
    assert sv.counted_nouns("A pair of boots, two dozen eggs, four more apples") == [
        ("boots",),
        ("eggs",),
        ("apples",),
    ]
    # No noun after the count, an article alone, "one" as a pronoun: nothing counted.
    for line in ("And two more.", "Make it 2, instead.", "Light a torch.", "No one came.",
                 "This one, please.", "The pair of boots."):  # fmt: skip
        assert sv.counted_nouns(line) == [], line


def test_a_counted_noun_is_evidence_for_the_tools_that_take_a_count_of_it() -> None:
    def counted(name: str, *params: tuple[str, str, str], enum: Sequence[str] = ()) -> Any:
        return tl.ToolDefinition(
            name,
            f"{name}.",
            [
                tl.ToolParamDefinition(n, t, d, enum=list(enum) if t == "string" else [])
                for n, t, d in params
            ],
        )

    give = counted(
        "give_item", ("item", "string", "What to give."), ("count", "integer", "How many.")
    )
    torch = tl.ToolDefinition(
        "set_torch",
        "Light the torch or put it out.",
        [tl.ToolParamDefinition("lit", "boolean", "true to light it.")],
    )
    room = counted("rent_room", ("nights", "integer", "How many nights."))
    drinks = counted(
        "serve_drink", ("drink", "string", "The drink."), ("count", "integer", "How many."),
        enum=["ale", "wine"],
    )  # fmt: skip
    note = counted("send_note", ("message", "string", "What it says."), ("copies", "integer", "."))
    tools = [give, torch, room, drinks, note]
    n = len(tools)
    # "torches" names set_torch, but a count of torches is for a tool that takes a count and
    # an object: the free-text item ("What to give", no message), not the enum of drinks.
    assert sw.counted_words(tools, "Hand me 2 torches, please.") == [
        pytest.approx(math.log((n + 1) / 1)), 0.0, 0.0, 0.0, 0.0,
    ]  # fmt: skip
    # An enum takes a count of its values; both tools could hold "ale".
    assert sw.counted_words(tools, "Three ales!") == [
        pytest.approx(math.log((n + 1) / 2)), 0.0, 0.0, pytest.approx(math.log((n + 1) / 2)), 0.0,
    ]  # fmt: skip
    # A count in the unit a tool counts in is that tool's alone, and a week counts in nights.
    for line in ("A room for two nights.", "A room for two weeks."):
        assert sw.counted_words(tools, line) == [0.0, 0.0, pytest.approx(math.log(n + 1)), 0.0, 0.0]
    assert sw.counted_words(tools, "Light the torch.") == [0.0] * n
    assert sw.counted_words([torch], "Light 2 torches.") == [0.0]


def test_a_boolean_reads_the_words_of_its_values_description() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    params = node(tools=[SET_LAMP])
    for line, lit in (("please put out the lamp", False), ("light the lamp", True)):
        (call,) = run(scorer, params, line)["calls"]
        assert call.arguments == {"lit": lit}
    assert sb.boolean_phrases("true to light it, false to put it out.") == (
        "light it",
        "put it out",
    )
    assert sb.boolean_phrases("true if it cannot wait.") == ("it cannot wait", "")
    assert sb.boolean_phrases("Whether it is lit.") == ("", "")
    assert sb.boolean_phrases("True for silver buttons; false for plain ones of horn.") == (
        "silver buttons",
        "plain ones of horn",
    )
    assert sb.phrase_words("put it out", "Blow the lamp out") == 1  # "out" counts here


def test_a_boolean_that_says_one_side_takes_the_other_from_its_tools_alternatives() -> None:
    torch = "Light the torch or put it out."
    assert sb.boolean_phrases("true to light it.", torch) == ("light it", "put it out")
    assert sb.boolean_phrases("false to put it out.", torch) == ("Light the torch", "put it out")
    sorting = "Turn automatic backpack sorting on or off."
    assert sb.boolean_phrases("true to turn it on.", sorting) == ("turn it on", "off")
    # No alternatives, or none that tells which is which: the other side stays unsaid.
    assert sb.boolean_phrases("true if it cannot wait.", "Send a runner for help.") == (
        "it cannot wait",
        "",
    )
    assert sb.boolean_phrases("true to light it.", "Fetch wood or water.") == ("light it", "")


def test_boundaries_a_model_ships_are_not_measured_again() -> None:
    class Shipped(ScoringMock):
        def measured(self, name: str) -> dict[str, float] | None:
            return dict.fromkeys(sr.BOUNDARIES, 0.0) if name == sr.MEASURED_AS else None

    scorer = Shipped("mock", script=["unused"])
    run(scorer, node(), "What a nice evening")
    assert len(scorer.scored) == 1  # the line's own request, nothing measured
    other = ScoringMock("mock", script=["unused"])
    run(other, node(), "What a nice evening")
    assert len(other.scored) == 1 + 2 * (len(sr.CALIBRATION) + len(sr.CALIBRATION_AFTER_CALL))


def test_a_line_the_short_prompt_is_unsure_of_is_asked_again_after_the_long_one() -> None:
    long_only = sr.LONG_EXAMPLES[1][0]  # a line only the long prompt shows

    class TwoMinds(ScoringMock):
        """Sure or unsure by the line's first word, and of another mind after the long
        prompt; boundaries shipped at zero."""

        def measured(self, name: str) -> dict[str, float] | None:
            return dict.fromkeys(sr.BOUNDARIES, 0.0) if name == sr.MEASURED_AS else None

        async def score_choices(
            self, prompt: str, choices: Sequence[str], *, greedy: bool = False, agent_id: int = 0
        ) -> list[float]:
            self.scored.append((prompt, list(choices), greedy))
            short = 0.9 if " sure" in prompt.rsplit("Player:", 1)[1] else 0.2
            return [-0.8 if long_only in prompt else short, 0.0]

    scorer = TwoMinds("mock", script=["unused"])
    unsure = asyncio.run(sr.request_margin(scorer, "Not quite clear, this one"))
    assert unsure == pytest.approx((0.2 - 0.8) / 2)  # the two margins averaged: talk
    assert [long_only in prompt for prompt, _, _ in scorer.scored] == [False, True]
    scorer.scored.clear()
    assert asyncio.run(sr.request_margin(scorer, "Quite sure of this one")) == 0.9
    assert len(scorer.scored) == 1  # past SURE: the short prompt's answer stands alone
    assert 0.2 < sr.SURE < 0.9


def test_a_descriptions_words_of_where_or_with_what_count_half() -> None:
    ferry = tl.ToolDefinition("ship_goods", "Carry goods across on the barge.")
    gate = tl.ToolDefinition(
        "set_lock",
        "Open the lock to barges or close it.",
        [tl.ToolParamDefinition("open", "boolean", "true to open it.")],
    )
    n = 2
    # "barge" is where ship_goods acts (after "on") and whom the lock opens to (after "to"):
    # half a word each; "close" follows "or", a verb of its own again: a whole word.
    assert sw.shared_words([ferry, gate], "Close the barge lane.") == [
        pytest.approx(0.5 * math.log((n + 1) / 2)),
        pytest.approx(math.log((n + 1) / 1) + 0.5 * math.log((n + 1) / 2)),
    ]
    # A word the tool's name or parameters have counts whole, wherever the description has it.
    named = tl.ToolDefinition("fetch_goods", "Fetch goods from the barge.", [])
    assert sw.shared_words([named], "Fetch the goods.") == [pytest.approx(2 * math.log(2))]


def test_a_booleans_condition_is_not_what_its_tool_does() -> None:
    pigeon = tl.ToolDefinition(
        "send_pigeon",
        "Send a pigeon.",
        [tl.ToolParamDefinition("urgent", "boolean", "true if the message must go at once.")],
    )
    horn = tl.ToolDefinition(
        "sound_horn", "Sound the horn.", [tl.ToolParamDefinition("blasts", "integer", "How many.")]
    )
    # "once" is when the pigeon's flag is true, not what sending a pigeon is.
    assert sw.shared_words([pigeon, horn], "Blow the horn once.") == [
        0.0,
        pytest.approx(math.log(3)),
    ]
    assert sw.shared_words([pigeon, horn], "Send it.") == [pytest.approx(math.log(3)), 0.0]


#: A tool that passes a message on to someone.
PASS_MESSAGE = tl.ToolDefinition(
    "pass_message",
    "Pass a message on.",
    [
        tl.ToolParamDefinition("recipient", "string", "Who gets the message."),
        tl.ToolParamDefinition("message", "string", "What to tell them."),
    ],
)


def test_a_named_person_is_evidence_for_the_tools_that_take_a_person() -> None:
    message = PASS_MESSAGE
    guard = tl.ToolDefinition(
        "call_guard", "Send for the guard.", [tl.ToolParamDefinition("reason", "string", "Why.")]
    )
    ferry = tl.ToolDefinition(
        "carry",
        "Row across.",
        [tl.ToolParamDefinition("landing", "string", "Where.", enum=["Willow Island", "mill"])],
    )
    tools = [message, guard, ferry]
    assert sw.people_words(tools, "Let Elsa know I'll be late.") == [
        pytest.approx(math.log(4)), 0.0, 0.0,
    ]  # fmt: skip
    # A sentence's first word, "I", a place the tools declare, or a name after "the" (a
    # ship's, an inn's) names no one.
    for line in (
        "Call the guard. Now!",
        "I said so.",
        "Row us to Willow Island.",
        "A schooner called the Brave Anna went by.",
    ):
        assert sw.people_words(tools, line) == [0.0] * 3, line
    # Through the decision: the scripted scorer hears nothing of either tool in the line.
    scorer = ScoringMock("mock", script=["unused"])
    (call,) = run(scorer, node(tools=[guard, message]), "Let Elsa know I'm late.")["calls"]
    assert call.tool_name == "pass_message"


def test_a_line_that_negates_a_tools_verb_refuses_it() -> None:
    assert sw.refuses(MOVE, "Don't walk anywhere, just talk.")
    assert sw.refuses(GIVE, "Do not bother giving me anything.")
    assert sw.refuses(GIVE, "Never give him a coin")
    # A negated word the tool does not have, or the tool's verb not negated, refuses nothing.
    assert not sw.refuses(SET_LAMP, "Don't let the lamp go out.")
    assert not sw.refuses(GIVE, "Give me apples, don't wait.")
    scorer = ScoringMock("mock", script=["unused"])
    out = run(scorer, node(), "Don't move north.")
    assert out["calls"] == [] and out["diagnostics"]["score"]["refused"] == "move"
    (call,) = run(scorer, node(), "move north")["calls"]
    assert call.tool_name == "move"


def test_a_line_that_says_it_is_not_urgent_is_not() -> None:
    for line in ("No hurry, but the roof leaks.", "There's no rush.", "It isn\u2019t urgent.",
                 "No need to hurry, but the shelf is loose.", "don't rush",
                 "When you get a chance, send word to my sister.", "Whenever you can.",
                 "Fix it when you have a moment.", "At your leisure.",
                 "Could she look in sometime this week?"):  # fmt: skip
        assert sc.says_unhurried(line), line
    for line in ("Hurry, the roof!", "No, hurry up!", "It can't wait!", "No time to lose!",
                 "Come as soon as you can!", "When you can't breathe, send for me."):  # fmt: skip
        assert not sc.says_unhurried(line), line


class FixedRequest(ScoringMock):
    """A scorer whose request step says `margin` for every line, past boundaries of 0."""

    def __init__(self, margin: float) -> None:
        super().__init__("mock", script=["unused"])
        self.margin = margin

    def measured(self, name: str) -> dict[str, float] | None:
        return dict.fromkeys(sr.BOUNDARIES, 0.0) if name == sr.MEASURED_AS else None

    async def score_choices(
        self, prompt: str, choices: Sequence[str], *, greedy: bool = False, agent_id: int = 0
    ) -> list[float]:
        if list(choices) == [" request\n", " talk\n"]:
            return [self.margin, 0.0]
        return await super().score_choices(prompt, choices, greedy=greedy, agent_id=agent_id)


def test_an_unsure_line_that_opens_with_a_tools_verb_is_a_request() -> None:
    unsure = FixedRequest(-0.2)  # talk, but within SURE of the boundary
    (call,) = run(unsure, node(), "Walk north.")["calls"]  # MOVE: "Walk in a direction."
    assert (call.tool_name, call.arguments) == ("move", {"direction": "north"})
    # Not the verb as written, another verb, or a question: talk, as the request step said.
    for line in ("Walking north is fun.", "Stroll north.", "Walk north?"):
        assert run(unsure, node(), line)["calls"] == [], line
    # Sure talk stays talk, whatever verb it opens with.
    assert run(FixedRequest(-2.0), node(), "Walk north.")["calls"] == []
    assert sw.opens_with_verb([SET_LIGHT, GIVE], "Turn it on") and not sw.opens_with_verb(
        [SET_LIGHT, GIVE], "Please turn it on"
    )


def test_an_unsure_line_that_counts_what_a_tool_counts_in_is_a_request() -> None:
    horn = tl.ToolDefinition(
        "sound_horn",
        "Sound the horn.",
        [tl.ToolParamDefinition("blasts", "integer", "How many blasts.")],
    )
    unsure = FixedRequest(-0.2)  # talk, but within SURE of the boundary
    (call,) = run(unsure, node(tools=[horn, GIVE]), "Horn, 5 blasts.")["calls"]
    assert (call.tool_name, call.arguments) == ("sound_horn", {"blasts": 5})
    assert sw.counts_in_units([horn], "A dozen blasts on the horn.")
    # A count no tool counts in ("How many." counts anything), a question, or sure talk:
    # talk, as the request step said.
    assert not sw.counts_in_units([horn, GIVE], "Five apples.")
    assert run(unsure, node(tools=[horn, GIVE]), "Five apples.")["calls"] == []
    assert run(unsure, node(tools=[horn]), "5 blasts?")["calls"] == []
    assert run(FixedRequest(-2.0), node(tools=[horn]), "Horn, 5 blasts.")["calls"] == []


def test_a_question_that_asks_to_be_told_calls_only_a_lookup() -> None:
    asks = FixedRequest(1.0)  # the request step hears a request in every line
    params = node(tools=[GIVE, CHECK_STOCK])
    (call,) = run(asks, params, "Could you give me apples?")["calls"]
    assert call.tool_name == "give_item"
    (call,) = run(asks, params, "How many apples do you have in stock?")["calls"]
    assert call.tool_name == "check_stock"
    assert run(asks, node(tools=[GIVE]), "How many apples do you give?")["calls"] == []


def test_an_object_described_by_what_takes_its_describing_words_and_a_count_is_none() -> None:
    # A count word is not a description: "a dozen sacks of flour" carries sacks of flour.
    line = "I need a dozen sacks of flour carried over."
    assert sv.widened(line, "sacks of flour", frozenset(), True) == "sacks of flour"

    class Shortest(ScoringMock):  # the model's pick: the last word alone
        async def score_choices(
            self, prompt: str, choices: Sequence[str], *, greedy: bool = False, agent_id: int = 0
        ) -> list[float]:
            if greedy:
                return [0.0 if c.startswith("boat") else float("-inf") for c in choices]
            return await super().score_choices(prompt, choices, greedy=greedy, agent_id=agent_id)

    search = tl.ToolDefinition(
        "search_river",
        "Search the river for something lost.",
        [tl.ToolParamDefinition("item", "string", "What was lost.")],
    )
    filled = asyncio.run(
        sa.fill_arguments(Shortest("m", script=["x"]), search, "Look for my son's toy boat.", (), 0)
    )
    # "What was lost" is an object, not a message: widened back to its determiner.
    assert filled.values == {"item": "son's toy boat"}


def test_thanks_closing_an_order_leaves_it_an_order() -> None:
    assert sse.without_thanks("Turn the great lamp off, thanks.") == "Turn the great lamp off."
    assert sse.without_thanks("Two more, cheers!") == "Two more!"
    assert sse.without_thanks("Could you saddle her, thank you?") == "Could you saddle her?"
    # Only thanks, thanks first, or thanks not closing the line: as it is.
    for line in ("Thank you kindly.", "Thanks, Oskar, here's your coin.", "No, thanks anyway."):
        assert sse.without_thanks(line) == line
    # The scripted scorer hears talk in any line with "thanks" in it, as the model leans to.
    scorer = ScoringMock("mock", script=["unused"])
    out = run(scorer, node(), "Give me 2 apples, thanks.")
    assert [(c.tool_name, c.arguments) for c in out["calls"]] == [
        ("give_item", {"item": "apples", "count": 2})
    ]
    assert out["diagnostics"]["score"]["request"] > 0
    for line in ("Thanks, give me nothing more.", "Thank you, that was quick."):
        assert run(scorer, node(), line)["calls"] == [], line


def test_an_order_after_a_sentence_of_news_is_a_request() -> None:
    assert sse.sentences("Hello, Oskar! Busy day on the river?") == [
        "Hello, Oskar!",
        "Busy day on the river?",
    ]
    assert sse.sentences("Light it, thanks.") == ["Light it, thanks."]
    # The scripted scorer hears talk in a line with "lovely" in it: the whole line is talk,
    # its last sentence a request.
    scorer = ScoringMock("mock", script=["unused"])
    out = run(scorer, node(), "What a lovely morning. Give me 2 apples.")
    assert [(c.tool_name, c.arguments) for c in out["calls"]] == [
        ("give_item", {"item": "apples", "count": 2})
    ]
    assert out["diagnostics"]["score"]["request"] > 0
    # Talk stays talk sentence by sentence.
    for line in ("What a lovely morning. Goodbye!", "Hello there. Nice weather."):
        assert run(scorer, node(), line)["calls"] == [], line
    # The first sentence is asked alone only where it opens with a tool's verb: an order then
    # its reason mostly reads as an order whole on the model (here the scripted scorer hears
    # talk in the whole line).
    scorer.scored.clear()
    assert run(scorer, node(), "Apples for me. What a lovely morning.")["calls"] == []
    asked = [p.rsplit("Player: ", 1)[1].split("\n")[0] for p, c, _ in scorer.scored]
    assert "Apples for me." not in asked and "What a lovely morning." in asked
    (call,) = run(scorer, node(), "Give me 2 apples. What a lovely morning.")["calls"]
    assert call.tool_name == "give_item"


def test_a_boolean_reads_which_side_a_line_says_in_any_words() -> None:
    lit, out = "light it", "put it out"
    # A word that puts out, closes or stops matches any other; "the light" is the thing.
    for line in ("Douse the light.", "Turn the great lamp off.", "Shut it down."):
        assert sb.polar_words(out, line) > sb.polar_words(lit, line), line
    for line in ("Light it back up.", "We're out of oil, light the lamp.", "Kindle the lamp."):
        assert sb.polar_words(lit, line) > sb.polar_words(out, line), line
    # The side tells the values apart where the rest of a phrase may be said of either.
    assert sb.polar_words("off", "Turn the sorting off.") > sb.polar_words(
        "turn it on", "Turn the sorting off."
    )
    assert sb.polar_words("close it", "Stop the music.") == 2
    # Through the decision: the scripted scorer leaves the boolean to the line's words.
    scorer = ScoringMock("mock", script=["unused"])
    for line in ("Douse the light, please.", "Turn the lamp off."):
        (call,) = run(scorer, node(tools=[SET_LAMP]), line)["calls"]
        assert call.arguments == {"lit": False}, line


def test_whom_a_message_is_for_is_a_name_not_a_message() -> None:
    recipient = tl.ToolParamDefinition("recipient", "string", "Who the message is for.")
    message = tl.ToolParamDefinition("message", "string", "What the message says.")
    assert not ss.is_message(recipient)
    assert ss.is_message(message)
    line = "Send word to my sister Ella in Port Hollin that the lens has arrived."
    fill = ss.Fill("", "", ", ", line, frozenset({"send"}), False)
    names = ss.string_values(fill, recipient)
    assert max(len(v.split()) for v in names) <= 4  # a name is short
    assert "the lens has arrived" not in names  # the clause is the message's
    assert ss.string_values(fill, message)[0] == "the lens has arrived"


def test_an_unsure_line_that_goes_on_with_and_after_a_call_is_a_request() -> None:
    unsure = FixedRequest(-0.2)  # talk, but within SURE of the boundary
    graph = graph_of(("detect", node()), ("answer", tl.CannedResponseParams(lines=["done"])))
    calls: list[tl.ToolCallEvent] = []
    with tl.Engine(unsure) as engine:
        for line, dialog in (
            ("And two pears.", APPLES_GIVEN),
            ("Oh, and two pears.", APPLES_GIVEN),
            ("Two pears.", APPLES_GIVEN),  # no "and": talk, as the request step said
            ("And two pears.", None),  # no call before it
        ):
            agent = engine.create_agent(graph, dialog=dialog)
            agent.set_on_tool_call_event(calls.append)
            agent.send_message(line)
    assert [(c.tool_name, c.arguments) for c in calls] == [
        ("give_item", {"item": "pears", "count": 2}),
        ("give_item", {"item": "pears", "count": 2}),
    ]
    assert run(FixedRequest(-2.0), node(), "And two pears.")["calls"] == []


def test_a_ships_name_says_nothing_of_the_tool() -> None:
    signal = tl.ToolDefinition("flash_signal", "Flash a signal to ships at sea.")
    log = tl.ToolDefinition("log_ship", "Write a ship in the log.")
    n = 2
    # "Sea" names the ship; "ship" is a word of both (half of it a place of the signal's).
    assert sw.shared_words([signal, log], "And her sister ship, the Sea Swallow.") == [
        pytest.approx(0.5 * math.log((n + 1) / 2)),
        pytest.approx(math.log((n + 1) / 2)),
    ]
    assert sw.shared_words([signal, log], "Calm sea today.")[0] > 0  # the sea itself


def test_the_one_a_line_is_said_to_is_not_a_value() -> None:
    customer = tl.ToolParamDefinition("customer", "string", "Whose tab.")
    line = "Put it on my tab, Ilse. Name's Gerrit, that's six silver."
    fill = ss.Fill("", "", ", ", line, frozenset({"put", "tab", "customer", "silver"}), True)
    values = ss.string_values(fill, customer)
    assert "Ilse" not in values and "Gerrit" in values
    assert ss._addressed("Two more, Hilda!", "Hilda", "customer")
    assert not ss._addressed("Tell Hilda, then.", "Hilda", "customer")
    # A name after a comma that names the argument's own thing is that thing's name.
    line = "Now the other pack horse, Old Tam."
    assert not ss._addressed(line, "Old Tam", "horse")
    assert _read(HORSE, line, {"saddle", "horse", "pack"}, numeric=False)[0] == "Old Tam"
    line = "Not the grey camel, he's fine. Stable the white one, Son of the Wind."
    assert _read(HORSE, line, {"stable", "horse"}, numeric=False) == ["Son of the Wind"]


#: A horse's name, the argument the tests of names below read.
HORSE = tl.ToolParamDefinition("horse", "string", "The horse's name.")
_FEEDING = {"feed", "horse", "scoops"}


def _read(
    param: tl.ToolParamDefinition,
    line: str,
    avoid: set[str],
    *,
    numeric: bool = True,
    earlier: tuple[object, ...] = (),
) -> list[str]:
    """What a string argument is chosen among in `line` (a tool whose words are `avoid`)."""
    fill = ss.Fill("", "", ", ", line, frozenset(avoid), numeric, earlier=earlier)
    return ss.string_values(fill, param)


def test_was_and_were_are_filler_as_is_and_are_are() -> None:
    born = tl.ToolParamDefinition("born", "string", "The day the person was born.")
    line = "A birth chart for my daughter Rosalind? She was born on the 14th of March."
    avoid = frozenset({"cast", "birth", "chart", "born"})
    fill = ss.Fill("", "", ", ", line, avoid, False, taken=frozenset({"daughter", "rosalind"}))
    values = ss.string_values(fill, born)
    assert "14th of March" in values
    assert not [v for v in values if {v.split()[0], v.split()[-1]} & {"was", "were"}]


def test_a_name_may_open_a_sentence_as_its_subject_and_a_place_is_no_name() -> None:
    def names(line: str) -> list[str]:
        return _read(HORSE, line, _FEEDING)

    assert names("Bramble looks half-starved. A couple of scoops for her, please.") == ["Bramble"]
    assert names("Captain's running today. Two scoops for him.") == ["Captain"]
    # Where she came from is a place, not her name.
    line = "Juniper hauled the cart all the way from Hollin Cross. She's earned a dozen scoops."
    assert names(line) == ["Juniper"]
    # An order opens with its verb, an article with no name: neither is one.
    assert "Give" not in names("Give the grey mare two scoops.")
    assert "The" not in names("The horses need feeding, two scoops for the bay.")


def test_an_owner_is_whose_the_thing_is() -> None:
    owner = tl.ToolParamDefinition("owner", "string", "The name of the horse's owner.")
    avoid = {"board", "horse", "owner", "nights"}
    line = "The magistrate's horse stays two nights while he sits at the assizes."
    assert _read(owner, line, avoid) == ["magistrate"]
    assert _read(owner, "board mistress odile's mare for a fortnight", avoid)[0] == "mistress odile"
    assert _read(owner, "Keep my horse three nights. Name's Harlan Pike.", avoid) == ["Harlan Pike"]


def test_the_same_message_is_the_last_one_and_a_title_keeps_its_point() -> None:
    message = tl.ToolParamDefinition("message", "string", "The message the rider carries.")
    avoid = {"send", "rider", "destination", "message"}
    line = "And send the same message to Kell's Ferry."
    earlier = ("The coach is delayed.",)
    assert _read(message, line, avoid, numeric=False, earlier=earlier) == list(earlier)
    where = tl.ToolParamDefinition("destination", "string", "Where the rider should go.")
    line = "Get a rider up to the Abbey of St. Wenna. The message is: send the physician."
    assert _read(where, line, avoid, numeric=False) == ["Abbey of St. Wenna"]
    assert len(sse.sentences(line)) == 2


def test_a_number_counts_things_not_whose_they_are() -> None:
    line = "Give Sorrel 3 scoops of oats, she's come a long road."
    assert _read(HORSE, line, _FEEDING) == ["Sorrel"]
    # An object is still what the number counts.
    item = tl.ToolParamDefinition("item", "string", "What to order.")
    assert _read(item, "Order 3 sacks of oats for Sorrel.", set())[0].startswith("sacks")


def test_more_for_someone_the_line_does_not_name_is_more_for_the_same_one() -> None:
    def horses(line: str) -> list[str]:
        return _read(HORSE, line, _FEEDING, earlier=("Juniper",))

    assert horses("And two more for him, he's still hungry.") == ["Juniper"]
    assert horses("Do the same for Hollis.") == ["Hollis"]
    # A count is of things, not of a horse: only a tool taking an object takes "sacks".
    feed = tl.ToolDefinition(
        "feed_horse",
        "Gives one horse oats.",
        [HORSE, tl.ToolParamDefinition("scoops", "integer", "How many scoops.")],
    )
    order = tl.ToolDefinition(
        "order_supplies",
        "Orders stable supplies.",
        [
            tl.ToolParamDefinition("item", "string", "What to order."),
            tl.ToolParamDefinition("quantity", "integer", "How many to order."),
        ],
    )
    assert sw.counted_words([feed, order], "Ten sacks, quick as you can.")[0] == 0.0


def test_a_side_opposite_to_one_values_says_the_other() -> None:
    phrases = ("raise the hood and run the coach closed", "run it open")
    # Lowering the hood is the opposite of raising it: the other value.
    assert sb.opposed_sides(phrases, "Six horses, and keep the hood down.") == [0, 2]
    assert sb.opposed_sides(phrases, "Four horses, hood up, it's pouring.") == [0, 0]


def test_a_place_is_where_the_line_sends_something_all_of_its_name() -> None:
    where = tl.ToolParamDefinition("destination", "string", "The port the travellers go to.")

    def places(line: str) -> list[str]:
        return _read(where, line, {"book", "passage", "destination", "passengers"})

    # Not what the number counts ("seats"), nor a word that starts the place's name.
    assert places("Three seats on the next ship to the Isle of Kerrow, please.") == [
        "Isle of Kerrow"
    ]
    assert places("A couple of places aboard anything bound for Port Amberly.") == ["Port Amberly"]
    assert places("A crossing for five pilgrims going to St. Ebba's Rock?") == ["St. Ebba's Rock"]
    assert places("Send a rider to Ashford with word: 'The coach is delayed.'") == ["Ashford"]


def test_a_span_of_time_counts_one_of_itself() -> None:
    # "for a week" counts in what a tool counts in days or nights, as "for two nights" does.
    assert sv.counted_nouns("Stable Sir Edwin's charger for a week; he paid.") == [("week",)]
    assert sv.counted_nouns("Put up her pony for a single night.") == [("night",)]
    assert sv.counted_nouns("I need a horse.") == []


def test_a_things_name_is_a_capitalised_span() -> None:
    ship = tl.ToolParamDefinition("ship", "string", "The ship's name.")
    line = "And her sister ship right behind, the Sea Swallow."
    fill = ss.Fill("", "", ")", line, frozenset({"log", "ship", "ships"}), False)
    # Not "sister", though it comes right before the argument's own name, nor a word of it.
    assert ss.string_values(fill, ship) == ["Sea Swallow"]
    assert not sn_names.capitalised("It went by at noon. Note her.", "Note")  # opens a sentence
    # A person is no thing's name: a player may call her "the doctor".
    who = tl.ToolParamDefinition("recipient", "string", "Who it is for, by name.")
    assert sv.is_name(ship) and not sv.is_name(who)


def test_what_a_count_counts_is_the_object_even_described_as_what() -> None:
    # A count word ("a dozen", "a couple of") is passed over to what it counts.
    line = "Half a dozen candles for the lower crew"
    assert [line[at:] for at in sv.after_numbers(line)] == ["candles for the lower crew"]
    line = "a couple of ropes"
    assert [line[at:] for at in sv.after_numbers(line)] == ["ropes"]
    # An object described as what ("What to hand out") is no message: of a line that counts
    # something, the values are what the count counts, not the words before it.
    item = tl.ToolParamDefinition("item", "string", "What to hand out, e.g. 'pickaxe'.")
    fill = ss.Fill("", "", ")", "We're short on rope down there. Two coils, please.",
                    frozenset({"issue", "gear", "item", "count"}), True)  # fmt: skip
    assert ss.string_values(fill, item) == ["coils"]
    # A message keeps its clauses: what it says is not what a number counts.
    note = tl.ToolParamDefinition("note", "string", "What the note says.")
    fill = ss.Fill("", "", ")", "Send a note that two wagons are late",
                    frozenset({"send", "note", "count"}), True)  # fmt: skip
    assert ss.string_values(fill, note)[0] == "two wagons are late"


DIG = tl.ToolDefinition(
    "assay_rock",
    "Have a sample of rock tested for gold.",
    [tl.ToolParamDefinition("seam", "string", "The seam or pit the rock came from.")],
)


def test_a_proper_name_of_several_words_is_taken_whole() -> None:
    seam = DIG.parameters[0]
    avoid = frozenset({"assay", "rock", "seam"})
    for line, name in (
        ("This chunk came out of Miller's Hollow yesterday, any good?", "Miller's Hollow"),
        ("Test this lump from the Black Pit for gold.", "Black Pit"),
    ):
        assert ss.string_values(ss.Fill("", "", ")", line, avoid, False), seam) == [name]
    # Not a name said after "for" or "to" (whom or where it goes), nor for a person.
    line = "Carry these crates to Willow Island."
    cargo = tl.ToolParamDefinition("cargo", "string", "The goods to carry.")
    assert "crates" in ss.string_values(ss.Fill("", "", ")", line, frozenset(), False), cargo)
    who = tl.ToolParamDefinition("recipient", "string", "Who the note is for.")
    line = "Send a note to my aunt Wilma in Fox Hollow."
    assert "Wilma" in ss.string_values(ss.Fill("", "", ")", line, frozenset(), False), who)
    # A typographic apostrophe is the plain one.
    (call,) = run(ScoringMock("mock", script=["unused"]), node(tools=[DIG]),
                  "Assay this rock from Gray\u2019s Cut.")["calls"]  # fmt: skip
    assert call.arguments == {"seam": "Gray's Cut"}


def test_an_object_is_not_whom_it_is_for() -> None:
    item = tl.ToolParamDefinition("item", "string", "What to hand out.")
    line = "And three more for Tomas's watch."
    fill = ss.Fill("", "", ", ", line, frozenset({"give", "item", "count"}), True, ("lanterns",))
    assert ss.string_values(fill, item) == ["lanterns"]
    # A person is whom it is for: "Do the same for Brenna." pays Brenna.
    sailor = tl.ToolParamDefinition("sailor", "string", "Who is paid.")
    fill = ss.Fill("", "", ", ", "Do the same for Brenna.", frozenset({"pay"}), True, ("Olaf",))
    assert "Brenna" in ss.string_values(fill, sailor)


def test_more_of_the_last_call_follows_it_up_whatever_it_is_for() -> None:
    # "north" is MOVE's word, but said of whom the apples are for.
    assert td._more_of(TOOLS, "And two more for the north gate guards.")
    assert not td._more_of(TOOLS, "And walk north.")  # no "more"
    assert not td._more_of(TOOLS, "And two more lights.")  # names another tool's object
    scorer = ScoringMock("mock", script=["unused"])
    graph = graph_of(("detect", node()), ("answer", tl.CannedResponseParams(lines=["done"])))
    calls: list[tl.ToolCallEvent] = []
    with tl.Engine(scorer) as engine:
        agent = engine.create_agent(graph, dialog=APPLES_GIVEN)
        agent.set_on_tool_call_event(calls.append)
        agent.send_message("And two more for the north gate guards.")
    assert [(c.tool_name, c.arguments) for c in calls] == [
        ("give_item", {"item": "apples", "count": 2})
    ]


def test_a_line_that_opens_by_taking_leave_is_talk_unless_the_request_is_sure() -> None:
    unsure = FixedRequest(0.3)  # a request, but not a sure one
    for line in ("Goodbye, and walk north safely.", "Farewell, give my regards to Ida.",
                 "So long, and mind the north road."):  # fmt: skip
        assert run(unsure, node(), line)["calls"] == [], line
    assert run(unsure, node(), "Walk north.")["calls"]  # no leave taken: the request stands
    assert run(FixedRequest(0.8), node(), "Goodbye, and walk north.")["calls"]  # a sure one
    # After a farewell, an order that is no tool's verb is a wish, however sure the step is.
    assert run(FixedRequest(0.8), node(), "Farewell, Ida. Keep walking north.")["calls"] == []


def test_an_order_may_open_with_a_word_that_only_softens_or_times_it() -> None:
    for line in ("Just give me two apples.", "Then walk north.", "Go give her an apple."):
        assert sw.opens_with_verb(TOOLS, line), line
    assert not sw.opens_with_verb(TOOLS, "Just a moment.")


def test_a_question_tagged_on_an_order_is_the_order() -> None:
    unsure = FixedRequest(-0.2)  # talk, but within SURE of the boundary
    for line in ("Walk north, would you?", "Walk north, could you please?"):
        (call,) = run(unsure, node(), line)["calls"]
        assert (call.tool_name, call.arguments) == ("move", {"direction": "north"}), line
    assert run(unsure, node(), "Walk north?")["calls"] == []  # a question, not an order


def test_what_a_line_turns_down_is_no_value() -> None:
    assert sv.unnegated("Level four, not five.") == "Level four, ."
    assert sv.unnegated("Three instead of two, but not today") == "Three , but "
    level = tl.ToolParamDefinition("level", "integer", "Which level.")
    assert sn.numbers(sv.unnegated("Take me to level four, not five."), level) == [4]
    assert sn.numbers("Light both lanterns.", level) == [2]
    scorer = ScoringMock("mock", script=["unused"])
    (call,) = run(scorer, node(), "Walk south, not north.")["calls"]
    assert call.arguments == {"direction": "south"}
    (call,) = run(scorer, node(), "Give me four pears, not five.")["calls"]
    assert call.arguments == {"item": "pears", "count": 4}
    box = tl.ToolParamDefinition("box", "string", "Which box.")
    fill = ss.Fill("", "", ")", "Open the oak chest, not the pine crate.",
                    frozenset({"open", "box"}), False)  # fmt: skip
    assert all("pine" not in v for v in ss.string_values(fill, box))


def test_a_declared_value_is_read_as_words() -> None:
    assert sv.value_words("storm_warning") == "storm warning"
    assert sv.value_words("cave-in") == "cave in"
    flash = tl.ToolDefinition(
        "flash_signal",
        "Flash a signal.",
        [
            tl.ToolParamDefinition(
                "signal", "string", "Which signal.", enum=["all_clear", "storm_warning"]
            )
        ],
    )
    bell = tl.ToolDefinition("ring_bell", "Ring the bell.")
    # "storm" is a word of the signal tool, as its value says it.
    assert sw.shared_words([flash, bell], "A storm is coming!")[0] > 0
    (call,) = run(ScoringMock("mock", script=["unused"]), node(tools=[flash, bell]),
                  "Flash the storm warning.")["calls"]  # fmt: skip
    assert call.arguments == {"signal": "storm_warning"}
    assert sb.says_value("cave-in", "The roof caved in!") and not sb.says_value("cave-in", "Fire!")


def test_numbers_read_hundreds_and_thousands() -> None:
    gold = tl.ToolParamDefinition("gold", "integer", "How much gold.")
    assert sn.numbers("I'll give you two hundred gold.", gold) == [200]
    assert sn.numbers("A hundred for the lot.", gold) == [100]
    assert sn.numbers("Three hundred and fifty, final offer.", gold) == [350]
    assert sn.numbers("2 thousand crowns", gold) == [2000]
    assert sn.numbers("And fifty.", gold) == [50]
    assert sn.numbers("5 apples and a hundred pears", gold) == [5, 100]


def test_a_correction_keeps_what_it_does_not_name() -> None:
    who = tl.ToolParamDefinition("person", "string", "Who to fetch.")
    avoid = frozenset({"fetch", "person", "urgent"})
    line = "Actually, make it urgent, my aunt's fallen down the stairs."
    fill = ss.Fill("", "", ", ", line, avoid, False, ("Grete",))
    assert ss.string_values(fill, who) == ["Grete"]  # not "aunt" of the reason
    line = "Make that the cooper, not the baker."
    fill = ss.Fill("", "", ", ", line, avoid, False, ("Grete",))
    assert ss.string_values(fill, who) == ["cooper"]
    fill = ss.Fill("", "", ", ", "Fetch my aunt, she's fallen.", avoid, False, ("Grete",))
    assert "aunt" in ss.string_values(fill, who)  # no correction: the line's own


class KeepsEarlier(ScoringMock):
    """A scorer that, as a small model does, leans hard to the value an earlier call shown
    in the prompt gave a flag."""

    async def score_choices(
        self, prompt: str, choices: Sequence[str], *, greedy: bool = False, agent_id: int = 0
    ) -> list[float]:
        scores = await super().score_choices(prompt, choices, greedy=greedy, agent_id=agent_id)
        leaning = "urgent=false" in prompt and prompt.endswith("urgent=")
        lean = [50.0 * (leaning and c.startswith("false")) for c in choices]
        return [s + extra for s, extra in zip(scores, lean, strict=True)]


def test_a_correction_that_names_a_flag_sets_it() -> None:
    fetch = tl.ToolDefinition(
        "fetch_person",
        "Bring someone back across the river.",
        [tl.ToolParamDefinition("person", "string", "Who to bring back."),
         tl.ToolParamDefinition("urgent", "boolean", "true if it cannot wait.")],
    )  # fmt: skip
    earlier = [
        {"role": "user", "content": "Fetch my cousin Ruth, no hurry."},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c0", "type": "function",
         "function": {"name": "fetch_person",
                      "arguments": {"person": "Ruth", "urgent": False}}}]},
        {"role": "tool", "tool_call_id": "c0", "name": "fetch_person", "content": "ok"},
    ]  # fmt: skip
    graph = graph_of(("detect", node(tools=[fetch])),
                     ("answer", tl.CannedResponseParams(lines=["done"])))  # fmt: skip
    calls: list[tl.ToolCallEvent] = []
    with tl.Engine(KeepsEarlier("mock", script=["unused"])) as engine:
        for line in ("Actually, make it urgent, the baby's coming.",
                     "Make it not urgent, then."):  # fmt: skip
            agent = engine.create_agent(graph, dialog=earlier)
            agent.set_on_tool_call_event(calls.append)
            agent.send_message(line)
    assert [c.arguments for c in calls] == [
        {"person": "Ruth", "urgent": True},
        {"person": "Ruth", "urgent": False},
    ]


SET_FLAG = tl.ToolDefinition(
    name="set_flag",
    description="Raise or lower the banner on the keep.",
    parameters=[
        tl.ToolParamDefinition("up", "boolean", "true to raise the banner, false to lower it.")
    ],
)


def test_a_boolean_reads_raising_and_lowering_as_sides() -> None:
    raise_, lower = "raise the banner", "lower it"
    for line in ("Haul the banner down, the king has left.", "Drop the banner now."):
        assert sb.polar_words(lower, line) > sb.polar_words(raise_, line), line
    for line in ("Banner up!", "Hoist it again."):
        assert sb.polar_words(raise_, line) > sb.polar_words(lower, line), line
    # After "the", a word that lowers is a thing, not its side: no lead either way.
    said = "Fetch the lower banner."
    assert sb.polar_words(lower, said) == sb.polar_words(raise_, said)
    scorer = ScoringMock("mock", script=["unused"])
    (call,) = run(scorer, node(tools=[SET_FLAG]), "Haul the banner down.")["calls"]
    assert call.arguments == {"up": False}


MINUTES = tl.ToolParamDefinition("minutes", "integer", "For how many minutes.")


def test_numbers_read_spans_of_time_in_minutes() -> None:
    for line, minutes in (
        ("Hold the coach a quarter of an hour.", [15]),
        ("Wait half an hour for the mayor.", [30]),
        ("Keep the gate shut for an hour and a half.", [90]),
        ("Give them two and a half hours.", [150]),
        ("Three quarters of an hour, no more.", [45]),
        ("Two hours, please.", [120]),
        ("Twenty five minutes.", [25]),
        ("Boil the 3 eggs for 10 minutes.", [10]),  # how long, not how many eggs
    ):
        assert sn.numbers(line, MINUTES) == minutes, line
    assert sn.numbers("Two hours, please.", COUNT) == [2]  # not counted in minutes


STAND_IN = tl.ToolDefinition(
    "send_stand_in",
    "Send a stand-in to play a part tonight.",
    [tl.ToolParamDefinition("part", "string", "The part the stand-in plays.")],
)


def _parts(line: str, earlier: tuple[object, ...] = ()) -> list[str]:
    avoid = frozenset({"send", "stand", "stand-in", "in", "part", "parts"})
    fill = ss.Fill("", "", ")", line, avoid, False, earlier)
    return ss.string_values(fill, STAND_IN.parameters[0])


def test_a_reason_clause_holds_no_value() -> None:
    values = _parts("Send a stand-in for Lord Ashby, Tobin broke his wrist.")
    assert "Lord Ashby" in values
    assert not {"Tobin", "broke", "wrist", "Tobin broke"} & set(values)
    values = _parts("A stand-in for the ferryman, quick, he's gone home ill.")
    assert "ferryman" in values and not {"home", "ill", "gone home"} & set(values)
    # Its subject may be someone's: "my wife's", "his horse is".
    values = _parts("A stand-in for the doctor, my wife's gone into labour!")
    assert "doctor" in values and not {"wife", "labour"} & set(values)
    # A message may be the clause: "we're ready" is what to say.
    note = tl.ToolParamDefinition("message", "string", "The message.")
    fill = ss.Fill("", "", ")", "Tell the captain, we're ready to sail.", frozenset(), False)
    assert any("ready" in v for v in ss.string_values(fill, note))


def test_a_capitalised_word_after_an_article_or_possessive_is_a_title() -> None:
    assert _parts("Brennan has a fever. Find someone for the Miller.") == ["Miller"]
    assert _parts("Our Jester's ill again. Is anyone free?") == ["Jester"]
    assert not sn_names.is_titled("Carry the crates to the Mill.", "Mill")  # where, not what
    assert not sn_names.is_titled("Fetch the King's crown.", "King")  # an owner, not the thing
    assert sn_names.is_titled("Our Jester's gone home.", "Jester")  # 's for "has"
    assert not sn_names.is_titled("The Miller is ill.", "The Miller")  # opens the sentence


PARTS_SENT = [
    {"role": "user", "content": "Send a stand-in for the Miller."},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c0", "type": "function",
     "function": {"name": "send_stand_in", "arguments": {"part": "Miller"}}}]},
    {"role": "tool", "tool_call_id": "c0", "name": "send_stand_in", "content": "ok"},
]  # fmt: skip


def test_same_for_another_repeats_the_last_call_with_it() -> None:
    # Talk by the request step, but "Same for X" after a call asks for that call with X.
    scorer = FixedRequest(-2.0)
    graph = graph_of(
        ("detect", node(tools=[STAND_IN, SET_FLAG])),
        ("answer", tl.CannedResponseParams(lines=["done"])),
    )
    calls: list[tl.ToolCallEvent] = []
    with tl.Engine(scorer) as engine:
        agent = engine.create_agent(graph, dialog=PARTS_SENT)
        agent.set_on_tool_call_event(calls.append)
        agent.send_message("Same for the Jester, he's gone home sick.")
        agent.send_message("Same to you!")  # a wish returned, not a repeat
    assert [(c.tool_name, c.arguments) for c in calls] == [("send_stand_in", {"part": "Jester"})]
    assert "Jester" in _parts("Same for the Jester.", ("Miller",))


def test_telling_where_one_will_be_asks_for_nothing() -> None:
    scorer = ScoringMock("mock", script=["unused"])  # hears "I'll be in my room." as a request

    def margin(line: str) -> float:
        return asyncio.run(sr.request_margin(scorer, line, after_call=True))

    assert margin("Lovely, thanks. I'll be in my room.") < 0
    assert margin("Cheers! We'll be out back by the well.") < 0
    # An order beside it still asks; so does a line that is only that (read as it is).
    assert margin("I'll be in my room. Send up some soup.") > 0
    assert margin("I'll be in my room.") > 0


def test_what_the_speaker_wants_after_a_comma_is_no_reason() -> None:
    dress = tl.ToolParamDefinition("item", "string", "What to show.")
    fill = ss.Fill("", "", ")", "Hi Marta, I'd like the blue dress.", frozenset(), False)
    assert "blue dress" in ss.string_values(fill, dress)


def test_and_after_a_call_naming_no_tool_follows_it_up_when_unsure() -> None:
    graph = graph_of(("detect", node()), ("answer", tl.CannedResponseParams(lines=["done"])))
    calls: list[tl.ToolCallEvent] = []
    for margin in (-0.2, -2.0):  # unsure talk, then sure talk
        with tl.Engine(FixedRequest(margin)) as engine:
            agent = engine.create_agent(graph, dialog=APPLES_GIVEN)
            agent.set_on_tool_call_event(calls.append)
            agent.send_message("And the pears as well.")
    assert [c.tool_name for c in calls] == ["give_item"]
    assert "pears" in calls[0].arguments["item"]


#: A tool with two counts, one of them in days, and the call that hired four for two days.
HIRE = tl.ToolDefinition(
    "hire_hands",
    "Hires dockhands to carry for the player.",
    [
        tl.ToolParamDefinition("workers", "integer", "How many dockhands to hire."),
        tl.ToolParamDefinition("days", "integer", "For how many days they are hired."),
    ],
)
FOUR_HIRED = [
    {"role": "user", "content": "Hire four dockhands for two days."},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c0", "type": "function",
     "function": {"name": "hire_hands", "arguments": {"workers": 4, "days": 2}}}]},
    {"role": "tool", "tool_call_id": "c0", "name": "hire_hands", "content": "ok"},
]  # fmt: skip


def test_a_span_of_time_is_the_days_count_and_no_other() -> None:
    workers, days = HIRE.parameters
    assert sn.numbers("two porters for the day", days) == [1]  # "the day" is one day
    assert sn.numbers("two porters for the day", workers) == [2]
    # The days are another argument's: "two days" is no count of workers.
    assert sn.numbers("four dockhands for two days", workers, time_elsewhere=True) == [4]
    assert sn.numbers("Three guests for three hours", workers, time_elsewhere=True) == [3]
    assert sn.numbers("A room, three hours should do.", workers, time_elsewhere=True) == []
    assert sn.numbers("four dockhands for two days", workers) == [4, 2]
    # "a week" says how long, not one of something; "another" alone says one more.
    assert not sn.says_one("Make it a week instead.")
    assert sn.says_one("And a lantern.") and sn.says_one("give another")


def _calls_after(
    tools: list[tl.ToolDefinition], said: Sequence[tuple[str, Any]]
) -> list[tl.ToolCallEvent]:
    """The calls the scripted scorer's decision makes for each line, each in a fresh agent
    whose dialog is the one given with it (None: none)."""
    scorer = ScoringMock("mock", script=["unused"])
    graph = graph_of(
        ("detect", node(tools=tools)), ("answer", tl.CannedResponseParams(lines=["done"]))
    )
    calls: list[tl.ToolCallEvent] = []
    with tl.Engine(scorer) as engine:
        for line, dialog in said:
            agent = engine.create_agent(graph, dialog=dialog)
            agent.set_on_tool_call_event(calls.append)
            agent.send_message(line)
    return calls


def test_a_correction_changes_the_count_it_names_and_keeps_the_others() -> None:
    lines = ("Make that six.", "Make it a week instead.", "Make it three days.")
    calls = _calls_after([HIRE, GIVE], [(line, FOUR_HIRED) for line in lines])
    # A bare number is the first count's; a span of time the days'; the rest as it was.
    assert [(c.tool_name, c.arguments) for c in calls] == [
        ("hire_hands", {"workers": 6, "days": 2}),
        ("hire_hands", {"workers": 4, "days": 7}),
        ("hire_hands", {"workers": 4, "days": 3}),
    ]


def test_a_correction_right_after_a_call_repeats_that_call() -> None:
    # "Give" is a word of the other tool: a correction still corrects the last call.
    calls = _calls_after([HIRE, GIVE], [("Actually, make it five, give them a hand.", FOUR_HIRED)])
    assert [(c.tool_name, c.arguments["workers"]) for c in calls] == [("hire_hands", 5)]
    # "them" and "those" correct as "it" and "that" do.
    for line in ("Actually, make them plain wooden ones instead.", "No, make those blue."):
        assert sse.opens_with_correction(line) and sse.CORRECTION.search(line)


def test_a_name_of_several_words_joined_by_of_is_taken_whole() -> None:
    ship = tl.ToolParamDefinition("ship", "string", "The ship's name.")
    avoid = {"moor", "ship", "berth", "drydock"}
    line = "The Maiden of Corrow needs her hull patched, get her into the dry dock."
    assert _read(ship, line, avoid, numeric=False) == ["Maiden of Corrow"]
    line = "Flag the Lady of Westmere and tell her captain that his brother is waiting."
    assert _read(ship, line, avoid, numeric=False) == ["Lady of Westmere"]
    # Two names stay two; "of" between lowercase words joins nothing.
    assert sn_names.capitalised("the Guild of the Lanternwrights", "Guild of the Lanternwrights")
    assert not sn_names.capitalised("a cup of tea", "cup of tea")


def test_a_line_asking_to_pass_words_on_is_evidence_for_the_tools_that_take_a_message() -> None:
    store = tl.ToolDefinition(
        "store_cargo", "Stores crates.", [tl.ToolParamDefinition("owner", "string", "Whose.")]
    )
    tools = [PASS_MESSAGE, store]
    for line in (
        "Let the Sea Lantern know her cargo has been sold.",
        "Send word to the garrison: bandits on the road.",
        "Ride to the ferry and tell them to wait.",
    ):
        assert sw.telling_words(tools, line) == [pytest.approx(math.log(3)), 0.0], line
    for line in ("Tell me about the harbour.", "Let me know when she docks.", "The cargo sold."):
        assert sw.telling_words(tools, line) == [0.0, 0.0], line


def test_a_line_sending_something_to_a_named_place_is_evidence_for_the_tools_that_take_one() -> (
    None
):
    passage = tl.ToolDefinition(
        "book_passage",
        "Books places on the next ship.",
        [tl.ToolParamDefinition("destination", "string", "The port the travellers are going to.")],
    )
    hire = tl.ToolDefinition(
        "hire_hands",
        "Hires dockhands.",
        [tl.ToolParamDefinition("workers", "integer", "How many.")],
    )
    tools = [passage, hire]
    for line in ("Get my men across to Highcliff Harbour.", "Two seats bound for Port Amberly."):
        assert sw.place_words(tools, line) == [pytest.approx(math.log(3)), 0.0], line
    # No named place, or one the line does not send anything to: nothing.
    for line in ("Get my men across to the other side.", "I came from Highcliff Harbour."):
        assert sw.place_words(tools, line) == [0.0, 0.0], line


def test_a_question_without_its_mark_and_a_line_opening_with_thanks_are_talk_when_unsure() -> None:
    unsure = FixedRequest(0.1)  # a request, but within SURE of the boundary
    # A question that asks to be told ("what do ... mean"), even without "?", calls no tool
    # that does not look something up; thanks first make the rest a remark.
    for line in ("what do all those apples mean", "Thank you kindly. Give them apples."):
        assert run(unsure, node(), line)["calls"] == [], line
    (call,) = run(unsure, node(), "Give me the apples")["calls"]
    assert call.tool_name == "give_item"
    # A sure request after thanks still calls.
    (call,) = run(FixedRequest(3.0), node(), "Thank you. Give me 2 apples.")["calls"]
    assert call.tool_name == "give_item"


def test_quoted_words_a_value_in_two_words_and_what_an_earlier_call_named() -> None:
    message = tl.ToolParamDefinition("message", "string", "What to tell them.")
    # A message the line quotes is the message.
    line = 'Someone must ride to Kell\'s Ferry and tell them, "Hold the barge till dusk."'
    assert sq.quoted(line) == ["Hold the barge till dusk"]
    assert _read(message, line, {"send", "rider"}) == ["Hold the barge till dusk"]
    # A declared value may be said in two words ("the dry dock" is "drydock"): it is that
    # value, no other argument's.
    line = "Actually, she needs repairs. Send her to the dry dock instead."
    assert sb.says_value("drydock", line)
    assert not sb.says_value("drydock", "The dock is dry.")
    ship = tl.ToolParamDefinition("ship", "string", "The ship's name.")
    assert "dry dock" in _read(ship, line, {"moor", "ship", "berth"}, numeric=False)
    # A name the line does not say ("her") is the one the earlier call named.
    avoid = {"moor", "ship", "berth", "drydock"}
    assert _read(ship, line, avoid, numeric=False, earlier=("Golden Tern",)) == ["Golden Tern"]
    # A line whose only words are whom the message goes to sends the earlier message.
    fill = ss.Fill(
        "", "", ")", "Tell the Crimson Pike too.", frozenset({"signal", "ship", "message"}), False,
        earlier=("her cargo has been sold",), taken=frozenset({"crimson", "pike"}),
    )  # fmt: skip
    assert ss.string_values(fill, message) == ["her cargo has been sold"]


def test_words_to_write_are_quoted_given_after_a_colon_or_after_what_they_are_called() -> None:
    words = tl.ToolParamDefinition(
        "message", "string", "The exact words, name or initials to stitch, as given."
    )
    avoid = {"embroider", "message"}
    # Single quotes quote as double ones do; an apostrophe in a word is none.
    assert sq.quoted("Embroider 'For Mira, always' on the cuff.") == ["For Mira, always"]
    line = "Put 'Property of the Red Lantern Inn' on the aprons, please."
    assert _read(words, line, avoid) == ["Property of the Red Lantern Inn"]
    assert sq.quoted("Can you take in these trousers? No rush, I'm not wearing them.") == []
    assert sq.quoted("The boys' coats are torn, and 'tis the season.") == []
    # What a colon introduces is given as said.
    line = "Could you stitch our family motto on this banner: Steady Hands, Steady Hearts?"
    assert _read(words, line, avoid) == ["Steady Hands, Steady Hearts"]
    # So are the capitalised words after what the description calls them.
    line = "I'd like the words Happy Name-Day, Pell embroidered onto this handkerchief."
    assert _read(words, line, avoid) == ["Happy Name-Day, Pell"]
    line = "My initials, T.R.B., in the corner of the cloak, can you embroider that?"
    assert _read(words, line, avoid) == ["T.R.B."]
    assert sse.labelled(line, frozenset({"colour", "cloth"})) == []


def test_what_needs_doing_is_the_order_as_the_line_gives_it() -> None:
    work = tl.ToolParamDefinition(
        "work", "string", "What needs doing and to which garment, in the customer's words."
    )
    avoid = {"mend", "garment", "work", "rush"}
    for line, order in (
        ("Can you take in these trousers? No rush.", "take in these trousers"),
        ("Hem these trousers for me, would you? They drag in the mud.", "Hem these trousers"),
        ("Please patch the hole in the elbow of my shirt \u2014 whenever you have time.",
         "patch the hole in the elbow of my shirt"),
        ("A button came off my waistcoat and the lining's torn \u2014 fix both by morning.",
         "A button came off my waistcoat and the lining's torn"),
    ):  # fmt: skip
        assert sse.order_clause(line) == order
        assert _read(work, line, avoid, numeric=False) == [order]
    # An object to mend is no order: "mend my pickaxe" names the pickaxe.
    item = tl.ToolParamDefinition("item", "string", "What to mend, e.g. 'pickaxe'.")
    assert "Can you mend my pickaxe" not in _read(item, "Can you mend my pickaxe?", {"repair"})


#: A tool whose enum's description explains each value, with a boolean said with "=".
GUIDE = tl.ToolDefinition(
    "hire_guide",
    "Hire a desert guide.",
    [
        tl.ToolParamDefinition(
            "route",
            "string",
            "Which route: dunes = east across the deep sand to Tal Harir; wadi = north along the "
            "dry riverbed to Qarat Sulaiman; coast = west to the sea at Port Sabra.",
            enum=["dunes", "wadi", "coast"],
        ),
        tl.ToolParamDefinition(
            "round_trip",
            "boolean",
            "true = the guide returns with them; false = one way only, the guide leaves them.",
        ),
    ],
)


def test_an_enum_value_is_named_by_its_explanation_and_an_earlier_one_stays() -> None:
    route = GUIDE.parameters[0]
    enum = ["dunes", "wadi", "coast"]
    assert sb.explained(route.description, enum, "My brother is sick in Tal Harir.") == ["dunes"]
    assert sb.explained(route.description, enum, "Along the dry riverbed, please.") == ["wadi"]
    assert sb.explained(route.description, enum, "Actually, one way only.") == []
    # Words every explanation has ("to", "the") name none; a value said outright is not needed.
    harbour = "merchant for the merchant quay, drydock for the dry dock where hulls are repaired"
    assert sb.explained(harbour, ["merchant", "drydock"], "Her hull is cracked.") == ["drydock"]
    # A phrase runs to the other value's or the sentence's end, across commas.
    assert sb.boolean_phrases(GUIDE.parameters[1].description) == (
        "the guide returns with them",
        "one way only, the guide leaves them",
    )
    mend = "true means also stitch tears, patch holes and replace lost buttons; false means wash."
    assert sb.boolean_phrases(mend) == (
        "also stitch tears, patch holes and replace lost buttons",
        "wash",
    )
    # Through the decision: the explanation chooses the route, and a denied side counts for
    # the other.
    calls = _calls_after(
        [GUIDE, GIVE],
        [
            ("Hire a guide to Tal Harir, returning with me.", None),
            ("Hire a guide to the sea, I won't be returning.", None),
            # After a call: a correction naming no route keeps it, and says a side.
            ("Actually, one way only.", GUIDE_HIRED),
            ("Actually, make it returning with me.", GUIDE_HIRED),
        ],
    )
    assert [c.arguments["route"] for c in calls] == ["dunes", "coast", "wadi", "wadi"]
    assert [c.arguments["round_trip"] for c in calls] == [True, False, False, True]


#: A boolean whose phrase for true itself denies something ("has never flown before").
STABLE = tl.ToolDefinition(
    "stable_griffin",
    "Stable a traveller's griffin in the eyrie.",
    [
        tl.ToolParamDefinition("griffin", "string", "The griffin's name."),
        tl.ToolParamDefinition(
            "own_perch",
            "boolean",
            "true to give it a perch of its own: for a griffin that bites, or has never "
            "flown in a flock; false to perch it with the others.",
        ),
    ],
)


def test_a_line_that_denies_what_a_side_itself_denies_says_that_side() -> None:
    # "never flown in a flock" is said by a line that denies it too, and the other side by
    # a line that says it plainly.
    calls = _calls_after(
        [STABLE, GIVE],
        [
            ("Stable Ember, please. She's never flown in a flock before.", None),
            ("Stable Ember, please. She has flown in a flock all her life.", None),
        ],
    )
    assert [c.arguments["own_perch"] for c in calls] == [True, False]


#: A guide hired along the riverbed, there and back.
GUIDE_HIRED = [
    {"role": "user", "content": "A guide along the dry riverbed and back."},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c0", "type": "function",
     "function": {"name": "hire_guide", "arguments": {"route": "wadi", "round_trip": True}}}]},
    {"role": "tool", "tool_call_id": "c0", "name": "hire_guide", "content": "ok"},
]  # fmt: skip


def test_greetings_open_talk_and_wants_or_a_later_verb_make_an_order() -> None:
    unsure = FixedRequest(0.1)  # a request, but within SURE of the boundary
    for line in ("Peace be upon you, giver of apples!", "Good morning! Lovely apples."):
        assert run(unsure, node(), line)["calls"] == [], line
    talk = FixedRequest(-0.2)  # talk, but within SURE of the boundary
    for line in ("I'll take two apples.", "We need apples. Give me 2 apples."):
        (call,) = run(talk, node(), line)["calls"]
        assert call.tool_name == "give_item", line
    assert run(talk, node(), "Apples are nice.")["calls"] == []


def test_beside_a_place_to_says_whom_and_in_says_where() -> None:
    whom = tl.ToolParamDefinition("recipient", "string", "The name of the person it is for.")
    where = tl.ToolParamDefinition("place", "string", "The town where the recipient is.")
    line = "Same message to Bashir the farrier in Port Sabra."
    avoid = frozenset({"send", "message", "recipient", "place"})
    fill = ss.Fill("", "", ", ", line, avoid, False, place_elsewhere=True)
    assert ss.string_values(fill, whom) == ["Bashir"]
    fill = ss.Fill("", "", ", ", line, avoid, False, whom_elsewhere=True)
    assert ss.string_values(fill, where) == ["Port Sabra"]


def test_what_a_count_is_counted_in_is_not_the_thing_and_quoted_values_are_explained() -> None:
    item = tl.ToolParamDefinition("item", "string", "The soap or oil being bought.")
    fill = ss.Fill(
        "", "", ", ", "Not the lavender, the almond oil. One bottle.", frozenset({"sell"}), True,
        units=frozenset({"bar", "bottle", "jar", "flask"}),
    )  # fmt: skip
    values = ss.string_values(fill, item)
    assert "almond oil" in values and "bottle" not in values
    pools = (
        "Which bath: 'copper' is the big copper tub in the front hall; 'cedar' is the small "
        "wooden tub upstairs; 'brine' is the sea-water pool down in the cellar."
    )
    enum = ["copper", "cedar", "brine"]
    assert sb.explained(pools, enum, "A soak in the sea-water pool, please.") == ["brine"]
    assert sb.explained(pools, enum, "Is the little wooden tub upstairs free?") == ["cedar"]


GATE = tl.ToolDefinition(
    "set_gate",
    "Open or close one of the city's gates.",
    [
        tl.ToolParamDefinition("gate", "string", "Which gate.", enum=["north", "east"]),
        tl.ToolParamDefinition("open", "boolean", "true to open the gate, false to close it."),
        tl.ToolParamDefinition(
            "bar",
            "boolean",
            "true to drop the crossbar so the gate stays shut all night; false to leave it "
            "unbarred.",
        ),
    ],
)
PATROL = tl.ToolDefinition(
    "send_patrol",
    "Send a patrol of guards to walk the city.",
    [
        tl.ToolParamDefinition("guards", "integer", "How many guards to send."),
        tl.ToolParamDefinition("hours", "integer", "How many hours the patrol stays out."),
    ],
)
BOUNTY = tl.ToolDefinition(
    "post_bounty",
    "Post a bounty on a wanted person.",
    [
        tl.ToolParamDefinition("wanted", "string", "Name or description of the wanted person."),
        tl.ToolParamDefinition(
            "alive_only",
            "boolean",
            "true if the person must be brought in alive; false if dead or alive will do.",
        ),
    ],
)


#: A dialog whose last turn sent six guards out for eight hours.
PATROLLED = [
    {"role": "user", "content": "Six guards to the temple for eight hours."},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c0", "type": "function",
     "function": {"name": "send_patrol", "arguments": {"guards": 6, "hours": 8}}}]},
    {"role": "tool", "tool_call_id": "c0", "name": "send_patrol", "content": "ok"},
]  # fmt: skip


def test_spans_of_hours_are_the_hours_count_and_no_other() -> None:
    guards, hours = PATROL.parameters
    line = "Send four men down to the docks for a couple of hours."
    assert sn.numbers(line, hours) == [2]
    assert sn.numbers(line, guards, time_elsewhere=True) == [4]
    assert sn.numbers("a couple of guards for an hour", hours) == [1]
    assert sn.numbers("a couple of guards for an hour", guards, time_elsewhere=True) == [2]
    assert sn.numbers("Six guards, say eight hours.", hours) == [8]
    assert sn.numbers("Keep them out a day.", hours) == [24]
    # Without a unit of time after it, a number is no span of hours.
    assert sn.numbers("a dozen guards", hours) == [12]


def test_more_of_a_call_changes_its_first_count_and_keeps_the_others() -> None:
    lines = ("Actually, add two more guards to that.", "Two more guards for three hours.")
    calls = _calls_after([PATROL, GIVE], [(line, PATROLLED) for line in lines])
    assert [c.arguments for c in calls] == [{"guards": 2, "hours": 8}, {"guards": 2, "hours": 3}]


def _assert_flags(tool: tl.ToolDefinition, flag: str, lines: dict[str, bool]) -> None:
    """Each line calls `tool` with the boolean `flag` as given."""
    scorer = ScoringMock("mock", script=["unused"])
    for line, value in lines.items():
        (call,) = run(scorer, node(tools=[tool]), line)["calls"]
        assert call.arguments[flag] is value, line


def test_a_flag_denied_by_name_is_false_and_refuses_no_tool() -> None:
    # "don't bar it" says how the gate is closed, not that it is not: no refusal.
    assert not sw.refuses(GATE, "Shut the east gate, but don't bar it tonight.")
    assert sw.refuses(GATE, "Don't open the east gate.")
    assert sw.refuses(PATROL, "No need to send anyone to the docks.")
    _assert_flags(GATE, "bar", {"Close the east gate, but don't bar it.": False,
                                "Close the east gate and bar it.": True})  # fmt: skip


#: A tool whose boolean's true side is said in words a line may deny ("No wax needed").
SHIP = tl.ToolDefinition(
    "ship_parcel",
    "Ships a parcel by the goods wagon.",
    [
        tl.ToolParamDefinition("destination", "string", "The town the parcel goes to."),
        tl.ToolParamDefinition(
            "fragile",
            "boolean",
            "True if the parcel holds something breakable and must be marked fragile; "
            "false otherwise.",
        ),
    ],
)


def test_a_side_said_after_no_or_nothing_is_denied() -> None:
    said = {"Ship this box to Harrowgate, nothing breakable.": False,
            "Ship this box to Harrowgate, it's breakable.": True}  # fmt: skip
    _assert_flags(SHIP, "fragile", said)


def test_a_line_withdrawing_or_supposing_asks_for_nothing() -> None:
    sure = FixedRequest(1.0)  # the request step hears a request in every line
    for line in ("Never mind, I'll ride there myself tomorrow.",
                 "Don't send anything yet, I'm still writing the letter.",
                 "If I bought twenty gate passes, would you give me a discount?",
                 "I don't need the gate open, I'm camping by the stream tonight.",
                 "No need to pass any message, she already knows."):  # fmt: skip
        out = run(sure, node(tools=[PASS_MESSAGE, GATE]), line)
        assert out["calls"] == [], line
    # A clause after it that opens with a tool's verb still orders; "Don't forget" asks.
    for line in ("Never mind the pass, open the east gate.", "Don't forget to open the east gate.",
                 "I don't need a pass, just open the east gate."):  # fmt: skip
        assert run(sure, node(tools=[PASS_MESSAGE, GATE]), line)["calls"], line


def test_someone_sent_something_is_the_one_the_last_reply_named() -> None:
    reply = "Lady Serafine Ashdown would want to know at once. A raven would reach her."
    assert sn_names.proper_names(reply, frozenset()) == ["Lady Serafine Ashdown"]
    assert sn_names.POINTED.search("Then send her a raven saying bandits hold the road.")
    assert not sn_names.capitalised("Ashdown is here. A raven came.", "A")
    said = "Then send her a raven saying bandits hold the north road."
    assert sq.quoted(said) == ["bandits hold the north road"]


def test_words_offered_as_either_are_said_only_together() -> None:
    either = "dead or alive will do"
    assert sb.polar_words(either, "she is to be taken alive") == 0
    assert sb.polar_words(either, "Dead or alive, I don't care.") == 2
    assert sb.polar_words("the person must be brought in alive", "taken alive") == 1
    said = {"Post a bounty on Sela, she's to be taken alive.": True,
            "Post a bounty on Sela, dead or alive.": False}  # fmt: skip
    _assert_flags(BOUNTY, "alive_only", said)
    # The last two of a list are no such pair: any word of a list says its phrase.
    assert sb.polar_words("plain buttons of horn, bone or wood", "bone, nothing fancy") == 1
    assert sb.polar_words("plain buttons of horn, bone or wood", "horn or wood") == 2


#: A boolean whose phrase for true has a word a name may hold ("Old Bess").
KENNEL = tl.ToolDefinition(
    "kennel_hound",
    "Kennel a traveller's hound for some nights.",
    [
        tl.ToolParamDefinition("hound", "string", "The hound's name."),
        tl.ToolParamDefinition(
            "warm_corner",
            "boolean",
            "true to bed it by the stove, for hounds that are old, lame or sickly; false to bed it "
            "in the yard. False by default.",
        ),
    ],
)


def test_a_name_says_no_side_of_a_flag() -> None:
    _assert_flags(
        KENNEL,
        "warm_corner",
        {"Kennel Old Rust for two nights.": False, "Kennel my hound Rust, he's old.": True},
    )


def test_a_person_is_named_not_placed_described_or_pointed_to() -> None:
    wanted, _ = BOUNTY.parameters
    avoid = frozenset({"post", "bounty", "wanted", "alive", "only"})
    line = "That rat Black Jory robbed my uncle on the King's Road, post a bounty on him."
    assert ss.string_values(ss.Fill("", "", ", ", line, avoid, False), wanted)[0] == "Black Jory"
    line = "Post a bounty for whoever's been stealing horses from the north stables."
    values = ss.string_values(ss.Fill("", "", ", ", line, avoid, False), wanted)
    assert values == ["whoever's been stealing horses from the north stables"]
    # "him" is whom the last exchange named, where the line names no one.
    recipient = PASS_MESSAGE.parameters[0]
    spoken = "Who guards the river gate? Sergeant Bram and his lads. Good men."
    line = "Then pass a message to him: keep the dice out of sight."
    fill = ss.Fill("", "", ", ", line, frozenset({"pass", "message"}), False, spoken=spoken)
    assert ss.string_values(fill, recipient) == ["Sergeant Bram"]
    assert sv.clauses("Tell him to keep the dice out of sight.") == ["keep the dice out of sight"]


def test_a_question_first_and_no_order_after_it_is_a_question() -> None:
    sure = FixedRequest(0.3)  # a request, as the model may say of a question
    for line in ("What's the pay like for a gate guard? Asking for my cousin.",
                 "Can I ask who I should talk to about joining the guard?"):  # fmt: skip
        assert run(sure, node(tools=[PATROL]), line)["calls"] == [], line
    # An order after the question, or a question asking for something, still calls.
    for line in ("Are you free? Send two guards to the docks.",
                 "Could you send two guards to the docks? There's trouble."):  # fmt: skip
        (call,) = run(sure, node(tools=[PATROL]), line)["calls"]
        assert call.tool_name == "send_patrol", line


class FirstSentenceAsks(FixedRequest):
    """A scorer whose request step hears talk in any line with news of a fair in it."""

    async def score_choices(
        self, prompt: str, choices: Sequence[str], *, greedy: bool = False, agent_id: int = 0
    ) -> list[float]:
        if list(choices) == [" request\n", " talk\n"]:
            line = prompt.rsplit("Player: ", 1)[1].split("\n", 1)[0]
            return [-1.0 if "fair" in line else 1.0, 0.0]
        return await super().score_choices(prompt, choices, greedy=greedy, agent_id=agent_id)


def test_an_order_whose_reason_is_news_is_asked_alone() -> None:
    scorer = FirstSentenceAsks(0.0)
    line = "Send a dozen guards for three hours. The harvest fair is starting."
    (call,) = run(scorer, node(tools=[PATROL]), line)["calls"]
    assert call.arguments == {"guards": 12, "hours": 3}
    # News first: no order opens the line, so nothing is asked again.
    assert run(scorer, node(tools=[PATROL]), "The fair is on. I love a fair.")["calls"] == []


def test_a_party_is_counted_and_a_span_said_whole_or_against_the_last_call() -> None:
    guests = tl.ToolParamDefinition("guests", "integer", "How many people use the room.")
    hours = PATROL.parameters[1]
    line = "A private room for me and my wife, please. Three hours should do."
    assert sn.numbers(line, guests, time_elsewhere=True) == [2]
    assert sn.numbers("For me, my wife and our son.", guests) == [3]
    assert sn.numbers("My brother and I.", guests) == [2]
    assert sn.numbers("me and my wife", COUNT) == []  # a count of things counts no party
    assert sn.numbers("A room for a whole day and night.", hours) == [24]
    lines = ("And send guards for twice as long.", "And send twice as many guards.")
    calls = _calls_after([PATROL, GIVE], [(line, PATROLLED) for line in lines])
    assert [c.arguments["hours"] for c in calls] == [16, 8]
    assert calls[1].arguments["guards"] == 12


def test_a_name_after_someones_kin_is_no_address() -> None:
    owner = tl.ToolParamDefinition("owner", "string", "The owner's name.")
    avoid = frozenset({"store", "cargo", "owner"})
    fill = ss.Fill("", "", ", ", "Same again for her sister, Wenna Orrey.", avoid, False)
    assert "Wenna Orrey" in ss.string_values(fill, owner)
    fill = ss.Fill("", "", ", ", "Put it on my tab, Ilse.", avoid, False)
    assert "Ilse" not in ss.string_values(fill, owner)


def test_a_place_goes_on_with_the_street_it_is_on() -> None:
    where = tl.ToolParamDefinition("place", "string", "Where the runner should go.")
    line = "Go find Widow Harrow at the fish market on Cobble Lane and bring her here."
    fill = ss.Fill("", "", ", ", line, frozenset({"send", "runner", "place"}), False)
    assert "fish market on Cobble Lane" in ss.string_values(fill, where)


def test_like_is_no_word_of_a_side() -> None:
    hot = "heat it as hot as the boilers allow, for those who like it scalding"
    assert sb.polar_words(hot, "I'd like a soak, not too warm.") == 0


def test_an_explanation_may_open_with_any_verb() -> None:
    jobs = (
        "The work: 'roustabout' hauls canvas and raises the big top; 'barker' stands at the "
        "gate calling in the crowds; 'groom' mucks out the animals."
    )
    enum = ["roustabout", "barker", "groom"]
    assert sb.explained(jobs, enum, "I can haul canvas and raise the top.") == ["roustabout"]


def test_asking_to_be_told_is_talk_and_a_want_anywhere_is_an_order() -> None:
    sure = FixedRequest(0.8)
    assert run(sure, node(tools=[PASS_MESSAGE]), "Tell me a joke, friend.")["calls"] == []
    line = "Could you tell me where the nearest inn is?"
    assert run(sure, node(tools=[PASS_MESSAGE]), line)["calls"] == []
    unsure = FixedRequest(-0.2)  # talk, but within SURE of the boundary
    (call,) = run(unsure, node(), "It's my birthday and we'd love two apples.")["calls"]
    assert call.tool_name == "give_item"


def test_whom_a_line_asks_to_be_told_and_an_enum_pointed_to() -> None:
    recipient = PASS_MESSAGE.parameters[0]
    line = "Run into town and let Mistress Harrow at the bakery know that we need buns."
    fill = ss.Fill("", "", ", ", line, frozenset({"pass", "message"}), False)
    assert ss.string_values(fill, recipient) == ["Mistress Harrow at the bakery"]
    feed = tl.ToolDefinition(
        "feed_animal",
        "Have an animal fed.",
        [tl.ToolParamDefinition("animal", "string", "'ghost' is the white tiger; 'bramble' is "
                                "the brown bear.", enum=["ghost", "bramble"])],
    )  # fmt: skip
    asked = [
        {"role": "user", "content": "Who is the hungriest tonight?"},
        {"role": "assistant", "content": "That'll be Bramble, our dancing bear."},
    ]
    (call,) = _calls_after([feed], [("Then feed him.", asked)])
    assert call.arguments == {"animal": "bramble"}


def test_a_half_dozen_is_six() -> None:
    count = tl.ToolParamDefinition("quantity", "integer", "How many tokens.")
    assert sn.numbers("Could I buy a half dozen luck tokens?", count) == [6]
    assert sn.numbers("Half a dozen, please.", count) == [6]


#: A tool whose boolean's description names its default ("false (the default)").
RUNNER = tl.ToolDefinition(
    "send_runner",
    "Send a runner through town with a spoken message.",
    [
        tl.ToolParamDefinition("recipient", "string", "The name of the person to tell."),
        tl.ToolParamDefinition(
            "wait_for_answer",
            "boolean",
            "True if the runner should wait and bring back a reply; false (the default) if "
            "they just deliver it and return.",
        ),
    ],
)


def test_a_flag_the_line_says_nothing_of_is_its_described_default_and_unread() -> None:
    phrases = sb.boolean_phrases(RUNNER.parameters[1].description)
    assert phrases == (
        "the runner should wait and bring back a reply",
        "they just deliver it and return",
    )
    assert sb.described_default(RUNNER.parameters[1].description) is False
    assert sb.described_default("Whether to hurry; defaults to true.") is True
    assert sb.described_default("True to hurry, false to dawdle.") is None
    stable = "True if their horse should be stabled as well; false if not (default false)."
    assert sb.described_default(stable) is False
    assert sb.boolean_phrases(stable) == ("their horse should be stabled as well", "not")
    # Waiting for a reply is no urgency; "cannot wait" is.
    assert not sc.is_urgency(RUNNER.parameters[1])
    assert sc.is_urgency(tl.ToolParamDefinition("now", "boolean", "true if it cannot wait."))
    assert sc.is_urgency(tl.ToolParamDefinition("loud", "boolean", "True to ring out at once."))
    back = "True if it stays open for the way back; false if it closes once they are across."
    assert not sc.is_urgency(tl.ToolParamDefinition("keep_open", "boolean", back))
    scorer = ScoringMock("mock", script=["unused"])
    (call,) = run(scorer, node(tools=[RUNNER]), "Send a runner to tell Gareth I'm late.")["calls"]
    assert call.arguments["wait_for_answer"] is False
    assert call.unread_arguments == ("wait_for_answer",)
    # A side the line says is read, not defaulted.
    line = "Send a runner to Gareth and wait for his reply."
    (call,) = run(scorer, node(tools=[RUNNER]), line)["calls"]
    assert call.arguments["wait_for_answer"] is True and call.unread_arguments == ()
    # So is a flag the line names ("wait for answer"), whatever its phrases say.
    line = "Send a runner to Gareth, wait for answer."
    (call,) = run(scorer, node(tools=[RUNNER]), line)["calls"]
    assert call.unread_arguments == ()


def test_a_correction_after_a_call_is_a_request_however_unsure() -> None:
    unsure = FixedRequest(-0.2)  # talk, but within SURE of the boundary
    graph = graph_of(
        ("detect", node(tools=[HIRE, GIVE])), ("answer", tl.CannedResponseParams(lines=["done"]))
    )
    with tl.Engine(unsure) as engine:
        agent = engine.create_agent(graph, dialog=FOUR_HIRED)
        calls: list[tl.ToolCallEvent] = []
        agent.set_on_tool_call_event(calls.append)
        agent.send_message("Actually, make it seven. They all worked hard.")
    assert [(c.tool_name, c.arguments["workers"]) for c in calls] == [("hire_hands", 7)]


def test_a_question_of_what_would_happen_or_where_to_find_asks_for_nothing() -> None:
    sure = FixedRequest(1.0)  # the request step hears a request in every line
    for line in ("If my horse went lame, would you be able to heal it?",
                 "Where can I find the road to Kell?",
                 "How would you pass a message to the mill?"):  # fmt: skip
        assert run(sure, node(tools=[PASS_MESSAGE]), line)["calls"] == [], line


def test_a_person_is_said_whole_with_who_they_are_and_names_said_together() -> None:
    names = tl.ToolParamDefinition("names", "string", "The names of the people to wed.")
    for_whom = tl.ToolParamDefinition("for_whom", "string", "The person the candle is for.")
    line = "Mira Haldane and Jory Finch wish to be wed."
    assert sn_names.people_said_whole(line, names, ["x"], frozenset()) == [
        "Mira Haldane and Jory Finch"
    ]
    # A sentence may open with its verb: "Tell" is no part of a name.
    assert sn_names.people_said_whole("Wed Mira and Jory.", names, [], frozenset()) == [
        "Mira and Jory"
    ]
    line = "My husband Bram sails tomorrow. Light a candle for him."
    assert sn_names.people_said_whole(line, for_whom, ["husband"], frozenset()) == ["husband Bram"]
    # Not what another argument took, and not for an argument that is no person.
    assert sn_names.people_said_whole(line, for_whom, ["x"], frozenset({"bram"})) == ["x"]
    item = tl.ToolParamDefinition("item", "string", "The object to bless.")
    assert sn_names.people_said_whole(line, item, ["x"], frozenset()) == ["x"]


def test_a_line_taking_up_an_offer_means_whom_the_exchange_named() -> None:
    names = tl.ToolParamDefinition("names", "string", "The name or names of those written in.")
    spoken = (
        "My wife and I had a son last night! We're calling him Pip. "
        "Blessings on the little one! Shall I write his naming in the register?"
    )
    line = "Yes, do that, and shout it from the steps while you're at it."
    fill = ss.Fill("", "", ")", line, frozenset({"record", "rite"}), False, spoken=spoken)
    assert ss.string_values(fill, names) == ["Pip"]


def test_an_argument_does_not_widen_over_what_another_took() -> None:
    tend = tl.ToolDefinition(
        "tend_ailment",
        "Treat a sick person.",
        [
            tl.ToolParamDefinition("patient", "string", "The person who needs care."),
            tl.ToolParamDefinition("complaint", "string", "The illness, in the visitor's words."),
        ],
    )
    scorer = ScoringMock("mock", script=["unused"])
    (call,) = run(scorer, node(tools=[tend]), "My son Tam has a fever, tend to him.")["calls"]
    assert call.arguments["patient"] == "son Tam"
    assert "Tam" not in call.arguments["complaint"].split(), call.arguments


def test_a_line_sending_the_last_call_elsewhere_keeps_its_message_and_takes_the_new_place() -> None:
    place = tl.ToolParamDefinition("place", "string", "Where in town the runner finds them.")
    message = tl.ToolParamDefinition("message", "string", "The words to deliver.")
    line = (
        "Wait, Corwin's not at the mill today, he's at the market square. Send them there instead."
    )
    avoid = frozenset({"send", "runner", "place", "message"})
    at = ss.Fill("", "", ", ", line, avoid, False, ("the mill",), whom_elsewhere=True)
    assert ss.string_values(at, place) == ["market square"]
    said = ss.Fill("", "", ")", line, avoid, False, ("the wedding is moved to Sunday",))
    assert ss.string_values(said, message) == ["the wedding is moved to Sunday"]
    # A line that relays something new is read: "instead" or not.
    line = "Send them to the market square instead, saying the wedding is off."
    new = ss.Fill("", "", ")", line, avoid, False, ("the wedding is moved to Sunday",))
    assert ss.string_values(new, message)[0] == "the wedding is off"


def test_how_long_and_auxiliaries_say_nothing_of_a_tool() -> None:
    candles = tl.ToolDefinition(
        "light_candles",
        "Light candles and pray for someone.",
        [
            tl.ToolParamDefinition("for_whom", "string", "The person the candles are for."),
            tl.ToolParamDefinition("count", "integer", "How many candles."),
            tl.ToolParamDefinition(
                "prayer", "string", "'remembrance' for someone who has died.", enum=["remembrance"]
            ),
        ],
    )
    tend = tl.ToolDefinition(
        "tend_ailment",
        "Treat a sick person.",
        [tl.ToolParamDefinition("patient", "string", "The person who needs care.")],
    )
    tools = [candles, tend]
    # "three days" is how long, and no person is a thing counted.
    assert sw.counted_words(tools, "She's had a headache for three days now.") == [0.0, 0.0]
    assert sw.counted_words(tools, "Light three candles.")[0] > 0
    # "has" in "someone who has died" is no word of the tool's.
    assert sw.shared_words(tools, "Old Mother Greave has taken a bad fall.") == [0.0, 0.0]


def test_a_proper_name_another_argument_took_is_not_this_ones() -> None:
    complaint = tl.ToolParamDefinition("complaint", "string", "The illness or injury.")
    line = "Old Mother Greave has taken a bad fall in her cottage by the mill."
    avoid = frozenset({"tend", "complaint"})
    fill = ss.Fill("", "", ")", line, avoid, False, taken=frozenset({"mother", "greave"}))
    values = ss.string_values(fill, complaint)
    assert "taken a bad fall" in values and "Mother Greave" not in values


def test_a_question_asking_to_do_something_to_a_thing_in_particular_is_a_request() -> None:
    unsure = FixedRequest(-0.2)  # talk, but within SURE of the boundary
    tools = [PASS_MESSAGE, GATE]
    for line in (
        "The east gate is stuck, can you open it?",
        "Could you look at it, the east gate?",
    ):
        (call,) = run(unsure, node(tools=tools), line)["calls"]
        assert call.tool_name == "set_gate", line
    # Not a question of what the NPC can believe, nor one about no thing in particular.
    for line in ("Can you believe this weather?", "Can you open gates?"):
        assert run(unsure, node(tools=tools), line)["calls"] == [], line
    # Sure talk stays talk.
    assert run(FixedRequest(-2.0), node(tools=tools), "Can you open it?")["calls"] == []


def test_a_name_runs_across_a_point_only_after_a_title() -> None:
    line = "My brother and I want to see the old watchtower on Grey Ridge. Could you guide us?"
    assert sn_names.with_street(line, "old watchtower") == "old watchtower on Grey Ridge"
    assert sn_names.proper_names("Thanks, Pip. Blessings on you, Mr. Hobb.", frozenset()) == [
        "Pip",
        "Mr. Hobb",
    ]


def test_a_thing_does_not_start_with_what_the_tool_counts_in() -> None:
    beast = tl.ToolParamDefinition("beast", "string", "The creature the bounty is for.")
    avoid = frozenset({"post", "bounty", "beast", "reward", "urgent"})
    units = frozenset({"reward", "offered", "gold", "crown"})
    for line, thing in (
        ("I'd like to post a bounty of thirty gold on the boar that wrecked our camp.", "boar"),
        ("There's a wyvern over the meadow! Forty crowns is all I have, post it quick!", "wyvern"),
    ):
        fill = ss.Fill("", "", ")", line, avoid, True, units=units)
        values = ss.string_values(fill, beast)
        assert thing in values, line
        assert not [v for v in values if v.split()[0].lower() in ("gold", "crowns")], values


def test_a_thing_said_as_where_it_came_from_is_no_title() -> None:
    line = "Something's been taking sheep from the Lowe farm. Put up a bounty for the grey wolf."
    assert not sn_names.is_titled(line, "Lowe")
    assert sn_names.is_titled("Wake the Prince, the bells are ringing.", "Prince")


def test_a_message_may_follow_a_say_that_opens_a_sentence() -> None:
    line = "Could your bird carry a note to Captain Rusk? Just say the north road is blocked."
    assert sv.clauses(line) == ["the north road is blocked"]
    assert sv.clauses("Send word to Mother, say I am well.") == ["I am well"]
    assert sv.clauses("I must say, your bird is lovely.") == []


def test_a_message_leaves_out_what_asks_politely_after_it() -> None:
    line = "Send my cousin word that the mare has foaled, would you?"
    assert sv.clauses(line) == ["the mare has foaled"]
    assert sv.clauses("Tell her that the well is dry, please.") == ["the well is dry"]
    assert sq.quoted("Send a raven saying the pass is snowed in, will you?") == [
        "the pass is snowed in"
    ]
    # A comma inside the message stays.
    assert sv.clauses("Tell him that it's late, and the gate is shut.") == [
        "it's late, and the gate is shut"
    ]


def test_a_change_pointing_back_at_the_last_things_may_mean_it_again() -> None:
    animal = tl.ToolParamDefinition("animal", "string", "The game the visitor brought in.")
    line = "On second thought, smoke it instead, I'll eat it on the road."
    avoid = frozenset({"prepare", "game", "animal", "treatment", "smoke", "roast"})
    fill = ss.Fill("", "", ", ", line, avoid, False, earlier=("this pheasant",))
    assert "this pheasant" in ss.string_values(fill, animal)
    # A line that names another thing without pointing back names that one.
    fill = ss.Fill("", "", ", ", "Roast the hare too.", avoid, False, earlier=("this pheasant",))
    assert "this pheasant" not in ss.string_values(fill, animal)


def test_a_place_is_its_capitalised_name_not_the_words_after_it_nor_a_verb() -> None:
    where = tl.ToolParamDefinition("destination", "string", "The place to be guided to.")
    avoid = frozenset({"guide", "party", "destination", "size", "set", "out"})
    line = "Would you lead the three of us to Mossbank Falls first thing tomorrow?"
    values = ss.string_values(ss.Fill("", "", ", ", line, avoid, True), where)
    assert "Mossbank Falls" in values and "Mossbank Falls first thing" not in values
    line = "My brother and I want to see the old watchtower on Grey Ridge. Could you guide us?"
    values = ss.string_values(ss.Fill("", "", ", ", line, avoid, True), where)
    assert not [v for v in values if v.startswith("see")], values
    line = "Guide us to the charcoal burners' camp tonight, half a dozen of us."
    values = ss.string_values(ss.Fill("", "", ", ", line, avoid, True), where)
    assert "charcoal burners' camp" in values and not [v for v in values if "tonight" in v]
    line = "There's four of us and we need to reach Wren's Crossing before the rain does."
    values = ss.string_values(ss.Fill("", "", ", ", line, avoid, True), where)
    assert "Wren's Crossing" in values and not [v for v in values if "before" in v]
    # A name may go on with lowercase words inside it.
    line = "Guide us to Bir el Hamra at first light."
    assert "Bir el Hamra" in ss.string_values(ss.Fill("", "", ", ", line, avoid, True), where)


def test_a_time_of_day_said_in_other_words_explains_its_value() -> None:
    said = (
        "When to leave: 'dawn' for first light or early tomorrow morning, 'midday' for around "
        "noon, 'dusk' for evening or nightfall, 'now' for leaving immediately."
    )
    times = ("dawn", "midday", "dusk", "now")
    assert sb.explained(said, times, "Guide us to the camp tonight once the sun's down.") == [
        "dusk"
    ]
    assert sb.explained(said, times, "Lead us out at sunrise.") == ["dawn"]


def test_a_default_said_as_what_holds_when_the_visitor_says_nothing() -> None:
    for said in (
        "True if the portal stays open for the way back. If the visitor says nothing about "
        "coming back, it's false.",
        "True to wake the listener. Unless the visitor stresses haste or danger, it's false.",
        "True to bind it for good. When the visitor doesn't say, take it as false.",
    ):
        assert sb.described_default(said) is False, said
    assert sb.described_default("True if it is urgent, false if not.") is None


def test_a_flag_denied_with_dont_make_it_is_no_correction() -> None:
    assert sse.CORRECTION.search("Sharpen it, but don't make it permanent.") is None
    assert sse.CORRECTION.search("Actually, make it frost instead.") is not None


def test_the_tools_own_name_says_no_side_of_a_flag() -> None:
    keep_open = tl.ToolParamDefinition(
        "keep_open",
        "boolean",
        "True if the portal must stay open so they can come back; false if it closes once they "
        "are across. If the visitor says nothing about coming back, it's false.",
    )
    portal = tl.ToolDefinition("open_portal", "Open a portal to a distant place.", [keep_open])
    said = {"Open a portal to Highgate for me and my two brothers.": False,
            "Open a portal to Highgate and keep it open for our way back.": True}  # fmt: skip
    _assert_flags(portal, "keep_open", said)


def test_a_saying_with_on_in_it_says_no_side() -> None:
    lasting = ("bind it into the blade for good", "the ordinary kind that wears off")
    assert sb.opposed_sides(lasting, "Actually, on second thought, make it frost.") == [0, 0]
    assert sb.opposed_sides(lasting, "Hold on, there's three of us.") == [0, 0]
    assert sb.opposed_sides(("turn it on", "turn it off"), "Turn the lamp on.")[0] > 0


def test_on_or_off_before_what_it_is_on_and_a_phrasal_off_say_no_side() -> None:
    lasting = ("bind it into the item for good", "the ordinary kind that wears off")
    line = "Can you put a frost enchantment on my longsword? Just a temporary one is fine."
    assert sb.opposed_sides(lasting, line) == [0, 0]
    line = "I'd like this silver ring enchanted to ward off spirits, and bind it for good please."
    assert sb.polar_words(lasting[0], line) > sb.polar_words(lasting[1], line)
    # After a verb that takes it, "on the" and "off the" still say a side.
    assert sb.polar_words("turn it on", "Switch on the lantern.") > 0
    assert sb.polar_words("put it out", "Turn off the lamp.") > 0
    assert sb.polar_words("turn it on", "Put the kettle on the stove.") == 0


def test_a_party_counts_the_members_it_numbers() -> None:
    travellers = tl.ToolParamDefinition(
        "travellers", "integer", "How many people will step through, counting the visitor."
    )
    assert sn.numbers("Open a portal to Highgate for me and my two brothers.", travellers) == [3]
    assert sn.numbers("For me and my 3 cousins, to Kell.", travellers) == [4]
    assert sn.numbers("Me, my wife and our son.", travellers) == [3]
    assert sn.numbers("book a hunt w/ the merlin for me n my wife", travellers) == [2]
    assert sn.numbers("For me & my 3 cousins.", travellers) == [4]


def test_someones_kin_stands_for_the_name_after_it() -> None:
    target = tl.ToolParamDefinition("target", "string", "Who or what carries the curse.")
    line = "My son Pell's been wasting away since the hedge-witch glared at him."
    assert sn_names.people_said_whole(line, target, ["son", "wasting"], frozenset()) == [
        "Pell",
        "wasting",
    ]


def test_a_verb_after_an_auxiliary_is_no_thing() -> None:
    line = "Someone's hexed my warehouse, I swear. Can you lift the curse on it?"
    assert sn_names.verb_led(line, "hexed my warehouse")
    assert sn_names.verb_led("He's tied up outside.", "tied up")
    assert sn_names.verb_led("They've cursed my boat.", "cursed my boat")
    assert not sn_names.verb_led("Old Mother Greave has taken a bad fall.", "taken a bad fall")
    assert not sn_names.verb_led("Lift the curse on this hexed ring.", "hexed ring")
    target = tl.ToolParamDefinition("target", "string", "Who or what carries the curse.")
    fill = ss.Fill("", "", ")", line, frozenset({"lift", "curse", "target"}), False)
    values = ss.string_values(fill, target)
    assert "warehouse" in values and not [v for v in values if v.startswith("hexed")], values


def test_a_message_is_what_the_line_asks_to_let_someone_know() -> None:
    line = "Use the speaking crystal to let Old Tobin know his grandson arrived safe. No rush."
    assert sv.clauses(line) == ["his grandson arrived safe"]
    assert sv.clauses("Let her know by falcon that the shipment is late.") == [
        "the shipment is late"
    ]
    assert sv.clauses("Let me know when it's done.") == []
    message = tl.ToolParamDefinition("message", "string", "What the message says.")
    fill = ss.Fill("", "", ")", line, frozenset({"send", "message", "recipient"}), False)
    assert ss.string_values(fill, message) == ["his grandson arrived safe"]
    recipient = tl.ToolParamDefinition("recipient", "string", "Who should hear the message.")
    assert "Old Tobin" in ss.string_values(fill, recipient)


def test_a_time_of_day_says_the_side_it_is_of() -> None:
    evening = ("the evening show by torchlight", "the afternoon matinee")
    for line, side in (
        ("A dozen ringside seats for tonight, the lads have earned a treat.", 0),
        ("Eight seats for the afternoon show in the stands.", 1),
        ("Two for the matinee, please.", 1),
    ):
        said = [sb.polar_words(phrase, line) for phrase in evening]
        assert said[side] > said[1 - side], (line, said)


def test_a_denial_ends_at_a_dash() -> None:
    line = "Not the matinee \u2014 three tickets for the evening show, up in the stands."
    assert sb.DENIED.search(line).group(0) == "Not the matinee "


def test_a_name_is_said_with_what_it_is_of() -> None:
    original = tl.ToolParamDefinition("original", "string", "The map to be copied.")
    line = "Could you make three copies of this old map of the Saltmarsh Road? No rush."
    fill = ss.Fill("", "", ")", line, frozenset({"copy", "map", "original", "copies"}), True)
    assert ss.string_values(fill, original) == ["old map of the Saltmarsh Road"]
    assert sn_names.with_noun("We're selling the orchard on Brindle Hill.", "Brindle Hill") == (
        "orchard on Brindle Hill"
    )
    # Not across words that say who or what does something ("the man who lives on").
    assert sn_names.with_noun("Find the man who lives on Cobble Lane.", "Cobble Lane") == (
        "Cobble Lane"
    )


def test_so_many_of_us_counts_the_party() -> None:
    party = tl.ToolParamDefinition("party_size", "integer", "How many travellers in all.")
    line = "Pilgrims for the Shrine of Saint Orla, 5 of us. Can one of your guides lead us?"
    assert sn.numbers(line, party, time_elsewhere=True) == [5]
    assert sn.numbers("Hold on, there's three of us.", party) == [3]


def test_a_message_may_follow_tell_her_without_that() -> None:
    line = "Send a courier to my wife Linnea, tell her the ship is delayed and I'll be home."
    assert sv.clauses(line) == ["the ship is delayed and I'll be home"]
    assert sv.clauses("Tell her that the bread is ready.") == ["the bread is ready"]


def test_i_meant_corrects_the_last_call() -> None:
    assert sse.opens_with_correction("Sorry, I meant the west field, not the north one.")
    assert not sse.opens_with_correction("What I meant to ask is where the road goes.")
    # Only words like "Actually" or "No, wait" come before a correction that opens a line.
    assert sse.opens_with_correction("No, wait, make that six.")
    assert not sse.opens_with_correction("Could you make it blue, please?")


def test_whenever_they_are_ready_leaves_the_time_to_the_one_asked() -> None:
    assert sc.says_unhurried("Two copies, please, whenever they're ready.")
    assert not sc.says_unhurried("I need them ready before the tide turns.")


COPY = tl.ToolDefinition(
    "copy_map",
    "Make fair copies of a map the visitor brings.",
    [
        tl.ToolParamDefinition("original", "string", "The map to be copied."),
        tl.ToolParamDefinition("copies", "integer", "How many copies to make."),
    ],
)


def test_what_the_tools_name_calls_the_thing_is_said_with_it() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    (call,) = run(scorer, node(tools=[COPY]), "Copy this treasure map for me, just the one.")[
        "calls"
    ]
    assert call.arguments == {"original": "treasure map", "copies": 1}


def test_a_correction_by_i_meant_names_the_new_value() -> None:
    site = tl.ToolParamDefinition("site", "string", "The land to survey.")
    line = "Sorry, I meant the west field, not the north one."
    values = _read(site, line, {"survey", "land", "site"}, earlier=("our north field",))
    assert "west field" in values and "our north field" not in values


def test_a_line_that_names_no_place_goes_where_the_last_call_went() -> None:
    where = tl.ToolParamDefinition("destination", "string", "Where the guide should lead.")
    avoid = {"hire", "guide", "destination"}
    line = "And we'll want him to bring us back too, if that's all right."
    assert _read(where, line, avoid, earlier=("Elderby",)) == ["Elderby"]
    line = "My brother Edric wants one too, same trip."
    assert _read(where, line, avoid, earlier=("the Salt Flats",)) == ["the Salt Flats"]
    # A place it names is the new one.
    assert "Kessel Ford" in _read(where, "Same again, to Kessel Ford.", avoid, earlier=("Elderby",))


def test_a_place_is_said_with_its_kind_and_a_route_whole() -> None:
    line = "Send a letter to Master Fenn at the Lantern Street bakery saying I'll pay next week."
    assert sn_names.with_kind(line, "Lantern Street") == "Lantern Street bakery"
    assert sn_names.with_kind("Take it to the Old Mill tonight.", "Old Mill") == "Old Mill"
    assert sn_names.with_kind("the Crimson Pike sails at dawn", "Crimson Pike") == "Crimson Pike"
    region = tl.ToolParamDefinition("region", "string", "The town or route the map covers.")
    line = "Could you draw me a road map from Brinehaven to Kessel Ford? I'm walking it."
    fill = ss.Fill("", "", ")", line, frozenset({"draw", "map", "region"}), False)
    assert ss.string_values(fill, region) == ["from Brinehaven to Kessel Ford"]


def test_a_count_of_weeks_counts_weeks_and_a_brace_is_two() -> None:
    weeks = tl.ToolParamDefinition("weeks", "integer", "How many weeks. A fortnight is 2 weeks.")
    assert not sn.counts_days(weeks)  # "fortnight" says no nights
    assert sn.numbers("Two weeks, and she can stay here with you.", weeks) == [2]
    assert sn.numbers("A fortnight, and keep her here.", weeks) == [2]
    nights = tl.ToolParamDefinition("nights", "integer", "How many nights the dog stays.")
    assert sn.numbers("Board Old Bess for a fortnight.", nights) == [14]
    count = tl.ToolParamDefinition("count", "integer", "How many dogs to sell.")
    assert sn.numbers("I'd like a brace of your hunting hounds.", count) == [2]


def test_a_count_of_time_is_told_by_whole_words_of_its_name_and_description() -> None:
    def param(name: str, description: str) -> tl.ToolParamDefinition:
        return tl.ToolParamDefinition(name, "integer", description)

    # "fortnight", "tonight" and "today" hold no unit of time; a name's parts are words.
    assert not sn.counts_time(param("dogs", "How many dogs to board tonight."))
    assert not sn.counts_time(param("count", "Copies wanted today, one a fortnight at most."))
    assert sn.counts_time(param("duration_days", "How long the ward holds."))
    assert sn.counts_time(param("length", "How many weeks the training lasts."))
    # A count of weeks said only in its description reads "two weeks" as 2, not 14.
    assert sn.numbers("Two weeks should do it.", param("length", "How many weeks.")) == [2]


#: A tool that relays words the player gives, and where to cry them.
CRY = tl.ToolDefinition(
    "cry_news",
    "Cry news in the streets.",
    [
        tl.ToolParamDefinition("text", "string", "The words to cry."),
        tl.ToolParamDefinition("place", "string", "Where to cry them: the market or the quay."),
    ],
)


def _after_call(line: str, tool: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """A dialog of one exchange: `line`, and the call of `tool` it made, answered "ok"."""
    call = {"id": "c0", "type": "function", "function": {"name": tool, "arguments": arguments}}
    return [
        {"role": "user", "content": line},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c0", "name": tool, "content": "ok"},
    ]


#: The news of the mill, cried at the market.
MILL_CRIED = _after_call(
    "The mill is closed on Tuesday. Cry it at the market.",
    "cry_news",
    {"text": "The mill is closed on Tuesday", "place": "market"},
)


def test_words_to_relay_may_be_the_sentence_an_order_points_at() -> None:
    avoid = frozenset({"cry", "news", "text", "place"})
    line = "Hob! The mill is closed on Tuesday. Cry it at the market twice."
    assert sse.pointed_at(line, avoid) == "The mill is closed on Tuesday"
    line = "Could you put that up by the chapel? The fair starts on Monday at noon."
    assert sse.pointed_at(line, avoid) == "The fair starts on Monday at noon"
    # No order that points, or nothing but questions, or the tool's own words: nothing.
    assert sse.pointed_at("The mill is closed on Tuesday. Cry the news.", avoid) == ""
    assert sse.pointed_at("Is the mill closed on Tuesday? Cry it.", avoid) == ""
    assert sse.pointed_at("Cry the news at the market. Cry it twice.", avoid) == ""
    assert sse.pointed_at("What do you think about it? The mill is old now.", avoid) == ""
    # A line that changes or repeats the last call keeps its words, unless it gives new ones.
    assert sse.redoes("No wait, give it out at the quay.") and sse.redoes("And the same to Tom.")
    assert not sse.redoes("And cry that the fair is off.") and not sse.redoes("Samuel says hi.")
    calls = _calls_after(
        [CRY, GIVE],
        [
            ("The mill is closed on Tuesday. Cry it at the market.", None),
            ("No wait, cry it at the quay instead.", MILL_CRIED),
            ("Actually, cry that the bridge is shut.", MILL_CRIED),
        ],
    )
    assert [c.arguments["text"] for c in calls] == [
        "The mill is closed on Tuesday",
        "The mill is closed on Tuesday",
        "the bridge is shut",
    ]


#: A boolean whose phrase for true says "cannot".
ROOM = tl.ToolDefinition(
    "let_room",
    "Let a room at the inn.",
    [
        tl.ToolParamDefinition("guest", "string", "The guest's name."),
        tl.ToolParamDefinition(
            "ground_floor",
            "boolean",
            "true if the guest cannot climb stairs; false for a room upstairs.",
        ),
    ],
)


def test_cannot_in_a_flags_phrase_is_said_by_a_line_that_cant() -> None:
    _assert_flags(ROOM, "ground_floor", {"Let a room for my mother, she can't climb stairs.": True})


def test_a_count_the_line_does_not_give_is_the_one_its_description_names() -> None:
    said = (
        ("How many times to cry it. If the visitor does not say, 1.", 1),
        ("How many strokes to ring. If the visitor gives no number, 12.", 12),
        ("The reward in shillings; 0 if the visitor offers none.", 0),
        ("How many days; if the player says nothing, assume three.", 3),
        ("How many guards (defaults to 2).", 2),
        ("How many jars to sell.", None),
    )
    for description, count in said:
        assert sn.described_count(description) == count, description
    reward = tl.ToolDefinition(
        "post_reward",
        "Post a reward for a lost child.",
        [
            tl.ToolParamDefinition("child", "string", "The child's name."),
            tl.ToolParamDefinition(
                "shillings", "integer", "The reward; 0 if the visitor offers none."
            ),
        ],
    )
    calls = _calls_after([reward, GIVE], [("Post a reward for my son Davy, he's six.", None)])
    assert [c.arguments["shillings"] for c in calls] == [0]
    # Someone's age is no count of things, but for an argument described by age.
    coins = tl.ToolParamDefinition("coins", "integer", "How many coins.")
    assert sn.numbers("My son Davy, he's six, lost 3 coins.", coins) == [3]
    strokes = tl.ToolParamDefinition("strokes", "integer", "One stroke per year of their age.")
    assert sn.numbers("My grandfather passed. He was eighty-seven.", strokes) == [87]
    assert sn.numbers("She's 73 years old.", coins) == []


def test_more_ways_of_opening_a_correction() -> None:
    for line in ("Hang on, better make it two hundred.", "On second thought, make it three."):
        assert sse.opens_with_correction(line), line


def test_a_line_that_says_it_cannot_wait_is_urgent() -> None:
    for line in ("Actually it can't wait \u2014 the cask's going at noon. Cry it right now.",
                 "Send four and go now.", "Fetch the healer at once!", "Hurry!",
                 "quick, cry it round the whole town", "It's an emergency.",
                 "Come as soon as you can."):  # fmt: skip
        assert sc.says_urgent(line), line
    for line in ("No hurry, but the roof leaks.", "I can't wait to see her.",
                 "A quick word with the miller, please.", "Send word to my sister.",
                 "It isn't urgent."):  # fmt: skip
        assert not sc.says_urgent(line), line


def test_a_flag_of_urgency_takes_what_the_line_says_over_the_model() -> None:
    # The scorer answers by the words of its choices the line has: "false" is the flag's
    # value, so without the rule the first line is not urgent; "urgent" in a line that denies
    # it stays false.
    urgent = tl.ToolParamDefinition("urgent", "boolean", "True if it cannot wait.")
    text = tl.ToolParamDefinition("text", "string", "What to cry.")
    cry = tl.ToolDefinition("cry_message", "Cry a message in the square.", [text, urgent])
    scorer = ScoringMock("mock", script=["unused"])
    for line, expected in (
        ("Cry that the false alarm is over, right now!", True),
        ("Cry that the fair opens. No hurry, it isn't urgent.", False),
    ):
        (call,) = run(scorer, node(tools=[cry]), line)["calls"]
        assert call.arguments["urgent"] is expected, line


def test_an_order_in_so_many_words_asks_whatever_news_follows_it() -> None:
    assert sse.gives_order("Put 3 hounds on the trail of the thief.")
    assert sse.gives_order("Just wash these shirts, please.")
    for sentence in ("Take care.", "Give my love to your mother.", "Put it where, exactly?",
                     "The thief ran off past the tannery."):  # fmt: skip
        assert not sse.gives_order(sentence), sentence
    # The scripted request step hears talk in a line with "good" or "weather" in it.
    scorer = ScoringMock("mock", script=["unused"])
    (call,) = run(scorer, node(), "Hand me two apples, good man.")["calls"]
    assert call.tool_name == "give_item"
    assert run(scorer, node(), "Give my love to your uncle.")["calls"] == []


def test_what_a_tool_itself_denies_is_no_refusal_of_it() -> None:
    report = tl.ToolDefinition(
        "report_lost_parcel",
        "Files a report for a parcel the player sent that never arrived.",
        [tl.ToolParamDefinition("description", "string", "The parcel.")],
    )
    assert not sw.refuses(report, "My parcel of figs never arrived. Can you report it?")
    assert sw.refuses(report, "Don't report it yet, it may still come.")


def test_a_tool_that_examines_what_is_brought_answers_a_question_asking_for_it() -> None:
    study = tl.ToolDefinition(
        "identify_item",
        "Study a strange object and say what it is.",
        [tl.ToolParamDefinition("item", "string", "The object.")],
    )
    scorer = ScoringMock("mock", script=["unused"])
    line = "Found this item in a barrow. Can you tell me what it is, lovely?"
    (call,) = run(scorer, node(tools=[study, MOVE]), line)["calls"]
    assert call.tool_name == "identify_item"
    # A question about the NPC asks for nothing, whatever it names.
    assert run(scorer, node(tools=[study, MOVE]), "Who taught you to identify item?")["calls"] == []


def test_a_polite_line_asks_for_something() -> None:
    # The scripted request step hears talk in a line with "good" or "lovely" in it.
    scorer = ScoringMock("mock", script=["unused"])
    for line in ("Two apples, good sir, please.", "Would you mind giving me a lovely apple?"):
        (call,) = run(scorer, node(), line)["calls"]
        assert call.tool_name == "give_item", line
    assert run(scorer, node(), "Oh please, you are too good to me.")["calls"] == []


def test_a_value_that_stops_inside_a_name_takes_all_of_it() -> None:
    line = "Fetch the harbourmaster. He'll be in his office at the end of the North Mole."
    assert sn_names.through_name(line, "end of the North") == "end of the North Mole"
    assert sn_names.through_name("Send Bram Tuesday's loaves.", "Bram") == "Bram"
    assert sn_names.through_name("Tell the Sea Lark to wait.", "the Sea Lark") == "the Sea Lark"


def test_a_message_ends_before_an_order_to_its_carrier() -> None:
    told = "Mother is poorly and asking for her, and bring me back word whether she'll come"
    assert sse.before_order(told) == "Mother is poorly and asking for her"
    kept = "the bridge is shut, so send the carts round by the ford"
    assert sse.before_order(kept) == kept
    # The message a line relays loses the order to the runner that follows it.
    scorer = ScoringMock("mock", script=["unused"])
    line = "Pass a message to Agnes that Mother is poorly, and bring me back her answer."
    (call,) = run(scorer, node(tools=[PASS_MESSAGE]), line)["calls"]
    assert call.arguments["message"] == "Mother is poorly"


def test_back_tells_a_return_from_a_one_way_errand() -> None:
    phrases = ("the crier should wait for an answer and bring it back", "come away")
    line = "Let her know Mother is poorly, and bring me back word whether she'll come."
    named, _ = sb.said_sides(phrases, sb.denied_clauses(line), line, "", frozenset())
    assert named[0] > named[1]
    # Denied, it says the other side: "I won't be coming back this way."
    line = "Find me a guide to Port Sabra, I won't be coming back this way."
    phrases = ("brings them back", "leaves them at the destination")
    named, _ = sb.said_sides(phrases, sb.denied_clauses(line), line, "", frozenset())
    assert named[1] > named[0]


SEND_CASK = tl.ToolDefinition(
    "send_cask",
    "Send casks of wine to a person or place.",
    [
        tl.ToolParamDefinition("recipient", "string", "The person or place the casks go to."),
        tl.ToolParamDefinition("wine", "string", "Which wine.", enum=["red", "white", "rose"]),
    ],
)
PICKER = tl.ToolDefinition(
    "hire_picker",
    "Take someone on for the harvest.",
    [
        tl.ToolParamDefinition("worker", "string", "Who is taken on."),
        tl.ToolParamDefinition("treading", "boolean", "True to tread grapes in the vats."),
    ],
)


def test_an_accented_word_names_the_value_written_without_it() -> None:
    (call,) = _calls_after([SEND_CASK], [("Send a cask of the rosé to Tam.", None)])
    assert call.arguments["wine"] == "rose"


def test_same_again_for_someone_names_them_and_her_points_back_at_the_last() -> None:
    to_tam = _after_call("Send red to Tam in Eastmere.", "send_cask",
                         {"recipient": "Tam in Eastmere", "wine": "red"})  # fmt: skip
    lise = _after_call("Take on my daughter Lise.", "hire_picker",
                       {"worker": "my daughter Lise", "treading": False})  # fmt: skip
    same, back = _calls_after(
        [SEND_CASK, PICKER],
        [("Same again for my sister Wenna.", to_tam), ("Actually, put her in the vats.", lise)],
    )
    assert "Wenna" in same.arguments["recipient"]
    assert back.arguments["worker"] == "my daughter Lise"
    # "them" may be the things: a line naming someone anew does not keep the last one.
    (finn,) = _calls_after([PICKER], [("My brother Finn, put them in the vats too.", lise)])
    assert finn.arguments["worker"] != "my daughter Lise"
    line = "My cousin Ysolde's wedding is on Saturday; Lady Anwen's page, Tamsin, will come."
    assert sa._as_person(SEND_CASK.parameters[0], "cousin Ysolde's", line) == "cousin Ysolde"
    assert sa._as_person(SEND_CASK.parameters[1], "Hob's", line) == "Hob's"
    # One of theirs named after it is the person: "Lady Anwen's page".
    for owner in ("Lady Anwen's", "Lady Anwen"):
        assert sa._as_person(SEND_CASK.parameters[0], owner, line) == "Lady Anwen's page"


def test_a_line_that_opens_with_a_count_of_what_a_tool_counts_in_orders_it() -> None:
    casks = tl.ToolDefinition(
        "send_casks",
        "Send casks of wine.",
        [tl.ToolParamDefinition("casks", "integer", "How many casks.")],
    )
    assert sw.opens_with_count([casks], "A couple of casks of white for Reeve Aldous, then.")
    assert sw.opens_with_count([casks], "Half a dozen casks, please.")
    assert not sw.opens_with_count([casks], "My uncle drank three casks a week.")
    # The scripted request step hears talk in a line with "lovely" in it.
    (call,) = _calls_after([casks], [("Two casks for my lovely uncle.", None)])
    assert call.arguments == {"casks": 2}


def test_name_s_says_is_not_whose() -> None:
    assert sn_names.owns("Keep them for Widow Greaves's boy.", "Widow Greaves")
    assert not sn_names.owns("Put my 2 bottles in the cellar. name's Dace", "name")
    assert not sn_names.owns("That's mine.", "That")


SEND_BIRD = tl.ToolDefinition(
    "send_message",
    "Send a messenger bird to carry a message.",
    [
        tl.ToolParamDefinition("recipient", "string", "Who the message goes to."),
        tl.ToolParamDefinition(
            "wait_for_reply",
            "boolean",
            "True to have the bird wait at the far end and carry the answer back; false (the "
            "default) to send the message one way only.",
        ),
    ],
)


def test_what_the_tool_does_to_what_says_no_side_of_its_flags() -> None:
    told = sb.object_words(SEND_BIRD.description, {"wait", "for", "reply"})
    assert {"bird", "birds", "messenger"} <= told and "wait" not in told
    # Words that set going or stop tell a flag's sides apart, wherever they are.
    assert not {"light", "out"} & sb.object_words("Light the lamp or put it out.", {"lit"})
    # "bird" is said by any call of the tool, and "for" says no flag named "wait_for_reply":
    # the flag is unsaid, so its described default.
    lines = [("Send a bird to my uncle Bram for the feast.", None), ("Send a bird to Bram.", None)]
    for call in _calls_after([SEND_BIRD], lines):
        assert call.arguments["wait_for_reply"] is False
    (waits,) = _calls_after([SEND_BIRD], [("Send a bird to Bram and have it wait.", None)])
    assert waits.arguments["wait_for_reply"] is True


def test_no_i_dont_need_one_declines() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    assert run(scorer, node(), "No, I don't need two apples today.")["calls"] == []
    (call,) = run(scorer, node(), "I need two apples today.")["calls"]
    assert call.tool_name == "give_item"


def test_a_yes_or_no_question_without_its_mark_asks_nothing() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    assert run(scorer, node(), "is the apple fresh today")["calls"] == []


def test_a_word_every_value_explains_tells_none_apart_possessive_or_not() -> None:
    gear = "'hood' covers a bird's eyes, 'glove' is for the hand the bird stands on"
    assert sb.explained(gear, ["hood", "glove"], "I've got two birds now.") == []
    assert sb.explained(gear, ["hood", "glove"], "Something for my hand.") == ["glove"]


def test_a_correction_gives_the_first_count_its_number() -> None:
    apples = _after_call("Three apples.", "give_item", {"item": "apple", "count": 3})
    (call,) = _calls_after(TOOLS, [("Actually make it five, we're two now.", apples)])
    assert call.arguments["count"] == 5


TEACH = tl.ToolDefinition(
    "teach_falconry",
    "Give someone lessons in falconry.",
    [
        tl.ToolParamDefinition("student", "string", "Who takes the lessons."),
        tl.ToolParamDefinition(
            "own_bird",
            "boolean",
            "True if the student brings their own bird; false (the default) to use ours.",
        ),
    ],
)
BOARD = tl.ToolDefinition(
    "board_bird",
    "Take in a visitor's own bird and look after it.",
    [tl.ToolParamDefinition("kind", "string", "What bird.", enum=["falcon", "hawk", "owl"])],
)


def test_and_going_on_in_a_flags_words_follows_the_last_call() -> None:
    assert sb.says_a_flag(TEACH, "Oh, and I'll bring my own hawk.")
    assert not sb.says_a_flag(TEACH, "And board my hawk, it's my own.")
    gil = _after_call(
        "Four lessons for Gil.", "teach_falconry", {"student": "Gil", "own_bird": False}
    )
    (call,) = _calls_after([BOARD, TEACH], [("Oh, and I'll bring my own hawk.", gil)])
    assert call.tool_name == "teach_falconry"
    assert call.arguments["own_bird"] is True


def test_an_enum_the_line_names_no_value_of_takes_the_one_its_description_gives() -> None:
    colour = tl.ToolParamDefinition(
        "colour",
        "string",
        "The colour: 'green' is river-green glass; 'clear' is plain glass, and is the one to "
        "give when the visitor names no colour; 'blue' is cobalt glass.",
        enum=["green", "clear", "blue"],
    )
    assert sb.described_value(colour.description, colour.enum or []) == "clear"
    assert sb.described_value("'green' is pale; 'blue' is deep.", ["green", "blue"]) is None
    jars = tl.ToolDefinition(
        "sell_jars",
        "Sell glass jars.",
        [colour, tl.ToolParamDefinition("count", "integer", "How many jars.")],
    )
    plain, blue = _calls_after([jars], [("Five jars.", None), ("Five blue jars.", None)])
    assert plain.arguments == {"colour": "clear", "count": 5}
    assert "colour" in plain.unread_arguments
    assert blue.arguments["colour"] == "blue"


def test_not_yet_declines_and_mind_you_cautions() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    for line in ("Oh, not yet. I'll bring my two apples first.", "Not today, two apples is dear."):
        assert run(scorer, node(), line)["calls"] == [], line
    # "Mind you ..." warns, as a farewell does: what follows it asks only with a tool's verb.
    assert run(scorer, node(), "Mind you don't drop two apples, there's ice.")["calls"] == []
    assert not td._FAREWELL.match("Mend my window, you mind?")
    page = sa._as_person(
        SEND_CASK.parameters[0], "Widow Tansy", "Put Widow Tansy's grandson Pip down."
    )
    assert page == "Widow Tansy's grandson"


def test_what_someone_does_themselves_denies_the_flag_that_has_it_done() -> None:
    phrases = ("fit the gear here at the mews", "hand it over as it is")
    for line in (
        "two pairs of jesses pls, ill fit em myself",
        "Their carpenter will fit them himself.",
    ):
        named, _ = sb.said_sides(phrases, sb.denied_clauses(line), line, "", frozenset())
        assert named[1] > named[0], line
    assert sb.denied_clauses("A private room all to myself, please.") == ""


def test_a_day_names_no_one_anew() -> None:
    assert not sn_names.capitalised("The barge isn't running till Thursday.", "Thursday")
    assert sn_names.capitalised("Send them to the Sea Swallow.", "Sea Swallow")
    panes = tl.ToolDefinition(
        "deliver_panes",
        "Send window panes to a person or place.",
        [
            tl.ToolParamDefinition("recipient", "string", "The person or place they go to."),
            tl.ToolParamDefinition("route", "string", "How.", enum=["barge", "cart"]),
        ],
    )
    sent = _after_call("Send panes by barge to my brother Tam.", "deliver_panes",
                       {"recipient": "my brother Tam", "route": "barge"})  # fmt: skip
    line = "Actually, send them by cart instead, the barge isn't running till Thursday."
    (call,) = _calls_after([panes], [(line, sent)])
    assert call.arguments["recipient"] == "my brother Tam"


def test_a_preposition_explains_no_value_and_a_time_of_day_is_said_in_the_plural() -> None:
    colour = "'clear' is plain glass; 'amber' is honey-brown glass that keeps the sun off"
    line = "A couple of lanterns. Crate them up, we're off upriver tonight."
    assert sb.explained(colour, ["clear", "amber"], line) == []
    phrases = ("for lessons in the evening, after the day's work", "for lessons in the morning")
    line = "Put Pip down for a fortnight of lessons, one every day, mornings."
    named, _ = sb.said_sides(phrases, "", line, "", frozenset({"lessons", "lesson"}))
    assert named[1] > named[0]


def test_going_on_in_a_flags_words_naming_no_one_keeps_the_calls_free_text() -> None:
    nell = _after_call("Send a bird to my sister Nell: the baby's come.", "send_message",
                       {"recipient": "my sister Nell", "wait_for_reply": False})  # fmt: skip
    line = "Oh, and have it wait for her answer. I want to know if she's coming."
    (call,) = _calls_after([SEND_BIRD], [(line, nell)])
    assert call.arguments == {"recipient": "my sister Nell", "wait_for_reply": True}
    assert sse.names_anyone("And wait for my brother's answer.")
    assert not sse.names_anyone(line)


def test_going_on_naming_no_one_keeps_whose_it_is() -> None:
    board = tl.ToolDefinition(
        "board_bird",
        "Take in a visitor's own bird and look after it.",
        [
            tl.ToolParamDefinition("owner", "string", "Whose bird it is, as the visitor says."),
            tl.ToolParamDefinition("kind", "string", "What bird.", enum=["falcon", "owl"]),
            tl.ToolParamDefinition("days", "integer", "How many days."),
        ],
    )
    wat = _after_call("Board my falcon for three days, name's Wat.", "board_bird",
                      {"owner": "Wat", "kind": "falcon", "days": 3})  # fmt: skip
    same, other = _calls_after(
        [board],
        [("And my owl as well, same three days.", wat), ("And my brother's owl as well.", wat)],
    )
    assert same.arguments == {"owner": "Wat", "kind": "owl", "days": 3}
    # Naming someone, the line says whose it is itself.
    assert other.arguments["owner"] != "Wat"
    assert sse.goes_on_unnamed("Oh, and her hood too.")
    assert not sse.goes_on_unnamed("And one for Lady Anwen.")


def test_words_to_set_down_are_what_the_line_quotes_and_counts_are_outside_it() -> None:
    wording = tl.ToolParamDefinition("wording", "string", "The words to be printed, as given.")
    title = tl.ToolParamDefinition("title", "string", "The title lettered on the cover.")
    assert sq.is_worded(wording) and sq.is_worded(title)
    # "In the customer's words" is how it is said, not words to set down.
    assert not sq.is_worded(tl.ToolParamDefinition("place", "string", "Where, in their words."))
    posters = tl.ToolDefinition(
        "print_posters",
        "Print posters on the shop's press.",
        [wording, tl.ToolParamDefinition("copies", "integer", "How many posters.")],
    )
    book = tl.ToolDefinition("bind_book", "Bind pages into a book.", [title])
    lines = [
        "Thirty posters for my play, reading 'The Miller's Daughter, three nights only'.",
        "A score of posters: 'Long Live Duke Aldemar'.",
    ]
    play, duke = _calls_after([posters], [(line, None) for line in lines])
    assert play.arguments == {"wording": "The Miller's Daughter, three nights only", "copies": 30}
    assert duke.arguments == {"wording": "Long Live Duke Aldemar", "copies": 20}
    line = "Could you make them into a book? Call it 'Nan Hobbes's Kitchen'. Leather, please."
    (bound,) = _calls_after([book], [(line, None)])
    assert bound.arguments == {"title": "Nan Hobbes's Kitchen"}
    assert sq.unquoted("Ten, reading 'three nights only'.") == "Ten, reading ''."
    assert sn.numbers("two score of them", wording) == [40]
    assert sn.numbers("Settle the score, two of them", wording) == [2]


def test_a_correction_naming_another_arguments_value_keeps_the_rest_of_the_call() -> None:
    device = tl.ToolParamDefinition("device", "string", "What is cut into it, in their words.")
    line = "No, wait. Make it brass and set it in a ring, I'll be sealing letters with it."
    avoid = frozenset({"cut", "seal", "device", "material", "ring", "wood", "brass"})
    fish = ss.Fill("", "", ", ", line, avoid, False, earlier=("a fish",))
    assert ss.string_values(fish, device) == ["a fish"]
    book = tl.ToolDefinition(
        "bind_book",
        "Bind pages into a book.",
        [
            tl.ToolParamDefinition("cover", "string", "The cover.", enum=["cloth", "leather"]),
            tl.ToolParamDefinition("pages", "integer", "How many pages."),
        ],
    )
    journal = _after_call("Bind my journal, ninety pages.", "bind_book",
                          {"cover": "cloth", "pages": 90})  # fmt: skip
    # A correction that says no number keeps the count, whatever "a gift" says.
    line = "Oh, actually, make it leather, would you? It's going to be a gift."
    (call,) = _calls_after([book], [(line, journal)])
    assert call.arguments == {"cover": "leather", "pages": 90}


def test_thanks_and_then_a_warning_and_forgetting_it_are_talk() -> None:
    scorer = ScoringMock("mock", script=["unused"])
    # However sure the request step is: the scripted scorer reads every line as a request.
    assert run(scorer, node(), "Thanks, Bram. Mind your fingers with two apples.")["calls"] == []
    assert run(scorer, node(), "Thanks. Give me two apples.")["calls"] != []
    assert run(scorer, node(), "Actually, forget it. Two apples is dear.")["calls"] == []


def test_how_many_times_and_each_are_no_free_text() -> None:
    line = "copy this contract three times, one each for me, my master and the guild"
    found = sv.spans(line, frozenset({"copy", "document"}), True)
    assert "contract" in found
    assert not {"times", "each"} & set(found)
