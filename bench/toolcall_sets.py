"""The prompt sets of `bench.toolcall_quality`: tools, player lines and what each line calls for.

Thirty-two sets, each with its own tools (string, integer, boolean and enum arguments between
them) and lines of which about half call for one tool and the rest for none, many of those
mentioning the tools' words ("the north door looks old") to catch a model that matches words,
not intent:

- **game** (44 lines, 4 tools): the set the `score` decision was developed on;
- **shop** (22 lines, 3 tools): the customer lines of `bench.llama_bench`, looked at while
  developing (so no longer unseen);
- **craft** (28 lines, 4 tools, an inventory/crafting domain): held out, written before the
  tuning it checks and never tuned on;
- **forge** (`data/forge_dev.json`, 31 lines, 6 tools, a smith): the development set of the
  six-tool work, tuned on;
- **farm** and **archive** (`data/farm_dev.json`, 45 lines; `data/archive_dev.json`, 43 lines;
  6 tools each, a farmer and an archivist): more development sets of the six-tool work, written
  with the request/talk step of the decision and tuned on;
- **tavern** (`data/tavern_heldout.json`, 45 lines, 6 tools, an innkeeper): held out, written
  first and frozen before any of that tuning, but read while tuning since;
- **quartermaster** (`data/quartermaster_sealed.json`, 50 lines, 6 tools, a ship's
  quartermaster; sha256 c155131d8ec0471f09c548147862502d08b8cbb2cb71f5f35d3a4a549f52b0cb),
  **apothecary** (`data/apothecary_sealed.json`, 52 lines, 6 tools, a town apothecary;
  sha256 4cf5850a8c1433b3d98c7578ba7ecde656cb38c8d9a59e4981b591828d636f77) and **ferryman**
  (`data/ferryman_sealed.json`, 59 lines, 6 tools, a river ferryman;
  sha256 e4ca874a49f6487f3a893906b186127fe425e6b92fa59bb54aecf87e59e7334a): each written and
  frozen as a sealed set before the tuning it judged, judged once, and a development set since
  (its lines read and tuned on); the files are never edited, so the sha256 still holds.
- **lighthouse** (`data/lighthouse_sealed.json`, 58 lines, 6 tools, a lighthouse keeper;
  sha256 4f3677df47093db1271b03de172cc54d098d4088059619ed0b9b9cc672aa8c9e): written and
  frozen as a sealed set before the tool-choice work it judged (once, at the end of that
  work), a development set since (read and tuned on), like the three above.
- **mine** (`data/mine_sealed.json`, 55 lines, 6 tools, the foreman of a silver mine;
  sha256 c1755f4e2a37b531ffb6be17e7fa04fcc0219d765dd522b65db487c9b7e4cb7a): written and
  frozen as a sealed set by someone who had not read how decisions are scored, before the work
  it judged (lines of several sentences, verbless orders, on/off booleans, names), judged once
  at the end of it, a development set since like the four above.
- **playhouse** (`data/playhouse_sealed.json`, 54 lines, 6 tools, a theatre's stage manager;
  sha256 cc8bc1ad641c5c4513eeb6324427fbb13b6bdefb33d9f489e528663947ef326d): written with
  mine by the same hand, kept sealed through the next round of tuning, judged once at its end,
  a development set since like the five above.
- **stables** (`data/stables_sealed.json`, 58 lines, 6 tools, a coaching inn's stable master;
  sha256 44d723e2c168f190df1bfd3b5e9e8a97ebe18b5f30480f5e1010046e9868039b): written sealed by
  someone who had not read how decisions are scored, after playhouse was judged, judged once
  at the end of the tuning that followed, a development set since like the six above.
- **harbour** (`data/harbour_sealed.json`, 61 lines, 6 tools, a harbourmaster;
  sha256 fe55226245d7b6d2d2458442bba5489afd03eb8885756e07241db2793f44a05f): written sealed by
  someone who had not read how decisions are scored, kept out of every run until it judged
  the work on names, owners, spans of time and opposite sides, a development set since.
- **caravan** (`data/caravan_sealed.json`, 60 lines, 6 tools, the caravan master of a desert
  trading post; sha256 d591964fa12e41d721e559cbc51bd3ab36fbc46940b2f69fe679dc6c084d99b6):
  written sealed by someone who had not read how decisions are scored, kept out of every run
  until it judged the work on corrections, names of several words, messages and places, a
  development set since.
- **bathhouse** (`data/bathhouse_sealed.json`, 62 lines, 6 tools, the keeper of a port city's
  bathhouse and laundry; sha256 26b4949ae5cf79ef6a84e186604adde997d945ad8a11c0f9fc46b4514eb32b5e):
  written sealed the same way, kept out of every run until it judged the work that followed
  caravan's judgement (explained values, greetings, what a player wants), a development set
  since.
- **guardhouse** (`data/guardhouse_sealed.json`, 62 lines, 6 tools, the captain of the guard at
  a walled city's gate; sha256 6daac5a1bc37b7756f8fff682bfb0642703a67a96612f4b06b280ff1a697e63b):
  written sealed the same way, kept out of every run until it judged the work that followed
  bathhouse's judgement (explanations written with "is", booleans said across commas, units of
  a count), a development set since.
- **circus** (`data/circus_sealed.json`, 62 lines, 6 tools, the ringmaster of a travelling
  circus; sha256 f2a07fafd45a67f7ea2f8311e77fa7d47c9fb5c9cce0cab03ec05be4b0c759cb): written
  sealed the same way (its free-text values accept the words as the line says them), kept out
  of every run until it judged the work that followed guardhouse's judgement (hours, people
  named, described or pointed to, flags denied by name, questions with an aside, farewells,
  parties of people), a development set since.
- **tailor** (`data/tailor_sealed.json`, 61 lines, 6 tools, a master tailor and dressmaker;
  sha256 ee78f272f949751ec0eda07cdbcce8d2fc3800c1cca33a84701de899bd6a6fc2): written sealed the
  same way (free-text values accept the words as the line says them), kept out of every run
  until it judged the work that followed circus's judgement (explanations opening with any
  verb, lines asking to be told something, recipients to let know, values pointed to, wants
  said mid-sentence), a development set since.
- **postoffice** (`data/postoffice_sealed.json`, 61 lines, 6 tools, the postmaster of a town's
  post office and courier station; sha256
  2e74b36432f2e140445f98b3326caeebe7c00b406d24844b9dacbe09e0f4467f): written sealed the same
  way, kept out of every run until it judged the work that followed tailor's judgement (words
  in single quotes or after a colon, what needs doing, "true for", counts in pairs), a
  development set since.
- **temple** (`data/temple_sealed.json`, 60 lines, 6 tools, the priestess of a village
  temple; sha256 875d04521fdba9993caf0c8367fad02b6ef18275b2f5466945e1e4e6745d727c): written
  sealed the same way, kept out of every run until it judged the work that followed
  postoffice's judgement (lines withdrawing or supposing, a flag's side denied with "no",
  "saying", "send her"), a development set since.
- **lodge** (`data/lodge_sealed.json`, 60 lines, 6 tools, the keeper of a hunting lodge at
  the edge of a forest; sha256 18a37153e9968ccef1acbd9d0812afeb668acfd0e014dc4b9049caf8be7064ad):
  written sealed the same way, kept out of every run until it judged the work that followed
  temple's judgement (corrections after a call, questions of where, "can you look at it?",
  described defaults, people said whole), a development set since.
- **enchanter** (`data/enchanter_sealed.json`, 60 lines, 6 tools, an enchanter's shop of magic
  in a market town; sha256 a34b1753643349942475cf71354bdb411ff4bcbdd5876421de4372285eff6947):
  written sealed the same way, kept out of every run until it judged the work that followed
  lodge's judgement (units, times and verbs at the edges of things and places, "Just say",
  times of day in other words, a change pointing back, refusals), a development set since.
- **cartographer** (`data/cartographer_sealed.json`, 60 lines, 6 tools, a map-maker's office
  in a port town; sha256 21d07a918b4ab183205db6529591707746d0b099fe3b9b71060f0bd36dccacf4):
  written sealed the same way, kept out of every run until it judged the work that followed
  enchanter's judgement (defaults said as what holds when nothing is said, the tool's name as
  no side of a flag, sayings with "on", a flag unsaid in a follow-up, and on or off that says
  where, times of day for a flag, a party's numbered members, kin for a name, verbs after "'s",
  "let X know ..."), a development set since.
- **kennel** (`data/kennel_sealed.json`, 60 lines, 6 tools, a lord's kennel master at the
  edge of a market town; sha256 e750d270cd722cc743bd291a7d18b5a4cef5c1d0a796d6c117da2d766fe69d3f):
  written sealed the same way, kept out of every run until it judged the work that followed
  cartographer's judgement (a name with what it is of, the tool's name for the thing, "5 of
  us", "tell her ...", "I meant ...", a place left unsaid, a place with its kind, a route), a
  development set since.
- **apiary** (`data/apiary_sealed.json`, 60 lines, 6 tools, the beekeeper and mead-maker of
  a village apiary; sha256 ebf236ba80aeed4ddd0b5371218a69470c836fc9b4d1776c476f8ef1766a4407):
  written sealed the same way, kept out of every run until it judged the code as it stood
  after kennel's rules and a review of the time units and corrections, a development set since.
- **crier** (`data/crier_sealed.json`, 60 lines, 6 tools, the town crier and printer of a
  market town; sha256 d18be921d379b3664c2a3923cc6a71c7caa6aac041cc5682748637b4af5c6066):
  written sealed the same way, kept out of every run until it judged the code as it stood
  after apiary's judgement and the rules for flags and messages that followed, a development
  set since.
- **vineyard** (`data/vineyard_sealed.json`, 60 lines, 6 tools, the vintner of a hillside
  vineyard and winery; sha256 7a12b4f90d4fec5a023008fc2ac7317f0288e72def7c8b3925aa5f6039c81891):
  written sealed the same way, kept out of every run until it judged the code as it stood
  after crier's rules and the orders, polite asks, urgency words and names that followed, a
  development set since.
- **falconer** (`data/falconer_sealed.json`, 60 lines, 6 tools, the falconer and keeper of a
  castle's mews; sha256 a17a32fc10872b6cc7ad2cea960f901312c17385ad47829a20341272c0c5b8c9):
  written sealed the same way, kept out of every run until it judged the code as it stood
  after vineyard's rules (accents, "same again for", whom an order points back at, counts
  that open a line, "name's"), a development set since.
- **glassworks** (`data/glassworks_sealed.json`, 60 lines, 6 tools, the glassworks of a river
  town; sha256 f89bf71e092cbce88ae41c32271e64bdef21d2f46f398e7061d8921f77d8e372): written
  sealed the same way, kept out of every run until it judged the code as it stood after
  falconer's rules (what a tool does to what says no side of a flag, declining with "No, I
  don't need", corrections of a first count, "X's page", parties said in chat), a
  development set since.
- **printworks** (`data/printworks_sealed.json`, 60 lines, 6 tools, the printer of a market
  town; sha256 9a366c603778e2647f6cf56a8e9fe3042f22f1ef9c1f5fba1745f988e26d6178): written
  sealed the same way, kept out of every run until it judged the code as it stood after
  glassworks' rules (described enum values, what one does oneself, "Mind you ...", whose it is
  in a follow-up), a development set since.
- **observatory** (`data/observatory_sealed.json`, 60 lines, 6 tools, the keeper of a
  hilltop observatory and its shop of instruments; sha256
  9b6f35b7231286326b001d6a6f7a916c38c3e2e2840ee5298ca76dc1801350da): written sealed the same
  way, kept out of every run until it judged the code as it stood after printworks' rules (and
  with the benchmark timing each six-tool set's lines with its first three tools as well).

The six-tool sets have enum, integer, boolean and free-text arguments, small talk of
gratitude, farewells, compliments and questions about the tools' objects, and multi-turn cases:
a line that follows a seeded exchange (the earlier line and the call it made), such as "And two
more." after a served drink.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.llama_bench import SHOP_TOOLS

#: (name, description, [(argument, type, description)])
ToolSpec = tuple[str, str, list[tuple[str, str, str]]]


@dataclass(frozen=True)
class Case:
    """A player line and what it calls for: a tool and the accepted values of each argument
    (None: no tool)."""

    line: str
    tool: str | None = None
    arguments: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: Chat messages that seed the agent before the line (earlier turns).
    dialog: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class PromptSet:
    """One domain: its tools, the enums among their arguments, a system prompt and the lines."""

    name: str
    note: str
    tools: list[ToolSpec]
    enums: dict[tuple[str, str], tuple[str, ...]]
    cases: list[Case]
    system_prompt: str = ""


def _call(line: str, tool: str, **arguments: Any) -> Case:
    accepted = {k: v if isinstance(v, tuple) else (v,) for k, v in arguments.items()}
    return Case(line, tool, accepted)


def _enum(description: str, values: tuple[str, ...]) -> str:
    """A string argument's description that declares its values (see `nodes.score.decision`)."""
    return f"{description}, one of: {', '.join(values)}."


