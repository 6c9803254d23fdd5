"""How a player's line is cut for the `score` decision: into sentences, without the thanks
that closes it, without a sentence that only tells where the speaker will be (before the
request step asks about it: `request`); the clause that gives the order, and the words given
after what they are called, or the sentence an order points at ("The bridge is shut. Cry it at
the quay.", for a free-text argument: `strings`); and whether it corrects ("Actually, make it
seven."), changes or repeats the last call ("No wait — give it out on the quay"). Whether a
sentence gives an order in so many words ("Put 3 hounds on the trail": `gives_order`), where a
message ends before an order to its carrier (", and bring me back word": `before_order`), and
whom an order points back at ("put her in the vats": `POINTED_BACK`); whether a line goes on
from the last one ("Oh, and ...": `GOES_ON`) or asks for the same again (`asks_same`), whether
it names anyone (`names_anyone`), and whom it points to without naming (`PRONOUN`).
"""

from __future__ import annotations

import re

from .names import KIN, proper_names
from .quotes import quoted
from .values import WORD, clauses, spelled, words

__all__ = [
    "CORRECTION",
    "GOES_ON",
    "LEADING",
    "POINTED_BACK",
    "PRONOUN",
    "WHERE_ONE_WILL_BE",
    "asked_order",
    "asks_same",
    "before_order",
    "gives_order",
    "goes_on_unnamed",
    "labelled",
    "names_anyone",
    "opens_with_correction",
    "order_clause",
    "past_leading",
    "pointed_at",
    "redoes",
    "said_as",
    "sentences",
    "without_thanks",
]


#: Where one sentence ends and the next starts: a closing mark, then space; not the point of
#: a title ("the Abbey of St. Wenna", "Dr. Hale").
_SENTENCE_END = re.compile(
    r"(?<=[.!?])(?<!\bSt\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bMt\.)(?<!\bMrs\.)\s+(?=\S)"
)


#: Someone an order points back at, said before: "put her in the vats", "send him on" (not
#: "her sister").
POINTED_BACK = re.compile(
    r"\b(?:him|her|them)\b(?=\s+(?:in|on|at|to|into|onto|up|down|out|off|back|over|instead|too)"
    r"\b|\s*[,.;!?]|\s*$)",
    re.IGNORECASE,
)
#: Someone or something a line points to without naming it.
PRONOUN = re.compile(r"\b(?:him|her|it|them)\b", re.IGNORECASE)
#: A line that goes on from the last one: "And two more.", "Oh, and a rake too.", "Also...".
GOES_ON = re.compile(r"\W*(?:oh\W+)?(?:and|also|plus)\b", re.IGNORECASE)
#: A correction of the last call: "Actually, make it urgent", "Make that the blue one", "Sorry,
#: I meant the west field" (not "don't make it permanent").
CORRECTION = re.compile(
    r"(?<!don't )(?<!dont )(?<!not )(?<!never )"
    r"\b(?:make\s+(?:it|that|them|those)|i\s+meant)\s+([^,.;:!?]*)",
    re.IGNORECASE,
)
#: Words that open a change to the last call: "Actually", "Wait", "Sorry", "Hang on", "On
#: second thought" (`_BEFORE_CORRECTION`, `_REDOES`).
_AMENDS = r"actually|wait|sorry|hang\s+on|on\s+second\s+thoughts?"
#: What may come before a correction that opens its line: "Actually,", "No, wait,", "Sorry,",
#: "Hang on, better", "On second thought,".
_BEFORE_CORRECTION = re.compile(rf"\W*(?:(?:{_AMENDS}|no|oh|better)\W+)*", re.IGNORECASE)


#: Verbs that open an order to whoever serves the player ("Put 3 hounds on the trail...", "Lock
#: up the little door...", "Give it the whole rite"), in their bare form; not those that open a
#: wish or an exclamation as often ("keep", "mind", "look", "let", "come", "say").
_ORDER_VERBS = frozenset(
    words(
        "put give send get bring fetch take make print ring lock unlock open close shut light hand"
        " post lend sell board wash mend stitch draw copy hire book rent carry pour serve fix load"
        " pack wrap deliver saddle sharpen repair polish clean cook brew bake fill hang pin raise"
        " lower move lead guide escort warn cry announce"
    )
)
#: What softens or times an order before its verb: "Just wash these shirts", "Then send a
#: runner to him", "Go fetch the healer".
LEADING = frozenset(words("just then now so go kindly quickly"))
#: And what may open an order before those: "Quick, cry it round the town", "Please send word".
_BEFORE_ORDER = LEADING | {"quick", "please"}
#: Sayings that open with such a verb and ask nothing: "Take care", "Bless you", "Give my love
#: to your mother", "Get well soon", "Make yourself at home".
_SAYINGS = re.compile(
    r"(?:take\s+(?:care|it\s+easy)|get\s+well|make\s+yourself|(?:give|send)\s+(?:my|our)\s+"
    r"(?:love|regards|best|thanks)|bless\s+you)\b",
    re.IGNORECASE,
)


