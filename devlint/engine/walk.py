"""The one tree walk per file: every selected rule sees every node in a single pass.

LibCST's own ``visit`` rebuilds every node on the way up even for read-only visitors. This walker
reads the dataclass fields directly (devlint.analysis.tree), skips whitespace and punctuation
nodes no rule looks at, and uses an explicit stack so that deeply nested expressions cannot
exhaust Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import libcst as cst

from devlint.analysis.tree import WALKED, child_fields

if TYPE_CHECKING:
    from devlint.engine.context import FileContext
    from devlint.rule import Rule

Hook = Callable[[cst.CSTNode], None]


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
    walked = WALKED
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
        for name in child_fields(node_type):
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