DIRECTIONS = ("north", "south", "east", "west")

GAME = PromptSet(
    "game",
    "tuned on",
    [
        ("open_door", "Open or unlock a door.", [("door", "string", "Which door, e.g. 'north'.")]),
        (
            "give_item",
            "Give the player some items.",
            [("item", "string", "The item, e.g. 'apple'."), ("count", "integer", "How many.")],
        ),
        ("set_torch", "Light the torch or put it out.", [("lit", "boolean", "true to light it.")]),
        (
            "move",
            "Walk the party in a direction.",
            [("direction", "string", _enum("Where to go", DIRECTIONS))],
        ),
    ],
    {("move", "direction"): DIRECTIONS},
    [
        _call("Open the north door.", "open_door", door=("north", "north door")),
        _call(
            "Could you unlock the cellar door for me?", "open_door", door=("cellar", "cellar door")
        ),
        _call("Please open the iron gate.", "open_door", door=("iron gate", "gate")),
        _call("Let me through the red door.", "open_door", door=("red", "red door")),
        _call("Open the kitchen door, quick!", "open_door", door=("kitchen", "kitchen door")),
        _call("Unlock the tower door.", "open_door", door=("tower", "tower door")),
        _call("Give me three apples.", "give_item", item=("apples", "apple"), count=3),
        _call("Hand me 2 torches, please.", "give_item", item=("torches", "torch"), count=2),
        _call("I'll take one sword.", "give_item", item=("sword", "swords"), count=1),
        _call("Give me 5 arrows.", "give_item", item=("arrows", "arrow"), count=5),
        _call("Can I have four potions?", "give_item", item=("potions", "potion"), count=4),
        _call("Light the torch.", "set_torch", lit=True),
        _call("Put out the torch.", "set_torch", lit=False),
        _call("Blow out the torch, it is too bright.", "set_torch", lit=False),
        _call("Light your torch, it's dark in here.", "set_torch", lit=True),
        _call("Extinguish the torch now.", "set_torch", lit=False),
        _call("Walk north.", "move", direction="north"),
        _call("Let's head east.", "move", direction="east"),
        _call("Go south to the river.", "move", direction="south"),
        _call("Move west, away from the wolves.", "move", direction="west"),
        _call("Take me north to the village.", "move", direction="north"),
        _call("Run east!", "move", direction="east"),
        # plain talk
        Case("Hello there!"),
        Case("How are you today?"),
        Case("What is your name?"),
        Case("Tell me a story about the old castle."),
        Case("Thank you, friend."),
        Case("What do you think of the king?"),
        Case("I like your hat."),
        Case("Goodbye for now."),
        Case("Who built this tavern?"),
        Case("Is it going to rain tomorrow?"),
        # talk that mentions the tools' words
        Case("The north door looks old, doesn't it?"),
        Case("Who gave you that sword?"),
        Case("I love the smell of a torch burning."),
        Case("Why is the cellar door always locked?"),
        Case("My father never gave me anything."),
        Case("Which way is north, anyway?"),
        Case("That torch of yours is very bright."),
        Case("Doors in this town are painted red."),
        Case("Do you ever walk east of the river?"),
        Case("I once had three apples and a sword."),
        Case("Don't open anything, just talk to me."),
        Case("What happens if someone lights a torch in the library?"),
    ],
)

