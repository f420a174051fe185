"""The engine on one document, as the CLI runs it on one file: runs in a worker process.

Every finding comes back with the changes of its own fix and of its `# noqa` comment, so that
answering a code action needs no engine work; the changes of `source.fixAll` (fix rounds, like
`devlint fix`) are computed when asked for.
"""

from __future__ import annotations

import ast
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import libcst as cst

from devlint.engine.lint import ParseError, fix_text, lint_text
from devlint.engine.positions import StatementPrints
from devlint.engine.reuse import EarlierChecks
from devlint.findings import Finding
from devlint.fixes import apply_fixes
from devlint.gate.incremental import CPythonTrees, StatementMemo
from devlint.gate.nesting import call_with_deep_stack
from devlint.project import ImportedConstants
from devlint.registry import rule_by_code
from devlint.rule import Rule
from devlint.run.notebook import CELL_BREAK, NotebookError, Program, place
from devlint.run.project_imports import imported_constants, scan_imports
from devlint.run.suppressions import Comments, apply_noqa, noqa_edit, noqa_target, scan, skip_file
from devlint.server.cells import build_program, locate, unfinished
from devlint.server.comments import CommentCache
from devlint.server.model import Analysis, Change, Item, Problem, Source
from devlint.server.textdiff import minimal_edits
from devlint.server.trees import SECTION_CHARS, SectionTrees

# The worker's trees of the sections it parsed lately: this module runs in the worker only, for
# as long as it lives, and the trees only spare parses (a check gives what a fresh one gives).
_TREES = SectionTrees()
# Likewise the printed text of the top-level statements of those trees (devlint.engine.positions).
_PRINTS = StatementPrints()
# And the comments of the chunks of text tokenized lately (devlint.server.comments).
_COMMENTS = CommentCache()
# And what the screen read of each document's last version: an edit has only what it changed
# read again (devlint.gate.incremental).
_CPYTHON = CPythonTrees()
# And the project-imports scan of each top-level statement of the document checked last.
_SCANS = StatementMemo(scan_imports)
# And the last check of each document, whose fixes an edit elsewhere leaves as they were
# (devlint.engine.reuse).
_EARLIER = EarlierChecks()


def analyze(source: Source) -> Analysis:
    """The findings of ``source``; never raises (a bug becomes the document's problem)."""
    try:
        return call_with_deep_stack(_analyze, source)
    except Exception as error:
        return Analysis(problem=Problem(_internal(error), _first_text(source)))


def fix_all(source: Source) -> tuple[Change, ...]:
    """The changes `devlint fix` would make (safe fixes, over rounds); none for a document that
    does not parse."""
    try:
        return call_with_deep_stack(_fix_all, source)
    except (ParseError, NotebookError):
        return ()


def _first_text(source: Source) -> int:
    return next((index for index, text in enumerate(source.texts) if text is not None), 0)


def _internal(error: Exception) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"internal error{where}: {type(error).__name__}: {' '.join(str(error).split())} (please report this)"


def _sections() -> tuple[Callable[[str], cst.Module], int]:
    return _TREES.parser(), SECTION_CHARS


def _rules(source: Source) -> list[type[Rule]]:
    return [rule_by_code(code) for code in source.settings.codes]


def _imported(text: str, source: Source) -> Callable[[ast.Module | None], ImportedConstants]:
    """The project constants ``text`` imports, read from the tree the engine's screen compiled
    (compiling a large buffer again would cost as much as the screen itself), each top-level
    statement scanned once for as long as it stays unchanged."""

    def read(tree: ast.Module | None) -> ImportedConstants:
        scans = _SCANS.each(tree.body) if tree is not None else None
        return imported_constants(text, source.filename, source.root, tree, scans)[0]

    return read


