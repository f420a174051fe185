"""Parse a large module in sections and stitch them into the tree one parse would give.

LibCST's native parser holds about 550 bytes of working memory per byte of source while it
parses (the Python tree it returns is a tenth of that), and its time grows faster than the
length of a statement: torch's 1.3 MiB ``common_methods_invocations.py`` peaks at ~770 MB and
takes 6 s. Parsed in sections of at most ``SECTION_CHARS`` characters, the peak follows the
section instead of the file.

The cuts are chosen where no node can straddle them: between top-level statements, where only
empty lines and comments that LibCST gives to the next statement stand between them; inside one
huge class or function, between its body statements (each such section is parsed under a
stand-in header, the statements taken from it); inside one huge list/set/dict display, between
elements (each section is parsed as the statement's own prefix, some elements and a stand-in
last element). Nested huge classes and displays are cut the same way, one level down. A node
does not record where it stands,
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

from devlint.gate.syntax import compile_quietly

# The size of a section: LibCST parses it with ~9 MB of working memory. Files over twice this
# are parsed in sections. LibCST's time grows faster than a statement's length: on issue 29's
# corpus, sections of 16 KiB parse 5% faster than sections of 64 KiB (which were 20% faster than
# whole files on torch's 152 files over 64 KiB); smaller ones gain nothing more.
SECTION_CHARS = 16 * 1024

Parser = Callable[[str], cst.Module]
# ``wrap(source)``: a text that parses, holding ``source`` where a huge node stands in the file.
Wrap = Callable[[str], str]
Locate = Callable[[cst.Module], "cst.List | cst.Set | cst.Dict"]

# Between two display elements only a comma, whitespace and comments may stand.
_TRIVIA = r"(?:[ \t\f\r\n]|\\\r?\n|#[^\r\n]*)*"
_SEPARATOR = re.compile(f"{_TRIVIA},{_TRIVIA}")
# Between a dict key and its value.
_DICT_COLON = re.compile(f"{_TRIVIA}:{_TRIVIA}")
_OPENERS = {ast.List: "[", ast.Set: "{", ast.Dict: "{"}
_CLOSERS = {"[": "]", "{": "}"}
_LINE_END = re.compile(r"\r\n|\r|\n")


class _Unstitchable(Exception):
    """The sections did not come back in the shape expected: parse the file whole."""


@dataclass(frozen=True)
class Lines:
    """Character offsets of line starts (1-based rows, as ``ast`` counts them)."""

    text: str
    starts: tuple[int, ...]
    # Bytes and characters count alike: an offset needs no encoding of its line (a chain of
    # thousands of links on one line asks for an offset per link).
    ascii: bool = False

    @classmethod
    def of(cls, text: str) -> Lines:
        # Only the line ends CPython counts (str.splitlines also cuts at form feeds and others).
        starts = [0, *(match.end() for match in _LINE_END.finditer(text))]
        if starts[-1] == len(text) and len(starts) > 1:
            starts.pop()
        return cls(text, tuple(starts), text.isascii())

    def start(self, row: int) -> int:
        return self.starts[row - 1]

    def end(self, row: int) -> int:
        return self.starts[row] if row < len(self.starts) else len(self.text)

    def line(self, row: int) -> str:
        return self.text[self.start(row) : self.end(row)]

    def offset(self, row: int, byte_column: int) -> int:
        """``ast`` counts columns in UTF-8 bytes; text offsets count characters."""
        if self.ascii:
            return self.start(row) + byte_column
        return self.start(row) + len(self.line(row).encode("utf-8")[:byte_column].decode("utf-8", "replace"))


def parse_in_sections(
    text: str, parse: Parser, section_chars: int = SECTION_CHARS, tree: ast.Module | None = None
) -> cst.Module | None:
    """The module ``parse(text)`` would give, parsed in sections; None when that cannot be done
    here (CPython rejects the text, or a section does not come back in the shape expected).
    ``tree``: CPython's tree of ``text``, when the caller has read it already."""
    if tree is None:
        try:
            tree = compile_quietly(text, ast.PyCF_ONLY_AST)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    lines = Lines.of(text)
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


def _cuts(statements: Sequence[ast.stmt], lines: Lines) -> list[int | None]:
    """Where the text may be cut before each statement: right after the one before, when only
    empty lines and comments at the statement's own indentation stand between them (LibCST
    gives those to the statement that follows; a comment indented deeper ends the block above)."""
    cuts: list[int | None] = [None]
    for before, stmt in zip(statements, statements[1:]):
        first = _first_row(stmt)
        if first <= before.end_lineno:
            cuts.append(None)
            continue
        clean = _only_trivia_between(lines, before.end_lineno, first)
        cuts.append(lines.start(before.end_lineno + 1) if clean else None)
    return cuts