SHOP = PromptSet(
    "shop",
    "seen while tuning",
    SHOP_TOOLS,  # llama_bench's shop tools
    {},
    [
        _call("Do you sell swords?", "check_stock", item=("swords", "sword")),
        _call("How many shields do you have?", "check_stock", item=("shields", "shield")),
        _call("Is there any rope in stock?", "check_stock", item="rope"),
        _call("What does a lantern cost here?", "check_stock", item=("lantern", "lanterns")),
        _call(
            "Have you got healing potions?",
            "check_stock",
            item=("healing potions", "healing potion", "potions", "potion"),
        ),
        _call("Do you still have that oak bow?", "check_stock", item=("oak bow", "bow")),
        _call("Check if you have arrows, please.", "check_stock", item=("arrows", "arrow")),
        _call("I'll give you 30 gold for the helmet.", "haggle", item="helmet", gold=30),
        _call("Would you take 12 gold for a dagger?", "haggle", item="dagger", gold=12),
        _call("Can you go down to 5 gold for the torch?", "haggle", item="torch", gold=5),
        _call("It's late, please close the shop.", "close_shop"),
        _call("Time to lock up for the night, Mira.", "close_shop"),
        _call("Any chainmail left?", "check_stock", item="chainmail"),
        Case("Hello there!"),
        Case("What a lovely day it is."),
        Case("Who are you?"),
        Case("Thank you, goodbye!"),
        Case("Tell me about this town."),
        Case("How long have you been a shopkeeper?"),
        Case("The weather is terrible today."),
        Case("Have you heard any rumours lately?"),
        Case("My name is Arin, nice to meet you."),
    ],
    "You are Mira, a shopkeeper. Use a tool when the customer's request needs one.",
)

