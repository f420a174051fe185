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
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from devlint.fixes import LineIndex

# Reused for every node whose position nobody asked for: it does nothing and holds no state.
_NOTHING = nullcontext()


class TreeMismatch(Exception):
    """The module does not print back to the text: its positions cannot be trusted."""


class _Recorder(CodegenState):
    """Prints the module like ``Module.code``; remembers start and end offsets of wanted nodes."""

    def __init__(self, module: cst.Module, wanted: set[int]) -> None:
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
        # The range borrows its ends from children printed inside this block: want them too.
        for borrowed in (start_node, end_node):
            if borrowed is not None:
                self.wanted.add(id(borrowed))
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

    def __init__(self, module: cst.Module, lines: LineIndex, spans: dict[int, tuple[int, int]]) -> None:
        self._module = module
        self._lines = lines
        self._spans = spans
        self._full: dict[cst.CSTNode, CodeRange] | None = None

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        span = self._spans.get(id(node))
        if span is not None:
            return CodeRange(self._position(span[0]), self._position(span[1]))
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


def positions(module: cst.Module, lines: LineIndex, nodes: Iterable[cst.CSTNode], strict: bool = False) -> Positions:
    """The positions of ``nodes`` (any other node is looked up the slow way when asked for)."""
    recorder = _Recorder(module, {id(node) for node in nodes})
    module._codegen(recorder)
    if "".join(recorder.tokens) != lines.text:
        if strict:
            raise TreeMismatch
        return Positions(module, lines, {})
    if not recorder.complete:
        return Positions(module, lines, {})
    return Positions(module, lines, recorder.spans)
