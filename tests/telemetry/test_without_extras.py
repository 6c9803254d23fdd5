"""Without aiohttp, opentelemetry-api and prometheus-client the library imports and runs as
before: no observer, a turn as usual, and the optional faces say what to install."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import ENV

SCRIPT = r"""
import sys

class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("aiohttp", "opentelemetry", "prometheus_client"):
            raise ImportError(f"hidden: {name}")
        return None

sys.meta_path.insert(0, Hide())
import turnloom as tl

with tl.Engine(tl.MockModel("mock")) as engine:
    assert engine.observers == [], engine.observers
    g = tl.GraphDescription().add_node("a", tl.GenerateParams()).set_start_node("a")
    agent = engine.create_agent(g.set_default_model_name("mock"))
    assert agent.send_message("hi").final.text == "You said: hi"
    for face in (engine.inspect, engine.metrics):
        try:
            face()
        except ImportError as error:
            assert "pip install -e" in str(error), error
        else:
            raise AssertionError(f"{face.__name__} worked without its package")
print("ran without the extras")
"""


def test_the_library_runs_without_the_observing_extras() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=ENV, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ran without the extras"
