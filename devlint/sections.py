"""Parse a large module in sections and stitch them into the tree one parse would give.

LibCST's native parser holds about 550 bytes of working memory per byte of source while it
parses (the Python tree it returns is a tenth of that), and its time grows faster than the
length of a statement: torch's 1.3 MiB ``common_methods_invocations.py`` peaks at ~770 MB and
takes 6 s. Parsed in sections of at most ``SECTION_CHARS`` characters, the peak follows the
section instead of the file.

The cuts are chosen where no node can straddle them: between top-level statements with no blank
line or comment between them; inside one huge class or function, between its body statements
(each such section is parsed under a stand-in header, the statements taken from it); inside one
huge list/set/dict display, between elements (each section is parsed as the statement's
own prefix, some elements and a stand-in last element). A node does not record where it stands,
so statements and elements parsed apart are the very nodes one parse gives; the tests hold the
stitched tree equal (``deep_equals``) to the one parse on real files cut into sections of a few
hundred characters. Where a section does not come back in the expected shape, or CPython rejects
the file, the caller parses the file whole.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import libcst as cst

# The size of a section: LibCST parses it with ~70 MB of working memory.
SECTION_CHARS = 128 * 1024

Parser = Callable[[str], cst.Module]

# Between two display elements only a comma, whitespace and comments may stand.
_SEPARATOR = re.compile(r"(?:[ \t\f\r\n]|\\\r?\n|#[^\r\n]*)*,(?:[ \t\f\r\n]|\\\r?\n|#[^\r\n]*)*")
_OPENERS = {ast.List: "[", ast.Set: "{", ast.Dict: "{"}
_CLOSERS = {"[": "]", "{": "}"}
_LINE_END = re.compile(r"\r\n|\r|\n")


class _Unstitchable(Exception):
    """The sections did not come back in the shape expected: parse the file whole."""


@dataclass(frozen=True)
class _Lines:
    """Character offsets of line starts (1-based rows, as ``ast`` counts them)."""

    text: str
    starts: tuple[int, ...]

    @classmethod
    def of(cls, text: str) -> _Lines:
        # Only the line ends CPython counts (str.splitlines also cuts at form feeds and others).
        starts = [0, *(match.end() for match in _LINE_END.finditer(text))]
        if starts[-1] == len(text) and len(starts) > 1:
            starts.pop()
        return cls(text, tuple(starts))

    def start(self, row: int) -> int:
        return self.starts[row - 1]

    def end(self, row: int) -> int:
        return self.starts[row] if row < len(self.starts) else len(self.text)

    def line(self, row: int) -> str:
        return self.text[self.start(row) : self.end(row)]

    def offset(self, row: int, byte_column: int) -> int:
        line = self.text[self.start(row) : self.end(row)]
        return self.start(row) + len(line.encode("utf-8")[:byte_column].decode("utf-8", "replace"))


def parse_in_sections(text: str, parse: Parser, section_chars: int = SECTION_CHARS) -> cst.Module | None:
    """The module ``parse(text)`` would give, parsed in sections; None when that cannot be done
    here (CPython rejects the text, or the pieces do not stitch back to the text)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = _Lines.of(text)
    units = _units(tree.body, lines, section_chars)
    del tree
    if len(units) < 2 and (not units or units[0].split is None):
        return None
    try:
        return _stitch(text, units, lines, parse, section_chars)
    except (_Unstitchable, cst.ParserSyntaxError):
        return None


@dataclass
class _Unit:
    """Consecutive top-level statements no cut may separate, as a span of the text."""

    start: int
    end: int
    # Set for a unit of one statement too large for a section: it may be cut inside.
    split: ast.stmt | None = None


