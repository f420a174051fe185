"""Whether a call in CPython's tree certainly runs only where torch has a GPU, by the tests
written around it: the part of devlint.rulekit.device_checks' guards that needs no name
resolved, so that the gate can tell a guarded call from one a rule reports.

Only tests that say so by their shape count: ``x.type == "cuda"``, ``x.type != "cpu"``,
``x == "cuda"``, ``x.is_cuda``, and ``torch.cuda.is_available()`` or
``torch.cuda.device_count() > 0`` where ``torch`` certainly is torch (devlint.gate.torch_name);
``not`` of the opposite, an ``and`` holding one. The call must stand in the body of such an
``if`` (or the ``else`` of its opposite), on either side of the matching conditional
expression, or right of the check in an ``and``, within its own function. A test that calls
anything else or reads a name, an ``assert`` above, an ``or`` and a decorator all answer "not
known": the rule's own analysis decides those, and the gate lets them through. Every "yes" here
is a "yes" of ``under_device_check``.
"""

from __future__ import annotations

import ast

from devlint.gate.paths import MAX_DEPTH, Paths
from devlint.gate.torch_name import TorchName

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def certainly_guarded(paths: Paths, node: ast.expr, torch: TorchName | None = None) -> bool:
    """``node`` (of the tree ``paths`` finds nodes in) runs only where there is a GPU, by its
    enclosing tests; ``torch``: where ``torch.cuda.is_available()`` certainly means torch's
    (else it is no shape that says so)."""
    path = paths.to(node)
    if path is None:
        return False
    child = node
    for parent in reversed(path):
        if isinstance(parent, _SCOPES):
            return False
        if _guards(parent, child, torch):
            return True
        child = parent
    return False


def _guards(parent: ast.AST, child: ast.AST, torch: TorchName | None) -> bool:
    if isinstance(parent, ast.If):
        if any(statement is child for statement in parent.body):
            return gpu_present_if(parent.test, torch) is True
        return any(statement is child for statement in parent.orelse) and gpu_present_if(parent.test, torch) is False
    if isinstance(parent, ast.IfExp):
        if child is parent.body:
            return gpu_present_if(parent.test, torch) is True
        return child is parent.orelse and gpu_present_if(parent.test, torch) is False
    if isinstance(parent, ast.BoolOp) and isinstance(parent.op, ast.And):
        # `a and b and c` is one node here, `(a and b) and c` in LibCST: c runs where a or b holds
        for value in parent.values:
            if value is child:
                return False
            if gpu_present_if(value, torch) is True:
                return True
    return False


def gpu_present_if(test: ast.expr, torch: TorchName | None = None, depth: int = 0) -> bool | None:
    """True: ``test`` holds only where torch has a GPU; False: it fails wherever there is one;
    None: its shape does not say (``device_present_if`` may know more), nor past ``MAX_DEPTH``
    nested ``not`` and ``and``. ``torch``: as for ``certainly_guarded``."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = gpu_present_if(test.operand, torch, depth + 1)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return True if any(gpu_present_if(value, torch, depth + 1) is True for value in test.values) else None
    if isinstance(test, ast.Attribute):
        return True if test.attr == "is_cuda" else None
    if torch is not None and cuda_query(test, "is_available") and torch.certain_above(test.lineno):
        return True
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    if torch is not None and _counts_a_gpu(test) and torch.certain_above(test.lineno):
        return True
    if not isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
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


def cuda_query(node: ast.expr, name: str) -> bool:
    """``torch.cuda.<name>()``, spelled so, without arguments."""
    if not (isinstance(node, ast.Call) and not node.args and not node.keywords):
        return False
    func = node.func
    return (
        isinstance(func, ast.Attribute) and func.attr == name
        and isinstance(func.value, ast.Attribute) and func.value.attr == "cuda"
        and isinstance(func.value.value, ast.Name) and func.value.value.id == "torch"
    )


def _counts_a_gpu(test: ast.Compare) -> bool:
    """``torch.cuda.device_count() > n``, or ``>= n`` with n at least 1 (``_comparison`` of
    devlint.rulekit.device_checks)."""
    bound = test.comparators[0]
    if not (cuda_query(test.left, "device_count") and isinstance(bound, ast.Constant) and type(bound.value) is int):
        return False
    operator = test.ops[0]
    return isinstance(operator, ast.Gt) or (isinstance(operator, ast.GtE) and bound.value >= 1)


def _names_cuda(left: ast.expr, right: ast.expr, equal: bool) -> bool | None:
    """``device == "cuda"`` / ``"cuda:N"``, either side, the other no string (``_names_cuda`` of
    devlint.rulekit.device_checks)."""
    sides = [side.value if isinstance(side, ast.Constant) and isinstance(side.value, str) else None for side in (left, right)]
    if (sides[0] is None) == (sides[1] is None):
        return None
    value = sides[0] or sides[1] or ""
    return equal if value == "cuda" or value.startswith("cuda:") else None
