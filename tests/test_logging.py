"""turnloom is silent until the host configures logging, and then logs structured events.

Each case runs in a fresh interpreter: whether structlog is configured is process-wide state
(and other tests configure it), and "prints nothing" can only be seen from outside.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from turnloom.engine.support.logs import get_logger

REPO = Path(__file__).resolve().parents[1]

#: A Pause -> Generate turn on the mock model, sent and resumed, plus a callback that raises:
#: turnloom logs that failure at error level, so silence covers more than debug lines.
TURN = """
import turnloom as tl

graph = (
    tl.GraphDescription()
    .add_node("listen", tl.PauseParams(default_exit="answer"))
    .add_node("answer", tl.GenerateParams(system_prompt="You are Mira."))
    .set_start_node("listen")
    .set_default_model_name("mock")
)

def explode(*args):
    raise ValueError("host bug")

with tl.Engine(tl.MockModel("mock")) as engine:
    agent = engine.create_agent(graph)
    agent.set_on_paused(explode)
    assert agent.send_message("Do you sell swords?").paused
    assert agent.resume().final.text == "You said: Do you sell swords?"
"""


def run(prelude: str = "", script: str = TURN) -> subprocess.CompletedProcess[str]:
    """Run `prelude` then `script` in a fresh interpreter; fail on a non-zero exit."""
    code = textwrap.dedent(prelude) + "\n" + script
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done


def test_a_turn_prints_nothing_without_logging_config() -> None:
    done = run()
    assert (done.stdout, done.stderr) == ("", "")


def test_basic_config_shows_the_turn_events_with_their_context() -> None:
    done = run(
        """
        import logging
        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s %(message)s")
        """
    )
    lines = done.stderr.splitlines()
    assert "DEBUG turnloom.turn turn.started agent_id=1 turn_id=1 node=listen" in lines
    assert (
        "DEBUG turnloom.turn turn.resumed agent_id=1 turn_id=1 node=listen resume_node='' "
        "next_node=answer"
    ) in lines
    assert any(line.startswith("DEBUG turnloom.turn turn.completed agent_id=1") for line in lines)
    (failed,) = [i for i, line in enumerate(lines) if " listener.failed agent_id=1 " in line]
    assert lines[failed].startswith("ERROR turnloom.")  # with the exception's traceback:
    assert lines[failed + 1] == "Traceback (most recent call last):"
    assert done.stdout == ""


def test_the_turnloom_logger_level_silences_turnloom_only() -> None:
    done = run(
        """
        import logging
        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s %(message)s")
        logging.getLogger("turnloom").setLevel(logging.WARNING)
        logging.getLogger("app").debug("still here")
        """
    )
    assert "DEBUG app still here" in done.stderr
    assert "turn.started" not in done.stderr
    assert " listener.failed " in done.stderr  # an error: still shown


def test_a_record_carries_the_event_as_a_mapping() -> None:
    done = run(
        """
        import json, logging

        class Keep(logging.Handler):
            def emit(self, record):
                if record.msg.get("event") == "turn.paused":
                    print(json.dumps({**record.msg, "_where": record.module}))

        logging.getLogger("turnloom").addHandler(Keep())
        logging.getLogger("turnloom").setLevel(logging.DEBUG)
        """
    )
    event = json.loads(done.stdout)
    assert event == {
        "event": "turn.paused",
        "agent_id": 1,
        "turn_id": 1,
        "node": "listen",
        "pending_exit": "default",
        "timeout_ms": 0,
        "_where": "executor",  # the module that logged, not the logging helper
    }


def test_a_host_that_configured_structlog_gets_the_events_through_it() -> None:
    done = run(
        """
        import structlog
        structlog.configure(processors=[structlog.processors.JSONRenderer()])
        """
    )
    events = [json.loads(line)["event"] for line in done.stdout.splitlines()]
    assert events[:3] == ["agent.created", "turn.started", "turn.paused"]
    assert "listener.failed" in events
    assert done.stderr == ""


def test_disabled_calls_do_not_render_their_values() -> None:
    """Every turn logs at debug: a disabled call must cost a level check, not a rendering."""
    done = run(
        script="""
import logging, sys
from turnloom.engine.support.logs import get_logger

class Unrenderable:
    def __repr__(self):
        raise AssertionError("rendered")

log = get_logger("turnloom.test")
log.debug("quiet", value=Unrenderable())
print("quiet done", flush=True)
logging.getLogger("turnloom").addHandler(logging.StreamHandler(sys.stdout))
logging.getLogger("turnloom").setLevel(logging.DEBUG)
log.debug("loud", value=Unrenderable())  # enabled: the handler renders it, and fails
"""
    )
    assert done.stdout == "quiet done\n"
    # logging reports a failed rendering on stderr; there is exactly one, the enabled call's.
    assert done.stderr.count("AssertionError: rendered") == 1
    assert done.stderr.count("--- Logging error ---") == 1


def test_loggers_live_under_turnloom() -> None:
    assert get_logger("turnloom.turn").name == "turnloom.turn"
    with pytest.raises(ValueError, match="under 'turnloom'"):
        get_logger("turnloomish")
