"""The C# client (clients/csharp) against the real server, driven from here.

`make csharp` runs this file (it sets TURNLOOM_CSHARP_TESTS=1; `make unit` leaves it to that
target, so the suite runs once per `make test`). It builds the client with Debian's Mono
(clients/csharp/Tools~/make_csharp.sh), writes msgpack cross-test vectors with Python's
msgpack, runs the NUnit suite (each scenario starts its own `python -m turnloom serve --mock`
on a free loopback port; the Unity components' scenarios run in their own assembly, built
against stand-in UnityEngine types), then checks the suite's results and the C# codec's
answers to the vectors byte for byte.
"""

from __future__ import annotations

import math
import os
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import pytest

import turnloom as tl
from tests.helpers import ready_address, running

ROOT = Path(__file__).resolve().parent.parent
CSHARP = ROOT / "clients" / "csharp"
BUILD = CSHARP / "build"
MAKE = CSHARP / "Tools~" / "make_csharp.sh"

pytestmark = pytest.mark.skipif(
    not os.environ.get("TURNLOOM_CSHARP_TESTS"),
    reason="run by `make csharp` (or set TURNLOOM_CSHARP_TESTS=1)",
)

# --- the vectors --------------------------------------------------------------------------

INT_EDGES = [
    0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1,
    -1, -31, -32, -33, -127, -128, -129, -32767, -32768, -32769,
    -(2**31) + 1, -(2**31), -(2**31) - 1, -(2**63) + 1, -(2**63),
]  # fmt: skip
FLOATS = [0.0, -0.0, 1.5, -2.25, 0.1, math.inf, -math.inf, math.nan]
FLOAT64_ONLY = [1e308, 5e-324]  # out of float32's range
FLOAT32_EDGES = [3.4028234663852886e38, 1e-45]  # float32's largest and smallest
STRING_SIZES = [0, 1, 31, 32, 255, 256, 65535, 65536]
BIN_SIZES = [0, 1, 255, 256, 65535, 65536]
COUNT_EDGES = [0, 1, 15, 16, 65535, 65536]


