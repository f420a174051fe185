"""Source positions of the few nodes a file's findings need, at the cost of printing the module.

LibCST's ``PositionProvider`` records a range for every node of the module and tracks line and
column on every token: on real files that costs five to six times printing the module. Findings
need the ranges of a handful of nodes, so this module prints the module once and records only
those, as text offsets that ``LineIndex`` turns into rows and columns.

The ranges are exactly the ones ``PositionProvider`` gives (syntactic positions: the node without
its surrounding whitespace); where this shortcut cannot be sure (a node it was not asked for), it
answers from ``PositionProvider`` itself, as it does for a module that prints differently from
its text (LibCST turns lone ``\r`` line endings into others). Asked to be ``strict`` (a module
stitched from sections, devlint.engine.sections), such a mismatch raises ``TreeMismatch`` instead: it
would mean a stitching bug, and positions in that tree would point at the wrong text.

A caller that checks the same file again and again (the language server's worker, which reuses
the trees of unchanged sections) passes a ``StatementPrints``: a top-level statement prints the
same tokens wherever it stands (the indentation stack is empty between top-level statements), so
the text and spans printed for a statement object are kept and only new statements are printed.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, fields
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from devlint.analysis.tree import climbed, statement_children
from devlint.engine.interning import SHARED_KINDS
from devlint.fixes import LineIndex

# Reused for every node whose position nobody asked for: it does nothing and holds no state.
_NOTHING = nullcontext()


# A `\r` that ends a line alone (`\r\n` is one line ending, which prints as it stands).
_LONE_CR = re.compile(r"\r(?!\n)")


def lone_carriage_return(text: str) -> bool:
    """``text`` ends a line with a lone `\\r`, which LibCST may print as another line ending:
    its tree, however it was parsed, does not print back to the text."""
    return _LONE_CR.search(text) is not None


class TreeMismatch(Exception):
    """The module does not print back to the text: its positions cannot be trusted."""


class _Every:
    """The ids of every node: a recorder given it keeps every node's span."""

    def __contains__(self, key: object) -> bool:
        return True

    def add(self, key: int) -> None:
        pass


class _Recorder(CodegenState):
    """Prints the module like ``Module.code``; remembers start and end offsets of wanted nodes."""

    def __init__(self, module: cst.Module, wanted: set[int] | _Every) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.wanted = wanted
        self.spans: dict[int, tuple[int, int]] = {}
        self.complete = True
        self._starts: dict[int, int] = {}
        # Characters in tokens[:_counted]: offsets are summed only when a wanted node asks.
        self._length = 0
        self._counted = 0

    def offset(self) -> int:
        tokens = self.tokens
        if self._counted < len(tokens):
            # A slice copies only the new tokens; islice would step over all the old ones again.
            self._length += sum(map(len, tokens[self._counted :]))
            self._counted = len(tokens)
        return self._length

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self._starts[id(node)] = self.offset()

    def after_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        # A syntactic position recorded inside the node's own printing wins, as in LibCST.
        if key in self.wanted and key not in self.spans:
            end = self.offset()
            if type(node) is cst.Module and not node.has_trailing_newline:
                # LibCST ends such a module after the newline it printed and then took back.
                end += len(node.default_newline)
            self.spans[key] = (self._starts[key], end)

    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> Any:
        if id(node) not in self.wanted:
            return _NOTHING
        return self._syntactic(node, start_node, end_node)

    @contextmanager
    def _syntactic(
        self, node: cst.CSTNode, start_node: cst.CSTNode | None, end_node: cst.CSTNode | None
    ) -> Iterator[None]:
        # The range borrows its ends from children printed inside this block: want them too,
        # as printed here. A shared node (devlint.engine.interning: the `)` of every
        # `from m import (...)` that ends alike is one object) was met before: its span there
        # is another statement's.
        for borrowed in (start_node, end_node):
            if borrowed is not None:
                self.wanted.add(id(borrowed))
                if type(borrowed) in SHARED_KINDS:
                    self.spans.pop(id(borrowed), None)
        start = self.offset()
        yield
        end = self.offset()
        try:
            if start_node is not None:
                start = self.spans[id(start_node)][0]
            if end_node is not None:
                end = self.spans[id(end_node)][1]
        except KeyError:
            self.complete = False
            return
        self.spans[id(node)] = (start, end)