def _indented_body(stmt: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, lines: Lines) -> bool:
    """The body is an indented block (``def f(): return 1`` has none): its first statement is
    the first thing on its line."""
    first = stmt.body[0]
    return not lines.line(first.lineno).encode("utf-8")[: first.col_offset].strip()


def _is_trivia(line: str) -> bool:
    stripped = line.strip(" \t\f\r\n")
    return not stripped or stripped.startswith("#")


def _only_trivia_between(lines: Lines, last: int, first: int) -> bool:
    """Rows after ``last`` and before ``first`` are all empty or comments at the indentation of
    row ``first`` (and row ``first`` starts with its statement)."""
    line = lines.line(first)
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    if first <= last or line[len(indent) : len(indent) + 1] in ("", "#", "\r", "\n"):
        return False
    between = (lines.line(row) for row in range(last + 1, first))
    return all(not text.rstrip("\r\n") or text.startswith(indent + "#") for text in between)


def _units(statements: Sequence[ast.stmt], lines: Lines, limit: int) -> list[_Unit]:
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


def _stitch(text: str, units: list[_Unit], lines: Lines, text_parse: Parser, limit: int) -> cst.Module:
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


def _split_statement(text: str, unit: _Unit, lines: Lines, parse: Parser, limit: int) -> cst.BaseStatement:
    """The one statement of ``unit``, parsed in sections (the first one holds its start and end)."""
    stmt = unit.split
    if isinstance(stmt, _BLOCKS) and _indented_body(stmt, lines):
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


_BLOCKS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_STAND_IN_HEADERS = {ast.ClassDef: "class _:", ast.FunctionDef: "def _():", ast.AsyncFunctionDef: "async def _():"}


def _split_block(
    text: str, unit: _Unit, stmt: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef,
    lines: Lines, parse: Parser, limit: int,
) -> cst.BaseStatement:
    """A huge class or function at the top level (see ``_Block``)."""
    block = _Block(text, stmt, lines, parse, limit, unit.start, unit.end, wrap=lambda source: source, locate=lambda module: _only(module.body))
    return block.stitched()