def _analyze(source: Source) -> Analysis:
    if source.notebook:
        return _analyze_notebook(source)
    text = source.texts[0] or ""
    if skip_file(text):
        return Analysis()
    try:
        found = lint_text(
            text, source.filename, _rules(source), source.settings.fix,
            sections=_sections(), prints=_PRINTS, imported=_imported(text, source), earlier=_EARLIER,
            reading=_CPYTHON.reading(source.filename),
        )
        findings = apply_noqa(text, found)
    except ParseError as error:
        return Analysis(problem=Problem(error.message, 0, error.row, error.column, syntax=True))
    comments = _COMMENTS.comments(text) if findings else None
    return Analysis(tuple(Item(f, 0, _own_changes(f), _noqa_changes(comments, f, 0)) for f in findings))


def _own_changes(finding: Finding) -> tuple[Change, ...]:
    if finding.fix is None:
        return ()
    unique = dict.fromkeys((e.start_offset, e.end_offset, e.content) for e in finding.fix.edits)
    ordered = sorted(enumerate(unique), key=lambda pair: (pair[1][0], pair[1][1], pair[0]))
    return tuple(Change(0, start, end, content) for _, (start, end, content) in ordered)


def _noqa_changes(comments: Comments | None, finding: Finding, text: int) -> tuple[Change, ...]:
    if comments is None:
        return ()
    edit = noqa_edit(comments, noqa_target(comments, finding), {finding.code})
    return () if edit is None else (Change(text, *edit),)


def _program(source: Source) -> tuple[Program | None, Problem | None]:
    try:
        return build_program(source.texts), None
    except NotebookError as error:
        return None, unfinished(source.texts, error)


def _analyze_notebook(source: Source) -> Analysis:
    program, problem = _program(source)
    if program is None or not program.cells or skip_file(program.text):
        return Analysis(problem=problem)
    settings = replace(source.settings.fix, cell_break=CELL_BREAK)
    try:
        found = apply_noqa(
            program.text,
            lint_text(
                program.text, source.filename, _rules(source), settings,
                sections=_sections(), prints=_PRINTS, imported=_imported(program.text, source), earlier=_EARLIER,
                reading=_CPYTHON.reading(source.filename),
            ),
        )
    except ParseError as error:
        return Analysis(problem=locate(program, error))
    comments: dict[int, Comments] = {}
    items: list[Item] = []
    for program_finding, finding in zip(found, place(found, program, program.text)):
        assert finding.cell is not None
        index = finding.cell - 1
        if index not in comments:
            comments[index] = scan(source.texts[index] or "")
        fix = _cell_changes(source, program, program_finding) if program_finding.fix is not None else ()
        items.append(Item(finding, index, fix, _noqa_changes(comments[index], finding, index)))
    return Analysis(tuple(items))


def _cell_changes(source: Source, program: Program, finding: Finding) -> tuple[Change, ...]:
    """The changes of one finding's fix, cell by cell (a device definition may go in another)."""
    assert finding.fix is not None
    fixed, _ = apply_fixes(program.text, [finding.fix])
    try:
        return _split_changes(source, program, fixed)
    except NotebookError:
        return ()


def _split_changes(source: Source, program: Program, fixed: str) -> tuple[Change, ...]:
    changes: list[Change] = []
    for number, new in sorted(program.split(fixed).items()):
        old = source.texts[number - 1] or ""
        changes += [Change(number - 1, start, end, content) for start, end, content in minimal_edits(old, new)]
    return tuple(changes)


def _fix_all(source: Source) -> tuple[Change, ...]:
    rules = _rules(source)
    if not source.notebook:
        text = source.texts[0] or ""
        if skip_file(text):
            return ()
        imported = imported_constants(text, source.filename, source.root)[0]
        result = fix_text(text, source.filename, rules, source.settings.fix, keep=apply_noqa, imported=imported)
        return tuple(Change(0, start, end, content) for start, end, content in minimal_edits(text, result.text))
    program, _ = _program(source)
    if program is None or not program.cells or skip_file(program.text):
        return ()
    settings = replace(source.settings.fix, cell_break=CELL_BREAK)
    imported = imported_constants(program.text, source.filename, source.root)[0]
    result = fix_text(program.text, source.filename, rules, settings, keep=apply_noqa, imported=imported)
    return _split_changes(source, program, result.text)
