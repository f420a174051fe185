"""Everything rules share about one file, and the turning of their reports into findings."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from devlint.devices import device_expression, find_device_in_scope, free_name
from devlint.findings import Edit, Finding, Fix, Location
from devlint.fixes import DeviceRef, FixPlan, LineIndex, Replace
from devlint.positions import positions as node_positions
from devlint.render import code_at_indent
from devlint.semantic import Scope, SemanticModel, dotted_name
from devlint.settings import FixSettings
from devlint.tracker import ScopeTracker

if TYPE_CHECKING:
    from devlint.rule import Rule


@dataclass(frozen=True)
class Site:
    """Where in the program a report was made: its scope and its place in the walk."""

    scope: Scope
    order: int
    node: cst.CSTNode


FixFactory = Callable[[Site], "FixPlan | None"]


@dataclass
class Report:
    rule: Rule
    node: cst.CSTNode
    start: cst.CSTNode
    message: str
    fix: FixFactory | None
    site: Site


class FileContext:
    def __init__(
        self, filename: str, text: str, module: cst.Module, settings: FixSettings = FixSettings(), stitched: bool = False
    ) -> None:
        self.filename = filename
        self.text = text
        self.module = module
        # Parsed in sections (devlint.sections): it must print back to the text exactly.
        self.stitched = stitched
        self.settings = settings
        self.model = SemanticModel(module)
        self.tracker = ScopeTracker(self.model)
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.reports: list[Report] = []
        self._inserted_name: str | None = None
        self._insertion_sites: list[Site] = []

    # -- for rules, during the walk ------------------------------------------------------

    def site(self, node: cst.CSTNode) -> Site:
        return Site(self.model.scope, self.tracker.order, node)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterable[cst.CSTNode]:
        current = self.parents.get(node)
        while current is not None:
            yield current
            current = self.parents.get(current)

    def report(
        self,
        rule: Rule,
        node: cst.CSTNode,
        message: str,
        fix: FixFactory | None = None,
        start: cst.CSTNode | None = None,
    ) -> None:
        self.reports.append(Report(rule, node, start or node, message, fix, self.site(node)))

    # -- for fixes, after the walk ---------------------------------------------------------

    def device(self, site: Site, avoid: Iterable[str] = ()) -> DeviceRef:
        """The device expression a fix at ``site`` uses (see devlint.devices)."""
        found = find_device_in_scope(self.model, site.scope, site.order, avoid, self.settings.device_name)
        if found is not None:
            return DeviceRef(found.expr)
        if self._inserted_name is None:
            self._inserted_name = free_name(self.model, self.settings.device_name)
        self._insertion_sites.append(site)
        return DeviceRef(self._inserted_name, inserted=True)

    def findings(self) -> list[Finding]:
        if not self.reports:
            return []
        lines = LineIndex(self.text)
        plans = [report.fix(report.site) if report.fix is not None else None for report in self.reports]
        # Only these nodes' positions are needed (devlint.positions; any other is still found).
        wanted = [node for report in self.reports for node in (report.start, report.node)]
        wanted += [r.node for plan in plans if plan is not None for r in plan.replacements]
        positions = node_positions(self.module, lines, [*wanted, *self.module.body], strict=self.stitched)
        needing = [
            report.site
            for report, plan in zip(self.reports, plans)
            if plan is not None and (plan.needs_torch or (plan.device is not None and plan.device.inserted))
        ]
        insertions = self._insertion_edits(needing, positions, lines) if needing else {}
        findings: list[Finding] = []
        for report, plan in zip(self.reports, plans):
            start = positions[report.start].start
            end = positions[report.node].end
            fix = None
            if plan is not None and not self._breaks_fstring(plan):
                edits = [self._edit(r, positions, lines) for r in plan.replacements]
                uses_definition = plan.device is not None and plan.device.inserted
                if (plan.needs_torch or uses_definition) and "torch" in insertions:
                    edits.append(insertions["torch"])
                if uses_definition:
                    edits.append(insertions["device"])
                fix = Fix(plan.applicability, plan.message, tuple(sorted(edits, key=lambda e: e.start_offset)))
            findings.append(
                Finding(
                    code=report.rule.code,
                    name=report.rule.name,
                    message=report.message,
                    filename=self.filename,
                    location=Location(start.line, start.column + 1),
                    end_location=Location(end.line, end.column + 1),
                    fix=fix,
                    source_line=lines.line(start.line),
                    noqa_row=start.line,
                )
            )
        findings.sort(key=Finding.sort_key)
        return findings

    def _breaks_fstring(self, plan: FixPlan) -> bool:
        """Before Python 3.12 an f-string's replacement field may not reuse its quote character:
        a fix writing `"cuda"` inside `f"{...}"` would not compile there, so it is not offered."""
        for replace in plan.replacements:
            quotes = {
                node.start.lstrip("rRbBfF")[0]
                for node in self.ancestors(replace.node)
                if isinstance(node, cst.FormattedString)
            }
            new = replace.new
            if isinstance(new, cst.CSTNode):
                new = self.module.code_for_node(new)
            text = "".join(new) if isinstance(new, tuple) else new
            if any(quote in text for quote in quotes):
                return True
        return False

    def render(self, original: cst.CSTNode, new: cst.CSTNode) -> str:
        """The source of ``new`` as it reads where ``original`` stands, block indentation included."""
        blocks = [node for node in self.ancestors(original) if isinstance(node, cst.IndentedBlock)]
        indent = "".join(self.module.default_indent if b.indent is None else b.indent for b in reversed(blocks))
        # A node's source span excludes its own parentheses (they stay in the file around the
        # edit), while rendering includes them: drop as many as the original owns.
        own = len(getattr(original, "lpar", ()))
        if own and len(getattr(new, "lpar", ())) >= own:
            new = new.with_changes(lpar=new.lpar[own:], rpar=new.rpar[: len(new.rpar) - own])
        return code_at_indent(self.module, new, indent)

    def _edit(self, replace: Replace, positions, lines: LineIndex) -> Edit:
        span = positions[replace.node]
        start = lines.offset(span.start.line, span.start.column)
        end = lines.offset(span.end.line, span.end.column)
        new = replace.new
        if isinstance(new, cst.CSTNode):
            content = self.render(replace.node, new)
        elif isinstance(new, tuple):
            content = (self.module.default_newline + lines.indent(span.start.line)).join(new)
        else:
            content = new
        return lines.edit(start, end, content)

    def _insertion_edits(self, sites: list[Site], positions, lines: LineIndex) -> dict[str, Edit]:
        """``import torch`` (when missing) and ``device = ...`` (when used), placed once: after the
        last top-level import before the first statement that needs them."""
        body = list(self.module.body)
        index = {id(stmt): i for i, stmt in enumerate(body)}
        first_use = min(self._top_level_index(site.node, index) for site in sites)
        imports = [i for i in range(first_use) if _is_import_line(body[i])]
        if self.settings.cell_break is not None:
            imports = self._torch_cell_imports(body, imports)
        newline = self.module.default_newline
        prefix = ""
        if imports:
            after = imports[-1]
            row = positions[body[after]].end.line
            offset = lines.starts[row] if row < len(lines.starts) else len(self.text)
            if offset == len(self.text) and not self.text.endswith(("\n", "\r")):
                prefix = newline
            torch_bound = any(_binds_torch(body[i]) for i in range(after + 1))
        else:
            at = next(
                (
                    i
                    for i, stmt in enumerate(body[: first_use + 1])
                    if not _is_preamble(stmt, i) and not self._is_cell_break(stmt)
                ),
                first_use,
            )
            offset = lines.starts[positions[body[at]].start.line - 1]
            torch_bound = False
        edits: dict[str, Edit] = {}
        if not torch_bound:
            edits["torch"] = lines.edit(offset, offset, f"{prefix}import torch{newline}")
            prefix = ""
        if self._inserted_name is not None:
            expression = device_expression(self.settings.device_expression)
            edits["device"] = lines.edit(offset, offset, f"{prefix}{self._inserted_name} = {expression}{newline}")
        return edits

    def _is_cell_break(self, stmt: cst.CSTNode) -> bool:
        if self.settings.cell_break is None or not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return False
        small = stmt.body[0]
        return isinstance(small, cst.Expr) and isinstance(small.value, cst.Name) and small.value.value == self.settings.cell_break

    def _torch_cell_imports(self, body: list[cst.BaseStatement], imports: list[int]) -> list[int]:
        """Of ``imports``, those in the cell of the first torch import: a notebook keeps its setup
        in that cell even when later cells import more before the first use."""
        first = next((i for i in imports if _imports_torch(body[i])), None)
        if first is None:
            return imports
        start = max((i for i in range(first) if self._is_cell_break(body[i])), default=-1)
        end = next((i for i in range(first, len(body)) if self._is_cell_break(body[i])), len(body))
        return [i for i in imports if start < i < end]

    def _top_level_index(self, node: cst.CSTNode, index: dict[int, int]) -> int:
        current: cst.CSTNode | None = node
        while current is not None:
            if id(current) in index:
                return index[id(current)]
            current = self.parents.get(current)
        return 0


def _is_import_line(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    )


def _imports_torch(stmt: cst.CSTNode) -> bool:
    """``import torch...`` or ``from torch... import ...`` (an import line, see _is_import_line)."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Import):
            names = [dotted_name(alias.name) for alias in small.names]
        elif isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
            names = [dotted_name(small.module)]
        else:
            continue
        if any(name is not None and name.split(".")[0] == "torch" for name in names):
            return True
    return False


def _binds_torch(stmt: cst.CSTNode) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                name = dotted_name(alias.name)
                if name is not None and name.split(".")[0] == "torch" and alias.asname is None:
                    return True
    return False


def _is_preamble(stmt: cst.CSTNode, position: int) -> bool:
    """A module docstring or a ``from __future__`` import: nothing may come before them."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    small = stmt.body[0]
    if position == 0 and isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
        return True
    return isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and small.module.value == "__future__"

