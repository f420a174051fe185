"""Whether a call in CPython's tree certainly runs only where torch has a GPU, by the tests
written around it: the part of devlint.rulekit.device_checks' guards that needs no name
resolved, so that the gate can tell a guarded call from one a rule reports.

Only tests that say so by their shape count: ``x.type == "cuda"``, ``x.type != "cpu"``,
``x == "cuda"``, ``x.is_cuda``, ``not`` of the opposite, an ``and`` holding one. The call must stand in the body
of such an ``if`` (or the ``else`` of its opposite), on either side of the matching conditional
expression, or right of the check in an ``and``, within its own function. A test that calls
something (``torch.cuda.is_available()``) or reads a name, an ``assert`` above, an ``or`` and a
decorator all answer "not known": the rule's own analysis decides those, and the gate lets them
through. Every "yes" here is a "yes" of ``under_device_check``.
"""

from __future__ import annotations

import ast
from bisect import bisect_right

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def certainly_guarded(tree: ast.Module, node: ast.expr) -> bool:
    """``node`` (found in ``tree``) runs only where there is a GPU, by its enclosing tests."""
    path = _path(tree, node)
    if path is None:
        return False
    child = node
    for parent in reversed(path):
        if isinstance(parent, _SCOPES):
            return False
        if _guards(parent, child):
            return True
        child = parent
    return False


def _guards(parent: ast.AST, child: ast.AST) -> bool:
    if isinstance(parent, ast.If):
        if any(statement is child for statement in parent.body):
            return gpu_present_if(parent.test) is True
        return any(statement is child for statement in parent.orelse) and gpu_present_if(parent.test) is False
    if isinstance(parent, ast.IfExp):
        if child is parent.body:
            return gpu_present_if(parent.test) is True
        return child is parent.orelse and gpu_present_if(parent.test) is False
    if isinstance(parent, ast.BoolOp) and isinstance(parent.op, ast.And):
        # `a and b and c` is one node here, `(a and b) and c` in LibCST: c runs where a or b holds
        for value in parent.values:
            if value is child:
                return False
            if gpu_present_if(value) is True:
                return True
    return False


def gpu_present_if(test: ast.expr) -> bool | None:
    """True: ``test`` holds only where torch has a GPU; False: it fails wherever there is one;
    None: its shape does not say (``device_present_if`` may know more)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = gpu_present_if(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return True if any(gpu_present_if(value) is True for value in test.values) else None
    if isinstance(test, ast.Attribute):
        return True if test.attr == "is_cuda" else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
        return None
    left, right = test.left, test.comparators[0]
    equal = isinstance(test.ops[0], ast.Eq)
    if not (isinstance(left, ast.Attribute) and left.attr == "type"):
        return _names_cuda(left, right, equal)
    if not isinstance(right, ast.Constant):
        return None
    if right.value == "cuda":
        return equal
    if right.value == "cpu":
        return not equal
    return None


def _names_cuda(left: ast.expr, right: ast.expr, equal: bool) -> bool | None:
    """``device == "cuda"`` / ``"cuda:N"``, either side, the other no string (``_names_cuda`` of
    devlint.rulekit.device_checks)."""
    sides = [side.value if isinstance(side, ast.Constant) and isinstance(side.value, str) else None for side in (left, right)]
    if (sides[0] is None) == (sides[1] is None):
        return None
    value = sides[0] or sides[1] or ""
    return equal if value == "cuda" or value.startswith("cuda:") else None


def _path(tree: ast.Module, node: ast.expr) -> list[ast.AST] | None:
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
