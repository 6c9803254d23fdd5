"""A Generate node's Mustache template: the variables the engine provides, and the checks that
refuse a template that would not render what it says (3007,
docs/reference/graphs.md#prompt-templates).

pystache renders a name it cannot find as empty text, so `{{user_message}}` (for
`{{human_message}}`) would silently drop the player's message from the prompt. The engine knows
every name it will ever provide, so a template naming any other is refused when the graph is
validated and in change_params, not discovered in the model's replies.
"""

from __future__ import annotations

from typing import Any

import pystache

from ..support.guards import brief

#: The variables a Generate node's template can use, with what each holds. The projection
#: (`projection.prompt_context`) provides exactly these.
TEMPLATE_VARIABLES: dict[str, str] = {
    "human_message": "the user's message of the current turn",
}

#: Sections nested deeper than this are refused: rendering recurses once per level.
MAX_SECTION_DEPTH = 32

_NOT_MUSTACHE = "is not a valid Mustache template"


def _tag_error(template: str) -> str | None:
    """Why the tags of `template` are not well formed, or None.

    pystache's parser accepts an unclosed section (rendering then drops everything after its
    opening tag, the player's message included) and keeps an unclosed tag as literal text. So the
    tags are walked here first, by pystache's rules: the first closing delimiter ends a tag, tag
    keys are stripped, and `{{=<% %>=}}` changes the delimiters.
    """
    otag, ctag = "{{", "}}"
    sections: list[tuple[str, int]] = []  # the open sections: key, position of the opening tag
    pos = 0
    while (start := template.find(otag, pos)) >= 0:
        end = template.find(ctag, start + len(otag))
        if end < 0:
            return f"{_NOT_MUSTACHE}: the tag at position {start} has no closing '{ctag}'"
        tag = brief(template[start : end + len(ctag)])
        body = template[start + len(otag) : end].strip()
        pos = end + len(ctag)
        kind, key = body[:1], body[1:].strip()
        if not body:
            return f"{_NOT_MUSTACHE}: the tag {tag} at position {start} is empty"
        if kind in ("#", "^"):
            sections.append((key, start))
            if len(sections) > MAX_SECTION_DEPTH:
                return f"nests sections more than {MAX_SECTION_DEPTH} deep (at position {start})"
        elif kind == "/":
            if not sections:
                return f"{_NOT_MUSTACHE}: {tag} at position {start} closes no open section"
            if sections[-1][0] != key:
                return (
                    f"{_NOT_MUSTACHE}: {tag} at position {start} does not close the open "
                    f"section {brief(sections[-1][0])}"
                )
            sections.pop()
        elif kind == "=":
            delimiters = body[1:-1].split() if len(body) > 1 and body.endswith("=") else []
            if len(delimiters) != 2:
                return f"{_NOT_MUSTACHE}: {tag} at position {start} is not a delimiter change"
            otag, ctag = delimiters
    if sections:
        key, start = sections[-1]
        return (
            f"{_NOT_MUSTACHE}: the section {brief(key)} opened at position {start} is never closed"
        )
    return None


def _name_error(parsed: Any) -> str | None:
    """Why a parsed template names something the engine does not provide, or None.

    Walks pystache's parse tree (`ParsedTemplate._parse_tree`; sections hold theirs in `parsed`
    or `parsed_section`): the keys there are exactly what rendering will look up.
    """
    known = sorted(TEMPLATE_VARIABLES)
    pending: list[tuple[Any, bool]] = [(parsed, False)]  # (a parsed template, inside a section)
    while pending:
        tree, in_section = pending.pop()
        for node in tree._parse_tree:
            key = getattr(node, "key", None)
            if not isinstance(key, str):
                continue  # text, comments and delimiter changes name nothing
            if type(node).__name__ == "_PartialNode":
                return f"uses the partial {brief(key)}; the engine provides no partials"
            if key not in TEMPLATE_VARIABLES and not (key == "." and in_section):
                return (
                    f"names the variable {brief(key)}, which the engine does not provide "
                    f"(variables: {known})"
                )
            if getattr(node, "parsed", None) is not None:  # a section: `.` is its value
                pending.append((node.parsed, True))
            elif getattr(node, "parsed_section", None) is not None:  # inverted: no value
                pending.append((node.parsed_section, in_section))
    return None


def template_error(template: str) -> str | None:
    """Mustache naming only the engine's template variables (`TEMPLATE_VARIABLES`).

    Returns why `template` breaks that rule, or None.
    """
    err = _tag_error(template)
    if err:
        return err
    try:
        parsed = pystache.parse(template)
    except Exception as exc:  # pystache raises a few unrelated types for bad templates
        return f"{_NOT_MUSTACHE} ({brief(str(exc))})"
    return _name_error(parsed)
