"""The programs a verify run checks, and the two texts of each: original and fixed."""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, field
from pathlib import Path

from devlint import linediff
from devlint.findings import FileError
from devlint.registry import select_rules
from devlint.run.config import FileSettings
from devlint.run.file_job import process_source
from devlint.run.job import Job
from devlint.run.source import SourceError, decode
from devlint.settings import FixSettings

DEFAULT_TARGET = Path("fixtures") / "programs"


@dataclass(frozen=True)
class Program:
    path: Path
    display: str
    # The name the program is imported under when it has a main() (see harness.py).
    module: str
    # "main": compare what main() returns; "script": run as __main__ and compare stdout.
    protocol: str
    original: bytes
    # What `devlint fix` (with --unsafe-fixes when asked) would write; the original when no fix applies.
    fixed: bytes
    fixes_applied: int
    # Codes of the findings no fix removed.
    remaining: tuple[str, ...]
    # Line numbers of the fixed program -> those of the original (where one exists).
    fixed_lines: dict[int, int] = field(default_factory=dict)
    # The oldest torch the fixes were written for (the program's `torch-version`).
    torch_version: tuple[int, int] | None = None

    def original_line(self, runs_original: bool, line: int) -> int | None:
        """The original's line for ``line`` of the code a run ran; None for a line a fix added."""
        return line if runs_original else self.fixed_lines.get(line)


# `X.fixed.py` and `X.unsafe.py` beside `X.py`: a fixture pair's expected output, not a program.
_TWIN_SUFFIXES = (".fixed", ".unsafe")


def discover(paths: list[str]) -> tuple[list[Path], list[str], list[Path]]:
    """Python files named or found under folders (sorted, hidden folders and caches skipped),
    problems as messages, and the files skipped in folders as the expected output of a fixture
    pair (``X.fixed.py``/``X.unsafe.py`` beside ``X.py``; named on their own, they are verified)."""
    found: list[Path] = []
    problems: list[str] = []
    twins: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files = sorted(
                p
                for p in path.rglob("*.py")
                if not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(path).parts)
            )
            names = set(files)
            for file in files:
                (twins if _twin_of(file) in names else found).append(file)
        elif path.is_file() and path.suffix == ".py":
            found.append(path)
        elif path.is_file():
            problems.append(f"{given}: not a Python program (verify runs .py files; notebooks are not supported)")
        else:
            problems.append(f"{given}: no such file or folder")
    seen: set[Path] = set()
    unique = []
    for path in found:
        if path.resolve() not in seen:
            seen.add(path.resolve())
            unique.append(path)
    return unique, problems, twins


def _twin_of(path: Path) -> Path | None:
    stem = path.name[: -len(".py")]
    for suffix in _TWIN_SUFFIXES:
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return path.with_name(stem[: -len(suffix)] + ".py")
    return None


def prepare(path: Path, unsafe: bool, settings: FileSettings | None = None) -> Program | FileError:
    """The program at ``path`` and what `devlint fix` would write for it, with the settings the
    CLI would use for that file (its nearest configuration: rules, torch-version, device name)."""
    filename = _display(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        return FileError(filename, f"cannot read: {error.strerror}")
    if settings is None:
        settings = FileSettings(tuple(rule.code for rule in select_rules()), FixSettings())
    job = Job(settings.codes, settings.fix, fix=True, unsafe=unsafe)
    fixed_result, fixed = process_source(data, filename, job)
    if fixed_result.error is not None:
        return fixed_result.error
    try:
        original = decode(data).text
        fixed_text = decode(fixed).text if fixed is not None else original
        protocol = _protocol(original)
    except SourceError as error:
        return FileError(filename, error.message, error.row)
    except SyntaxError as error:
        return FileError(filename, f"syntax error: {error.msg}", error.lineno, error.offset)
    return Program(
        path=path,
        display=filename,
        module=path.stem if path.stem.isidentifier() else "program",
        protocol=protocol,
        original=data,
        fixed=fixed if fixed is not None else data,
        fixes_applied=fixed_result.fixes_applied,
        remaining=tuple(sorted({finding.code for finding in fixed_result.findings})),
        fixed_lines=line_map(fixed_text, original),
        torch_version=settings.fix.torch_version,
    )


def line_map(changed: str, original: str) -> dict[int, int]:
    """1-based rows of ``changed`` -> rows of ``original``: unchanged lines, and lines a fix edited
    (matched, in order, to the most similar line of the block they replace). Added lines have none."""
    ours, theirs = changed.splitlines(), original.splitlines()
    mapping: dict[int, int] = {}
    for tag, their_start, their_end, our_start, our_end in linediff.opcodes(theirs, ours):
        if tag == "equal":
            mapping.update((our_start + i + 1, their_start + i + 1) for i in range(our_end - our_start))
        elif tag == "replace":
            candidate = their_start
            for row in range(our_start, our_end):
                scores = [(_similarity(ours[row], theirs[k]), k) for k in range(candidate, their_end)]
                score, best = max(scores, default=(0.0, candidate))
                if score >= _SIMILAR:
                    mapping[row + 1] = best + 1
                    candidate = best + 1
    return mapping


# How alike an edited line must be to the line it came from (difflib ratio).
_SIMILAR = 0.5


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _protocol(text: str) -> str:
    """``main`` when the program has a top-level ``def main`` callable without arguments."""
    for stmt in ast.parse(text).body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "main":
            args = stmt.args
            required = len(args.posonlyargs) + len(args.args) - len(args.defaults)
            required_kw = sum(1 for default in args.kw_defaults if default is None)
            return "main" if required == 0 and required_kw == 0 else "script"
    return "script"


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