@dataclass
class _Block:
    """One huge class or function, parsed in sections within its context.

    ``wrap(source)`` is a text that parses, holding ``source`` (the text from ``start`` to ``end``:
    the statement with the comments and lines that lead it) where the statement stands in the
    file; ``locate`` finds the statement in the parse of such a text. The frame section holds the
    header, the first body statements and the last one (so the block ends as in the file); every
    other section is body statements under a stand-in header. A body statement that is itself a
    huge class or function is parsed the same way, one level down, and stands in its section as
    ``pass``.
    """

    text: str
    stmt: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
    lines: Lines
    parse: Parser
    limit: int
    start: int
    end: int
    wrap: Wrap
    locate: Callable[[cst.Module], cst.BaseStatement]

    def stitched(self) -> cst.BaseStatement:
        lines, inner = self.lines, self.stmt.body
        count = len(inner)
        cuts = _cuts(inner, lines)
        cuts[0] = self._first_cut()
        offsets = [lines.start(_first_row(s)) if cut is None else cut for s, cut in zip(inner, cuts)]
        offsets.append(lines.end(inner[-1].end_lineno))
        # The last statement stays in the frame: cut only among the ones before it.
        sections = _groups(offsets, count - 1, self.limit, [cut is not None for cut in cuts])
        if len(sections) < 2 or cuts[-1] is None:
            sections = [(0, count - 1)]
        head_end = sections[0][1]
        nested = [self._nested(i, cuts, offsets) for i in range(count)]
        frame_spans = [(self.start, offsets[head_end]), (offsets[-2], self.end)] if head_end < count - 1 else [(self.start, self.end)]
        outer = self._block_of(self.locate(self.parse(self.wrap(self._hollowed(frame_spans, nested, offsets)))))
        kept = self._filled(list(outer.body.body), [*range(head_end), count - 1], nested)
        if len(kept) != head_end + 1:
            raise _Unstitchable
        middle: list[cst.BaseStatement] = []
        for begin, end in sections[1:]:
            source = self._header() + self._hollowed([(offsets[begin], offsets[end])], nested, offsets)
            piece = self._block_of(self.locate(self.parse(self.wrap(source))))
            if piece.body.indent != outer.body.indent or piece.body.footer or len(piece.body.body) != end - begin:
                raise _Unstitchable
            middle.extend(self._filled(list(piece.body.body), list(range(begin, end)), nested))
        return outer.with_changes(body=outer.body.with_changes(body=[*kept[:-1], *middle, kept[-1]]))

    def _first_cut(self) -> int | None:
        """Where the first body statement's own text starts: after the header's last line, when
        only lines a cut allows stand between (LibCST gives them to that statement)."""
        first = _first_row(self.stmt.body[0])
        row = first - 1
        while row > self.stmt.lineno and _is_trivia(self.lines.line(row)):
            row -= 1
        if row < self.stmt.lineno or not _only_trivia_between(self.lines, row, first):
            return None
        return self.lines.start(row + 1)

    def _header(self) -> str:
        """A stand-in header at the statement's own indentation, ended like the file's lines."""
        line = self.lines.line(_first_row(self.stmt))
        return line[: len(line) - len(line.lstrip(" \t"))] + _STAND_IN_HEADERS[type(self.stmt)] + first_newline(self.text)

    def _nested(self, index: int, cuts: list[int | None], offsets: list[int]) -> _Block | None:
        """Body statement ``index`` as a block of its own: a huge class or function with cuts
        before and after it (so the lines that lead it are its own)."""
        stmt = self.stmt.body[index]
        start, end = cuts[index], self.lines.end(stmt.end_lineno)
        last = index == len(self.stmt.body) - 1
        if not isinstance(stmt, _BLOCKS) or start is None or end - start <= self.limit or not _indented_body(stmt, self.lines):
            return None
        if not last and cuts[index + 1] != end:
            return None
        header = self._header()
        return _Block(
            self.text, stmt, self.lines, self.parse, self.limit, start, end,
            wrap=lambda source: self.wrap(header + source),
            locate=lambda module: self._block_of(self.locate(module)).body.body[0],
        )

    def _hollowed(self, spans: list[tuple[int, int]], nested: list[_Block | None], offsets: list[int]) -> str:
        """The text of ``spans`` with every nested block inside them replaced by ``pass``."""
        parts: list[str] = []
        for start, end in spans:
            at = start
            for block in nested:
                if block is not None and start <= block.start and block.end <= end:
                    line = self.lines.line(_first_row(block.stmt))
                    indent = line[: len(line) - len(line.lstrip(" \t"))]
                    parts.append(self.text[at : block.start] + indent + "pass" + first_newline(self.text))
                    at = block.end
            parts.append(self.text[at:end])
        return "".join(parts)

    @staticmethod
    def _filled(statements: list[cst.BaseStatement], indices: list[int], nested: list[_Block | None]) -> list[cst.BaseStatement]:
        """``statements`` (the file's body statements ``indices``) with each stand-in ``pass``
        replaced by its nested block, parsed in sections."""
        filled = list(statements)
        for position, index in enumerate(indices[: len(filled)]):
            block = nested[index]
            if block is not None:
                filled[position] = block.stitched()
        return filled

    @staticmethod
    def _block_of(statement: cst.BaseStatement) -> cst.ClassDef | cst.FunctionDef:
        if not isinstance(statement, (cst.ClassDef, cst.FunctionDef)) or not isinstance(statement.body, cst.IndentedBlock):
            raise _Unstitchable
        return statement


def _split_display(
    text: str, unit: _Unit, display: ast.List | ast.Set | ast.Dict,
    lines: Lines, parse: Parser, limit: int,
) -> cst.BaseStatement:
    """A statement holding one huge display (see ``_Display``)."""
    span = _Display.span(text, display, lines)
    if span is None:
        return _only(parse(text[unit.start : unit.end]).body)
    opener, closer = span
    site = _Display(
        text, display, lines, parse, limit,
        wrap=lambda inner: text[unit.start : opener] + inner + text[closer : unit.end],
        locate=lambda module: _display_of(_only(module.body)),
    )
    node, frame = site.stitched()
    return _with_display(_only(frame.body), node)