class Positions:
    """``positions[node]`` is the node's ``CodeRange``, like ``PositionProvider``'s mapping."""

    def __init__(
        self,
        module: cst.Module,
        lines: LineIndex,
        spans: dict[int, tuple[int, int]],
        locate: Callable[[cst.CSTNode], tuple[int, int] | None] | None = None,
    ) -> None:
        self._module = module
        self._lines = lines
        self._spans = spans
        # Finds the span of a node nobody asked for by printing only its statement (see
        # ``_InPlace``); None where the module was printed whole.
        self._locate = locate
        # Every node's span, from one more print of the module, once a node nobody asked for is.
        self._every: dict[int, tuple[int, int]] | None = None
        self._full: dict[cst.CSTNode, CodeRange] | None = None

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        span = self._spans.get(id(node))
        if span is None and self._locate is not None:
            span = self._locate(node)
            if span is None:
                span = _whole(self._module, self._lines.text, node)
            if span is not None:
                self._spans[id(node)] = span
        if span is None and self._locate is None:
            if self._every is None:
                self._every = _every_span(self._module, self._lines.text)
            span = self._every.get(id(node))
        if span is not None:
            return CodeRange(self._position(span[0]), self._position(span[1]))
        # The print is not the text: LibCST's positions in its print, the best there is (its
        # provider takes the span of a shared node where it was printed last).
        if self._full is None:
            self._full = dict(MetadataWrapper(self._module, unsafe_skip_copy=True).resolve(PositionProvider))
        return self._full[node]

    def _position(self, offset: int) -> CodePosition:
        starts = self._lines.starts
        end = len(self._lines.text)
        if offset > end:
            # Past the end of a file without a final newline: LibCST prints one, counts it,
            # and only then takes it back off the text.
            return CodePosition(bisect.bisect_right(starts, end) + 1, 0)
        row = bisect.bisect_right(starts, offset)
        return CodePosition(row, offset - starts[row - 1])


def positions(
    module: cst.Module,
    lines: LineIndex,
    nodes: Iterable[cst.CSTNode],
    strict: bool = False,
    prints: StatementPrints | None = None,
    top: Callable[[cst.CSTNode], cst.CSTNode | None] | None = None,
    parent_of: Callable[[cst.CSTNode], cst.CSTNode | None] | None = None,
    rows: Sequence[int] | None = None,
) -> Positions:
    """The positions of ``nodes`` (any other node is looked up the slow way when asked for).
    With ``prints`` and ``top`` (the top-level statement holding a node, None when unknown),
    statements printed for an earlier call are not printed again. Without them, given
    ``parent_of`` (each node's parent, None when unknown) and ``rows`` (where each statement
    starts, as ``statement_rows`` reads CPython's tree), only the statements holding ``nodes``
    are printed (``_InPlace``)."""
    wanted = {id(node): node for node in nodes}
    if prints is not None and top is not None:
        found = _by_statement(module, lines, wanted, prints, top)
        if found is not None:
            return _checked(module, lines, *found, strict)
    elif parent_of is not None and rows is not None and not lone_carriage_return(lines.text) and lines.text.endswith("\n"):
        # A statement prints as it stands in the text, except with a lone `\r` (which LibCST may
        # print as another line ending) and as the last line of a text without a final newline
        # (printed with one, taken back by the module): such a text takes the whole print.
        in_place = _InPlace(module, lines, parent_of, rows)
        spans = in_place.spans(wanted.values())
        if spans is not None:
            return Positions(module, lines, spans, in_place.span)
    # Printed whole: every top-level statement's span comes with it, for the placement of new
    # imports and definitions (a node nobody asked for is otherwise looked up with
    # PositionProvider, which prints the module twice more and knows one span of a shared node).
    wanted.update((id(statement), statement) for statement in module.body)
    recorder = _Recorder(module, set(wanted))
    module._codegen(recorder)
    return _checked(module, lines, "".join(recorder.tokens), recorder.spans, recorder.complete, strict)


def _every_span(module: cst.Module, text: str) -> dict[int, tuple[int, int]]:
    """Every node's span from one print of the module; empty where that print is not the text."""
    recorder = _Recorder(module, _Every())
    module._codegen(recorder)
    if not recorder.complete or "".join(recorder.tokens) != text:
        return {}
    return recorder.spans


