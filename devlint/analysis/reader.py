"""What the analyses read of a file while the walk runs: its tree's parent links, its source, the
semantic model and the reaching bindings. The engine's ``FileContext`` provides it; the analyses
take any object that does, so they never import the engine."""

from __future__ import annotations

from typing import Protocol

import libcst as cst

from devlint.analysis.constants import ValueReader
from devlint.analysis.reaching import Flows
from devlint.analysis.semantic import SemanticModel


class FileReader(ValueReader, Protocol):
    model: SemanticModel
    flows: Flows

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None: ...

    def code(self, node: cst.CSTNode) -> str: ...

    def qualname(self, node: cst.CSTNode) -> str | None: ...

    def module_constant(self, name: str) -> cst.BaseExpression | None:
        """The value of a module-level name assigned exactly once, else None."""
        ...