HANDS = ("left", "right")

CRAFT = PromptSet(
    "craft",
    "held out",
    [
        (
            "craft_item",
            "Craft an item at the workbench.",
            [
                ("item", "string", "The item to craft, e.g. 'rope'."),
                ("quantity", "integer", "How many to craft."),
            ],
        ),
        ("drop_item", "Drop an item from the backpack.", [("item", "string", "The item.")]),
        (
            "equip",
            "Equip a weapon or tool in one hand.",
            [
                ("item", "string", "The item to hold."),
                ("hand", "string", _enum("Which hand", HANDS)),
            ],
        ),
        (
            "set_autosort",
            "Turn automatic backpack sorting on or off.",
            [("enabled", "boolean", "true to turn it on.")],
        ),
    ],
    {("equip", "hand"): HANDS},
    [
        _call("Craft two ropes.", "craft_item", item=("ropes", "rope"), quantity=2),
        _call("Make me 4 arrows at the bench.", "craft_item", item=("arrows", "arrow"), quantity=4),
        _call(
            "Could you build a wooden shield?",
            "craft_item",
            item=("wooden shield", "shield"),
            quantity=1,
        ),
        _call(
            "I need three bandages, can you make them?",
            "craft_item",
            item=("bandages", "bandage"),
            quantity=3,
        ),
        _call("Craft a torch.", "craft_item", item=("torch", "torches"), quantity=1),
        _call("Drop the heavy stone.", "drop_item", item=("heavy stone", "stone")),
        _call("Get rid of the rotten apple.", "drop_item", item=("rotten apple", "apple")),
        _call("Throw away that broken sword.", "drop_item", item=("broken sword", "sword")),
        _call("Equip the axe in your left hand.", "equip", item="axe", hand="left"),
        _call("Hold the lantern in the right hand.", "equip", item="lantern", hand="right"),
        _call("Put the dagger in my left hand.", "equip", item="dagger", hand="left"),
        _call("Turn on auto sorting.", "set_autosort", enabled=True),
        _call("Stop sorting my backpack automatically.", "set_autosort", enabled=False),
        _call("Switch backpack sorting off.", "set_autosort", enabled=False),
        Case("Good morning!"),
        Case("Where did you learn to cook?"),
        Case("What's your favourite colour?"),
        Case("Thanks for the help."),
        Case("Tell me about the mountains."),
        Case("Nice weather for travelling."),
        Case("My backpack is so heavy these days."),
        Case("Crafting is my favourite hobby."),
        Case("I dropped my ring in the lake last year."),
        Case("Is the axe sharper than the sword?"),
        Case("Who taught you to make arrows?"),
        Case("My left hand still hurts from the fall."),
        Case("Do you keep your things sorted?"),
        Case("Never craft anything on a Sunday."),
    ],
)

