"""Faults while `devlint fix` writes: every file ends up old or new, never partial, never lost.

Root ignores file permissions, and these tests run as root in the project's sandbox: tests that
need a real permission failure skip under root, and a twin test simulates the failure there
(a read-only file is refused by its mode bits, which devlint honours even for root).
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import devlint.run.writer as writer
from devlint.cli import main
from devlint.run.writer import TEMP_SUFFIX

ROOT = Path(__file__).resolve().parent.parent
CUDA = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
FIXED = (
    "import torch\n"
    "\n"
    'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
    "model = torch.nn.Linear(2, 2).to(device)\n"
)
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([*args, "--output-format", "concise", "--no-cache"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def leftovers(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.name.endswith(TEMP_SUFFIX)]


# -- atomic replacement --------------------------------------------------------------------------


def test_the_new_file_is_renamed_into_place_from_the_same_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "train.py"
    path.write_text(CUDA)
    path.chmod(0o751)
    inode = path.stat().st_ino
    renames: list[tuple[str, str, bytes]] = []
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        renames.append((str(src), str(dst), Path(src).read_bytes()))
        real_replace(src, dst)

    monkeypatch.setattr(writer.os, "replace", replace)
    assert run(capsys, "fix", str(path))[0] == 0
    [(src, dst, data)] = renames
    assert Path(src).parent == path.parent and Path(dst) == path
    # The temporary file held the whole new text before the rename: no reader sees a partial one.
    assert data == FIXED.encode()
    assert path.read_text() == FIXED
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert path.stat().st_ino != inode
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(not IS_ROOT, reason="only root can give a file to another owner")
def test_the_owner_is_kept_when_root_fixes_someone_elses_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "theirs.py"
    path.write_text(CUDA)
    os.chown(path, 4321, 8765)
    assert run(capsys, "fix", str(path))[0] == 0
    assert (path.stat().st_uid, path.stat().st_gid) == (4321, 8765)
    assert path.read_text() == FIXED


# -- the file changed between read and write ------------------------------------------------------


def test_a_file_edited_while_devlint_fixed_it_is_not_overwritten(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """An editor saves the file in the window between devlint's read and its rename."""
    path = tmp_path / "train.py"
    other = tmp_path / "other.py"
    path.write_text(CUDA)
    other.write_text(CUDA)
    edited = CUDA + "print('saved by the editor')\n"
    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args: object, **kwargs: object) -> tuple[int, str]:
        if path.read_text() == CUDA:
            path.write_text(edited)
        return real_mkstemp(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    code, _, err = run(capsys, "fix", str(path), str(other))
    assert code == 2
    assert f"devlint: error: {path}: changed on disk since it was read; not overwritten" in err.splitlines()
    assert path.read_text() == edited
    assert other.read_text() == FIXED
    assert leftovers(tmp_path) == []


def test_a_change_right_before_the_rename_is_caught(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The latest moment: after the temporary file is written, before the comparison."""
    path = tmp_path / "train.py"
    path.write_text(CUDA)
    real_chmod = os.chmod

    def chmod(target: str, mode: int) -> None:
        real_chmod(target, mode)
        if str(target).endswith(TEMP_SUFFIX):
            path.write_text("x = 1\n")

    monkeypatch.setattr(writer.os, "chmod", chmod)
    code, _, err = run(capsys, "fix", str(path))
    assert code == 2 and "changed on disk since it was read" in err
    assert path.read_text() == "x = 1\n"
    assert leftovers(tmp_path) == []


# -- the file or folder cannot be written ---------------------------------------------------------


def test_a_read_only_file_is_reported_and_left_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Works as root too: a file without any write bit is left alone whoever runs devlint."""
    path = tmp_path / "frozen.py"
    path.write_text(CUDA)
    path.chmod(0o444)
    other = tmp_path / "other.py"
    other.write_text(CUDA)
    code, _, err = run(capsys, "fix", str(tmp_path))
    assert code == 2
    assert f"devlint: error: {path}: file is read-only; left unchanged" in err.splitlines()
    assert path.read_text() == CUDA and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert other.read_text() == FIXED
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(IS_ROOT, reason="root may write into a read-only folder; see the simulated test below")
def test_a_read_only_folder_is_reported_and_left_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    path = folder / "train.py"
    path.write_text(CUDA)
    folder.chmod(0o555)
    try:
        code, _, err = run(capsys, "fix", str(path))
    finally:
        folder.chmod(0o755)
    assert code == 2 and f"devlint: error: {path}: cannot write a temporary file" in err
    assert path.read_text() == CUDA


def test_a_read_only_folder_simulated(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The same as root: creating the temporary file fails with EACCES, as it does for a user."""
    path = tmp_path / "train.py"
    path.write_text(CUDA)

    def mkstemp(*args: object, **kwargs: object) -> tuple[int, str]:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    code, _, err = run(capsys, "fix", str(path))
    assert code == 2
    assert f"devlint: error: {path}: cannot write a temporary file in {tmp_path}: Permission denied; left unchanged" in err.splitlines()
    assert path.read_text() == CUDA


def test_a_full_disk_leaves_the_file_and_no_temporary_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "train.py"
    path.write_text(CUDA)

    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer.os, "fsync", fsync)
    code, _, err = run(capsys, "fix", str(path))
    assert code == 2
    assert f"devlint: error: {path}: cannot write: No space left on device; left unchanged" in err.splitlines()
    assert path.read_text() == CUDA
    assert leftovers(tmp_path) == []


def test_an_interrupt_inside_the_write_is_held_until_the_file_is_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGINT arriving between creating the temporary file and the rename is delivered after
    the rename: the file is whole and no temporary file is stranded."""
    path = tmp_path / "train.py"
    path.write_text(CUDA)
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        real_fsync(fd)

    monkeypatch.setattr(writer.os, "fsync", fsync)
    with pytest.raises(KeyboardInterrupt):
        writer.write_atomic(path, FIXED.encode(), CUDA.encode())
    assert path.read_text() == FIXED
    assert leftovers(tmp_path) == []


# -- interrupts and concurrent runs, in real processes ---------------------------------------------

# Several findings per file so that each file takes a few fix rounds' time.
PROGRAM = """import torch
from torch import nn


class Net{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4).cuda()
        self.weights = torch.cuda.FloatTensor(4, 4)

    def forward(self, x):
        mask = torch.ones(4).cuda()
        return self.fc(x.cuda()) * mask


def train{i}(loader, model):
    for batch in loader:
        batch = batch.cuda(non_blocking=True)
        loss = model(batch).sum()
        loss.backward()
    return model.cuda()
"""


def make_tree(folder: Path, count: int) -> dict[Path, str]:
    files = {}
    for i in range(count):
        path = folder / f"pkg{i % 5}" / f"m{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(PROGRAM.format(i=i))
        files[path.relative_to(folder)] = PROGRAM.format(i=i)
    return files


def fixed_texts(tmp_path: Path, originals: dict[Path, str]) -> dict[Path, str]:
    """What a single, uninterrupted `devlint fix` makes of each file."""
    reference = tmp_path / "reference"
    for rel, text in originals.items():
        (reference / rel).parent.mkdir(parents=True, exist_ok=True)
        (reference / rel).write_text(text)
    done = devlint_process(["fix", str(reference)])
    assert done.wait(timeout=300) in (0, 1)
    return {rel: (reference / rel).read_text() for rel in originals}


def devlint_process(args: list[str], cache: Path | None = None) -> subprocess.Popen[bytes]:
    """`devlint` in its own process group; with ``cache``, the cache lives there."""
    env = {**os.environ, "DEVLINT_CACHE_DIR": str(cache)} if cache is not None else None
    flags = ["--no-cache"] if cache is None else []
    return subprocess.Popen(
        [sys.executable, "-m", "devlint", *args, *flags, "--output-format", "concise"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, env=env,
        preexec_fn=_hear_sigint,
    )


def _hear_sigint() -> None:
    """A shell runs background jobs with SIGINT ignored, and children inherit that: the run
    under test must hear Ctrl-C as a user's terminal delivers it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(autouse=True)
def _sigint_raises():
    """The in-process tests send SIGINT to this process: it must raise KeyboardInterrupt here
    even when the suite was started with SIGINT ignored (in the background)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def assert_each_file_old_or_new(folder: Path, originals: dict[Path, str], fixed: dict[Path, str]) -> int:
    """Returns how many files are already fixed."""
    done = 0
    for rel, text in originals.items():
        now = (folder / rel).read_text()
        assert now in (text, fixed[rel]), f"{rel} is neither the original nor the fixed text:\n{now}"
        compile(now, str(rel), "exec", dont_inherit=True)
        done += now == fixed[rel]
    assert leftovers(folder) == []
    assert sorted(p.relative_to(folder) for p in folder.rglob("*.py")) == sorted(originals)
    return done


@pytest.mark.parametrize(("jobs", "whole_group"), [("1", False), ("2", True)])
def test_sigint_mid_run_leaves_every_file_old_or_new(tmp_path: Path, jobs: str, whole_group: bool) -> None:
    """`devlint fix` on 120 files, interrupted at several moments: to the main process alone
    (``kill -INT``), or to every process of the run as Ctrl-C in a terminal does."""
    originals = make_tree(tmp_path / "seed", 120)
    fixed = fixed_texts(tmp_path, originals)
    progress = []
    for attempt, delay in enumerate((0.4, 0.9, 1.6, 2.5)):
        folder = tmp_path / f"run{attempt}"
        for rel, text in originals.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
        process = devlint_process(["fix", "--jobs", jobs, str(folder)])
        time.sleep(delay)
        if whole_group:
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGINT)
        status = process.wait(timeout=120)
        err = process.stderr.read().decode() if process.stderr else ""
        assert "Traceback" not in err, err
        assert status in (0, 1, 130, -signal.SIGINT), (status, err)
        progress.append(assert_each_file_old_or_new(folder, originals, fixed))
    # At least one interrupt must have landed mid-run (here: 0, 3, 36 and 83 of 120 files were
    # fixed at the four moments), or this test proves nothing.
    assert any(0 < done < len(originals) for done in progress), progress


def test_two_fix_runs_at_once_lose_nothing(tmp_path: Path) -> None:
    originals = make_tree(tmp_path / "seed", 60)
    fixed = fixed_texts(tmp_path, originals)
    # Without a cache, then with one cache shared by both runs.
    for attempt, cache in enumerate((None, tmp_path / "cache")):
        folder = tmp_path / f"race{attempt}"
        for rel, text in originals.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
        first = devlint_process(["fix", "--jobs", "1", str(folder)], cache)
        second = devlint_process(["fix", "--jobs", "1", str(folder)], cache)
        statuses = first.wait(timeout=300), second.wait(timeout=300)
        errors = [p.stderr.read().decode() for p in (first, second) if p.stderr]
        # 2: the slower run found files the other had already fixed, and left them alone.
        assert all(status in (0, 2) for status in statuses), (statuses, errors)
        for err in errors:
            assert all("changed on disk since it was read" in line for line in err.splitlines() if line.startswith("devlint: error:")), err
        assert {rel: (folder / rel).read_text() for rel in originals} == fixed
        assert leftovers(folder) == []


def test_a_fix_the_compiler_would_reject_leaves_the_file_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """CPython's parser accepts `f(a=1, a=2)`; only its compiler rejects the repeated keyword. A
    fixed text is compiled whole, so such a fix is refused and the file keeps its bytes."""
    import devlint.engine.lint as lint

    real = lint.apply_fixes

    def repeating(text: str, fixes: list) -> tuple[str, int]:
        fixed, count = real(text, fixes)
        return fixed + "print(sep='', sep='')\n", count

    monkeypatch.setattr(lint, "apply_fixes", repeating)
    target = tmp_path / "train.py"
    target.write_text(CUDA)
    code, _, err = run(capsys, "fix", str(target))
    assert code == 2
    assert "keyword argument repeated" in err and "file left unchanged" in err
    assert target.read_text() == CUDA
