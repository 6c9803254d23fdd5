"""`list_models()`: which models graphs may name, embedded and over the wire (`ListModels`)."""

from __future__ import annotations

from collections.abc import Callable

import turnloom as tl
from tests.wire import RawSession
from turnloom.host.aio import AsyncEngine
from turnloom.server import BackgroundServer


def test_list_models_names_each_model_and_whether_it_renders_tools(engine: tl.Engine) -> None:
    assert engine.list_models() == [
        tl.models.ModelInfo(
            name="mock",
            renders_tools=True,
            tool_support_error="",
            tool_call_family="generic",
            context_size=None,
        )
    ]


def test_a_model_that_cannot_render_tools_says_why_sorted_by_name() -> None:
    models = [tl.MockModel("zeta"), tl.MockModel("alpha", renders_tools=False)]
    with (
        BackgroundServer(lambda: AsyncEngine(models)) as server,
        tl.connect(*server.address) as remote,
    ):
        listed = remote.list_models()
    assert [m.name for m in listed] == ["alpha", "zeta"]
    assert not listed[0].renders_tools
    assert listed[0].tool_support_error == "model 'alpha' cannot render tools"
    assert listed[1].renders_tools


def test_a_llama_model_reports_its_context_size_without_loading() -> None:
    model = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL)
    info = tl.models.model_info(model)
    assert info.context_size == model.entry.n_ctx
    assert info.renders_tools and info.tool_call_family == "hermes"
    assert not model.loaded


def test_the_wire_request_and_its_reply(raw_session: Callable[..., RawSession]) -> None:
    raw = raw_session()
    raw.configure()
    reply = raw.request({"type": "ListModels"})
    assert reply["type"] == "ModelListResponse"
    assert reply["models"] == [
        {
            "name": "mock",
            "renders_tools": True,
            "tool_support_error": "",
            "tool_call_family": "generic",
            "context_size": None,
        }
    ]
