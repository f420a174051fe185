"""Code that only runs when a given tensor or device is on CUDA: the CUDA half of code that is
already device-generic.

    if x.is_cuda:
        mask = mask.type(torch.cuda.FloatTensor)     # x is on a GPU here
    if device.type != "cuda":
        return device
    return torch.device(f"cuda:{torch.cuda.current_device()}")

Such code never runs without a GPU, and rewriting it to "the device chosen at start-up" can only
move it away from the tensor it was written for. Rules that ask (``Rule.quiet_where_cuda_is_known``)
report nothing there. A check of *availability* (``torch.cuda.is_available()``) is different: it
says nothing about where the program's tensors are, and code under it is still reported (its
fixes are safe: the device they use is CUDA exactly when it is available).

Recognised tests: ``x.is_cuda``, ``x.type == "cuda"``, ``x.device.type == "cuda"`` (and ``!=``
with the branches swapped), combined with ``and``/``or``/``not``; a branch body, the other side
of a conditional expression, and the statements after a guard clause
(``if not x.is_cuda: return ...``) in the same block.
"""

from __future__ import annotations

import libcst as cst

from devlint.analysis.reader import FileReader
from devlint.analysis.semantic import string_value
from devlint.analysis.tree import climbed


# Every finding's ancestors are tested against these, and LibCST's classes are ABCs (a slow
# isinstance): none has subclasses (tests/test_flow.py), so the type alone decides.
_BRANCHING = frozenset((cst.If, cst.IfExp))
_BLOCKS = frozenset((cst.IndentedBlock, cst.Module))
_SCOPES = frozenset((cst.FunctionDef, cst.Lambda, cst.ClassDef))
EXACT_TYPES = _BRANCHING | _BLOCKS | _SCOPES


class CudaRegions:
    """Answers ``runs_only_on_cuda`` for one file; where a block's first guard clause is, and each
    statement's place in its block, are found once per block (a file can have thousands of
    findings at its top level)."""

    def __init__(self, reader: FileReader) -> None:
        self.reader = reader
        self._guards: dict[int, tuple[int | None, dict[int, int]]] = {}
        # The answer for each node asked about and the nodes above it (devlint.analysis.tree.climbed).
        self._known: dict[int, bool] = {}

    def runs_only_on_cuda(self, node: cst.CSTNode) -> bool:
        """``node`` is reached only where some tensor or device is known to be on CUDA."""
        return climbed(node, self.reader.parent, self._known, self._step, False)

    def _step(self, ancestor: cst.CSTNode, child: cst.CSTNode, above: bool) -> bool:
        kind = type(ancestor)
        if kind in _BRANCHING and child is not ancestor.test:
            body, orelse = _sides(ancestor.test)
            if body if child is ancestor.body else orelse:
                return True
        if kind in _BLOCKS and self._after_guard_clause(ancestor, child):
            return True
        return False if kind in _SCOPES else above

    def _after_guard_clause(self, block: cst.IndentedBlock | cst.Module, child: cst.CSTNode) -> bool:
        """An earlier statement of ``block`` leaves it unless CUDA is in use:
        ``if not x.is_cuda: return`` (or raise, continue, break)."""
        key = id(block)
        if key not in self._guards:
            first = next((i for i, statement in enumerate(block.body) if _is_guard_clause(statement)), None)
            self._guards[key] = (first, {id(statement): i for i, statement in enumerate(block.body)})
        first, places = self._guards[key]
        place = places.get(id(child))
        return first is not None and place is not None and place > first


def _is_guard_clause(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.If) and statement.orelse is None and _sides(statement.test)[1] and _leaves(statement.body)


def _sides(test: cst.BaseExpression) -> tuple[bool, bool]:
    """Whether the body, and whether the else branch, of ``test`` run only with CUDA in use."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        body, orelse = _sides(test.expression)
        return orelse, body
    if isinstance(test, cst.BooleanOperation):
        left, right = _sides(test.left), _sides(test.right)
        if isinstance(test.operator, cst.And):
            return left[0] or right[0], left[1] and right[1]
        return left[0] and right[0], left[1] or right[1]
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        return True, False
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if _is_cuda_type(test.left, target.comparator) or _is_cuda_type(target.comparator, test.left):
            if isinstance(target.operator, cst.Equal):
                return True, False
            if isinstance(target.operator, cst.NotEqual):
                return False, True
    return False, False


def _is_cuda_type(subject: cst.BaseExpression, literal: cst.BaseExpression) -> bool:
    """``<something>.type`` compared with ``"cuda"``."""
    return isinstance(subject, cst.Attribute) and subject.attr.value == "type" and string_value(literal) == "cuda"


def _leaves(body: cst.BaseSuite) -> bool:
    statements = body.body
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else last
    return isinstance(last, (cst.Return, cst.Raise, cst.Continue, cst.Break))
