"""Where a node of CPython's tree stands: the nodes from the module down to it, found by
position (the gate's facts keep nodes, not their parents)."""

from __future__ import annotations

import ast
from bisect import bisect_right


def path_to(tree: ast.Module, node: ast.expr) -> list[ast.AST] | None:
    """The nodes from ``tree`` down to ``node``'s parent, found by position (a few hundred
    statements are passed over by bisection, not one by one); None when ``node`` is not found
    that way (in a decorator, which stands above its function's first line)."""
    where = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
    path: list[ast.AST] = []
    current: ast.AST = tree
    while True:
        found = None
        for child in _candidates(current, where):
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


def _candidates(parent: ast.AST, where: tuple[int, int, int | None, int | None]) -> list[ast.AST]:
    children: list[ast.AST] = []
    for _, value in ast.iter_fields(parent):
        if isinstance(value, list):
            if len(value) > 8 and all(isinstance(item, ast.stmt) for item in (value[0], value[-1])):
                at = bisect_right(value, where[0], key=_first_line) - 1
                children.extend(value[max(at, 0) : at + 1])
            else:
                children.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            children.append(value)
    return children


def _first_line(statement: ast.stmt) -> int:
    return statement.lineno


def _contains(child: ast.AST, where: tuple[int, int, int | None, int | None]) -> bool:
    start = (getattr(child, "lineno", None), getattr(child, "col_offset", None))
    end = (getattr(child, "end_lineno", None), getattr(child, "end_col_offset", None))
    if start[0] is None or end[0] is None:
        # no position of its own (an `arguments`, a `comprehension`): look inside it
        return _holds(child, where)
    return start <= where[:2] and where[2:] <= end  # type: ignore[operator]


def _holds(child: ast.AST, where: tuple[int, int, int | None, int | None]) -> bool:
    return any(_contains(grandchild, where) for grandchild in ast.iter_child_nodes(child))