def past_leading(said: list[str], leading: frozenset[str] = LEADING) -> list[str]:
    """A sentence's words `said` from its verb on, past the words `leading` it (`LEADING`)."""
    while len(said) > 1 and said[0].lower() in leading:
        said = said[1:]
    return said


def gives_order(sentence: str) -> bool:
    """Whether `sentence` opens with an order's verb (`_ORDER_VERBS`, after a word that only
    softens or times it) and is no saying ("Take care.") nor question."""
    said = past_leading(WORD.findall(sentence), _BEFORE_ORDER)
    if not said or said[0].lower() not in _ORDER_VERBS or sentence.rstrip().endswith("?"):
        return False
    return _SAYINGS.match(sentence, sentence.find(said[0])) is None


#: Where a message may go on with an order to whoever carries it: ", and bring me back word"
#: (not ", so send the carts round", which may be the message's own).
_AND_THEN = re.compile(r"\s*[,;]\s*and\s+")


def before_order(message: str) -> str:
    """`message` without the order to its carrier it goes on with: "Mother is poorly and asking
    for her, and bring me back word whether she'll come" is "Mother is poorly and asking for
    her"; not one that is all order ("bring the cart round")."""
    for joint in _AND_THEN.finditer(message):
        if joint.start() and gives_order(message[joint.end() :]):
            return message[: joint.start()]
    return message


def opens_with_correction(line: str) -> bool:
    """Whether `line` opens by correcting the last call ("Actually, make it Highcliff.", "No,
    make that six.", "Sorry, I meant the west field"): the same tool, its arguments read anew."""
    found = CORRECTION.search(line)
    return found is not None and _BEFORE_CORRECTION.fullmatch(line, 0, found.start()) is not None


#: A line that changes or repeats the last call rather than asking anew: "Same again on the
#: chapel board", "And the same to the churchwarden", "No wait — not the cross, give it out on
#: the quay", "Actually it can't wait", "Hang on, better make it two hundred".
_REDOES = re.compile(
    rf"\W*(?:(?:and|oh|also|then)\W+)*(?:the\s+)?same\b|\W*(?:{_AMENDS}|no\W+wait)\b",
    re.IGNORECASE,
)


def redoes(line: str) -> bool:
    """Whether `line` opens by changing or repeating the last call (`_REDOES`)."""
    return _REDOES.match(line) is not None


def said_as(name: str) -> str:
    """An argument's name as the words a line says it in, singular ("message", "pack horse")."""
    return " ".join(WORD.findall(spelled(name))).lower().removesuffix("s")


def asks_same(line: str, name: str, message: bool = False) -> bool:
    """Whether `line` asks for the same `name` again ("send the same message to..."), as one
    sending a message elsewhere does, relaying nothing new ("Send them there instead.")."""
    if message and re.search(r"\binstead\b", line, re.I) and not (clauses(line) or quoted(line)):
        return True
    said = said_as(name)
    return bool(said) and re.search(rf"\bsame\s+{re.escape(said)}s?\b", line, re.I) is not None


#: A sentence that tells where the speaker will be: "I'll be in my dressing room.", "We will be
#: out back.", "I'm going to be at the bar."
WHERE_ONE_WILL_BE = re.compile(
    r"\W*(?:i|we)(?:'ll|\s+will|'m\s+going\s+to|'re\s+going\s+to)\s+be\s+(?:in|at|on|by|out|"
    r"over|up|down|back|upstairs|downstairs|outside|inside|around|off|away|home|near)\b",
    re.IGNORECASE,
)


def sentences(line: str) -> list[str]:
    """The sentences of `line` ("Hello, Oskar! Busy day?" -> "Hello, Oskar!", "Busy day?")."""
    return [s for s in _SENTENCE_END.split(line.strip()) if s]


#: Thanks closing a line that says something before it: "..., thanks." / "... thank you!".
_CLOSING_THANKS = re.compile(
    r"^(?P<said>.*?\w.*?)[\s,;]+(?:thanks|thank you|cheers)(?:\s+(?:so much|a lot|kindly))?"
    r"(?P<end>[.!?]*)\s*$",
    re.IGNORECASE | re.DOTALL,  # a line typed over several lines too
)


def without_thanks(line: str) -> str:
    """`line` without the thanks that closes it ("Note her in the book, thanks." -> "Note her
    in the book."), its closing mark kept; a line that is only thanks, unchanged."""
    closing = _CLOSING_THANKS.match(line)
    if closing is None:
        return line
    return closing["said"].rstrip(" ,;") + (closing["end"] or ".")


