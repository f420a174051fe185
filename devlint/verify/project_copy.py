"""Two copies of a project for `devlint verify --tests`: the original and the one the fixes go in.

What is copied is what the project is made of: every file, with the folders devlint never checks
(``.git``, virtual environments, caches, build output) and whatever ``.gitignore`` ignores left
out. Symbolic links are copied as links. The user's files are only ever read.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from devlint import linediff
from devlint.run.discovery import DEFAULT_EXCLUDES, SOURCE_SUFFIXES, GitIgnore, ignored_by, is_excluded, parent_gitignores


def copy_project(source: Path, targets: list[Path]) -> int:
    """Copy the project at ``source`` into each of ``targets`` (made here); the files copied."""
    count = 0
    inherited = parent_gitignores(source)
    chains: dict[Path, list[GitIgnore]] = {}
    for folder, dirs, names in os.walk(source):
        here = Path(folder)
        chain = chains.get(here.parent, inherited) if here != source else inherited
        own = GitIgnore.load(here)
        chain = chain + [own] if own is not None else chain
        chains[here] = chain
        relative = here.relative_to(source)
        for target in targets:
            (target / relative).mkdir(parents=True, exist_ok=True)
        kept_dirs = []
        for name in sorted(dirs):
            path = here / name
            if is_excluded(path, DEFAULT_EXCLUDES, source) or ignored_by(path, True, chain):
                continue
            if path.is_symlink():
                names.append(name)
            else:
                kept_dirs.append(name)
        dirs[:] = kept_dirs
        for name in sorted(names):
            path = here / name
            if is_excluded(path, DEFAULT_EXCLUDES, source) or ignored_by(path, False, chain):
                continue
            for target in targets:
                _copy(path, target / relative / name)
            count += 1
    return count


def _copy(path: Path, to: Path) -> None:
    if path.is_symlink():
        os.symlink(os.readlink(path), to)
    elif path.is_file():
        shutil.copy2(path, to)


@dataclass(frozen=True)
class FixedFile:
    """A file the fixes changed, by its path relative to the project."""

    path: str
    # Rows of the fixed file that a fix wrote (edited or inserted), 1-based.
    edited: frozenset[int]
    # Each edited row's text, for the report.
    text: dict[int, str]


def fixed_files(original: Path, fixed: Path) -> list[FixedFile]:
    """The source files that differ between the two copies, with the rows the fixes wrote."""
    changed = []
    for folder, _, names in os.walk(fixed):
        for name in sorted(names):
            path = Path(folder) / name
            if not name.endswith(SOURCE_SUFFIXES) or path.is_symlink():
                continue
            relative = path.relative_to(fixed)
            try:
                before, after = (original / relative).read_bytes(), path.read_bytes()
            except OSError:
                continue
            if before != after:
                changed.append(_edited(relative.as_posix(), before, after))
    return sorted(changed, key=lambda file: file.path)


def _edited(path: str, before: bytes, after: bytes) -> FixedFile:
    theirs = before.decode("utf-8", errors="replace").splitlines()
    ours = after.decode("utf-8", errors="replace").splitlines()
    rows: set[int] = set()
    for tag, _, _, start, end in linediff.opcodes(theirs, ours):
        if tag in ("replace", "insert"):
            rows.update(range(start + 1, end + 1))
    return FixedFile(path, frozenset(rows), {row: ours[row - 1].strip() for row in sorted(rows)})
