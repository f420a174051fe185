"""`check` and `fix` read code, never run it; they write only the files they fix and the cache.
`verify` runs code, but only in child processes with a clean environment and a time limit, and
never through a shell."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CUDA = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"


def hostile_tree(folder: Path, marker: Path) -> None:
    """Files that leave ``marker`` behind (or fail loudly) if anything imports or runs them."""
    touch = f"open({str(marker)!r}, 'a').write(__file__ + '\\n')\n"
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "__init__.py").write_text(touch + CUDA)
    (folder / "pkg" / "helpers.py").write_text(touch + "raise SystemExit('imported!')\n" + CUDA)
    (folder / "train.py").write_text("import pkg.helpers\nimport evil\n" + touch + CUDA + "raise RuntimeError('ran!')\n")
    (folder / "evil.py").write_text(touch + "import os\nos._exit(99)\n")
    (folder / "conftest.py").write_text(touch)
    (folder / "setup.py").write_text(touch + "from setuptools import setup\nsetup()\n")
    (folder / "sitecustomize.py").write_text(touch)
    # Named like modules devlint itself imports: `python -m devlint` run here must not pick them up.
    for name in ("argparse", "json", "rich", "libcst", "tomllib", "fnmatch", "difflib", "torch"):
        (folder / f"{name}.py").write_text(touch + "raise ImportError('shadowed')\n")
    (folder / "notebook.ipynb").write_text(json.dumps({
        "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                   "source": [touch, "import torch\n", "x = torch.ones(2).cuda()\n"]}],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5,
    }))


@pytest.mark.parametrize("how", ["module", "script"])
def test_check_and_fix_never_import_or_run_the_code_they_read(tmp_path: Path, how: str) -> None:
    tree, marker = tmp_path / "project", tmp_path / "marker"
    hostile_tree(tree, marker)
    # `python -m devlint` from inside the project puts it first on sys.path; the script does not.
    launcher = [sys.executable, "-m", "devlint"] if how == "module" else [str(Path(sys.executable).parent / "devlint")]
    for command in (["check"], ["fix"], ["fix", "--unsafe-fixes"], ["check", "--diff"]):
        done = subprocess.run([*launcher, *command, "--no-cache", "."], cwd=tree, capture_output=True, text=True, timeout=120)
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode in (0, 1), (command, done.stderr)
        assert not marker.exists(), f"{command} ran user code: {marker.read_text()}"
    assert ".to(device)" in (tree / "train.py").read_text()
    assert "raise RuntimeError('ran!')" in (tree / "train.py").read_text()


def test_a_check_run_does_not_import_torch(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(CUDA + "import torch.nn.functional as F\nimport numpy as np\n")
    code = (
        "import sys\n"
        "from devlint.cli import main\n"
        f"status = main(['check', '--no-cache', '--jobs', '1', {str(tmp_path)!r}])\n"
        "heavy = sorted(name for name in sys.modules if name.split('.')[0] in ('torch', 'numpy'))\n"
        "print('IMPORTED', heavy)\n"
        "sys.exit(status)\n"
    )
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "IMPORTED []" in done.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert imported and not any(name == "torch" or name.startswith("torch.") for name in imported)


def snapshot(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file below ``folder``: content, inode and mtime (a rewrite with the same bytes shows)."""
    return {
        path.relative_to(folder).as_posix(): (path.read_bytes(), path.stat().st_ino, path.stat().st_mtime_ns)
        for path in folder.rglob("*")
        if path.is_file()
    }