_DATA = Path(__file__).resolve().parent / "data"


def _seeded(before: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The chat messages of earlier turns: each line, then the NPC's reply or the call it
    made and its result."""
    messages: list[dict[str, Any]] = []
    for index, turn in enumerate(before):
        messages.append({"role": "user", "content": turn["line"]})
        if "reply" in turn:
            messages.append({"role": "assistant", "content": turn["reply"]})
        for name, arguments in turn.get("call", {}).items():
            call_id = f"seed{index}"
            function = {"name": name, "arguments": arguments}
            messages.append({"role": "assistant", "content": "",
                             "tool_calls": [{"id": call_id, "type": "function",
                                             "function": function}]})  # fmt: skip
            messages.append({"role": "tool", "tool_call_id": call_id, "name": name,
                             "content": "ok"})  # fmt: skip
    return tuple(messages)


def load_set(path: Path, note: str = "") -> PromptSet:
    """A prompt set written as JSON (`data/*.json`): tools with their parameters (an `enum`
    where the values are fixed), a system prompt, and cases (a `before` list seeds turns).
    `note` replaces the file's own note: a sealed file is never edited, so what it became
    since it was judged (a development set) is said here."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    tools: list[ToolSpec] = []
    enums: dict[tuple[str, str], tuple[str, ...]] = {}
    for tool in doc["tools"]:
        params = [(p["name"], p["type"], p["description"]) for p in tool["parameters"]]
        tools.append((tool["name"], tool["description"], params))
        for p in tool["parameters"]:
            if "enum" in p:
                enums[(tool["name"], p["name"])] = tuple(p["enum"])
    cases = [
        Case(
            c["line"],
            c.get("tool"),
            {k: tuple(v) for k, v in c.get("arguments", {}).items()},
            _seeded(c.get("before", [])),
        )
        for c in doc["cases"]
    ]
    system_prompt = doc.get("system_prompt", "")
    return PromptSet(doc["name"], note or doc["note"], tools, enums, cases, system_prompt)


FORGE = load_set(_DATA / "forge_dev.json")
FARM = load_set(_DATA / "farm_dev.json")
ARCHIVE = load_set(_DATA / "archive_dev.json")
TAVERN = load_set(_DATA / "tavern_heldout.json")
#: What a sealed set is once judged and then read and tuned on.
_JUDGED = "judged once as a sealed set, a development set since (read and tuned on)"
QUARTERMASTER = load_set(_DATA / "quartermaster_sealed.json", _JUDGED)
APOTHECARY = load_set(_DATA / "apothecary_sealed.json", _JUDGED)
FERRYMAN = load_set(_DATA / "ferryman_sealed.json", _JUDGED)
LIGHTHOUSE = load_set(_DATA / "lighthouse_sealed.json", _JUDGED)
MINE = load_set(_DATA / "mine_sealed.json", _JUDGED)
PLAYHOUSE = load_set(_DATA / "playhouse_sealed.json", _JUDGED)
STABLES = load_set(_DATA / "stables_sealed.json", _JUDGED)
HARBOUR = load_set(_DATA / "harbour_sealed.json", _JUDGED)
CARAVAN = load_set(_DATA / "caravan_sealed.json", _JUDGED)
BATHHOUSE = load_set(_DATA / "bathhouse_sealed.json", _JUDGED)
GUARDHOUSE = load_set(_DATA / "guardhouse_sealed.json", _JUDGED)
CIRCUS = load_set(_DATA / "circus_sealed.json", _JUDGED)
TAILOR = load_set(_DATA / "tailor_sealed.json", _JUDGED)
POSTOFFICE = load_set(_DATA / "postoffice_sealed.json", _JUDGED)
TEMPLE = load_set(_DATA / "temple_sealed.json", _JUDGED)
LODGE = load_set(_DATA / "lodge_sealed.json", _JUDGED)
ENCHANTER = load_set(_DATA / "enchanter_sealed.json", _JUDGED)
CARTOGRAPHER = load_set(_DATA / "cartographer_sealed.json", _JUDGED)
KENNEL = load_set(_DATA / "kennel_sealed.json", _JUDGED)
APIARY = load_set(_DATA / "apiary_sealed.json", _JUDGED)
CRIER = load_set(_DATA / "crier_sealed.json", _JUDGED)
VINEYARD = load_set(_DATA / "vineyard_sealed.json", _JUDGED)
FALCONER = load_set(_DATA / "falconer_sealed.json", _JUDGED)
GLASSWORKS = load_set(_DATA / "glassworks_sealed.json", _JUDGED)
PRINTWORKS = load_set(_DATA / "printworks_sealed.json", _JUDGED)
OBSERVATORY = load_set(_DATA / "observatory_sealed.json")

SETS = {
    s.name: s
    for s in (
        GAME,
        SHOP,
        CRAFT,
        FORGE,
        FARM,
        ARCHIVE,
        TAVERN,
        QUARTERMASTER,
        APOTHECARY,
        FERRYMAN,
        LIGHTHOUSE,
        MINE,
        PLAYHOUSE,
        STABLES,
        HARBOUR,
        CARAVAN,
        BATHHOUSE,
        GUARDHOUSE,
        CIRCUS,
        TAILOR,
        POSTOFFICE,
        TEMPLE,
        LODGE,
        ENCHANTER,
        CARTOGRAPHER,
        KENNEL,
        APIARY,
        CRIER,
        VINEYARD,
        FALCONER,
        GLASSWORKS,
        PRINTWORKS,
        OBSERVATORY,
    )
}
