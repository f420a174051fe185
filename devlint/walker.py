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


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The child nodes rules care about, in dataclass field order (close to source order)."""
    result: list[cst.CSTNode] = []
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            if not isinstance(value, _SKIPPED_TYPES):
                result.append(value)
        elif isinstance(value, (tuple, list)):
            result.extend(v for v in value if isinstance(v, cst.CSTNode) and not isinstance(v, _SKIPPED_TYPES))
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
    stack: list[tuple[cst.CSTNode, bool]] = [(ctx.module, False)]
    while stack:
        node, leaving = stack.pop()
        node_type = type(node)
        if leaving:
            for hook in leave.get(node_type, ()):
                hook(node)
            semantic.leave(node)
            continue
        semantic.enter(node)
        for hook in visit.get(node_type, ()):
            hook(node)
        stack.append((node, True))
        kids = children(node)
        for child in reversed(kids):
            ctx.parents[child] = node
            stack.append((child, False))
    for rule in rules:
        rule.finish()
