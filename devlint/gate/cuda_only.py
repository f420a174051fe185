"""Whether a node of CPython's tree is reached only where some tensor or device is known to be on
CUDA, by the tests around it: the part of devlint.analysis.cuda_regions that needs no more than
the tree, so that the gate can leave out what the rules that ask (``quiet_where_cuda_is_known``)
never report.

Counted: the body of ``if``, or either side of a conditional expression, whose test says so
(``x.is_cuda``, ``<x>.type == "cuda"``, ``!=`` with the sides swapped, ``not``, ``and``,
``or``), within the node's own function or class. A guard clause above (``if not x.is_cuda:
return``) is left to the rule. Every "yes" here is a "yes" of ``runs_only_on_cuda``.
"""

from __future__ import annotations

import ast

from devlint.gate.paths import MAX_DEPTH, Paths

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def only_on_cuda(paths: Paths, node: ast.expr, path: list[ast.AST] | None = None) -> bool:
    """``node`` (of the tree ``paths`` finds nodes in) runs only where CUDA is known to be in
    use; ``path``: the nodes down to it (``paths.to``), where the caller has found them."""
    child: ast.AST = node
    for parent in reversed(path if path is not None else paths.to(node) or ()):
        if isinstance(parent, _SCOPES):
            return False
        if isinstance(parent, ast.If):
            if any(statement is child for statement in parent.body):
                if _sides(parent.test)[0]:
                    return True
            elif any(statement is child for statement in parent.orelse) and _sides(parent.test)[1]:
                return True
        elif isinstance(parent, ast.IfExp) and child is not parent.test:
            if _sides(parent.test)[0 if child is parent.body else 1]:
                return True
        child = parent
    return False


def _sides(test: ast.expr, depth: int = 0) -> tuple[bool, bool]:
    """Whether the body, and whether the other branch, of ``test`` run only with CUDA in use
    (``_sides`` of devlint.analysis.cuda_regions; past ``MAX_DEPTH`` nested tests, neither)."""
    if depth > MAX_DEPTH:
        return False, False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        body, orelse = _sides(test.operand, depth + 1)
        return orelse, body
    if isinstance(test, ast.BoolOp):
        sides = [_sides(value, depth + 1) for value in test.values]
        if isinstance(test.op, ast.And):
            return any(side[0] for side in sides), all(side[1] for side in sides)
        return all(side[0] for side in sides), any(side[1] for side in sides)
    if isinstance(test, ast.Attribute):
        return test.attr == "is_cuda", False
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right = test.left, test.comparators[0]
        if _cuda_type(left, right) or _cuda_type(right, left):
            if isinstance(test.ops[0], ast.Eq):
                return True, False
            if isinstance(test.ops[0], ast.NotEq):
                return False, True
    return False, False


def _cuda_type(subject: ast.expr, literal: ast.expr) -> bool:
    return isinstance(subject, ast.Attribute) and subject.attr == "type" and isinstance(literal, ast.Constant) and literal.value == "cuda"
