"""The value a name holds for good: a module constant of the file, or one another module of the
project defines and the file imports (devlint.project: the run reads that module, the engine
never does).

A value read from another module comes with a reader of its own module (``ValueReader``), so
that the names the value itself reads (``IS_TORCH_2_4 = TORCH_VERSION >= (2, 4)``) resolve
in the module that wrote them, not in the file being checked."""

from __future__ import annotations

from typing import Protocol

import libcst as cst

from devlint.analysis.semantic import dotted_name
from devlint.project import Constant


class ValueReader(Protocol):
    """What reading a value needs of the module it was written in."""

    def code(self, node: cst.CSTNode) -> str: ...

    def qualname(self, node: cst.CSTNode) -> str | None: ...

    def definition(self, node: cst.BaseExpression) -> tuple[ValueReader, cst.BaseExpression] | None:
        """The value ``node`` (a name or ``module.NAME``) holds for good, with the reader of the
        module that wrote it; None when it is no such constant."""
        ...


class ForeignReader:
    """A constant of another module of the project: its value's tree and the constants it reads."""

    def __init__(self, constant: Constant) -> None:
        self._constant = constant
        self._empty = cst.Module(body=[])
        self.value = _expression(constant.source)

    def code(self, node: cst.CSTNode) -> str:
        return self._empty.code_for_node(node)

    def qualname(self, node: cst.CSTNode) -> str | None:
        # No import of that module is known here: a name stands for itself (``torch``).
        return dotted_name(node)

    def definition(self, node: cst.BaseExpression) -> tuple[ValueReader, cst.BaseExpression] | None:
        if not isinstance(node, cst.Name):
            return None
        used = self._constant.name(node.value)
        return foreign(used) if used is not None else None


def foreign(constant: Constant) -> tuple[ValueReader, cst.BaseExpression] | None:
    reader = ForeignReader(constant)
    return (reader, reader.value) if reader.value is not None else None


def _expression(source: str) -> cst.BaseExpression | None:
    for text in (source, f"({source})"):
        try:
            return cst.parse_expression(text)
        except (cst.ParserSyntaxError, RecursionError):
            continue
    return None
