"""A Generate node's Mustache template is checked whole: malformed ones are 3007.

pystache alone accepts an unclosed section and then drops the player's message at render time;
these tests hold the engine to refusing such a template at agent creation and in change_params,
where the refusal leaves the agent exactly as it was.
"""

from __future__ import annotations

import pytest

import turnloom as tl
from tests.helpers import graph_of

Code = tl.ErrorCode

MALFORMED = {
    "unclosed section": "{{human_message}} {{#shouting}}(loudly)",
    "unclosed inverted section": "{{^quiet}}{{human_message}}",
    "mismatched closing tag": "{{#shouting}}{{human_message}}{{/loudly}}",
    "sections closed out of order": "{{#a}}{{#b}}{{human_message}}{{/a}}{{/b}}",
    "stray closing tag": "{{human_message}}{{/shouting}}",
    "unclosed tag": "Q: {{human_message",
    "unclosed tag after a good one": "{{human_message}} and {{more",
    "empty tag": "{{}}{{human_message}}",
    "half a delimiter change": "{{=<% =}}{{human_message}}",
    "unclosed tag in changed delimiters": "{{=<% %>=}}<%human_message",
    "unclosed section in changed delimiters": "{{=<% %>=}}<%#a%><%human_message%>",
}

#: Valid templates and what each renders for the message 'hi'.
VALID = {
    "{{human_message}}": "hi",
    "{{ human_message }}": "hi",
    "{{#human_message}}Said: {{/human_message}}{{human_message}}": "Said: hi",
    "{{^human_message}}(silence){{/human_message}}[{{human_message}}]": "[hi]",
    "{{#human_message}}<{{human_message}}>{{/human_message}}": "<hi>",
    "{{#human_message}}<{{.}}>{{/human_message}}": "<hi>",
    "{{#human_message}}{{#human_message}}x{{/human_message}}{{/human_message}}"
    "{{! a comment }}{{{human_message}}}{{&human_message}}": "xhihi",
    "{{=<% %>=}}<%human_message%> {{kept}}": "hi {{kept}}",
    "plain text, no tags": "plain text, no tags",
}


def gen_graph(template: str = "{{human_message}}") -> tl.GraphDescription:
    return graph_of(
        ("gate", tl.PauseParams(default_exit="gen")),
        ("gen", tl.GenerateParams(template=template)),
    )


@pytest.mark.parametrize("template", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_template_is_3007_at_creation(engine: tl.Engine, template: str) -> None:
    with pytest.raises(tl.TurnloomError) as info:
        engine.create_agent(gen_graph(template))
    assert info.value.code == Code.InvalidParamValue
    assert "'gen'" in info.value.message and "'template'" in info.value.message
    assert "Mustache" in info.value.message


@pytest.mark.parametrize("as_mapping", [True, False], ids=["mapping", "params"])
@pytest.mark.parametrize("phase", ["idle", "paused"])
@pytest.mark.parametrize("template", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_template_in_change_params_is_3007_and_changes_nothing(
    engine: tl.Engine, mock_model: tl.MockModel, template: str, phase: str, as_mapping: bool
) -> None:
    agent = engine.create_agent(gen_graph("<{{human_message}}>"))
    if phase == "paused":
        agent.send_message("hi")
    before = (agent.wait().pause, agent.get_params("gate"), agent.get_params("gen"))
    proposed = agent.get_params("gen")
    assert isinstance(proposed, tl.GenerateParams)
    proposed.template = template
    with pytest.raises(tl.TurnloomError) as info:
        agent.change_params("gen", {"template": template} if as_mapping else proposed)
    assert info.value.code == Code.InvalidParamValue
    assert "'gen'" in info.value.message and "'template'" in info.value.message
    assert (agent.wait().pause, agent.get_params("gate"), agent.get_params("gen")) == before
    if phase == "idle":
        agent.send_message("hi")
    agent.resume()
    assert mock_model.requests[-1].messages[-1]["content"] == "<hi>"


def test_the_message_names_the_unclosed_section(engine: tl.Engine) -> None:
    with pytest.raises(tl.TurnloomError) as info:
        engine.create_agent(gen_graph(MALFORMED["unclosed section"]))
    assert "'shouting'" in info.value.message and "never closed" in info.value.message


@pytest.mark.parametrize("template, rendered", VALID.items())
def test_valid_templates_are_accepted_and_render(
    engine: tl.Engine, mock_model: tl.MockModel, template: str, rendered: str
) -> None:
    agent = engine.create_agent(gen_graph(template))
    agent.send_message("hi")
    agent.resume()
    assert mock_model.requests[-1].messages[-1]["content"] == rendered


@pytest.mark.parametrize("template, rendered", VALID.items())
def test_valid_templates_are_accepted_by_change_params(
    engine: tl.Engine, mock_model: tl.MockModel, template: str, rendered: str
) -> None:
    agent = engine.create_agent(gen_graph())
    agent.send_message("hi")
    agent.change_params("gen", {"template": template})
    agent.resume()
    assert mock_model.requests[-1].messages[-1]["content"] == rendered