def labelled(line: str, labels: set[str] | frozenset[str]) -> list[str]:
    """The capitalised words a line gives after one of `labels` that names words to write
    ("the words Happy Name-Day, Pell embroidered", "My initials, T.R.B., in the corner")."""
    said = sorted(_LABELS & labels)
    if not said:
        return []
    pattern = rf"\b(?i:{'|'.join(said)})\b,?\s+((?:[A-Z][\w.'-]*,?\s+)*[A-Z][\w.'-]*)"
    return [m.group(1).strip(" ,") for m in re.finditer(pattern, line)]


#: What a description may call the words to write ("The exact words, name or initials").
_LABELS = frozenset(["words", "initials", "motto", "inscription", "letters", "name"])


def asked_order(description: str, line: str) -> str:
    """For an argument described as what needs doing ("What needs doing and to which
    garment"), the order as the line gives it (`order_clause`); else ""."""
    return order_clause(line) if _TO_DO.search(description) else ""


#: A description of an argument that is what to do ("What needs doing", "what to do").
_TO_DO = re.compile(r"\bneeds?\s+(?:to\s+be\s+)?do(?:ne|ing)\b|\bwhat\s+to\s+do\b", re.I)


def order_clause(line: str) -> str:
    """The clause of `line` that gives its order, without what asks politely around it: "take
    in these trousers" in "Can you take in these trousers? No rush.", "Hem these trousers" in
    "Hem these trousers for me, would you?"; "" if it has none of two words or more."""
    for clause in _CLAUSE_END.split(line):
        clause = _POLITE_START.sub("", clause.strip())
        clause = _POLITE_END.sub("", clause).strip(" ,")
        if len(clause.split()) >= 2:
            return clause
    return ""


#: Where a clause of an order ends: a closing mark, a dash, a semicolon, or "would you" after
#: a comma.
_CLAUSE_END = re.compile(r"[.!?;]+(?:\s+|$)|\s+[\u2014\u2013-]+\s+|,\s*(?=would you\b)", re.I)
#: What asks politely before an order: "Can you", "Could you please", "Please", "I need you to".
_POLITE_START = re.compile(
    r"^(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|please\s+|kindly\s+|just\s+"
    r"|i\s+(?:need|want|would\s+like|'d\s+like)\s+you\s+to\s+)+",
    re.IGNORECASE,
)
#: What asks politely after it: "for me", "please", "would you".
_POLITE_END = re.compile(r"(?:[\s,]+(?:for\s+me|please|would\s+you))+\s*$", re.IGNORECASE)


#: An order that points at what it is about instead of saying it: "Cry it at the quay",
#: "Could you stick that on the chapel board?", "Give it out on the green", "Print this." (not
#: "about it", "for that", "is it", nor "this notice").
_POINTING = re.compile(
    r"\b(?!(?:about|for|of|in|on|to|at|with|from|by|is|was|be|if|so|and|but|like|than)\b)"
    r"[a-z]+\s+(?:it|that|this)\b(?=\s*(?:[,.!?;:\u2014]|$|\s+(?:at|on|in|up|out|round|around"
    r"|about|for|to|by|down|over|across|all|again|now|today|tonight|please|once|twice)\b))",
    re.IGNORECASE,
)


def pointed_at(line: str, avoid: frozenset[str]) -> str:
    """What an order of `line` points at with "it", "that" or "this", said in a sentence of
    its own: "The toll bridge is shut for mending from tomorrow" in "Barnaby! The toll bridge
    is shut for mending from tomorrow. Cry it at the quay three times today."; the nearest
    such sentence before the order, else after it: a statement of four words or more, no
    question, none of the words to `avoid` (the tool's: such a sentence is another order,
    "put a notice on the board by the cross, room to let ..."); "" if there is none."""
    said = sentences(line)
    orders = [i for i, s in enumerate(said) if _POINTING.search(s)]
    if not orders:
        return ""
    at = orders[0]
    for i in [*range(at - 1, -1, -1), *range(at + 1, len(said))]:
        told = said[i].rstrip(" .!")
        words = told.split()
        if i in orders or told.endswith("?") or len(words) < 4:
            continue
        if not avoid & {w.strip(",;:'\"").lower() for w in words}:
            return told
    return ""


def goes_on_unnamed(line: str) -> bool:
    """Whether `line` goes on from the last call ("Oh, and ...": `GOES_ON`) naming no one."""
    return GOES_ON.match(line) is not None and not names_anyone(line)


def names_anyone(line: str) -> bool:
    """Whether `line` names someone or something: a capitalised name, or who someone is to the
    speaker ("my brother")."""
    return bool(proper_names(line, frozenset())) or re.search(rf"\b{KIN}\b", line, re.I) is not None
