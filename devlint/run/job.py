"""What a run asks of each file, what it gets back, and the engine calls a Python file and a
notebook share. Runs in worker processes, so everything it takes and returns is plain, picklable data.

LibCST and the rule classes (devlint.engine.lint) are imported only for a text that may hold a
finding (devlint.gate.screen decides): a run over files that cannot never pays their import; the
screen and the gate's conditions only for a text the cache did not answer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from devlint import linediff
from devlint.findings import FileError, Finding
from devlint.gate.catalog import RuleInfo
from devlint.registry import info_by_code, load
from devlint.run.diff_base import DiffBase
from devlint.run.project_imports import Dependencies, ProjectImports
from devlint.run.suppressions import apply_noqa, statement_starts
from devlint.settings import FixSettings

if TYPE_CHECKING:
    from devlint.engine.lint import FixResult
    from devlint.rule import Rule


@dataclass(frozen=True)
class Job:
    """What to do with each file; the same for every file of a run."""

    codes: tuple[str, ...]
    settings: FixSettings = FixSettings()
    fix: bool = False
    diff: bool = False
    unsafe: bool = False
    # The project root (the configuration file's folder, else where the run started): absolute
    # imports of the project's own modules are found there too (devlint.run.project_imports).
    root: str = ""
    # --diff-base: only the findings on lines the change touched are fixed (devlint.run.diff_base).
    diff_base: DiffBase | None = None

    def keep(self, filename: str, noqa: Callable[[str, list[Finding]], list[Finding]]) -> Callable[[str, list[Finding]], list[Finding]]:
        """What a fix of ``filename`` may fix: what ``noqa`` leaves, on the lines the change touched."""
        changes = self.diff_base
        if changes is None:
            return noqa
        return lambda text, found: changes.keep(filename, text, noqa(text, found))


@dataclass
class FileResult:
    filename: str
    findings: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    fixes_applied: int = 0
    # Of fixes_applied, those of later fix rounds, and how many rounds applied one
    # (devlint.engine.lint.FixResult).
    fixes_later: int = 0
    fix_rounds: int = 0
    diff: str = ""
    # The other files of the project the result depends on (None: none), for the cache.
    dependencies: Dependencies | None = None


def unified_diff(filename: str, before: str, after: str) -> str:
    """A diff `git apply` / `patch -p1` accept for relative names; absolute names stay as they are."""
    old, new = (filename, filename) if filename.startswith("/") else (f"a/{filename}", f"b/{filename}")
    lines = linediff.unified(before.splitlines(keepends=True), after.splitlines(keepends=True), old, new)
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n" for line in lines)


@lru_cache(maxsize=64)
def _infos(codes: tuple[str, ...]) -> tuple[RuleInfo, ...]:
    return tuple(info_by_code(code) for code in codes)


@lru_cache(maxsize=64)
def _rules(codes: tuple[str, ...]) -> tuple[type[Rule], ...]:
    return tuple(load(code) for code in codes)


def lint(text: str, filename: str, job: Job, settings: FixSettings) -> tuple[list[Finding], Dependencies | None]:
    """The findings of the job's rules on ``text`` (``lint_text``, LibCST imported only when
    needed) that no `# noqa` comment suppresses, and the other files of the project they depend
    on. Those files are read only for a text the screen lets through: a text no rule can report
    on depends on nothing."""
    from devlint.gate.screen import OneFileReading, screened

    reading = OneFileReading()
    screen = screened(text, _infos(job.codes), reading=reading, torch_version=settings.torch_version)
    if screen.rules == []:
        return [], None
    from devlint.engine.lint import lint_text

    # CPython's tree the screen read serves the project's imports, LibCST's sections and
    # positions and the noqa comments' scan: the text is compiled once. The other modules are
    # read only if the check asks for one of their constants.
    imported = ProjectImports(text, filename, job.root, tree=screen.tree)
    if screen.rules is None:
        # CPython cannot read it: lint_text lets LibCST decide.
        found = lint_text(text, filename, _rules(job.codes), settings, imported=imported)
        return apply_noqa(text, found), imported.dependencies()
    rules, starts, held, chained = _screened_rules(screen.rules), statement_starts(screen.tree), [screen.tree], screen.chained
    del screen
    # Handed over, not kept here: CPython's tree of a large file is ~100 MB, dropped once LibCST
    # has parsed the text.
    found = lint_text(
        text, filename, rules, settings, prefilter=False, imported=imported, reading=reading, tree=held.pop(), chained=chained
    )
    return apply_noqa(text, found, starts), imported.dependencies()


def fix(
    text: str, filename: str, job: Job, settings: FixSettings, keep: Callable[[str, list[Finding]], list[Finding]]
) -> tuple[FixResult | None, Dependencies | None]:
    """``fix_text`` with the job's rules; None when no rule can report on ``text``: nothing to fix.
    The screen's answer for ``text`` is handed on, so the first fix round does not screen it again."""
    from devlint.gate.screen import OneFileReading, screened

    reading = OneFileReading()
    screen = screened(text, _infos(job.codes), reading=reading, torch_version=settings.torch_version)
    if screen.rules == []:
        return None, None
    from devlint.engine.lint import fix_text

    imported = ProjectImports(text, filename, job.root, tree=screen.tree)
    first = None if screen.rules is None else _screened_rules(screen.rules)
    held, chained = [screen.tree], screen.chained
    del screen
    result = fix_text(
        text, filename, _rules(job.codes), settings, job.unsafe, keep=keep, screened=first, imported=imported, tree=held.pop(),
        reading=reading, chained=chained,
    )
    return result, imported.dependencies()


def _screened_rules(screened: list[RuleInfo]) -> tuple[type[Rule], ...]:
    return _rules(tuple(info.code for info in screened))
