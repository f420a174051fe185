"""``--diff-base REF``: a gate on pull requests reports only what the change touched."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from devlint.cli import main
from report_lines import finding_lines

OLD = "import torch\nx = torch.ones(1).cuda()\n\n\ndef f():\n    return 1\n"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose `main` holds old CUDA-first code, on a branch `feature` off it."""
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "config", "user.email", "dev@example.com")
    _git(tmp_path, "config", "user.name", "dev")
    (tmp_path / "old.py").write_text(OLD)
    (tmp_path / "kept.py").write_text("import torch\nm = torch.nn.Linear(2, 2).cuda()\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")
    _git(tmp_path, "checkout", "-qb", "feature")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _rows(out: str) -> list[str]:
    return [line.split(": ")[0] for line in finding_lines(out)]


def test_only_the_new_line_is_reported(repo: Path, capsys) -> None:
    (repo / "old.py").write_text(OLD + "\n\ny = torch.zeros(2).cuda()\n")
    _git(repo, "commit", "-qam", "a new line")
    assert main(["check", "--diff-base", "main", "--output-format", "concise", "."]) == 1
    assert _rows(capsys.readouterr().out) == ["old.py:9:19"]
    # without the gate, the old lines are there too
    assert main(["check", "--output-format", "concise", "."]) == 1
    assert len(_rows(capsys.readouterr().out)) == 3


def test_clean_changes_pass(repo: Path, capsys) -> None:
    (repo / "old.py").write_text(OLD.replace("return 1", "return 2"))
    assert main(["check", "--diff-base", "main", "."]) == 0
    assert "All checks passed!" in capsys.readouterr().out


def test_uncommitted_and_untracked_files_count(repo: Path, capsys) -> None:
    (repo / "new.py").write_text("import torch\nz = torch.ones(3).cuda()\n")
    (repo / "kept.py").write_text("import torch\nm = torch.nn.Linear(2, 2).cuda()\nn = torch.ones(1).cuda()\n")
    assert main(["check", "--diff-base", "main", "--output-format", "concise", "."]) == 1
    assert _rows(capsys.readouterr().out) == ["kept.py:3:18", "new.py:2:18"]


def test_a_rename_counts_by_its_new_lines(repo: Path, capsys) -> None:
    _git(repo, "mv", "old.py", "moved.py")
    (repo / "moved.py").write_text(OLD + "y = torch.zeros(2).cuda()\n")
    _git(repo, "commit", "-qam", "moved")
    assert main(["check", "--diff-base", "main", "--output-format", "concise", "."]) == 1
    assert _rows(capsys.readouterr().out) == ["moved.py:7:19"]


def test_the_merge_base_is_the_reference(repo: Path, capsys) -> None:
    # main moves on after the branch: its new code is not the pull request's
    _git(repo, "checkout", "-q", "main")
    (repo / "main_only.py").write_text("import torch\nq = torch.ones(1).cuda()\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "on main")
    _git(repo, "checkout", "-q", "feature")
    (repo / "old.py").write_text(OLD.replace("return 1", "return 2"))
    assert main(["check", "--diff-base", "main", "."]) == 0


def test_fix_touches_only_the_changed_lines(repo: Path, capsys) -> None:
    (repo / "old.py").write_text(OLD + "\n\ny = torch.zeros(2).cuda()\n")
    assert main(["fix", "--diff-base", "main", "."]) == 0
    text = (repo / "old.py").read_text()
    assert "x = torch.ones(1).cuda()" in text and "y = torch.zeros(2).to(device)" in text, text
    assert (repo / "kept.py").read_text().endswith(".cuda()\n")


def test_a_notebook_counts_by_cell(repo: Path, capsys) -> None:
    def notebook(*sources: str) -> str:
        cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": s} for s in sources]
        return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)

    (repo / "nb.ipynb").write_text(notebook("import torch\n", "a = torch.ones(1).cuda()\n"))
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "notebook")
    (repo / "nb.ipynb").write_text(notebook("import torch\n", "a = torch.ones(1).cuda()\n", "b = torch.ones(2).cuda()\n"))
    assert main(["check", "--diff-base", "HEAD", "--output-format", "concise", "nb.ipynb"]) == 1
    assert _rows(capsys.readouterr().out) == ["nb.ipynb:cell 3:1:18"]
    # against the commit before it, the notebook is new: every cell counts
    assert main(["check", "--diff-base", "HEAD~1", "--output-format", "concise", "nb.ipynb"]) == 1
    assert _rows(capsys.readouterr().out) == ["nb.ipynb:cell 2:1:18", "nb.ipynb:cell 3:1:18"]


def test_an_unknown_ref_or_no_repository_is_one_line_and_exit_2(repo: Path, tmp_path_factory, capsys) -> None:
    assert main(["check", "--diff-base", "no-such-branch", "."]) == 2
    err = capsys.readouterr().err
    assert err == "devlint: error: --diff-base: unknown revision 'no-such-branch', or no common history with HEAD\n"
    elsewhere = tmp_path_factory.mktemp("plain")
    (elsewhere / "a.py").write_text(OLD)
    import os

    os.chdir(elsewhere)
    assert main(["check", "--diff-base", "main", "."]) == 2
    assert capsys.readouterr().err == "devlint: error: --diff-base: not a git repository (--diff-base compares with a git revision)\n"


def test_the_rows_a_change_touched_are_the_edited_ones_only() -> None:
    # an edit in every function: the rows edited, not the blank lines between them (difflib's
    # matcher took those for popular lines and counted two of them as added)
    from devlint.run.diff_base import added_rows

    base = "".join(f"def f{i}(x):\n    return x.cuda()\n\n\n" for i in range(300))
    text = base.replace("x.cuda()", "x.to(device)")
    assert added_rows(base, text) == {4 * i + 2 for i in range(300)}
    # an insertion, a deletion and an edit around unchanged lines
    lines = [f"line {i}" for i in range(20)]
    edited = lines[:3] + ["new"] + lines[3:10] + lines[11:15] + ["line 15 edited"] + lines[16:]
    assert added_rows("\n".join(lines), "\n".join(edited)) == {4, 16}