def _first_row(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return decorators[0].lineno if decorators else stmt.lineno


def _cuts(statements: Sequence[ast.stmt], lines: _Lines) -> list[int | None]:
    """Where the text may be cut before each statement: right after the one before, when only
    empty lines and comments at the statement's own indentation stand between them (LibCST
    gives those to the statement that follows; a comment indented deeper ends the block above)."""
    cuts: list[int | None] = [None]
    for before, stmt in zip(statements, statements[1:]):
        first = _first_row(stmt)
        if first <= before.end_lineno:
            cuts.append(None)
            continue
        line = lines.line(first)
        comment = line[: len(line) - len(line.lstrip(" \t"))] + "#"
        between = (lines.line(row) for row in range(before.end_lineno + 1, first))
        clean = all(not text.rstrip("\r\n") or text.startswith(comment) for text in between)
        cuts.append(lines.start(before.end_lineno + 1) if clean else None)
    return cuts


def _units(statements: Sequence[ast.stmt], lines: _Lines, limit: int) -> list[_Unit]:
    if not statements:
        return []
    groups: list[list[ast.stmt]] = []
    starts: list[int] = []
    for stmt, cut in zip(statements, _cuts(statements, lines)):
        if cut is not None or not groups:
            groups.append([stmt])
            starts.append(0 if cut is None else cut)
        else:
            groups[-1].append(stmt)
    units = [_Unit(start, end) for start, end in zip(starts, [*starts[1:], len(lines.text)])]
    for unit, group in zip(units, groups):
        # Only these syntax trees are kept: CPython's tree of a whole large file is ~100 MB.
        if len(group) == 1 and unit.end - unit.start > limit:
            unit.split = group[0]
    return units


def _stitch(text: str, units: list[_Unit], lines: _Lines, text_parse: Parser, limit: int) -> cst.Module:
    modules: list[cst.Module] = []

    def parse(source: str) -> cst.Module:
        module = text_parse(source)
        modules.append(module)
        return module

    body: list[cst.BaseStatement] = []
    pending: list[_Unit] = []
    footer_owner: cst.Module | None = None

    def flush() -> cst.Module | None:
        if not pending:
            return None
        module = parse(text[pending[0].start : pending[-1].end])
        body.extend(_with_header(module) if pending[0].start else module.body)
        pending.clear()
        return module

    for unit in units:
        if unit.split is not None:
            flush()
            count = len(modules)
            statement = _split_statement(text, unit, lines, parse, limit)
            footer_owner = modules[count]
            body.append(_with_header(footer_owner.with_changes(body=[statement]))[0] if unit.start else statement)
            continue
        if pending and unit.end - pending[0].start > limit:
            flush()
        pending.append(unit)
    footer_owner = flush() or footer_owner
    first = modules[0]
    # A block whose indentation is the module's default records none: every section with blocks
    # must have found the same default as the first indented line of the file sets for one parse.
    indents = {module.default_indent for module in modules if not _blockless(module)}
    if len(indents) > 1 or any(module.default_newline != first.default_newline for module in modules):
        raise _Unstitchable
    if any(module.footer for module in modules if module is not footer_owner):
        raise _Unstitchable
    assert footer_owner is not None
    return first.with_changes(
        body=body,
        footer=footer_owner.footer,
        has_trailing_newline=footer_owner.has_trailing_newline,
        default_indent=indents.pop() if indents else first.default_indent,
    )


def _blockless(module: cst.Module) -> bool:
    """No indented block anywhere (simple statements only): the default indent is not used."""
    return all(isinstance(stmt, cst.SimpleStatementLine) for stmt in module.body)


def _with_header(module: cst.Module) -> list[cst.BaseStatement]:
    """The body of a section that starts after a cut: the lines before its first statement,
    which its own parse calls the module's header, lead that statement in the file."""
    body = list(module.body)
    if module.header:
        if not body:
            raise _Unstitchable
        body[0] = body[0].with_changes(leading_lines=[*module.header, *body[0].leading_lines])
    return body


def _split_statement(text: str, unit: _Unit, lines: _Lines, parse: Parser, limit: int) -> cst.BaseStatement:
    """The one statement of ``unit``, parsed in sections (the first one holds its start and end)."""
    stmt = unit.split
    if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and len(stmt.body) > 2:
        return _split_block(text, unit, stmt, lines, parse, limit)
    display = getattr(stmt, "value", None) if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Expr)) else None
    if display is not None and type(display) in _OPENERS:
        return _split_display(text, unit, display, lines, parse, limit)
    return _only(parse(text[unit.start : unit.end]).body)


def _only(body: Sequence[cst.BaseStatement]) -> cst.BaseStatement:
    if len(body) != 1:
        raise _Unstitchable
    return body[0]


def _groups(offsets: Sequence[int], stop: int, limit: int, usable: Sequence[bool]) -> list[tuple[int, int]]:
    """Index ranges [i, j) over ``0..stop`` of at most ``limit`` characters each where the cuts
    allow it (``offsets[i]``: where item i starts; a cut only before an item whose ``usable`` is set)."""
    ranges: list[tuple[int, int]] = []
    begin = 0
    for i in range(1, stop):
        if usable[i] and offsets[i + 1] - offsets[begin] > limit:
            ranges.append((begin, i))
            begin = i
    ranges.append((begin, stop))
    return ranges


