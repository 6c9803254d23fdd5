"""Heavy work on a worker thread makes the interpreter switch threads often (`engine.gil`),
so the engine loop gets the GIL back quickly, and the host's own setting returns after."""

from __future__ import annotations

import sys
import threading

import pytest

from turnloom.engine.support.gil import SWITCH_S, run_switching_often


def test_the_switch_interval_is_short_while_the_work_runs_and_restored_after() -> None:
    before = sys.getswitchinterval()
    assert run_switching_often(sys.getswitchinterval) == SWITCH_S
    assert sys.getswitchinterval() == before


def test_overlapping_works_restore_the_setting_only_when_the_last_ends() -> None:
    before = sys.getswitchinterval()
    first_in, second_done, seen = threading.Event(), threading.Event(), []

    def first() -> None:
        first_in.set()
        assert second_done.wait(10)
        seen.append(sys.getswitchinterval())  # the second ended, this one still runs

    thread = threading.Thread(target=run_switching_often, args=(first,))
    thread.start()
    assert first_in.wait(10)
    seen.append(run_switching_often(sys.getswitchinterval))
    second_done.set()
    thread.join(10)
    assert seen == [SWITCH_S, SWITCH_S]
    assert sys.getswitchinterval() == before


def test_a_failing_work_restores_the_setting_too() -> None:
    before = sys.getswitchinterval()

    def fail() -> None:
        raise ValueError("refused")

    with pytest.raises(ValueError):
        run_switching_often(fail)
    assert sys.getswitchinterval() == before
