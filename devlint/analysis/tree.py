"""Generic helpers over LibCST's tree that the analyses, the engine's walk and rules share.

LibCST's own ``children`` rebuilds every node it returns; these read the dataclass fields
directly and skip the whitespace and punctuation nodes no analysis or rule looks at.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

import libcst as cst

_SKIPPED_FIELDS = frozenset(
    {
        "lpar", "rpar", "comma", "dot", "semicolon", "colon", "equal", "header", "footer",
        "leading_lines", "lines_after_decorators", "trailing_whitespace", "operator",
        "whitespace_before", "whitespace_after", "star", "asynchronous", "newline", "default_comma",
    }
)
_SKIPPED_TYPES: tuple[type, ...] = (
    cst.BaseParenthesizableWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Newline,
    cst.Comment, cst.LeftParen, cst.RightParen, cst.Comma, cst.Dot, cst.Semicolon,
    cst.AssignEqual, cst.Colon, cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp,
    cst.BaseUnaryOp, cst.BaseAugOp, cst.ImportStar,
)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
T = TypeVar("T")


def child_fields(node_type: type) -> tuple[str, ...]:
    fields = _CHILD_FIELDS.get(node_type)
    if fields is None:
        fields = tuple(
            f.name
            for f in dataclasses.fields(node_type)
            if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace")
        )
        _CHILD_FIELDS[node_type] = fields
    return fields


class Walked(dict):
    """Concrete type -> whether the walk visits values of it. LibCST node classes are ABCs, so an
    ``isinstance`` against them runs Python code; one dict lookup on ``type(value)`` does not."""

    def __missing__(self, kind: type) -> bool:
        walked = issubclass(kind, cst.CSTNode) and not issubclass(kind, _SKIPPED_TYPES)
        self[kind] = walked
        return walked


WALKED = Walked()


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The child nodes rules care about, in dataclass field order (close to source order)."""
    result: list[cst.CSTNode] = []
    walked = WALKED
    for name in child_fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            result.extend([v for v in value if walked[type(v)]])
        elif walked[kind]:
            result.append(value)
    return result


def descendants(root: cst.CSTNode) -> list[cst.CSTNode]:
    """``root`` and every node under it that ``children`` reaches (attribute names included)."""
    found: list[cst.CSTNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(children(node))
    return found


def ancestors(parents: Mapping[cst.CSTNode, cst.CSTNode], node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes enclosing ``node``, nearest first, as ``parents`` links them."""
    current = parents.get(node)
    while current is not None:
        yield current
        current = parents.get(current)


def climbed(
    node: cst.CSTNode,
    parent_of: Callable[[cst.CSTNode], cst.CSTNode | None],
    known: dict[int, T],
    step: Callable[[cst.CSTNode, cst.CSTNode, T], T],
    top: T,
) -> T:
    """A question about ``node`` whose answer follows from one step up, from a node to its
    parent, and the answer at the parent: ``step(parent, node, answer at parent)``; ``top`` at
    a node without a parent. Every answer found on the way is kept in ``known`` (by node), so
    asking it of every finding costs the tree's size however deep the findings lie (an ``elif``
    chain, a long ``a + b + ...``), not the findings times the depth."""
    path: list[tuple[cst.CSTNode, cst.CSTNode]] = []
    current = node
    while id(current) not in known:
        parent = parent_of(current)
        if parent is None:
            known[id(current)] = top
            break
        path.append((parent, current))
        current = parent
    for parent, child in reversed(path):
        known[id(child)] = step(parent, child, known[id(parent)])
    return known[id(node)]


class _StatementHolders(dict):
    """Concrete node type -> whether a statement can lie in a node of it (one ``issubclass`` per
    type: LibCST's node classes are ABCs, slow under ``isinstance``). Small statements count: a
    ``global`` is one."""

    def __missing__(self, kind: type) -> bool:
        holds = issubclass(kind, _STATEMENT_HOLDERS)
        self[kind] = holds
        return holds


_STATEMENT_HOLDERS: tuple[type, ...] = (
    cst.BaseStatement, cst.BaseSuite, cst.BaseSmallStatement, cst.Else, cst.ExceptHandler,
    cst.ExceptStarHandler, cst.Finally, cst.MatchCase,
)
_HOLDS_STATEMENTS = _StatementHolders()


def statement_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The children of ``node`` in which a statement can lie, in field order: a statement is
    never inside an expression, so a walk of statements goes through these only."""
    holds = _HOLDS_STATEMENTS
    return [child for child in children(node) if holds[type(child)]]