def _whole(module: cst.Module, text: str, node: cst.CSTNode) -> tuple[int, int] | None:
    """``node``'s span from one print of the module, None where that print is not the text."""
    recorder = _Recorder(module, {id(node)})
    module._codegen(recorder)
    if not recorder.complete or "".join(recorder.tokens) != text:
        return None
    return recorder.spans.get(id(node))


class _InPlace:
    """Spans found by printing only the statements that hold the wanted nodes.

    A statement whose parent is the module or an indented block prints the same tokens alone as
    in the module, given the indentation of the blocks around it (an ``elif`` would print as
    ``if``: it is never printed alone). CPython's tree of the same text says on which row each
    statement starts (``statement_rows``): the print stands there, less the lines before the
    statement that it prints, and is checked against the text. The spans recorded while printing
    it, moved by where it stands, are those one print of the module gives. Where rows and
    statements do not pair up, or a print is not the text where it should stand, the caller
    prints the module whole. Printing the module costs about as much as checking it, and most
    findings need a few statements of it."""

    def __init__(
        self,
        module: cst.Module,
        lines: LineIndex,
        parent_of: Callable[[cst.CSTNode], cst.CSTNode | None],
        rows: Sequence[int],
    ) -> None:
        self._module = module
        self._lines = lines
        self._parent_of = parent_of
        # The statement that holds each node asked about and the nodes above it, and the
        # indentation of the blocks around each (devlint.analysis.tree.climbed).
        self._holders: dict[int, cst.CSTNode | None] = {}
        self._indents_known: dict[int, tuple[str, ...]] = {}
        statements = statements_in_order(module)
        # Where each statement's first row starts, by the statement's id; None where CPython
        # and LibCST do not count the same statements.
        self._starts: dict[int, int] | None = None
        if len(statements) == len(rows) and all(0 < row <= len(lines.starts) for row in rows):
            self._starts = {id(statement): lines.starts[row - 1] for statement, row in zip(statements, rows)}

    def spans(self, nodes: Iterable[cst.CSTNode]) -> dict[int, tuple[int, int]] | None:
        """The spans of ``nodes``, None where some statement holding them cannot be placed."""
        if self._starts is None:
            return None
        groups: dict[int, tuple[cst.CSTNode, set[int]]] = {}
        for node in nodes:
            statement = self._statement(node)
            if statement is None:
                return None
            groups.setdefault(id(statement), (statement, {id(statement)}))[1].add(id(node))
        spans: dict[int, tuple[int, int]] = {}
        for statement, keys in groups.values():
            found = self._printed(statement, keys)
            if found is None:
                return None
            spans.update(found)
        return spans

    def span(self, node: cst.CSTNode) -> tuple[int, int] | None:
        found = self.spans([node])
        return None if found is None else found.get(id(node))

    def _statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost statement that holds ``node`` (itself for one) and prints alone as it
        does in place; None for a shared node, a node the walk did not reach and the module."""
        if type(node) in SHARED_KINDS:
            return None
        return climbed(node, self._parent_of, self._holders, self._holder, None)

    def _holder(self, parent: cst.CSTNode, child: cst.CSTNode, above: cst.CSTNode | None) -> cst.CSTNode | None:
        assert self._starts is not None
        return child if id(child) in self._starts and type(parent) in (cst.IndentedBlock, cst.Module) else above

    def _printed(self, statement: cst.CSTNode, keys: set[int]) -> dict[int, tuple[int, int]] | None:
        """The spans of ``keys`` (nodes in ``statement``), where the statement's print stands."""
        assert self._starts is not None
        recorder = _Recorder(self._module, set(keys))
        recorder.indent_tokens = self._indents(statement)
        statement._codegen(recorder)
        if not recorder.complete:
            return None
        code = "".join(recorder.tokens)
        first = 0
        for _ in getattr(statement, "leading_lines", ()):
            first = code.find("\n", first) + 1
            if first == 0:
                return None
        at = self._starts[id(statement)] - first
        if at < 0 or not self._lines.text.startswith(code, at):
            return None
        return {key: (at + begin, at + finish) for key, (begin, finish) in recorder.spans.items()}

    def _indents(self, statement: cst.CSTNode) -> list[str]:
        """The indentation the blocks around ``statement`` give it, outermost first."""
        return list(climbed(statement, self._parent_of, self._indents_known, self._indent, ()))

    def _indent(self, parent: cst.CSTNode, child: cst.CSTNode, above: tuple[str, ...]) -> tuple[str, ...]:
        if type(parent) is not cst.IndentedBlock:
            return above
        return (*above, self._module.default_indent if parent.indent is None else parent.indent)