def vector_values() -> Iterator[tuple[str, Any, bool]]:
    """(name, value, packed with float32) for every type and edge."""
    yield "nil", None, False
    yield "true", True, False
    yield "false", False, False
    for n in INT_EDGES:
        yield f"int {n}", n, False
    for x in FLOATS:
        yield f"float64 {x!r}", x, False
        yield f"float32 {x!r}", x, True
    for x in FLOAT64_ONLY:
        yield f"float64 {x!r}", x, False
    for x in FLOAT32_EDGES:
        yield f"float32 {x!r}", x, True
    for size in STRING_SIZES:
        yield f"str of {size}", "x" * size, False
    yield "str utf-8", "h\u00e9llo \u2713 \U0001f409", False
    for size in BIN_SIZES:
        yield f"bin of {size}", bytes(range(256)) * (size // 256) + bytes(size % 256), False
    for count in COUNT_EDGES:
        yield f"array of {count}", list(range(count)), False
        yield f"map of {count}", {f"k{i:06d}": i for i in range(count)}, False
    nested: Any = None
    for depth in range(60):
        nested = {"d": nested} if depth % 2 else [nested, depth]  # one level each
    yield "nested 60 deep", nested, False
    yield "mixed nesting", {"a": [{"b": [1, {"c": None, "": [[], {}]}]}], "z": -1.5}, False
    yield (
        "a paused event",
        {
            "type": "NodeEvent", "agent_id": 1, "turn_id": 1, "event": "paused",
            "node_name": "detect", "pending_exit": "tool_called", "pending_target": "answer",
            "timeout_ms": 0, "awaits_results": True,
            "pending_calls": [{
                "call_id": "c00000000", "tool_name": "open_door",
                "arguments_json": '{"door_id": "7"}', "disposition": "await_result",
                "arguments": {"door_id": "7"}, "node_name": "detect",
            }],
        },
        False,
    )  # fmt: skip


def render(value: Any, single: bool) -> str:
    """The value as the C# test writes what it decoded (CodecTests.Render)."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"i:{value}" if value < 2**63 else f"u:{value}"
    if isinstance(value, float):
        if single:
            return "f32:" + struct.pack(">f", value).hex()
        return "f64:" + struct.pack(">d", value).hex()
    if isinstance(value, str):
        return "s:" + value.encode().hex()
    if isinstance(value, bytes):
        return "b:" + value.hex()
    if isinstance(value, list):
        return "[" + ",".join(render(item, single) for item in value) + "]"
    assert isinstance(value, dict)
    return (
        "{" + ",".join(f"{render(k, single)}={render(v, single)}" for k, v in value.items()) + "}"
    )


@dataclass
class Vector:
    """One value as Python's msgpack packs it, and how the C# side must render it."""

    name: str
    packed: bytes
    rendered: str


def make_vectors() -> list[Vector]:
    """Every vector, packed by msgpack (use_bin_type, as the server packs)."""
    out = []
    for name, value, single in vector_values():
        packed = msgpack.packb(value, use_bin_type=True, use_single_float=single)
        out.append(Vector(name, packed, render(value, single)))
    return out


# --- the run --------------------------------------------------------------------------------


@dataclass
class SuiteRun:
    """What one NUnit run left behind."""

    results: ET.Element
    vectors: list[Vector]
    answers: dict[str, tuple[str, str]]
    output: str


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> SuiteRun:
    """Builds the client, writes the vectors, runs the whole NUnit suite once."""
    for tool in ("mcs", "mono", "nunit-console"):
        assert shutil.which(tool), f"{tool} is missing: run `make csharp` (it installs Mono)"
    subprocess.run(["bash", str(MAKE), "build"], check=True, cwd=ROOT)
    work = tmp_path_factory.mktemp("csharp")
    vectors = make_vectors()
    vectors_in, vectors_out = work / "vectors.tsv", work / "answers.tsv"
    vectors_in.write_text("".join(f"{v.name}\t{v.packed.hex()}\n" for v in vectors))
    env = {
        **os.environ,
        "TURNLOOM_PYTHON": sys.executable,
        "TURNLOOM_REPO": str(ROOT),
        "TURNLOOM_VECTORS_IN": str(vectors_in),
        "TURNLOOM_VECTORS_OUT": str(vectors_out),
    }
    xml = work / "results.xml"
    assemblies = [str(BUILD / "Turnloom.Tests.dll"), str(BUILD / "Turnloom.UnityTests.dll")]
    run = subprocess.run(
        ["nunit-console", *assemblies, "-nologo", f"-xml={xml}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert xml.exists(), f"nunit-console wrote no results:\n{run.stdout}\n{run.stderr}"
    answers = {}
    if vectors_out.exists():
        for line in vectors_out.read_text().splitlines():
            name, packed, rendered = line.split("\t")
            answers[name] = (packed, rendered)
    return SuiteRun(ET.parse(xml).getroot(), vectors, answers, run.stdout + run.stderr)


def test_the_nunit_suite_passes_against_the_real_server(suite: SuiteRun) -> None:
    cases = suite.results.iter("test-case")
    outcome = {case.get("name", "").rsplit(".", 2)[-1]: case.get("result") for case in cases}
    print(suite.output)
    failed = {name: result for name, result in outcome.items() if result != "Success"}
    assert not failed, f"{failed}\n{suite.output}"
    # Each scenario the task names ran (a renamed or lost test would otherwise go unseen).
    expected = {
        "ParamChangedWhilePausedIsSeenByTheNextNode", "JumpResumeGoesWhereTheGameSays",
        "ToolCallAnsweredWithResults", "RegisterToolAnswersAndResumesOnItsOwn",
        "BadBatchIs3016ThenARetrySucceeds", "RefusedAutomaticResumeKeepsTheBatch",
        "RefusalsLeaveTheTurnPaused", "PauseTimesOutToItsEndOrItsTimeoutExit",
        "CancelEndsThePausedTurnBeforeItsReply", "StreamingTextHasExactlyOneFinalChunk",
        "DroppedConnectionFailsEverythingWith1002", "DurableAgentIsReattachedWithItsToken",
        "FuzzedBodiesRaiseOnlyTheCodecsError", "MalformedBodiesAreTheCodecsOwnError",
        "CallbacksRunOnlyOnThePumpingThread", "SynchronizationContextModeDeliversOnTheContext",
        "RealModelStreamsAReply", "PythonVectorsDecodeAndReencodeToTheSameBytes",
        "TlsWithTheKeyRunsAPauseAndResume", "ACertificateForAnotherNameIsRefused",
        "AServerNotSignedByTheTrustedCaIsRefused", "AMissingOrWrongKeyIsUnauthorized",
        "ACaSignedCertificateIsCheckedThroughItsChainAndItsName",
        "AStepThatDoesNotComeTimesOutWith1003",
        "ATimedOutCallbackIsAnsweredOnceEvenWhenTheAnswerComesLater",
        "AnotherSessionAttachingTheAgentDetachesItHere",
        "AQueuedMessageAnswersAtItsOwnTurnsFirstStep",
        "InterruptCancelsTheOpenTurnAndMergeJoinsTheMessages",
        "SetInputPolicyChangesWhatABusyAgentDoes", "QueueLimitAndDestroyDropTheWaitingMessages",
        "AMessageSentWhileATurnRunsWaitsAndThePolicyCannotChange",
        "SaveLoadForkListAndDeleteOverTheWire", "SlotCallbackFormsAndRefusals",
        "LoadingInPlaceEndsTheOldAgentsOpenTurnThenRetiresIt",
        "AStepAskedOfTheOldFaceDuringALoadInPlaceFailsInsteadOfHanging",
        "WithoutAStoreSlotsAreRefusedButAForkWorks",
        "ComponentSaveThenLoadPutsTheSlotsAgentInItsPlace", "ComponentToolsAnswerTheLoadedAgentToo",
        "ComponentCallsMadeWhileALoadReplacesTheAgentGoToTheLoadedOne",
        "ComponentRefusedLoadLeavesTheAgentAsItWas",
        "ComponentForkGoesOnAloneAndABusyAgentIsNotForkedOrSaved",
        "ComponentCallsWaitingForAnAgentThatCannotBeCreatedFail",
        "ComponentWithoutAStoreSaveAndLoadAreRefusedButAForkWorks",
    }  # fmt: skip
    assert expected <= outcome.keys(), expected - outcome.keys()


def test_csharp_codec_answers_pythons_vectors_byte_for_byte(suite: SuiteRun) -> None:
    assert suite.answers, "the C# side wrote no answers to the vectors"
    for vector in suite.vectors:
        packed, rendered = suite.answers[vector.name]
        assert packed == vector.packed.hex(), f"{vector.name}: re-encoded differently"
        assert rendered == vector.rendered, f"{vector.name}: decoded differently"
    assert len(suite.answers) == len(suite.vectors)


# --- one story, three clients ----------------------------------------------------------------

CHECK_STOCK = '{"name": "check_stock", "arguments": {"item": "sword"}}'
CPP_STORY = ROOT / "clients" / "cpp" / "build" / "default" / "tests" / "turnloom_example_story"


def describe(step: tl.Step) -> str:
    """A step as the C# and C++ stories print it."""
    if step.pause is not None:
        p = step.pause
        calls = "; ".join(f"{c.tool_name} {c.arguments_json}" for c in p.pending_calls)
        return f"pause {p.node_name} {p.pending_exit} -> '{p.pending_target}' calls=[{calls}]"
    assert step.result is not None
    return f"complete {step.result.status.value} {step.result.text}"


def python_story(port: int) -> list[str]:
    """The story of clients/csharp/Tools~/Story.cs and clients/cpp/examples/story.cpp."""
    lines: list[str] = []
    shop_graph = (
        tl.GraphDescription()
        .add_node(
            "detect",
            tl.ToolCallParams(
                tools=[
                    tl.ToolDefinition(
                        "check_stock",
                        "How many of an item the shop has.",
                        [tl.ToolParamDefinition("item", "string", "The item.")],
                    )
                ],
                disposition=tl.ToolCallDisposition.AwaitResult,
                mode=tl.ToolCallMode.DetectOnly,
                tool_called_exit="gate",
                no_tool_called_exit="gate",
            ),
        )
        .add_node("gate", tl.PauseParams(default_exit="answer"))
        .add_node("answer", tl.GenerateParams(system_prompt="You are Mira, a shopkeeper."))
        .add_node("decline", tl.CannedResponseParams(lines=["Maybe later."]))
        .set_start_node("detect")
        .set_default_model_name("mock")
    )
    guard_graph = (
        tl.GraphDescription()
        .add_node("guard", tl.PauseParams(pause_timeout_ms=200, timeout_exit="slow"))
        .add_node("slow", tl.CannedResponseParams(lines=["Too slow."]))
        .set_start_node("guard")
        .set_default_model_name("mock")
    )
    with tl.connect("127.0.0.1", port) as remote:
        shop, guard = remote.create_agent(shop_graph), remote.create_agent(guard_graph)
        for agent in (shop, guard):
            agent.set_on_resumed(lambda node, to: lines.append(f"resumed {node} '{to}'"))
        step = shop.send_message(CHECK_STOCK)
        lines.append(describe(step))
        assert step.pause is not None
        call = step.pause.pending_calls[0]
        lines.append(f"game: {call.tool_name} -> 3 in stock")
        step = shop.resume(tool_results=[tl.ToolResult(call.call_id, "3 in stock")])
        lines.append(describe(step))
        answer = shop.get_params("answer")
        assert isinstance(answer, tl.GenerateParams)
        answer.template = "(a trusted customer) {{human_message}}"
        shop.change_params("answer", answer)
        lines.append(f"game: answer.template = {answer.template}")
        lines.append(describe(shop.resume()))
        lines.append(describe(shop.send_message("Can I have a discount?")))
        lines.append("game: jump to decline")
        lines.append(describe(shop.resume("decline")))
        lines.append(describe(guard.send_message("Wake up.")))
        lines.append("game: waits")
        done = guard.wait_complete()
        assert done is not None
        lines.append(f"complete {done.status.value} {done.text}")
    return lines


def cpp_story() -> Path | None:
    """The C++ story program, built if the C++ client's build folder is there (`make cpp`)."""
    if not CPP_STORY.exists() and (CPP_STORY.parent.parent / "CMakeCache.txt").exists():
        build = ["cmake", "--build", str(CPP_STORY.parent.parent), "--target", CPP_STORY.name]
        subprocess.run(build, check=True, capture_output=True)
    return CPP_STORY if CPP_STORY.exists() else None


def test_one_story_gives_one_transcript_in_python_csharp_and_cpp(suite: SuiteRun) -> None:
    story = cpp_story()
    if story is None and os.environ.get("CI"):
        pytest.fail(f"{CPP_STORY} is missing: `make cpp` builds it (CI must compare all three)")
    with running(
        [sys.executable, "-m", "turnloom", "serve", "--mock", "--port", "0", "--log-level=error"]
    ) as proc:
        _, port = ready_address(proc)
        transcripts = {"python": python_story(port)}
        programs = {"csharp": ["mono", str(BUILD / "Story.exe")]}
        if story is not None:
            programs["cpp"] = [str(story)]
        for name, command in programs.items():
            out = subprocess.run([*command, str(port)], capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, f"{name}: {out.stdout}\n{out.stderr}"
            transcripts[name] = out.stdout.splitlines()
    expected = transcripts["python"]
    assert expected[-1] == "complete success Too slow." and len(expected) == 15, expected
    for name, lines in transcripts.items():
        assert lines == expected, f"{name} differs from python:\n" + "\n".join(lines)
    if story is None:
        pytest.skip(f"python and C# agree; the C++ story was not built ({CPP_STORY}: `make cpp`)")
