"""The one tree walk per file: every selected rule sees every node in a single pass.

LibCST's own ``visit`` rebuilds every node on the way up even for read-only visitors, and
``children`` does the same. This walker reads the dataclass fields directly, skips whitespace
and punctuation nodes no rule looks at, and uses an explicit stack so that deeply nested
expressions cannot exhaust Python's recursion limit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from devlint.context import FileContext
    from devlint.rule import Rule

Hook = Callable[[cst.CSTNode], None]

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


def _child_fields(node_type: type) -> tuple[str, ...]:
    fields = _CHILD_FIELDS.get(node_type)
    if fields is None:
        fields = tuple(
            f.name
            for f in dataclasses.fields(node_type)
            if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace")
        )
        _CHILD_FIELDS[node_type] = fields
    return fields


class _Walked(dict):
    """Concrete type -> whether the walk visits values of it. LibCST node classes are ABCs, so an
    ``isinstance`` against them runs Python code; one dict lookup on ``type(value)`` does not."""

    def __missing__(self, kind: type) -> bool:
        walked = issubclass(kind, cst.CSTNode) and not issubclass(kind, _SKIPPED_TYPES)
        self[kind] = walked
        return walked


_WALKED = _Walked()


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The child nodes rules care about, in dataclass field order (close to source order)."""
    result: list[cst.CSTNode] = []
    walked = _WALKED
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            result.extend([v for v in value if walked[type(v)]])
        elif walked[kind]:
            result.append(value)
    return result


def _hooks(rules: list[Rule], prefix: str) -> dict[type, list[Hook]]:
    table: dict[type, list[Hook]] = {}
    for rule in rules:
        for attr in dir(type(rule)):
            if not attr.startswith(prefix):
                continue
            node_type = getattr(cst, attr[len(prefix):], None)
            if isinstance(node_type, type) and issubclass(node_type, cst.CSTNode):
                table.setdefault(node_type, []).append(getattr(rule, attr))
    return table


def walk(ctx: FileContext, rules: list[Rule]) -> None:
    """Walk ``ctx.module`` once, keeping the semantic model current for every rule hook."""
    visit = _hooks(rules, "visit_")
    leave = _hooks(rules, "leave_")
    semantic = ctx.tracker
    enter = semantic.enter
    parents = ctx.parents
    walked = _WALKED
    # A node is left (hooks, then the tracker) only where something happens on leaving: most
    # nodes are leaves of the tree with no leave work at all.
    left = frozenset(leave) | semantic.LEFT_TYPES
    # Entries are nodes to enter, or 1-tuples holding a node to leave.
    stack: list = [ctx.module]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        node_type = type(node)
        if node_type is tuple:
            node = node[0]
            for hook in leave.get(type(node), ()):
                hook(node)
            semantic.leave(node)
            continue
        enter(node)
        hooks = visit.get(node_type)
        if hooks is not None:
            for hook in hooks:
                hook(node)
        if node_type in left:
            push((node,))
        kids: list[cst.CSTNode] = []
        for name in _child_fields(node_type):
            value = getattr(node, name)
            kind = type(value)
            if kind is tuple or kind is list:
                kids.extend([v for v in value if walked[type(v)]])
            elif walked[kind]:
                kids.append(value)
        for child in kids:
            parents[child] = node
        kids.reverse()
        stack.extend(kids)
    for rule in rules:
        rule.finish()
