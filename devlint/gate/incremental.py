"""What the screen reads of a document checked again after each edit (the language server's
worker), read again only where the edit changed it: CPython's tree, where only the top-level
statements an edit touched are compiled again and the others are taken over from the last tree,
their rows shifted; the gate's facts of each top-level statement; the nesting scan of each part
of the text between top-level statements. On a 10,000-line file these cost ~130, ~45 and ~45 ms
read whole; an edit inside one function costs about what that function costs.

Each is what reading the whole text gives: the tree is the one a whole compile gives (tests/test_incremental_tree.py compares them, positions
included). Why a part can be compiled alone: the text is cut only between two top-level
statements on different rows. There the tokenizer's state is the fresh one (no open bracket; the
next statement starts at column 0, which closes every indented block), so the part after a cut
reads as it would alone. A part that would read differently within the file than alone fails to
compile alone: it starts indented, or with `else:`/`except:`, or ends inside a bracket, a string,
a block header or a backslash continuation (the statement before an edited row is always in the
part, so a continuation into an edited row is too). Then the whole text is compiled. The facts
and the nesting scan combine their parts as devlint.gate.facts.merged and
devlint.gate.nesting.nesting_problem say, tested against a whole reading.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import add
from typing import Generic, TypeVar

from devlint.gate.facts import CHILDREN, Facts, collect, descendants, merged
from devlint.gate.nesting import Nesting, NestingProblem, measure, nesting_problem
from devlint.gate.syntax import FLAGS, compile_quietly, cpython_tree

T = TypeVar("T")

# Only the line ends CPython counts (a form feed does not end a line).
_LINE_END = re.compile(r"\r\n|\r|\n")
# Kinds of node that carry rows.
_POSITIONED = frozenset(kind for kind in CHILDREN if "lineno" in getattr(kind, "_attributes", ()))


@dataclass(frozen=True)
class _Kept:
    text: str
    tree: ast.Module
    starts: tuple[int, ...]


@dataclass(frozen=True)
class _Segment:
    """Rows ``first``..``last`` of the text, holding top-level statements ``begin``..``end - 1``:
    a part of the text that compiles alone."""

    first: int
    last: int
    begin: int
    end: int


class CPythonTrees:
    """The last good tree of each of a few documents, and what it was compiled from."""

    def __init__(self, keep: int = 2) -> None:
        self._keep = keep
        self._kept: dict[str, _Kept] = {}
        # The gate's facts of each top-level statement, and the nesting scans of the parts of
        # the text, of the document read last.
        self.facts = StatementMemo(collect)
        self.nesting = TextMemo()

    def tree(self, key: str, text: str) -> ast.Module | None:
        """CPython's tree of ``text``, the latest text of the document ``key``; None when CPython
        cannot read it (the last good tree is kept for the next edit)."""
        kept = self._kept.pop(key, None)
        starts = _row_starts(text)
        tree = _again(kept, text, starts) if kept is not None else None
        if tree is None:
            tree = cpython_tree(text)
        if tree is not None:
            kept = _Kept(text, tree, starts)
        if kept is not None:
            self._kept[key] = kept
            while len(self._kept) > self._keep:
                del self._kept[next(iter(self._kept))]
        return tree

    def reading(self, key: str) -> DocumentReading:
        """The screen's reading of the document ``key`` (devlint.gate.screen.Reading)."""
        return DocumentReading(self, key)

    def starts(self, key: str, text: str) -> tuple[int, ...] | None:
        """Where the rows of ``text`` start, if it is the document's last good text."""
        kept = self._kept.get(key)
        return kept.starts if kept is not None and kept.text == text else None


class StatementMemo(Generic[T]):
    """What a function of one top-level statement gave for each statement of the last tree: an
    edit leaves most statements the very objects they were (CPythonTrees), and what they give
    does not depend on their rows."""

    def __init__(self, function: Callable[[ast.stmt], T]) -> None:
        self._function = function
        self._kept: dict[int, tuple[ast.stmt, T]] = {}

    def each(self, statements: Sequence[ast.stmt]) -> list[T]:
        kept: dict[int, tuple[ast.stmt, T]] = {}
        for stmt in statements:
            found = self._kept.get(id(stmt))
            kept[id(stmt)] = found if found is not None and found[0] is stmt else (stmt, self._function(stmt))
        self._kept = kept
        return [kept[id(stmt)][1] for stmt in statements]


class TextMemo:
    """The nesting scans of the parts of the last text, by the part's text."""

    def __init__(self) -> None:
        self._kept: dict[str, Nesting] = {}
        self._seen: dict[str, Nesting] = {}

    def scan(self, part: str) -> Nesting:
        found = self._kept.get(part) or self._seen.get(part) or measure(part)
        self._seen[part] = found
        return found

    def done(self) -> None:
        self._kept, self._seen = self._seen, {}


