"""Where a node of CPython's tree stands: the nodes from the module down to it, found by
position (the gate's facts keep nodes, not their parents).

A condition asks for the path of many nodes of one tree (every `.cuda()` call of a file); each
long list of siblings (a module's statements, a 10,000-element display) is indexed by position
once and searched by bisection, so each path costs its depth, not the size of the lists on it.
"""

from __future__ import annotations

import ast
from bisect import bisect_right

Where = tuple[int, int, "int | None", "int | None"]
# Deeper than this, a node is "not known" (None): every caller then leaves the decision to the
# rule. Code nests far less; a chain of 3,000 `+` is 3,000 levels deep, and a path per call of it
# would cost the square of its length.
MAX_DEPTH = 100


class Paths:
    """``to(node)`` for the nodes of one tree."""

    def __init__(self, tree: ast.Module) -> None:
        self._tree = tree
        # id of a list of siblings -> (the list, the starts of its positioned items in order, those
        # items, its items without a position); None: its positions are out of order
        self._lists: dict[int, tuple[list[object], list[tuple[int, int]], list[ast.AST], list[ast.AST]] | None] = {}

    def to(self, node: ast.expr) -> list[ast.AST] | None:
        """The nodes from the tree down to ``node``'s parent; None when ``node`` is not found by
        position (in a decorator, which stands above its function's first line; where the
        positions are odd) or stands deeper than ``MAX_DEPTH``: "not known" to every caller."""
        where: Where = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
        path: list[ast.AST] = []
        current: ast.AST = self._tree
        while len(path) <= MAX_DEPTH:
            found = None
            for child in self._candidates(current, where):
                if child is node:
                    path.append(current)
                    return path
                if _contains(child, where):
                    found = child
                    break
            if found is None:
                return None
            path.append(current)
            current = found
        return None

    def _candidates(self, parent: ast.AST, where: Where) -> list[ast.AST]:
        children: list[ast.AST] = []
        for _, value in ast.iter_fields(parent):
            if isinstance(value, list):
                children += self._in_list(value, where)
            elif isinstance(value, ast.AST):
                children.append(value)
        return children

    def _in_list(self, siblings: list[object], where: Where) -> list[ast.AST]:
        """The siblings that may hold ``where``: of those with a position, only the last one
        starting before it (siblings stand in source order); those without one (a
        `comprehension`, a `withitem`) are looked into."""
        if len(siblings) <= 8:
            return [item for item in siblings if isinstance(item, ast.AST)]
        key = id(siblings)
        if key not in self._lists:
            self._lists[key] = _index(siblings)
        indexed = self._lists[key]
        if indexed is None:
            return [item for item in siblings if isinstance(item, ast.AST)]
        _, starts, positioned, unpositioned = indexed
        at = bisect_right(starts, where[:2]) - 1
        return ([positioned[at]] if at >= 0 else []) + unpositioned


def _index(siblings: list[object]) -> tuple[list[object], list[tuple[int, int]], list[ast.AST], list[ast.AST]] | None:
    starts: list[tuple[int, int]] = []
    positioned: list[ast.AST] = []
    unpositioned: list[ast.AST] = []
    for item in siblings:
        if not isinstance(item, ast.AST):
            continue
        line, column = getattr(item, "lineno", None), getattr(item, "col_offset", None)
        if line is None or column is None:
            unpositioned.append(item)
            continue
        if starts and (line, column) < starts[-1]:
            return None
        starts.append((line, column))
        positioned.append(item)
    # the list itself is kept with its index: its id names no other list while the index lives
    return siblings, starts, positioned, unpositioned


def _contains(child: ast.AST, where: Where) -> bool:
    start = (getattr(child, "lineno", None), getattr(child, "col_offset", None))
    end = (getattr(child, "end_lineno", None), getattr(child, "end_col_offset", None))
    if start[0] is None or end[0] is None:
        # no position of its own (an `arguments`, a `comprehension`): look inside it
        return _holds(child, where)
    return start <= where[:2] and where[2:] <= end  # type: ignore[operator]


def _holds(child: ast.AST, where: Where) -> bool:
    return any(_contains(grandchild, where) for grandchild in ast.iter_child_nodes(child))
