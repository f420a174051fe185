"""The progress bar: on a terminal for long runs only; never in pipes or CI."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from devlint.run.command import Options, run_check
from devlint.run.progress import MIN_FILES, batches, run_with_progress, wanted


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_wanted_only_for_long_runs_on_a_terminal_outside_ci() -> None:
    assert wanted(MIN_FILES, Terminal(), {})
    assert not wanted(MIN_FILES - 1, Terminal(), {})
    assert not wanted(500, io.StringIO(), {})
    assert not wanted(500, Terminal(), {"CI": "true"})
    assert not wanted(500, Terminal(), {"TERM": "dumb"})
    assert wanted(500, Terminal(), {"CI": "false"})


def test_batches_cover_the_work_in_order() -> None:
    work = list(range(1234))
    parts = batches(work)
    assert [item for part in parts for item in part] == work
    assert len(parts) <= 25 and all(len(part) >= 50 for part in parts[:-1])


def test_run_with_progress_keeps_results_in_order_and_draws_only_on_a_terminal() -> None:
    work = list(range(120))
    calls: list[int] = []

    def run(items: list[int]) -> list[int]:
        calls.append(len(items))
        return [item * 2 for item in items]

    terminal = Terminal()
    assert run_with_progress(run, work, terminal, {}) == [item * 2 for item in work]
    assert len(calls) > 1 and "Checking" in terminal.getvalue()
    calls.clear()
    piped = io.StringIO()
    assert run_with_progress(run, work, piped, {}) == [item * 2 for item in work]
    assert calls == [120] and piped.getvalue() == ""


@pytest.mark.parametrize(("env", "drawn"), [({}, True), ({"CI": "1"}, False)])
def test_a_check_run_shows_the_bar_on_stderr_only(tmp_path: Path, monkeypatch, env: dict, drawn: bool) -> None:
    monkeypatch.delenv("CI", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for index in range(MIN_FILES):
        (tmp_path / f"m{index}.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    out, err = io.StringIO(), Terminal()
    assert run_check(Options(paths=[str(tmp_path)], output_format="concise"), out, err) == 1
    assert len(out.getvalue().splitlines()) == MIN_FILES + 1 and "Checking" not in out.getvalue()
    assert ("Checking" in err.getvalue()) is drawn