@dataclass(frozen=True)
class DocumentReading:
    """devlint.gate.screen.Reading for one document, from what was read of its last version."""

    trees: CPythonTrees
    key: str

    def tree(self, text: str) -> ast.Module | None:
        return self.trees.tree(self.key, text)

    def facts(self, tree: ast.Module) -> Facts:
        return merged(self.trees.facts.each(tree.body))

    def nesting(self, text: str, tree: ast.Module | None) -> NestingProblem | None:
        starts = self.trees.starts(self.key, text) if tree is not None else None
        if tree is None or starts is None:
            return nesting_problem(text)
        try:
            return nesting_problem(text, _cuts(tree.body, text, starts), self.trees.nesting.scan)
        finally:
            self.trees.nesting.done()


def _again(kept: _Kept, text: str, starts: tuple[int, ...]) -> ast.Module | None:
    """The tree of ``text`` (whose rows start at ``starts``) built from ``kept``'s, compiling
    only the part an edit changed; None where that cannot be done (the caller compiles all)."""
    old = kept.text
    if text == old:
        return kept.tree
    statements = kept.tree.body
    if not statements:
        return None
    prefix = _common_prefix(old, text)
    suffix = _common_suffix(old, text, min(len(old), len(text)) - prefix)
    # Text inserted where the unchanged end begins joins that row: it is among those touched.
    first_row = bisect_right(kept.starts, prefix)
    last_row = bisect_right(kept.starts, len(old) - suffix)
    touched = _touched(statements, len(kept.starts), first_row, last_row)
    shift = len(starts) - len(kept.starts)
    part = text[_offset(text, starts, touched.first) : _offset(text, starts, touched.last + shift + 1)]
    try:
        # compile() of a str ignores encoding declarations: a part may start at any row.
        compiled = compile_quietly(part, FLAGS)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    _shift(compiled.body, touched.first - 1)
    _shift(statements[touched.end :], shift)
    return ast.Module(body=[*statements[: touched.begin], *compiled.body, *statements[touched.end :]], type_ignores=[])


def _touched(statements: Sequence[ast.stmt], rows_in_text: int, first_row: int, last_row: int) -> _Segment:
    """The smallest part of the text holding rows ``first_row``..``last_row`` whose ends fall
    between two statements on different rows, with the statement that starts on or before
    ``first_row`` in it. Empty rows and comments between two statements belong to the part of
    the later one; those after the last statement, to its part."""
    rows = [_first_row(stmt) for stmt in statements]
    end = bisect_right(rows, last_row)
    if end < len(statements) and (end == 0 or (statements[end - 1].end_lineno or 0) < last_row):
        end += 1
    while end < len(statements) and not _cut(statements[end - 1], rows[end]):
        end += 1
    begin = max(bisect_right(rows, first_row) - 1, 0)
    while begin > 0 and ((statements[begin - 1].end_lineno or 0) >= first_row or not _cut(statements[begin - 1], rows[begin])):
        begin -= 1
    first = (statements[begin - 1].end_lineno or 0) + 1 if begin else 1
    last = (statements[end - 1].end_lineno or 0) if end < len(statements) else rows_in_text
    return _Segment(first, last, begin, end)


def _cuts(statements: Sequence[ast.stmt], text: str, starts: tuple[int, ...]) -> list[int]:
    """Where the nesting scan may cut the text: at the row of a top-level statement after a row
    that ends a statement and does not continue with a backslash."""
    cuts: list[int] = []
    for before, stmt in zip(statements, statements[1:]):
        last = before.end_lineno or 0
        if last < _first_row(stmt) and last < len(starts):
            cut = starts[last]
            if not text[starts[last - 1] : cut].rstrip("\r\n").endswith("\\"):
                cuts.append(cut)
    return cuts


def _first_row(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return decorators[0].lineno if decorators else stmt.lineno


def _cut(before: ast.stmt, next_row: int) -> bool:
    return (before.end_lineno or 0) < next_row


def _offset(text: str, starts: tuple[int, ...], row: int) -> int:
    """Where ``row`` starts; the text's end for a row past the last."""
    return starts[row - 1] if row <= len(starts) else len(text)


def _row_starts(text: str) -> tuple[int, ...]:
    if "\r" not in text:
        # The common case, without a Python-level step per row.
        starts = [*accumulate(map(add, map(len, text.split("\n")), repeat(1)), initial=0)]
        starts.pop()
        if starts[-1] == len(text) and len(starts) > 1:
            starts.pop()
        return tuple(starts)
    starts = [0, *(match.end() for match in _LINE_END.finditer(text))]
    if starts[-1] == len(text) and len(starts) > 1:
        starts.pop()
    return tuple(starts)


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix, by halving (each comparison runs in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    """The length of the longest common suffix, at most ``limit``."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle : len(a) - low] == b[len(b) - middle : len(b) - low]:
            low = middle
        else:
            high = middle - 1
    return low


def _shift(nodes: Sequence[ast.AST], rows: int) -> None:
    """Moves ``nodes`` and everything in them down by ``rows`` rows."""
    if not rows:
        return
    for node in descendants(nodes):
        if type(node) in _POSITIONED:
            node.lineno += rows  # type: ignore[attr-defined]
            if node.end_lineno is not None:  # type: ignore[attr-defined]
                node.end_lineno += rows  # type: ignore[attr-defined]