@dataclass
class _Display:
    """One huge list/set/dict display, parsed in sections within its context.

    ``wrap(source)`` is a text that parses, holding ``source`` where the display stands in the
    file (the statement around it, and the displays it is nested in, reduced to what encloses
    it); ``locate`` finds the display in the parse of such a text. The frame section holds the
    brackets, the first elements and the last one (so the display ends as in the file); every
    other section is the opener, some elements and a stand-in element (so the last real one is
    followed by an element, as in the file). An element that is itself a huge display is parsed
    the same way, one level down, and stands in its section as a stand-in value.
    """

    text: str
    display: ast.List | ast.Set | ast.Dict
    lines: Lines
    parse: Parser
    limit: int
    wrap: Wrap
    locate: Locate

    @staticmethod
    def span(text: str, display: ast.expr, lines: Lines) -> tuple[int, int] | None:
        """Where a display that may be cut starts and ends; None for any other expression."""
        if type(display) not in _OPENERS:
            return None
        keys = display.keys if isinstance(display, ast.Dict) else display.elts
        opener = lines.offset(display.lineno, display.col_offset)
        if len(keys) < 3 or any(k is None for k in keys) or text[opener : opener + 1] != _OPENERS[type(display)]:
            return None
        return opener, lines.offset(display.end_lineno, display.end_col_offset)

    def stitched(self) -> tuple[cst.List | cst.Set | cst.Dict, cst.Module]:
        text, display, lines = self.text, self.display, self.lines
        is_dict = isinstance(display, ast.Dict)
        keys = display.keys if is_dict else display.elts
        values = display.values if is_dict else display.elts
        span = _Display.span(text, display, lines)
        if span is None:
            raise _Unstitchable
        opener, closer = span
        starts = [lines.offset(k.lineno, k.col_offset) for k in keys]
        ends = [lines.offset(v.end_lineno, v.end_col_offset) for v in values]
        count = len(keys)
        # A cut before element i needs exactly a comma (and trivia) between it and element i-1.
        usable = [i > 0 and _SEPARATOR.fullmatch(text, ends[i - 1], starts[i]) is not None for i in range(count)]
        sections = _groups([*starts, ends[-1]], count - 1, self.limit, usable)
        if len(sections) < 2 or not usable[-1]:
            sections = [(0, count - 1)]
        head_end = sections[0][1]
        inner = [self._inner(i, starts, ends, values) for i in range(count)]
        frame_source = self._hollowed([(opener, starts[head_end]), (starts[-1], closer)], inner)
        frame = self.parse(self.wrap(frame_source))
        outer = self.locate(frame)
        kept = self._filled(list(outer.elements), [*range(head_end), count - 1], inner, frame_source)
        if len(kept) != head_end + 1:
            raise _Unstitchable
        stand_in = ("0: 0" if is_dict else "0") + _CLOSERS[text[opener]]
        middle: list[cst.BaseElement | cst.BaseDictElement] = []
        for begin, end in sections[1:]:
            source = text[opener] + self._hollowed([(starts[begin], starts[end])], inner) + stand_in
            elements = list(self.locate(self.parse(self.wrap(source))).elements)
            if len(elements) != end - begin + 1:
                raise _Unstitchable
            middle.extend(self._filled(elements[:-1], list(range(begin, end)), inner, source))
        return outer.with_changes(elements=[*kept[:-1], *middle, kept[-1]]), frame

    def _inner(self, index: int, starts: list[int], ends: list[int], values: list[ast.expr]) -> _Display | None:
        """Element ``index`` as a display of its own, when it is too large for one section and
        its value stands bare (not in parentheses) right where the element's text allows."""
        value = values[index]
        span = _Display.span(self.text, value, self.lines)
        if span is None or ends[index] - starts[index] <= self.limit or span[1] != ends[index]:
            return None
        start = starts[index]
        if isinstance(self.display, ast.Dict):
            key_end = self.lines.offset(self.display.keys[index].end_lineno, self.display.keys[index].end_col_offset)
            if _DICT_COLON.fullmatch(self.text, key_end, span[0]) is None:
                return None
        elif span[0] != start:
            return None
        text, opener = self.text, self.lines.offset(self.display.lineno, self.display.col_offset)
        closing = _CLOSERS[text[opener]]
        lead = text[opener] + text[start : span[0]]
        return _Display(
            text, value, self.lines, self.parse, self.limit,
            wrap=lambda source: self.wrap(lead + source + closing),
            locate=lambda module: _element_value(self.locate(module).elements[0]),
        )

    def _hollowed(self, spans: list[tuple[int, int]], inner: list[_Display | None]) -> str:
        """The text of ``spans`` with every inner display inside them replaced by a stand-in."""
        holes = sorted(
            span
            for display in inner
            if display is not None and (span := _Display.span(self.text, display.display, self.lines)) is not None
        )
        parts: list[str] = []
        for start, end in spans:
            at = start
            for hole_start, hole_end in holes:
                if start <= hole_start and hole_end <= end:
                    parts.append(self.text[at:hole_start] + "0")
                    at = hole_end
            parts.append(self.text[at:end])
        return "".join(parts)

    def _filled(
        self, elements: list[cst.BaseElement | cst.BaseDictElement], indices: list[int],
        inner: list[_Display | None], source: str,
    ) -> list[cst.BaseElement | cst.BaseDictElement]:
        """``elements`` (of the file's elements ``indices``) with each stand-in value replaced by
        its inner display, parsed in sections."""
        filled = list(elements)
        for position, index in enumerate(indices[: len(filled)]):
            display = inner[index]
            if display is not None:
                node, _ = display.stitched()
                filled[position] = filled[position].with_changes(value=node)
        return filled


def _element_value(element: cst.CSTNode) -> cst.List | cst.Set | cst.Dict:
    value = getattr(element, "value", None)
    if not isinstance(value, (cst.List, cst.Set, cst.Dict)):
        raise _Unstitchable
    return value


def first_newline(text: str) -> str:
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
