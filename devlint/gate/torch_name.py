"""Whether ``torch.<name>`` in CPython's tree certainly means torch's own ``<name>`` to the
semantic model (devlint.analysis.semantic), so that the gate may read a test such as
``torch.cuda.is_available()`` as the rules do.

It does where the file binds the name ``torch`` only by ``import torch`` (or ``import torch.x``),
one of them a statement of the module's own body above the line asked about (the walk has met it
by then), and nowhere else: no parameter, assignment, loop or ``with`` target, function, class,
``global`` declaration, exception or pattern name, or other import binds ``torch``. Anything
else answers "not known".
"""

from __future__ import annotations

import ast

from devlint.gate.facts import CHILDREN, Facts

_NAME = "torch"
# Nodes whose ``name`` binds a name (an import's ``alias`` is read from the facts instead); the
# type parameters of Python 3.12 where this Python has them.
_NAMING = tuple(
    kind
    for kind in (
        ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler, ast.MatchAs, ast.MatchStar,
        getattr(ast, "TypeVar", None), getattr(ast, "ParamSpec", None), getattr(ast, "TypeVarTuple", None),
    )
    if kind is not None
)


class TorchName:
    """Answers ``certain_above(line)`` for one file; the tree is walked once, when first asked."""

    def __init__(self, tree: ast.Module, facts: Facts) -> None:
        self._tree = tree
        self._facts = facts
        self._first: int | None = None
        self._known = False

    def certain_above(self, line: int) -> bool:
        """``torch`` means torch wherever the walk reads it on ``line`` or below."""
        if not self._known:
            self._first = self._first_import()
            self._known = True
        return self._first is not None and self._first < line

    def _first_import(self) -> int | None:
        """The last line of the first module-level ``import torch``, where ``torch`` is bound
        nothing else in the file; else None."""
        if self._facts.imports.get(_NAME) != {_NAME}:
            return None
        first = next(
            (
                statement.end_lineno
                for statement in self._tree.body
                if type(statement) is ast.Import and any(alias.asname is None and alias.name.split(".")[0] == _NAME for alias in statement.names)
            ),
            None,
        )
        if first is None or _bound_otherwise(self._tree):
            return None
        return first


def _bound_otherwise(tree: ast.Module) -> bool:
    """Something other than an import binds ``torch`` (or deletes it, or says it is global)."""
    pending: list[object] = [tree]
    while pending:
        node = pending.pop()
        kind = type(node)
        for field in CHILDREN.get(kind, ()):
            value = getattr(node, field)
            if type(value) is list:
                pending.extend(value)
            elif value is not None:
                pending.append(value)
        if kind is ast.Name:
            if node.id == _NAME and type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
                return True
        elif kind is ast.arg:
            if node.arg == _NAME:  # type: ignore[attr-defined]
                return True
        elif kind in _NAMING:
            if getattr(node, "name", None) == _NAME:
                return True
        elif kind in (ast.Global, ast.Nonlocal):
            if _NAME in node.names:  # type: ignore[attr-defined]
                return True
        elif kind is ast.MatchMapping:
            if node.rest == _NAME:  # type: ignore[attr-defined]
                return True
    return False