def statements_in_order(module: cst.Module) -> list[cst.CSTNode]:
    """The module's statements in the order of the text, at every depth: not the statements of
    a one-line suite (``if x: y``, ``a; b``), nor an ``elif`` (an ``If`` under an ``If``)."""
    found: list[cst.CSTNode] = []
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(module, None)]
    while stack:
        node, parent = stack.pop()
        if isinstance(node, cst.BaseStatement) and not (type(node) is cst.If and type(parent) is cst.If):
            found.append(node)
        if type(node) is cst.SimpleStatementLine:
            continue
        stack.extend((child, node) for child in reversed(statement_children(node)))
    return found


def _checked(
    module: cst.Module, lines: LineIndex, code: str, spans: dict[int, tuple[int, int]], complete: bool, strict: bool
) -> Positions:
    if code != lines.text:
        if strict:
            raise TreeMismatch
        return Positions(module, lines, {})
    if not complete:
        return Positions(module, lines, {})
    return Positions(module, lines, spans)


@dataclass(frozen=True)
class _Printed:
    """One top-level statement as printed in a module with ``style`` (indent, newline), with the
    spans (from the statement's start) of the ``wanted`` nodes in it."""

    statement: cst.CSTNode
    style: tuple[str, str]
    wanted: frozenset[int]
    code: str
    spans: dict[int, tuple[int, int]]
    complete: bool


# About ten times the text of the statements kept, as for the trees they belong to.
KEPT_PRINT_CHARS = 2_000_000


class StatementPrints:
    """The printed text and wanted spans of top-level statements met lately, by what a statement
    is made of (``_shape``; the statement is held here, so that no id in its shape names another
    object while it is kept)."""

    def __init__(self, kept_chars: int = KEPT_PRINT_CHARS) -> None:
        self._printed: OrderedDict[tuple, _Printed] = OrderedDict()
        # The print of each statement object met in the last call, by id (the print holds the
        # statement, so the id names no other object): most statements of the next check are the
        # same objects, and need no shape worked out.
        self._last: dict[int, _Printed] = {}
        self._chars = 0
        self._kept_chars = kept_chars

    def printed(self, module: cst.Module, statement: cst.CSTNode, wanted: frozenset[int]) -> _Printed:
        style = (module.default_indent, module.default_newline)
        last = self._last.get(id(statement))
        if last is not None and last.statement is statement and last.style == style and last.wanted >= wanted:
            return last
        printed = self._printed_by_shape(module, statement, wanted, style)
        self._last[id(statement)] = printed
        return printed

    def forget_unused(self, statements: Iterable[cst.CSTNode]) -> None:
        """Keep by object only the prints of ``statements`` (a module's body just printed)."""
        self._last = {id(s): self._last[id(s)] for s in statements if id(s) in self._last}

    def _printed_by_shape(self, module: cst.Module, statement: cst.CSTNode, wanted: frozenset[int], style: tuple[str, str]) -> _Printed:
        shape = _shape(statement)
        kept = self._printed.get(shape)
        # A print that recorded more nodes than asked for serves too (a check that reuses earlier
        # findings asks for fewer): the extra spans are of nodes of the same statement.
        if kept is not None and kept.style == style and kept.wanted >= _renamed(wanted, statement, kept.statement):
            self._printed.move_to_end(shape)
            return kept if kept.statement is statement else _moved(kept, statement, wanted)
        recorder = _Recorder(module, set(wanted))
        statement._codegen(recorder)
        printed = _Printed(statement, style, wanted, "".join(recorder.tokens), recorder.spans, recorder.complete)
        self._keep(shape, printed)
        return printed

    def _keep(self, shape: tuple, printed: _Printed) -> None:
        old = self._printed.pop(shape, None)
        if old is not None:
            self._chars -= len(old.code)
        self._printed[shape] = printed
        self._chars += len(printed.code)
        while self._chars > self._kept_chars and len(self._printed) > 1:
            _, dropped = self._printed.popitem(last=False)
            self._chars -= len(dropped.code)


