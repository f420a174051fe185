"""A run whose files cannot hold a finding imports neither LibCST, nor rich, nor a rule module,
and says exactly what it said when they were imported up front. Each case runs ``python -m
devlint ...`` in a subprocess and reads the modules loaded when it exits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# `python -m devlint ARGS`, writing sorted(sys.modules) to MODULES_FILE at exit.
AS_MAIN = (
    "import atexit, json, os, runpy, sys\n"
    "atexit.register(lambda: open(os.environ['MODULES_FILE'], 'w').write(json.dumps(sorted(sys.modules))))\n"
    "sys.argv = ['devlint', *sys.argv[1:]]\n"
    "runpy.run_module('devlint', run_name='__main__', alter_sys=True)\n"
)
HEAVY = ("libcst", "rich", "devlint.rules.")
CLEAN = "def add(a, b):\n    return a + b\n"
# Triggers everywhere (cuda, load, numpy, DataLoader), a finding nowhere: the gate rules it out.
QUIET = (
    "import torch\nfrom torch.utils.data import DataLoader\n\n"
    "def restore(path):\n    if torch.cuda.is_available():\n        print(torch.version.cuda)\n"
    '    return torch.load(path, map_location="cpu"), torch.ones(2).numpy()\n'
)
CUDA = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"


def _run(tmp_path: Path, *args: str, eager: bool = False) -> tuple[int, str, set[str]]:
    """Exit status, stdout and the modules loaded at exit of ``devlint ARGS`` in ``tmp_path``;
    ``eager``: LibCST, rich and every rule imported before the run starts."""
    record = tmp_path.parent / f"{tmp_path.name}-modules.json"
    env = {key: value for key, value in os.environ.items() if key not in ("DEVLINT_CACHE_DIR", "CI")}
    env["MODULES_FILE"] = str(record)
    start = AS_MAIN
    if eager:
        start = "import libcst, rich.console\nfrom devlint.registry import all_rules\nall_rules()\n" + start
    done = subprocess.run(
        [sys.executable, "-c", start, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, set(json.loads(record.read_text()))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(name for name in modules if name.startswith(HEAVY) or name == "rich")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "quiet.py").write_text(QUIET)
    (tmp_path / "cuda.py").write_text(CUDA)
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["%time x = 1\n", "print(x)"]}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "clean.ipynb").write_text(json.dumps(notebook))
    return tmp_path


@pytest.mark.parametrize("fmt", ["concise", "json", "github", "gitlab", "junit"])
def test_a_run_without_findings_imports_nothing_heavy_and_says_the_same(project: Path, fmt: str) -> None:
    args = ("check", "clean.py", "quiet.py", "clean.ipynb", "--no-cache", "--output-format", fmt)
    status, out, modules = _run(project, *args)
    assert "devlint.run.command" in modules and "devlint.gate.screen" in modules
    assert _heavy(modules) == []
    assert (status, out) == _run(project, *args, eager=True)[:2]
    assert status == 0


# What a run of a few files (a pre-commit hook's) does not use: worker processes, git, a
# temporary file; the three are a fifth of what the command imports.
UNUSED_BY_A_FEW_FILES = ("multiprocessing", "subprocess", "tempfile")


def test_a_check_of_a_few_files_starts_no_worker_runs_no_git_and_writes_nothing(project: Path) -> None:
    status, _, modules = _run(project, "check", "clean.py", "quiet.py", "clean.ipynb", "--no-cache")
    assert status == 0 and "devlint.run.pool" in modules
    assert sorted(name for name in modules if name.startswith(UNUSED_BY_A_FEW_FILES)) == []
    # LibCST's own modules bring subprocess along; nothing of devlint's needs the other two
    status, out, modules = _run(project, "check", "clean.py", "cuda.py", "--no-cache")
    assert status == 1 and "DEV101" in out
    assert sorted(name for name in modules if name.startswith(("multiprocessing", "tempfile"))) == []


def test_what_a_few_files_leave_out_is_imported_when_used(project: Path) -> None:
    # twelve files: worker processes; --fix: a temporary file per fixed file
    for i in range(12):
        (project / f"copy{i}.py").write_text(CUDA)
    status, _, modules = _run(project, "check", "--fix", "--no-cache", "--jobs", "2", *(f"copy{i}.py" for i in range(12)))
    assert status == 0 and {"multiprocessing", "tempfile"} <= modules
    assert ".cuda()" not in (project / "copy0.py").read_text()


def test_the_full_format_imports_rich_to_print_but_never_libcst(project: Path) -> None:
    args = ("check", "clean.py", "quiet.py", "--no-cache", "--output-format", "full")
    status, out, modules = _run(project, *args)
    assert "rich" in modules and not any(name.startswith(("libcst", "devlint.rules.")) for name in modules)
    assert (status, out) == _run(project, *args, eager=True)[:2] == (0, "All checks passed!\n")


def test_a_file_with_a_finding_imports_only_its_rules_module(project: Path) -> None:
    status, out, modules = _run(project, "check", "cuda.py", "quiet.py", "--no-cache")
    assert status == 1 and "cuda.py:2:" in out and "DEV101" in out
    assert "libcst" in modules and "rich" not in modules
    assert sorted(name for name in modules if name.startswith("devlint.rules.")) == ["devlint.rules.cuda_call"]
    assert (status, out) == _run(project, "check", "cuda.py", "quiet.py", "--no-cache", eager=True)[:2]


def test_a_warm_run_answers_from_the_cache_without_libcst(project: Path) -> None:
    cold = _run(project, "check", "cuda.py", "clean.py")
    warm = _run(project, "check", "cuda.py", "clean.py")
    assert (warm[0], warm[1]) == (cold[0], cold[1]) and "DEV101" in warm[1]
    assert "libcst" in cold[2] and _heavy(warm[2]) == []
    # nor the screen and the gate's conditions: every answer is the cache's
    assert "devlint.gate.conditions" in cold[2]
    assert not {"devlint.gate.screen", "devlint.gate.conditions"} & warm[2]


def test_fix_of_files_without_findings_imports_nothing_heavy(project: Path) -> None:
    status, out, modules = _run(project, "fix", "clean.py", "quiet.py", "--no-cache")
    assert (status, out) == (0, "All checks passed!\n")
    assert _heavy(modules) == []
    assert (project / "quiet.py").read_text() == QUIET
