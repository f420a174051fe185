"""``--diff-base REF``: only the findings on lines a change added or edited.

The change is what the working tree holds against the merge base of ``HEAD`` and ``REF`` (what a
pull request against ``REF`` would show), uncommitted edits and untracked files included. A new
file counts whole; a renamed or edited file counts by the lines that differ from its version at the
merge base (a rename alone adds no line); a notebook counts by cell: a code cell whose source the
merge base does not have is new. Everything else the run checks is left out of the report and of
the exit status, so a code base with years of CUDA-first code can gate its pull requests today.

The lines are found by comparing each file's text at the merge base with its text now, so the
same answer serves ``devlint check`` (the text on disk) and every round of ``devlint fix`` (the
text as the fixes left it: a line a fix rewrote is still new).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from devlint import linediff
from devlint.findings import Finding

if TYPE_CHECKING:
    import subprocess

# A file the change does not touch: none of its findings are reported.
UNCHANGED = "unchanged"


class DiffBaseError(Exception):
    """``--diff-base`` cannot be honoured (not a git repository, an unknown revision); the message
    is the one line the user sees."""


@dataclass(frozen=True)
class DiffBase:
    """What the change touched: each changed file (a real path) with its text at the merge base,
    None for a file the merge base lacks (new, or untracked)."""

    ref: str
    files: tuple[tuple[str, str | None], ...]

    @cached_property
    def _by_path(self) -> dict[str, str | None]:
        return dict(self.files)

    def base_of(self, filename: str) -> str | None:
        """The text of ``filename`` at the merge base; None for a new file; ``UNCHANGED``."""
        return self._by_path.get(os.path.realpath(filename), UNCHANGED)

    def keep(self, filename: str, text: str, findings: list[Finding]) -> list[Finding]:
        """The findings of a file (a Python text, or a notebook's joined program) on the lines
        the change added or edited."""
        base = self.base_of(filename)
        if base is None:
            return findings
        if base == UNCHANGED:
            return []
        if filename.endswith(".ipynb"):
            base = _program_text(base)
        rows = added_rows(base, text)
        return [finding for finding in findings if _rows(finding) & rows]

    def report(self, findings: list[Finding], read: Callable[[str], str | None]) -> list[Finding]:
        """The findings of a finished run on what the change touched; ``read`` gives a file's text
        now (None where it cannot be read)."""
        by_file: dict[str, list[Finding]] = {}
        for finding in findings:
            by_file.setdefault(finding.filename, []).append(finding)
        kept: list[Finding] = []
        for filename, found in by_file.items():
            base = self.base_of(filename)
            if base is None:
                kept += found
                continue
            text = read(filename) if base != UNCHANGED else None
            if text is None:
                continue
            if filename.endswith(".ipynb"):
                cells = changed_cells(base, text)
                kept += [finding for finding in found if finding.cell in cells]
            else:
                rows = added_rows(base, text)
                kept += [finding for finding in found if _rows(finding) & rows]
        return kept


def _rows(finding: Finding) -> set[int]:
    return set(range(finding.location.row, max(finding.location.row, finding.end_location.row) + 1))


def added_rows(base: str, text: str) -> set[int]:
    """The 1-based rows of ``text`` that ``base`` does not have at that place: added or edited.
    Lines are matched as ``--diff`` matches them (devlint.linediff): difflib's matcher took time
    that grew with the square of a file edited in every function, and counted blank lines next
    to the edits among them."""
    rows: set[int] = set()
    for tag, _, _, start, end in linediff.opcodes(base.splitlines(), text.splitlines()):
        if tag in ("replace", "insert"):
            rows.update(range(start + 1, end + 1))
    return rows


def _cell_sources(text: str) -> list[str] | None:
    """Each cell's source, by cell number (1-based, every kind of cell counted); None for a text
    that is no notebook."""
    try:
        cells = json.loads(text).get("cells")
    except (ValueError, AttributeError):
        return None
    if not isinstance(cells, list):
        return None
    sources = []
    for cell in cells:
        source = cell.get("source", "") if isinstance(cell, dict) else ""
        sources.append("".join(source) if isinstance(source, list) else str(source))
    return sources


def changed_cells(base: str, text: str) -> set[int]:
    """The numbers of the cells of notebook ``text`` whose source the ``base`` notebook has in none
    of its cells: new or edited cells (a moved cell is neither)."""
    now = _cell_sources(text)
    if now is None:
        return set()
    before = set(_cell_sources(base) or ())
    return {number for number, source in enumerate(now, start=1) if source not in before}


def _program_text(notebook: str) -> str:
    """The joined program of a notebook's code cells, as a fix run lints it."""
    from devlint.run.notebook import NotebookError, Program, read_notebook

    try:
        return Program.build(read_notebook(notebook.encode("utf-8"))).text
    except NotebookError:
        return ""


def read_diff_base(ref: str, cwd: Path | None = None) -> DiffBase:
    """The change against ``ref`` as git sees it from ``cwd``; DiffBaseError when git cannot say."""
    top = _git(["rev-parse", "--show-toplevel"], cwd, "not a git repository (--diff-base compares with a git revision)")
    root = Path(top.strip())
    base = _git(["merge-base", "HEAD", ref], root, f"unknown revision {ref!r}, or no common history with HEAD").strip()
    listing = _git(["diff", "--name-status", "-z", "--find-renames", base], root, f"cannot compare with {ref!r}")
    files: list[tuple[str, str | None]] = []
    for status, old, new in _entries(listing.split("\0")):
        path = os.path.realpath(root / new)
        if status.startswith("D"):
            continue
        files.append((path, None if status.startswith(("A", "C")) else _show(root, base, old)))
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], root, "cannot list untracked files")
    files += [(os.path.realpath(root / name), None) for name in untracked.split("\0") if name]
    return DiffBase(ref, tuple(files))


def _entries(fields: list[str]) -> Iterable[tuple[str, str, str]]:
    """``git diff --name-status -z``: a status, then one path, or two for a rename or copy."""
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        if status[:1] in ("R", "C"):
            yield status, fields[i + 1], fields[i + 2]
            i += 3
        else:
            yield status, fields[i + 1], fields[i + 1]
            i += 2


def _show(root: Path, revision: str, path: str) -> str:
    return _run_git(["show", f"{revision}:{path}"], root).stdout.decode("utf-8", errors="replace")


def _git(args: list[str], cwd: Path | None, failure: str) -> str:
    try:
        done = _run_git(args, cwd)
    except OSError:
        raise DiffBaseError("git is not installed (--diff-base needs it)") from None
    if done.returncode != 0:
        raise DiffBaseError(failure)
    return done.stdout.decode("utf-8", errors="surrogateescape")


def _run_git(args: list[str], cwd: Path | None) -> subprocess.CompletedProcess[bytes]:
    # Imported here: only --diff-base runs git, and every check would import subprocess.
    import subprocess

    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