def _shape(statement: cst.CSTNode) -> tuple:
    """What ``statement`` prints from: its type and the very objects of its fields. The stitcher
    (devlint.engine.sections) gives a section's first statement the lines before it anew in every
    check: a new statement object made of the same objects, which prints the same."""
    parts: list = [type(statement)]
    for field in fields(statement):
        value = getattr(statement, field.name)
        parts.append(tuple(map(id, value)) if isinstance(value, (list, tuple)) else id(value))
    return tuple(parts)


def _renamed(wanted: frozenset[int], statement: cst.CSTNode, kept: cst.CSTNode) -> frozenset[int]:
    """``wanted`` with the statement's own id read as the kept statement's."""
    if statement is kept or id(statement) not in wanted:
        return wanted
    return (wanted - {id(statement)}) | {id(kept)}


def _moved(kept: _Printed, statement: cst.CSTNode, wanted: frozenset[int]) -> _Printed:
    """The kept print of an equal statement, its own span under ``statement``'s id."""
    spans = dict(kept.spans)
    own = spans.pop(id(kept.statement), None)
    if own is not None:
        spans[id(statement)] = own
    return _Printed(statement, kept.style, wanted, kept.code, spans, kept.complete)


def _by_statement(
    module: cst.Module,
    lines: LineIndex,
    wanted: dict[int, cst.CSTNode],
    prints: StatementPrints,
    top: Callable[[cst.CSTNode], cst.CSTNode | None],
) -> tuple[str, dict[int, tuple[int, int]], bool] | None:
    """The module's text and the spans of ``wanted``, printed statement by statement; None where
    that would not give what one print of the module gives: a wanted node outside the body's
    statements or shared among places (devlint.interning), or a module whose end LibCST prints
    differently (no trailing newline, nothing in it)."""
    if not module.body or not module.has_trailing_newline:
        return None
    statements = {id(stmt) for stmt in module.body}
    if len(statements) != len(module.body):
        return None
    within: dict[int, set[int]] = {}
    for key, node in wanted.items():
        if type(node) in SHARED_KINDS:
            return None
        owner = top(node)
        if owner is None or id(owner) not in statements:
            return None
        within.setdefault(id(owner), set()).add(key)
    head = _Recorder(module, set())
    for line in module.header:
        line._codegen(head)
    pieces = ["".join(head.tokens)]
    at = len(pieces[0])
    spans: dict[int, tuple[int, int]] = {}
    complete = True
    for stmt in module.body:
        printed = prints.printed(module, stmt, frozenset(within.get(id(stmt), ())))
        complete = complete and printed.complete
        for key, (start, end) in printed.spans.items():
            # As in one print, a node met twice keeps its first span.
            spans.setdefault(key, (at + start, at + end))
        pieces.append(printed.code)
        at += len(printed.code)
    prints.forget_unused(module.body)
    foot = _Recorder(module, set())
    for line in module.footer:
        line._codegen(foot)
    pieces.append("".join(foot.tokens))
    return "".join(pieces), spans, complete


def statement_rows(tree: ast.Module, text: str) -> tuple[int, ...]:
    """The first row of each statement ``statements_in_order`` lists, from CPython's tree of
    ``text``, in the same order: the statements that start their row (a decorated one at its
    first decorator), not an ``elif``. ``_InPlace`` checks each row it uses against the text, and
    uses none where the two counts differ."""
    lines = text.split("\n")
    rows: list[int] = []
    pending: list[ast.AST] = list(reversed(tree.body))
    while pending:
        node = pending.pop()
        if isinstance(node, ast.stmt):
            decorators = getattr(node, "decorator_list", ())
            row = min([node.lineno, *(decorator.lineno for decorator in decorators)])
            line = lines[row - 1] if row <= len(lines) else ""
            column = len(line) - len(line.lstrip())
            starts_row = line[column : column + 1] == "@" if decorators else column == node.col_offset
            if starts_row and not (type(node) is ast.If and line.startswith("elif", column)):
                rows.append(row)
        inner: list[ast.AST] = []
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                inner += [item for item in value if isinstance(item, (ast.stmt, ast.excepthandler, ast.match_case))]
        pending.extend(reversed(inner))
    return tuple(rows)
