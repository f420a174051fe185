"""Which files a run looks at: the paths given, folders walked, excludes and .gitignore applied."""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from devlint.findings import FileError

SOURCE_SUFFIXES = (".py", ".ipynb")
DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", ".eggs", "*.egg-info",
    "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".devlint_cache",
    ".ipynb_checkpoints", "build", "dist", "site-packages", "node_modules", "__pypackages__",
)


@dataclass
class GitIgnore:
    """The patterns of one .gitignore, relative to the folder that holds it."""

    base: Path
    patterns: list[tuple[str, bool, bool, bool]] = field(default_factory=list)  # pattern, negate, dir_only, anchored

    @classmethod
    def load(cls, folder: Path) -> GitIgnore | None:
        path = folder / ".gitignore"
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        ignore = cls(Path(os.path.abspath(folder)))
        for raw in text.splitlines():
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            line = line[1:] if negate else line
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            anchored = "/" in line
            ignore.patterns.append((line.lstrip("/"), negate, dir_only, anchored))
        return ignore

    def verdict(self, path: Path, is_dir: bool) -> bool | None:
        """True ignored, False re-included by a `!` pattern, None not mentioned."""
        try:
            rel = Path(os.path.abspath(path)).relative_to(self.base).as_posix()
        except ValueError:
            return None
        result: bool | None = None
        for pattern, negate, dir_only, anchored in self.patterns:
            if dir_only and not is_dir:
                continue
            target = rel if anchored else rel.rsplit("/", 1)[-1]
            if fnmatch.fnmatchcase(target, pattern) or (anchored and _double_star(rel, pattern)):
                result = not negate
        return result


def _double_star(rel: str, pattern: str) -> bool:
    return "**" in pattern and fnmatch.fnmatchcase(rel, pattern.replace("**/", "*").replace("/**", "/*"))


def is_excluded(path: Path, patterns: tuple[str, ...], root: Path) -> bool:
    name = path.name
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        rel = path.as_posix()
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(rel, p) for p in patterns)


def unreadable(path: Path) -> str | None:
    """Why ``path`` can be neither read as a file nor walked as a folder, or None.

    Reading a FIFO or a device named ``x.py`` would block or never end: only regular files
    and folders are taken."""
    try:
        mode = path.stat().st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "symbolic link loop"
        if error.errno == errno.ENOENT:
            return "dangling symbolic link: its target does not exist" if path.is_symlink() else "no such file or directory"
        return f"cannot read: {error.strerror}"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return "not a regular file (a FIFO, socket or device); skipped"


@dataclass
class Discovery:
    files: list[Path]
    errors: list[FileError]


def discover(
    paths: list[str],
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES,
    extend_exclude: tuple[str, ...] = (),
    respect_gitignore: bool = True,
    skip: Callable[[Path, bool], bool] | None = None,
) -> Discovery:
    """Files named on the command line are always checked; folders are walked with the
    excludes and .gitignore files applied. Symlinked folders are not followed (no loops).
    ``skip(path, is_dir)`` excludes more (the configuration's exclude, nearest file first)."""
    patterns = tuple(exclude) + tuple(extend_exclude)
    files: list[Path] = []
    errors: list[FileError] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        problem = unreadable(path)
        if problem is not None:
            errors.append(FileError(raw, problem))
            continue
        if path.is_dir():
            for found in _walk(path, patterns, respect_gitignore, errors, skip):
                if found not in seen:
                    seen.add(found)
                    files.append(found)
        elif path not in seen:
            seen.add(path)
            files.append(path)
    return Discovery(files, errors)


def _walk(
    root: Path,
    patterns: tuple[str, ...],
    respect_gitignore: bool,
    errors: list[FileError],
    skip: Callable[[Path, bool], bool] | None = None,
) -> list[Path]:
    found: list[Path] = []
    ignores: dict[Path, list[GitIgnore]] = {}
    inherited = parent_gitignores(root) if respect_gitignore else []

    def on_error(error: OSError) -> None:
        errors.append(FileError(str(error.filename or root), f"cannot read folder: {error.strerror}"))

    for folder, dirs, names in os.walk(root, onerror=on_error):
        here = Path(folder)
        chain = ignores.get(here.parent, inherited) if here != root else inherited
        if respect_gitignore:
            own = GitIgnore.load(here)
            chain = chain + [own] if own is not None else chain
        ignores[here] = chain
        dirs[:] = sorted(
            d for d in dirs
            if not is_excluded(here / d, patterns, root) and not ignored_by(here / d, True, chain)
            and not (skip is not None and skip(here / d, True))
        )
        for name in sorted(names):
            path = here / name
            if not name.endswith(SOURCE_SUFFIXES) or is_excluded(path, patterns, root) or ignored_by(path, False, chain):
                continue
            if skip is not None and skip(path, False):
                continue
            problem = unreadable(path)
            if problem is not None:
                errors.append(FileError(str(path), problem))
                continue
            found.append(path)
    return found


def ignored_by(path: Path, is_dir: bool, chain: list[GitIgnore]) -> bool:
    result = False
    for ignore in chain:
        verdict = ignore.verdict(path, is_dir)
        if verdict is not None:
            result = verdict
    return result


def parent_gitignores(root: Path) -> list[GitIgnore]:
    """.gitignore files of the folders above ``root``, up to the repository top."""
    chain: list[GitIgnore] = []
    current = Path(os.path.abspath(root))
    for folder in current.parents:
        loaded = GitIgnore.load(folder)
        if loaded is not None:
            chain.insert(0, loaded)
        if (folder / ".git").exists():
            return chain
    return []  # not inside a repository: no outer .gitignore applies
