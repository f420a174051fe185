"""What other modules of a file's project tell about it, as plain data: the module-level
constants the file imports from them (``from mypkg.compat import IS_TORCH_2_4``), and the
functions it imports and calls with a CUDA device (``load_state_dict(path, location="cuda")``
after ``from cldm.model import load_state_dict``).

A run reads those modules (devlint.run.project_imports, with CPython's ``ast``, never importing
them, and only once the engine asks for a value) and hands the result to the engine, which checks
one text and never opens another file itself.
The analyses read the values' source text as they read a constant of the file itself
(devlint.analysis.version_guards: ``if IS_TORCH_2_4: ... else: <old API>``), and a function's as
they read one of the file's own (devlint.analysis.device_params)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Constant:
    """A module-level name another module assigns exactly once: the source text of its value,
    and, by name, the constants of its own module (or that module's imports) the value reads."""

    source: str
    names: tuple[tuple[str, Constant], ...] = ()

    def name(self, name: str) -> Constant | None:
        return next((constant for bound, constant in self.names if bound == name), None)


@dataclass(frozen=True)
class Function:
    """A function another module defines once at module level: its name there, and the source of
    a module made of that module's top-level imports and the function's definition (what its
    body's names such as ``torch.load`` resolve through)."""

    name: str
    source: str


@dataclass(frozen=True)
class ImportedConstants:
    """The constants a file imports from its project, by the dotted name that reaches them in
    the file: ``IS_TORCH_2_4`` after ``from .compat import IS_TORCH_2_4``, ``compat.IS_TORCH_2_4``
    after ``import mypkg.compat as compat``."""

    by_reference: tuple[tuple[str, Constant], ...] = ()
    # the imported functions the file calls with a CUDA device, by the same kind of reference
    functions: tuple[tuple[str, Function], ...] = ()

    def get(self, reference: str) -> Constant | None:
        return next((constant for bound, constant in self.by_reference if bound == reference), None)

    def function(self, reference: str) -> Function | None:
        return next((function for bound, function in self.functions if bound == reference), None)


NONE = ImportedConstants()


class Imports(Protocol):
    """What the engine asks of a file's project: ``ImportedConstants``, or a run's reader that
    reads the other modules only when first asked (devlint.run.project_imports.ProjectImports)."""

    def get(self, reference: str) -> Constant | None: ...

    def function(self, reference: str) -> Function | None: ...
