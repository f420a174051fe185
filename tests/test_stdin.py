"""`-` as PATH: one file from stdin, reported (and configured) under --stdin-filename."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from devlint.run.command import Options, run_check

CUDA = b"import torch\nx = torch.ones(2).cuda()\n"
FIXED = b'import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\nx = torch.ones(2).to(device)\n'


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def run(data: bytes, **options) -> tuple[int, bytes, str]:
    """Exit status, stdout bytes and stderr text of a stdin run."""
    out_bytes = io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", newline="")
    err = io.StringIO()
    status = run_check(Options(paths=["-"], output_format="concise", **options), out, err, io.BytesIO(data))
    out.flush()
    return status, out_bytes.getvalue(), err.getvalue()


def test_check_reports_under_the_stdin_filename() -> None:
    status, out, err = run(CUDA, stdin_filename="src/train.py")
    assert status == 1 and err == ""
    assert out.decode() == (
        "src/train.py:2:18: DEV101 [*] `.cuda()` hardcodes the CUDA device; use `.to(device)`\n"
        "Found 1 finding (1 fixable, 0 with --unsafe-fixes).\n"
    )
    status, out, _ = run(CUDA)
    assert status == 1 and out.startswith(b"-:2:18: DEV101")


def test_configuration_and_per_file_ignores_follow_the_name(tmp_path: Path) -> None:
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "devlint.toml").write_text('[per-file-ignores]\n"scratch_*.py" = ["DEV101"]\n')
    assert run(CUDA, stdin_filename="lab/scratch_1.py")[0] == 0
    assert run(CUDA, stdin_filename="lab/train.py")[0] == 1
    (tmp_path / "lab" / "devlint.toml").write_text('device-name = "dev"\n')
    assert b".to(dev)" in run(CUDA, stdin_filename="lab/train.py", fix=True)[1]
    (tmp_path / "lab" / "devlint.toml").write_text("bogus = 1\n")
    status, out, err = run(CUDA, stdin_filename="lab/train.py")
    assert status == 2 and out == b"" and "devlint.toml: unknown key `bogus`" in err


def test_fix_writes_the_whole_fixed_source_to_stdout_and_findings_to_stderr() -> None:
    status, out, err = run(CUDA, stdin_filename="a.py", fix=True)
    # the source on stdout, the summary where the findings go
    assert (status, out, err) == (0, FIXED, "Fixed 1 finding.\nAll checks passed!\n")
    left = CUDA + b"torch.cuda.set_device(0)\nz = torch.ones(1).cuda(args.gpu)\n"
    status, out, err = run(left, stdin_filename="a.py", fix=True)
    assert out.startswith(FIXED) and b".cuda(args.gpu)" in out
    assert status == 1 and "a.py:" in err and out.count(b"\n") == 6


def test_fix_echoes_unchanged_and_unparsable_input_byte_for_byte() -> None:
    clean = b"# -*- coding: latin-1 -*-\r\nname = 'caf\xe9'\r\n"
    assert run(clean, stdin_filename="a.py", fix=True) == (0, clean, "All checks passed!\n")
    broken = b"import torch\nx = torch.ones(2).cuda(\n"
    status, out, err = run(broken, stdin_filename="a.py", fix=True)
    assert status == 2 and out == broken and err.startswith("devlint: error: a.py:")


def test_diff_from_stdin() -> None:
    status, out, err = run(CUDA, stdin_filename="a.py", fix=True, diff=True)
    assert status == 1 and out.decode().startswith("--- a/a.py\n+++ b/a.py\n") and "Would fix 1 finding" in err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"paths": ["-", "other.py"]}, "cannot be combined with other paths"),
        ({"paths": ["a.py"], "stdin_filename": "a.py"}, "--stdin-filename needs `-`"),
        ({"paths": ["-"], "add_noqa": True}, "--add-noqa cannot write to stdin"),
    ],
)
def test_stdin_usage_errors(options: dict, message: str) -> None:
    err = io.StringIO()
    assert run_check(Options(output_format="concise", **options), io.StringIO(), err, io.BytesIO(CUDA)) == 2
    assert message in err.getvalue()


@pytest.mark.parametrize("command", [["fix"], ["check", "--fix"]])
def test_real_pipe_end_to_end(command: list[str]) -> None:
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    result = subprocess.run(
        [sys.executable, "-m", "devlint", *command, "--stdin-filename", "train.py", "-"],
        input=CUDA + b"torch.cuda.set_device(0)\n", capture_output=True, env=env, timeout=60,
    )
    assert result.stdout.startswith(FIXED)
    assert result.stdout.endswith(b"torch.cuda.set_device(0)\n")
    assert result.returncode in (0, 1) and b"Traceback" not in result.stderr


def test_stdin_filename_without_a_path_reads_stdin(monkeypatch, capsys) -> None:
    from devlint.cli import main

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CUDA)))
    assert main(["check", "--output-format", "concise", "--stdin-filename", "nb/train.py"]) == 1
    assert capsys.readouterr().out.startswith("nb/train.py:2:18: DEV101")
