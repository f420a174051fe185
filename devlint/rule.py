"""What a rule is: its code, name, documentation, examples, and the node hooks it implements.

A rule subclass defines ``visit_<Node>`` / ``leave_<Node>`` methods (LibCST node class names);
the walker calls them all in one pass. Rules report through ``self.report`` and may attach a fix
factory, which runs after the walk when every binding in the file is known.

This module is what the engine and the rules both stand on: the rule base class, the report a
rule makes, and ``RuleContext``, all that a rule (and the rule kit) may ask of the file being
linted. The engine's ``FileContext`` implements it; nothing here imports the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol, TypeVar

import libcst as cst

from devlint.analysis.device_params import Signature
from devlint.analysis.reader import FileReader
from devlint.analysis.semantic import Scope
from devlint.analysis.tracker import ScopeTracker
from devlint.fixes import DeviceRef, FixPlan, HelperRef
from devlint.gate.catalog import Word  # noqa: F401 - rules import Word from here
from devlint.settings import FixSettings

T = TypeVar("T")

FixAvailability = Literal["safe", "unsafe", "sometimes", "none"]


@dataclass(frozen=True)
class Site:
    """Where in the program a report was made: its scope and its place in the walk."""

    scope: Scope
    order: int
    node: cst.CSTNode


# Runs after the walk, when every binding of the file is known: the fix of one report, or None.
FixFactory = Callable[[Site], "FixPlan | None"]


@dataclass
class Report:
    rule: Rule
    node: cst.CSTNode
    start: cst.CSTNode
    message: str
    fix: FixFactory | None
    site: Site
    # The finding starts this many characters before ``start`` on its line: a token the tree
    # holds no node of its own for (LibCST shares one object among equal dots).
    lead: int = 0


class RuleContext(FileReader, Protocol):
    """All that a rule may ask of the file it lints (``self.ctx``), during the walk and in its fix
    factories after it."""

    filename: str
    text: str
    module: cst.Module
    settings: FixSettings
    tracker: ScopeTracker

    def site(self, node: cst.CSTNode) -> Site: ...

    def ancestors(self, node: cst.CSTNode) -> Iterable[cst.CSTNode]: ...

    def report(
        self,
        rule: Rule,
        node: cst.CSTNode,
        message: str,
        fix: FixFactory | None = None,
        start: cst.CSTNode | None = None,
        lead: int = 0,
        site: Site | None = None,
    ) -> None: ...

    def device(self, site: Site, avoid: Iterable[str] = ()) -> DeviceRef:
        """The device expression a fix at ``site`` uses (see devlint.analysis.devices)."""
        ...

    def given_no_gpu(self, scope: Scope, name: str) -> bool:
        """A call in the file passes a CPU-only device or None for parameter ``name`` of the
        function ``scope`` (see devlint.analysis.devices)."""
        ...

    def helper(
        self, preferred: str, define: Callable[[str], str], earlier: Sequence[Callable[[str], str]] = ()
    ) -> HelperRef | None:
        """A module-level function for fixes to call: the file's own where it already defines
        ``define(its name)`` word for word (or one of ``earlier``, the same function as devlint
        wrote it before), else one named ``preferred`` (or a free variant) that the engine inserts
        once for the file; None where the module binds torch only inside functions, so that a
        module-level function could not reach it."""
        ...

    def render(self, original: cst.CSTNode, new: cst.CSTNode) -> str:
        """The source of ``new`` as it reads where ``original`` stands, block indentation included."""
        ...

    def imported_signature(self, reference: str) -> Signature | None:
        """Which parameters reach a device sink (devlint.analysis.device_params) of the function
        another module of the project defines and the file imports as ``reference``
        (``load_state_dict``, ``model.load``), where the run read it; else None."""
        ...

    def indexed(self, key: Hashable, build: Callable[[], T]) -> T:
        """What ``build`` computes about the file, once per ``key``: a fact a rule asks about the
        module at every finding (the checks of a block, the uses of a name) is indexed once,
        never found again by walking the tree per finding."""
        ...


@dataclass(frozen=True)
class Invalid:
    """Code the rule must flag; ``fixed`` is the exact text after applying the rule's fixes
    (``None``: the rule offers no fix here). ``unsafe`` applies unsafe fixes too;
    ``torch_version`` lints as a project with that `torch-version` (default: devlint's);
    ``imported``: constants the code imports from other modules of its project, as a run would
    read them (the name that reaches each in the code, the source of its value);
    ``imported_functions``: functions it imports from them, likewise (the name that reaches each,
    ending in the function's own name, and the source of its module's imports and definition)."""

    code: str
    fixed: str | None = None
    unsafe: bool = False
    count: int = 1
    torch_version: tuple[int, int] | None = None
    imported: tuple[tuple[str, str], ...] = ()
    imported_functions: tuple[tuple[str, str], ...] = ()


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    # Documentation, rendered by `devlint rule CODE` and in SARIF help text.
    what: ClassVar[str]
    why: ClassVar[str]
    example: ClassVar[str]
    use_instead: ClassVar[str]
    fix_availability: ClassVar[FixAvailability] = "none"
    fix_note: ClassVar[str] = ""
    default_enabled: ClassVar[bool] = True
    # On by default where torch-version is this or newer (as ruff's rules follow target-version),
    # whatever ``default_enabled`` says; an explicit select/ignore still wins.
    default_since: ClassVar[tuple[int, int] | None] = None
    # The torch version from which the rule's advice holds (the API it recommends exists, or the
    # one it flags is deprecated). Code in a branch that only runs on an older torch is not
    # flagged (devlint.analysis.version_guards).
    advice_since: ClassVar[tuple[int, int]] = (0, 0)
    # Code that only runs where a tensor or device is known to be on CUDA (`if x.is_cuda:`) is the
    # CUDA half of device-generic code: rules that set this do not flag it (devlint.analysis.cuda_regions).
    quiet_where_cuda_is_known: ClassVar[bool] = False
    # The rule's fixes read only the reported statement, the device finder and the file-wide facts
    # devlint.engine.reuse holds equal between checks: a check after an edit elsewhere may take
    # them over. Rules whose fixes read their own state from the whole walk leave this unset.
    reusable_fixes: ClassVar[bool] = False
    # A file that contains none of these substrings (``Word``: whole identifiers) cannot hold a
    # finding of this rule.
    triggers: ClassVar[tuple[str, ...]]
    VALID: ClassVar[Sequence[str]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()

    def __init__(self, ctx: RuleContext) -> None:
        self.ctx = ctx

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        fix: FixFactory | None = None,
        start: cst.CSTNode | None = None,
        lead: int = 0,
        site: Site | None = None,
    ) -> None:
        """``start``: where the finding starts, when not at ``node``; ``lead``: that many
        characters before ``start``, on its line; ``site``: where ``node`` was walked, for a
        report made after the walk (``finish``)."""
        self.ctx.report(self, node, message, fix, start, lead, site)

    def finish(self) -> None:
        """Called once after the walk; rules that collect candidates report them here, each with
        the ``site`` the walk gave its node (the engine reads its scope: whether ``torch`` is the
        function's own name, where a definition must be inserted)."""

    def withdraws(self, report: Report) -> bool:
        """Asked of each of this rule's reports after the walk, when the whole file is known:
        True drops a report made on what the walk had seen so far (a class defined below the
        function that uses it)."""
        return False
