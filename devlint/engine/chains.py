"""Parse a long chain of binary operators in batches and stitch them into the tree one parse gives.

LibCST's parser takes time that grows with the square of a chain's links (`a + b + c + ...` is
a left-recursive rule of its grammar): 250 links parse in 0.04 s, 1,000 in 0.6 s, 4,000 in 18 s.
A chain of at least ``CHAIN_LINKS`` links (found in CPython's tree, which the gate read) is
parsed ``BATCH`` links at a time: the first batch as it stands, each later one behind a stand-in
name for all that comes before it, whose place the tree built so far then takes. Each batch is
parsed in the indentation of its statement and inside parentheses, as a chain that spans lines
stands in the file. In the file the chain is replaced by a stand-in name, whose parentheses it
takes over. The stitched module must print back the very text; anything else, and the caller
parses the file as a whole. ``tests/test_chains.py`` holds the stitched tree equal
(``deep_equals``) to the one parse for chains of every operator, spanning lines, with comments,
backslashes and parenthesized operands.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence

import libcst as cst

from devlint.engine.sections import Lines, first_newline

# Chains this long or longer are parsed in batches of BATCH links (a chain of 200 links takes
# LibCST 0.03 s whole).
CHAIN_LINKS = 200
BATCH = 64

# A binary operator's character: a top-level statement with fewer of them holds no long chain.
_OPERATOR = re.compile(r"[-+*/%@|&^<>]")
_INDENT = re.compile(r"[ \t\f]*")
# What may stand between a chain's prefix and its next operator.
_TRIVIA_THEN_OPERATOR = re.compile(r"(?:[ \t\f\r\n]|\\\r?\n|#[^\r\n]*)*(?:[-+*/%@|&^]|<<|>>)")

Parse = Callable[[str], cst.Module]


class Unstitchable(Exception):
    """A batch did not come back in the shape expected: parse the file as a whole."""


def long_chains(text: str, tree: ast.Module, links: int = CHAIN_LINKS) -> list[tuple[ast.BinOp, ast.stmt]]:
    """The chains of at least ``links`` links, each with the innermost statement holding it,
    outermost chains only, in the order of the text. Only top-level statements with that many
    operator characters are walked."""
    lines = Lines.of(text)
    found: list[tuple[ast.BinOp, ast.stmt]] = []
    for top in tree.body:
        if len(_OPERATOR.findall(text, lines.start(top.lineno), lines.end(top.end_lineno))) < links:  # type: ignore[arg-type]
            continue
        pending: list[tuple[ast.AST, ast.stmt]] = [(top, top)]
        while pending:
            node, statement = pending.pop()
            if isinstance(node, ast.stmt):
                statement = node
            if type(node) is ast.BinOp and _length(node) >= links:
                found.append((node, statement))
                continue
            if type(node) is ast.JoinedStr:
                continue
            pending += [(child, statement) for child in reversed(list(ast.iter_child_nodes(node)))]
    return found


def _length(node: ast.BinOp) -> int:
    return len(_spine(node))


def _spine(head: ast.BinOp) -> list[ast.BinOp]:
    """The chain's operations, innermost first: down the left operands while they are operations
    that start where their parent does (a parenthesized one is an operand of its own)."""
    spine = [head]
    left = head.left
    while type(left) is ast.BinOp and (left.lineno, left.col_offset) == (spine[-1].lineno, spine[-1].col_offset):
        spine.append(left)
        left = left.left
    spine.reverse()
    return spine


def parse_with_chains(
    text: str, chains: Sequence[tuple[ast.BinOp, ast.stmt]], parse: Parse, parse_rest: Parse, batch: int = BATCH
) -> cst.Module:
    """The module one parse of ``text`` gives, each chain of ``chains`` parsed in batches by
    ``parse``, the rest of the text (each chain a stand-in name) by ``parse_rest``."""
    lines = Lines.of(text)
    ending = first_newline(text)
    stand_in = _free_name(text)
    built: dict[str, cst.BaseExpression] = {}
    pieces: list[str] = []
    at = 0
    for index, (head, statement) in enumerate(chains):
        start = lines.offset(head.lineno, head.col_offset)
        end = lines.offset(head.end_lineno, head.end_col_offset)  # type: ignore[arg-type]
        if start < at:
            raise Unstitchable
        line = lines.line(statement.lineno)
        indent = line[: _INDENT.match(line).end()]  # type: ignore[union-attr]
        name = f"{stand_in}{index}"
        built[name] = _chain(text, head, lines, indent, ending, parse, stand_in, batch)
        pieces += [text[at:start], name]
        at = end
    pieces.append(text[at:])
    module = parse_rest("".join(pieces))
    stitched = module.visit(_Refill(built))
    if not isinstance(stitched, cst.Module) or stitched.code != text:
        raise Unstitchable
    return stitched


def _chain(
    text: str, head: ast.BinOp, lines: Lines, indent: str, ending: str, parse: Parse, stand_in: str, batch: int
) -> cst.BaseExpression:
    """The chain ``head`` heads, parsed ``batch`` links at a time."""
    spine = _spine(head)
    begin = lines.offset(spine[0].lineno, spine[0].col_offset)
    ends = [lines.offset(node.end_lineno, node.end_col_offset) for node in spine]  # type: ignore[arg-type]
    # Cut after a prefix only where its next operator follows (not a parenthesis that closes it).
    cuts = [i for i in range(batch - 1, len(spine) - 1, batch) if _TRIVIA_THEN_OPERATOR.match(text, ends[i])]
    left: cst.BaseExpression | None = None
    previous, last = begin, -1
    for bound in [*cuts, len(spine) - 1]:
        source = text[previous : ends[bound]] if left is None else stand_in + text[previous : ends[bound]]
        wrapper = f"_ = ({source}){ending}"
        if indent:
            wrapper = f"if 1:{ending}{indent}{wrapper}"
        parsed = _expression(parse(wrapper), bool(indent))
        left = parsed if left is None else _joined(left, parsed, stand_in, bound - last)
        previous, last = ends[bound], bound
    assert left is not None
    return left


def _expression(module: cst.Module, nested: bool) -> cst.BaseExpression:
    """The value of the stand-in assignment, without the parentheses the wrapper added."""
    try:
        statement = module.body[0]
        if nested:
            statement = statement.body.body[0]  # type: ignore[attr-defined]
        value = statement.body[0].value  # type: ignore[attr-defined]
    except (AttributeError, IndexError) as error:
        raise Unstitchable from error
    if not isinstance(value, cst.BinaryOperation) or len(value.lpar) != 1 or len(value.rpar) != 1:
        raise Unstitchable
    return value.with_changes(lpar=(), rpar=())


def _joined(left: cst.BaseExpression, batch: cst.BaseExpression, stand_in: str, links: int) -> cst.BaseExpression:
    """``batch`` (a chain of ``links`` links whose first operand is the stand-in name) with that
    name replaced by ``left``: its spine rebuilt from the bottom."""
    spine = [batch]
    for _ in range(links - 1):
        inner = spine[-1].left  # type: ignore[attr-defined]
        if not isinstance(inner, cst.BinaryOperation) or inner.lpar:
            raise Unstitchable
        spine.append(inner)
    first = spine[-1].left  # type: ignore[attr-defined]
    if not isinstance(first, cst.Name) or first.value != stand_in or first.lpar:
        raise Unstitchable
    joined = left
    for node in reversed(spine):
        joined = node.with_changes(left=joined)
    return joined


def _free_name(text: str) -> str:
    name = "_devlint_chain_"
    while name in text:
        name += "_"
    return name


class _Refill(cst.CSTTransformer):
    """Puts each chain where its stand-in name stands, with the name's parentheses."""

    def __init__(self, built: dict[str, cst.BaseExpression]) -> None:
        super().__init__()
        self.built = built

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        chain = self.built.get(updated.value)
        if chain is None:
            return updated
        return chain.with_changes(lpar=updated.lpar, rpar=updated.rpar)