@pytest.mark.parametrize("cache", [True, False])
def test_fix_writes_only_the_fixed_files_and_the_cache(tmp_path: Path, cache: bool) -> None:
    tree = tmp_path / "tree"
    home, temp = tree / "home", tree / "tmp"
    for folder in (tree / "src" / "models", tree / "notebooks", home, temp, tree / "build"):
        folder.mkdir(parents=True)
    (tree / "src" / "models" / "net.py").write_text(CUDA)
    (tree / "src" / "clean.py").write_text("import torch\nx = torch.ones(2)\n")
    (tree / "src" / "broken.py").write_text("def f(:\n")
    (tree / "src" / "remaining.py").write_text("import torch\ntorch.cuda.set_device(0)\n")
    (tree / "build" / "ignored.py").write_text(CUDA)
    (tree / "README.md").write_text("x.cuda()\n")
    (tree / "pyproject.toml").write_text("[tool.devlint]\nextend-exclude = ['build']\n")
    before = snapshot(tree)
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(temp), "XDG_CACHE_HOME": str(home / ".cache")}
    env.pop("DEVLINT_CACHE_DIR", None)
    flags = [] if cache else ["--no-cache"]
    done = subprocess.run([sys.executable, "-m", "devlint", "fix", *flags, "."], cwd=tree, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "broken.py" in done.stderr, done.stderr
    after = snapshot(tree)
    changed = {name for name in before.keys() & after.keys() if before[name] != after[name]}
    added = set(after) - set(before)
    assert changed == {"src/models/net.py"}
    assert all(name.startswith(".devlint_cache/") for name in added) and (bool(added) == cache), added
    assert set(before) - set(after) == set()


# -- verify -----------------------------------------------------------------------------------------

SPY = """import json, os, sys
with open({marker!r}, "a") as out:
    parent = open(f"/proc/{{os.getppid()}}/cmdline", "rb").read().split(b"\\0")
    out.write(json.dumps({{"env": sorted(os.environ), "cwd": os.getcwd(), "pid": os.getpid(),
                          "parent": [part.decode(errors="replace") for part in parent if part]}}) + "\\n")
import torch
x = torch.ones(3)
if torch.cuda.is_available():
    x = x.cuda()
print(float(x.sum()))
"""
SPIN = """import os
with open({marker!r}, "a") as out:
    out.write(str(os.getpid()) + "\\n")
import torch
x = torch.ones(3).cuda() if torch.cuda.is_available() else torch.ones(3)
while True:
    pass
"""


def test_verify_source_never_uses_a_shell() -> None:
    pattern = re.compile(r"shell\s*=\s*True|os\.system\(|os\.popen\(|os\.exec[lv]p?e?\(|pty\.spawn")
    for path in (ROOT / "devlint").rglob("*.py"):
        assert not pattern.search(path.read_text()), path


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads the parent's command line from /proc")
def test_verify_runs_code_only_in_clean_child_processes_with_a_time_limit(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    programs, spied, spun = tmp_path / "programs", tmp_path / "spied", tmp_path / "spun"
    programs.mkdir()
    (programs / "spy.py").write_text(SPY.format(marker=str(spied)))
    (programs / "spin.py").write_text(SPIN.format(marker=str(spun)))
    env = {**os.environ, "DEVLINT_TEST_SECRET": "do-not-leak", "PYTHONSTARTUP": str(tmp_path / "startup.py")}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "devlint", "verify", "--timeout", "4", "--output-format", "json", str(programs)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=280,
    )
    elapsed = time.monotonic() - start
    assert "Traceback" not in done.stderr, done.stderr
    records = [json.loads(line) for line in spied.read_text().splitlines()]
    assert records, done.stdout + done.stderr
    for record in records:
        assert "DEVLINT_TEST_SECRET" not in record["env"] and "PYTHONSTARTUP" not in record["env"]
        assert Path(record["cwd"]).resolve() != tmp_path.resolve()
        launcher = Path(record["parent"][0]).name
        assert launcher.startswith("python") and launcher not in ("sh", "bash", "dash", "zsh"), record["parent"]
    # The spinning program was stopped at the limit, every time it ran, and nothing of it lives on.
    pids = [int(line) for line in spun.read_text().split()]
    assert pids and elapsed < 240
    time.sleep(0.5)
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid)]
    spin = next(row for row in json.loads(done.stdout)["programs"] if row["path"].endswith("spin.py"))
    assert spin["runs"]["cpu"]["reason"] == "timed out after 4 s", spin


def _state(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/status").read_text().split("State:", 1)[1].split("\n", 1)[0]).lower()
    except (OSError, IndexError):
        return "gone"