def _split_block(
    text: str, unit: _Unit, stmt: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef,
    lines: _Lines, parse: Parser, limit: int,
) -> cst.BaseStatement:
    """A huge class or function: its first section holds the header, the first statements and the
    last one (so the block's end reads as in the file); the others sit under a stand-in header."""
    inner = stmt.body
    cuts = _cuts(inner, lines)
    offsets = [lines.start(_first_row(s)) if cut is None else cut for s, cut in zip(inner, cuts)]
    offsets.append(lines.end(inner[-1].end_lineno))
    # The last statement stays in the first section: cut only among the ones before it.
    sections = _groups(offsets, len(inner) - 1, limit, [cut is not None for cut in cuts])
    if len(sections) < 2 or cuts[-1] is None:
        return _only(parse(text[unit.start : unit.end]).body)
    head_end = sections[0][1]
    outer = _only(parse(text[unit.start : offsets[head_end]] + text[offsets[-2] : unit.end]).body)
    if not isinstance(outer, (cst.ClassDef, cst.FunctionDef)) or not isinstance(outer.body, cst.IndentedBlock):
        raise _Unstitchable
    header = {ast.ClassDef: "class _:", ast.FunctionDef: "def _():", ast.AsyncFunctionDef: "async def _():"}[type(stmt)]
    stand_in = header + _newline(text)
    middle: list[cst.BaseStatement] = []
    for begin, end in sections[1:]:
        piece = _only(parse(stand_in + text[offsets[begin] : offsets[end]]).body)
        if not isinstance(piece, (cst.ClassDef, cst.FunctionDef)) or not isinstance(piece.body, cst.IndentedBlock):
            raise _Unstitchable
        if piece.body.indent != outer.body.indent or piece.body.footer:
            raise _Unstitchable
        middle.extend(piece.body.body)
    kept = list(outer.body.body)
    if len(kept) != head_end + 1:
        raise _Unstitchable
    block = outer.body.with_changes(body=[*kept[:-1], *middle, kept[-1]])
    return outer.with_changes(body=block)


def _split_display(
    text: str, unit: _Unit, display: ast.List | ast.Set | ast.Dict,
    lines: _Lines, parse: Parser, limit: int,
) -> cst.BaseStatement:
    """A statement holding one huge display: its first section holds the statement with the
    first elements and the last one; the others are the statement's prefix, some elements and a
    stand-in element (so the last real element is followed by an element, as in the file)."""
    keys = display.keys if isinstance(display, ast.Dict) else display.elts
    opener = lines.offset(display.lineno, display.col_offset)
    if len(keys) < 3 or any(k is None for k in keys) or text[opener : opener + 1] != _OPENERS[type(display)]:
        return _only(parse(text[unit.start : unit.end]).body)
    values = display.values if isinstance(display, ast.Dict) else display.elts
    starts = [lines.offset(k.lineno, k.col_offset) for k in keys]
    ends = [lines.offset(v.end_lineno, v.end_col_offset) for v in values]
    # A cut before element i needs exactly a comma (and trivia) between it and element i-1.
    usable = [i > 0 and _SEPARATOR.fullmatch(text, ends[i - 1], starts[i]) is not None for i in range(len(keys))]
    sections = _groups([*starts, ends[-1]], len(keys) - 1, limit, usable)
    if len(sections) < 2 or not usable[-1]:
        return _only(parse(text[unit.start : unit.end]).body)
    head_end = sections[0][1]
    statement = _only(parse(text[unit.start : starts[head_end]] + text[starts[-1] : unit.end]).body)
    outer = _display_of(statement)
    prefix = text[unit.start : opener + 1]
    stand_in = ("0: 0" if isinstance(display, ast.Dict) else "0") + _CLOSERS[text[opener]] + _newline(text)
    middle: list[cst.BaseElement | cst.BaseDictElement] = []
    for begin, end in sections[1:]:
        elements = _display_of(_only(parse(prefix + text[starts[begin] : starts[end]] + stand_in).body)).elements
        if len(elements) != end - begin + 1:
            raise _Unstitchable
        middle.extend(elements[:-1])
    kept = list(outer.elements)
    if len(kept) != head_end + 1:
        raise _Unstitchable
    new_display = outer.with_changes(elements=[*kept[:-1], *middle, kept[-1]])
    return _with_display(statement, new_display)


def _newline(text: str) -> str:
    """The file's first line ending: a stand-in line ends like the file's lines."""
    match = _LINE_END.search(text)
    return match.group() if match else "\n"


def _display_of(statement: cst.BaseStatement) -> cst.List | cst.Set | cst.Dict:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        raise _Unstitchable
    value = getattr(statement.body[0], "value", None)
    if not isinstance(value, (cst.List, cst.Set, cst.Dict)):
        raise _Unstitchable
    return value


def _with_display(statement: cst.BaseStatement, display: cst.BaseExpression) -> cst.BaseStatement:
    assert isinstance(statement, cst.SimpleStatementLine)
    small = statement.body[0].with_changes(value=display)
    return statement.with_changes(body=[small])
