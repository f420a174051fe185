"""Everything rules share about one file, and the turning of their reports into findings."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Container, Hashable, Iterable, Sequence
from typing import Any, TypeVar

import libcst as cst

from devlint.analysis.constants import ValueReader, foreign
from devlint.analysis.cuda_regions import CudaRegions
from devlint.analysis.device_params import Signature, signature_of
from devlint.analysis.devices import DeviceFinder, free_name
from devlint.analysis.reaching import Flows, declared_names
from devlint.analysis.semantic import Scope, SemanticModel, dotted_name
from devlint.analysis.tracker import ScopeTracker
from devlint.analysis.tree import ancestors, climbed
from devlint.analysis.version_guards import OlderBranches, runs_only_below
from devlint.engine.placement import Insertion, Source, local_definition, place, torch_only_in_functions
from devlint.engine.positions import Positions, StatementPrints
from devlint.engine.positions import positions as node_positions
from devlint.engine.positions import statement_rows
from devlint.engine.render import code_at_indent, in_file_style
from devlint.engine.reuse import Check, FileFacts, Kept, Window, report_key, window
from devlint.engine.torch_imports import renamed_torch
from devlint.engine.unused_imports import UnusedImports
from devlint.findings import Edit, Finding, Fix, Location, Release
from devlint.gate.syntax import cpython_tree
from devlint.fixes import DeviceRef, FixPlan, HelperRef, LineIndex, Replace, unused_import_edits
from devlint.project import NONE, Imports
from devlint.rule import FixFactory, Report, Rule, Site
from devlint.settings import FixSettings
from devlint.torchfacts.api_versions import Requirement, introduced, newest
from devlint.torchfacts.version import shown

T = TypeVar("T")


class FileContext:
    def __init__(
        self,
        filename: str,
        text: str,
        module: cst.Module,
        settings: FixSettings = FixSettings(),
        stitched: bool = False,
        prints: StatementPrints | None = None,
        imported: Imports = NONE,
        rows: tuple[int, ...] | None = None,
    ) -> None:
        self.filename = filename
        # The first row of each statement, from CPython's tree where the screen read it
        # (devlint.engine.positions.statement_rows): findings' positions then print only their
        # statements; read from the text when the findings need them, where not given.
        self.rows = rows
        # Constants the file imports from its project, read by the run (devlint.run.project_imports).
        self.imported = imported
        self._foreign: dict[str, tuple[ValueReader, cst.BaseExpression] | None] = {}
        self.text = text
        self.module = module
        # Parsed in sections (devlint.engine.sections): it must print back to the text exactly.
        self.stitched = stitched
        # Statements printed in earlier checks of this file (devlint.engine.positions).
        self.prints = prints
        self.settings = settings
        self.model = SemanticModel(module)
        self.tracker = ScopeTracker(self.model)
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.flows = Flows(self.parents.get, walrus=":=" in text, declared=lambda: declared_names(module, text))
        self._devices = DeviceFinder(self.model, self.flows, settings.device_name)
        self._regions = CudaRegions(self)
        self._older = OlderBranches(self)
        self.reports: list[Report] = []
        # The name of the device definition fixes insert, once one asks for it (see device()).
        self._inserted_name: str | None = None
        # The helper functions fixes call, by the name their rule prefers (see helper()).
        self._helpers: dict[str, HelperRef] = {}
        self._codes: dict[int, tuple[cst.CSTNode, str]] = {}
        self._indexes: dict[Hashable, Any] = {}
        # Set by a caller that keeps this check for the next check of the file (devlint.engine.reuse).
        self.keep_check = False
        self.rule_codes: tuple[str, ...] = ()
        # Per report, the index of the top-level statement it is in (while a check is kept).
        self._statements: list[int] = []
        self.check: Check | None = None
        # Fix plans' requirements, f-string checks and fixes, kept by plan (see _requirement, _fix).
        self._required: dict[int, tuple[FixPlan, Requirement]] = {}
        self._fixes: dict[int, tuple[FixPlan, cst.SimpleStatementLine | None, Insertion, Source, bool, Fix | None]] = {}
        self._fstring_breaks: dict[int, tuple[FixPlan, bool]] = {}

    def close(self) -> None:
        """Drops everything the check holds, once its findings are out. The analyses and the
        reports (their fixes close over their rules) refer back to this context: cycles that
        only the garbage collector frees, the file's whole tree with them, which it must then
        walk (0.45 s of 11.3 s in one process on issue 29's corpus). Without them the tree goes
        as soon as the last reference does."""
        vars(self).clear()

    # -- for rules, during the walk ------------------------------------------------------

    def site(self, node: cst.CSTNode) -> Site:
        return Site(self.model.scope, self.tracker.order, node)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterable[cst.CSTNode]:
        return ancestors(self.parents, node)

    def report(
        self,
        rule: Rule,
        node: cst.CSTNode,
        message: str,
        fix: FixFactory | None = None,
        start: cst.CSTNode | None = None,
        lead: int = 0,
        site: Site | None = None,
    ) -> None:
        self.reports.append(Report(rule, node, start or node, message, fix, site or self.site(node), lead))

    # -- for fixes, after the walk ---------------------------------------------------------

    def device(self, site: Site, avoid: Iterable[str] = ()) -> DeviceRef:
        """The device expression a fix at ``site`` uses (see devlint.analysis.devices)."""
        found = self._devices.find(site.scope, site.node, avoid)
        if found is not None:
            return DeviceRef(found.expr)
        if self._inserted_name is None:
            self._inserted_name = free_name(self.model, self.settings.device_name)
        return DeviceRef(self._inserted_name, inserted=True)

    def given_no_gpu(self, scope: Scope, name: str) -> bool:
        """A call in the file passes a CPU-only device or None for parameter ``name`` of the
        function ``scope`` (see devlint.analysis.devices)."""
        return self._devices.given_no_gpu(scope, name)

    def helper(
        self, preferred: str, define: Callable[[str], str], earlier: Sequence[Callable[[str], str]] = ()
    ) -> HelperRef | None:
        """A module-level function for fixes to call (see devlint.rule.RuleContext.helper)."""
        if self.indexed("torch only in functions", lambda: torch_only_in_functions(self.module)) is not None:
            return None
        if preferred not in self._helpers:
            own = next((found for spelling in (define, *earlier) if (found := self._own_helper(spelling)) is not None), None)
            if own is None:
                name = free_name(self.model, preferred)
                own = HelperRef(name, define(name))
            self._helpers[preferred] = own
        return self._helpers[preferred]

    def _own_helper(self, define: Callable[[str], str]) -> HelperRef | None:
        """A function the file defines once at its top level as ``define`` writes it (an earlier
        fix inserted it), in the file's spelling of torch."""
        alias = self.model.torch_alias()
        if not self._may_define(define, alias):
            return None
        for stmt in self.module.body:
            if not isinstance(stmt, cst.FunctionDef) or len(self.model.module_scope.bindings.get(stmt.name.value, ())) != 1:
                continue
            written = self.module.code_for_node(stmt.with_changes(leading_lines=()))
            if written.rstrip() == in_file_style(self.module, define(stmt.name.value), alias).rstrip():
                return HelperRef(stmt.name.value)
        return None

    def _may_define(self, define: Callable[[str], str], alias: str | None) -> bool:
        """The text holds what ``define`` writes below its first line, wherever that does not
        depend on the function's name: a file without it defines no such function, and its
        functions need not be printed to tell."""
        bodies = {
            in_file_style(self.module, define(name), alias).rstrip().partition(self.module.default_newline)[2]
            for name in ("a", "b")
        }
        return len(bodies) != 1 or next(iter(bodies)) in self.text

    def indexed(self, key: Hashable, build: Callable[[], T]) -> T:
        if key not in self._indexes:
            self._indexes[key] = build()
        return self._indexes[key]

    def code(self, node: cst.CSTNode) -> str:
        # Kept by node (held with its code, so its id names no other node): a fix's new code is
        # printed to check the torch it needs and the f-string it may stand in, and the node it
        # replaces by the rule and again for that check.
        kept = self._codes.get(id(node))
        if kept is None or kept[0] is not node:
            kept = self._codes[id(node)] = (node, self.module.code_for_node(node))
        return kept[1]

    def qualname(self, node: cst.CSTNode) -> str | None:
        return self.model.qualname(node)

    def module_constant(self, name: str) -> cst.BaseExpression | None:
        """The value of a module-level name assigned exactly once, else None."""
        bindings = self.model.module_scope.bindings.get(name, [])
        if len(bindings) == 1 and bindings[0].kind == "assign":
            return bindings[0].value
        return None

    def definition(self, node: cst.BaseExpression) -> tuple[ValueReader, cst.BaseExpression] | None:
        """The value a name holds for good: a module constant of the file, or a constant of
        another module of the project that the file imports (``IS_NEW`` after ``from .compat
        import IS_NEW``, ``compat.IS_NEW`` after ``import pkg.compat as compat``), with the
        reader of the module that wrote it."""
        if isinstance(node, cst.Name):
            value = self.module_constant(node.value)
            if value is not None:
                return self, value
        reference = dotted_name(node)
        if reference is None:
            return None
        # The file's own binding of the name, other than the import, wins.
        if any(binding.kind != "import" for binding in self.model.module_scope.bindings.get(reference.split(".")[0], [])):
            return None
        return self.imported_definition(reference)

    def imported_signature(self, reference: str) -> Signature | None:
        function = self.imported.function(reference)
        if function is None:
            return None
        return self.indexed(("imported-signature", reference), lambda: signature_of(function.source, function.name))

    def imported_definition(self, reference: str) -> tuple[ValueReader, cst.BaseExpression] | None:
        """The constant another module of the project binds ``reference`` (``BACKEND``,
        ``config.BACKEND``) to, as the file's imports of its first name give it, for a caller that
        knows an import of that name is what the name holds where it reads it (a function's own
        import included, which a module-level binding of the name elsewhere does not touch). The
        run keeps a name only where every import of it in the file gives it the same meaning
        (devlint.run.project_imports)."""
        if reference not in self._foreign:
            constant = self.imported.get(reference)
            self._foreign[reference] = foreign(constant) if constant is not None else None
        return self._foreign[reference]

    def _reportable(self, report: Report) -> bool:
        """False for code in a branch that only runs on a torch older than the project supports,
        or than the one the rule's advice needs (devlint.analysis.version_guards), for a report
        its rule withdraws once the whole file is known (``Rule.withdraws``), and, for the rules
        that ask, for code that only runs where a tensor or device is known to be on CUDA
        (devlint.analysis.cuda_regions)."""
        since = max(self.settings.torch_version, report.rule.advice_since)
        if runs_only_below(self._older.of(report.node), since) or report.rule.withdraws(report):
            return False
        return not (report.rule.quiet_where_cuda_is_known and self._regions.runs_only_on_cuda(report.node))

    def _plan(self, report: Report) -> tuple[FixPlan | None, str]:
        """The report's fix, unless its new code needs an API newer than the project's oldest
        torch (the rule's own ``requires``, or a name in devlint.torchfacts.api_versions' table); then no
        fix, and a note for the message saying which torch the fix needs."""
        if report.fix is None:
            return None, ""
        plan = report.fix(report.site)
        if plan is None:
            return None, ""
        needed = self._requirement(plan)
        if needed.since > self.settings.torch_version:
            what = f" (`{needed.name}`)" if needed.name else ""
            return None, (
                f" (its fix needs torch {shown(needed.since)}{what}; `torch-version` is {shown(self.settings.torch_version)})"
            )
        return plan, ""

    def _requirement(self, plan: FixPlan) -> Requirement:
        """The newest API ``plan``'s new code introduces, or the rule's own bound if that is newer.
        Kept by plan: the reports of one fact (every use of an attribute set to "nccl") may share
        one plan, read once however many they are."""
        kept = self._required.get(id(plan))
        if kept is None or kept[0] is not plan:
            kept = self._required[id(plan)] = (plan, self._newest_api(plan))
        return kept[1]

    def _newest_api(self, plan: FixPlan) -> Requirement:
        names: set[str] = set()
        for replace in plan.replacements:
            new = replace.new
            text = self.code(new) if isinstance(new, cst.CSTNode) else "\n".join(new) if isinstance(new, tuple) else new
            names |= introduced(text, self.code(replace.node))
        if plan.helper is not None and plan.helper.definition is not None:
            names |= introduced(plan.helper.definition, "")
        found = newest(names)
        if found is None or plan.requires > found.since:
            return Requirement("", plan.requires)
        return found

    def findings(self, earlier: Check | None = None) -> list[Finding]:
        """The findings of the reports. ``earlier``: the last check of this file, whose fixes are
        reused where the edit since cannot have changed them (devlint.engine.reuse); this check,
        for the next one, is left in ``self.check`` when ``keep_check`` is set."""
        self.reports = [report for report in self.reports if self._reportable(report)]
        if not self.reports:
            return []
        lines = LineIndex(self.text)
        facts = FileFacts.of(self.module, self.model, self.settings, self.imported) if self.keep_check else None
        if facts is not None:
            statements = {id(stmt): i for i, stmt in enumerate(self.module.body)}
            self._statements = [statements.get(id(self._top_level(report.node)), -1) for report in self.reports]
        reused = self._reusable(earlier, lines, facts)
        if reused is not None:
            found = self._build(lines, facts, reused)
            if found is not None:
                return found
        found = self._build(lines, facts, None)
        assert found is not None
        return found

    def _reusable(self, earlier: Check | None, lines: LineIndex, facts: FileFacts | None) -> tuple[Check, Window, dict[int, Kept]] | None:
        """The earlier findings this check may take over, by report."""
        if earlier is None or facts is None or earlier.settings != self.settings or earlier.rules != self.rule_codes:
            return None
        changed = window(earlier, lines, self.module, self.model, facts)
        if changed is None:
            return None
        kept = {
            i: found
            for i, report in enumerate(self.reports)
            if report.rule.reusable_fixes
            and (found := earlier.kept.get(report_key(report.rule.code, report.node, report.start, report.message, report.lead))) is not None
            and found.statement == self._statements[i]
        }
        return (earlier, changed, kept) if kept else None

    def _build(self, lines: LineIndex, facts: FileFacts | None, reused: tuple[Check, Window, dict[int, Kept]] | None) -> list[Finding] | None:
        """The findings, with the fixes of ``reused`` taken over; None when what they read has
        changed after all (the statements did not move as the edit says, or the insertions differ)."""
        taken = reused[2] if reused is not None else {}
        planned = [(None, "") if i in taken else self._plan(report) for i, report in enumerate(self.reports)]
        imports = UnusedImports(self.filename, self.module, self.model, self.parents)
        # By plan: reports that share one plan share what it releases (see _requirement).
        plans = {id(plan): plan for plan, _ in planned if plan is not None}
        releases = {key: imports.released(plan, self.code) for key, plan in plans.items()}
        released = [releases[id(plan)] if plan is not None else {} for plan, _ in planned]
        positions = self._positions(planned, lines, taken, imports.statements({name: () for names in released for name in names}))
        spans = (
            tuple((lines.offset(p.start.line, p.start.column), lines.offset(p.end.line, p.end.column)) for p in map(positions.__getitem__, self.module.body))
            if facts is not None
            else ()
        )
        if reused is not None and list(spans) != reused[1].expected(reused[0].spans):
            return None
        source = Source(self.module, self.model, self.parents, positions, lines, self.settings)
        if any(kept.uses_definition for kept in taken.values()) and self._inserted_name is None:
            self._inserted_name = free_name(self.model, self.settings.device_name)
        needs = [
            (report.site.node if taken[i].needs_insertion else None) if i in taken else self._needs_insertion(report, plan)
            for i, (report, (plan, _)) in enumerate(zip(self.reports, planned))
        ]
        helpers = {
            ref.name: ref
            for i, (plan, _) in enumerate(planned)
            if (ref := taken[i].helper if i in taken else plan.helper if plan is not None else None) is not None and ref.inserted
        }
        placement = place(source, needs, self._inserted_name, tuple(helpers.values()))
        if reused is not None and placement.module != reused[0].insertion:
            return None
        findings: list[Finding] = []
        kept: dict[tuple, Kept] = {}
        for i, (report, (plan, note), spot) in enumerate(zip(self.reports, planned, placement.local)):
            at = self._statements[i] if facts is not None else -1
            if i in taken:
                assert reused is not None
                finding = reused[1].shifted(taken[i].finding) if spot is None else None
                if finding is None:
                    return None
                entry = dataclasses.replace(taken[i], finding=finding, statement=at)
            else:
                fix = self._fix(plan, spot, placement.module, source, self._torch_imported(report.site))
                if fix is not None and released[i]:
                    fix = _releasing(fix, imports.releases(released[i], positions, lines), lines)
                finding = self._finding(report, note, fix, source)
                entry = Kept(finding, needs[i] is not None, plan is not None and _uses_definition(plan), at, plan.helper if plan is not None else None)
            findings.append(finding)
            # A fix that removes uses of imported names read the uses of the whole file: an edit
            # anywhere may add one, so it is built anew.
            if spot is None and (finding.fix is None or not finding.fix.releases):
                kept[report_key(report.rule.code, report.node, report.start, report.message, report.lead)] = entry
        if facts is not None:
            self.check = Check(lines, self.rule_codes, self.settings, tuple(self.module.body), spans, facts, placement.module, kept)
        findings.sort(key=Finding.sort_key)
        return findings

    def _positions(
        self, planned: list[tuple[FixPlan | None, str]], lines: LineIndex, taken: Container[int] = (), imports: Iterable[cst.CSTNode] = ()
    ) -> Positions:
        # Only these nodes' positions are needed (devlint.engine.positions; any other is still
        # found): none of the findings taken over from the last check (``taken``).
        wanted = [node for i, report in enumerate(self.reports) if i not in taken for node in (report.start, report.node)]
        replaces = [r for plan in {id(plan): plan for plan, _ in planned if plan is not None}.values() for r in plan.replacements]
        wanted += [n for r in replaces for n in (r.node, r.until, r.through, *r.holds) if n is not None]
        wanted += imports
        if self.prints is None and not self.keep_check:
            # A batch check: only these nodes' statements are printed (the server's checks keep
            # every top-level statement's span, printed by statement and reused).
            rows = self.rows if self.rows is not None else _rows_of(self.text)
            return node_positions(self.module, lines, wanted, strict=self.stitched, parent_of=self.parents.get, rows=rows)
        return node_positions(
            self.module, lines, [*wanted, *self.module.body], strict=self.stitched, prints=self.prints, top=self._top_level
        )

    def _top_level(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The top-level statement holding ``node`` (itself for one), None for a node the walk
        did not reach."""
        return self._climbed("top-level statement", node, self._top_level_step, None)

    def _top_level_step(self, parent: cst.CSTNode, child: cst.CSTNode, above: cst.CSTNode | None) -> cst.CSTNode | None:
        return child if parent is self.module else above

    def _needs_insertion(self, report: Report, plan: FixPlan | None) -> cst.CSTNode | None:
        """Where ``plan``'s new code needs torch or the inserted definition (see placement), else None."""
        if plan is None:
            return None
        if _uses_definition(plan) or _calls_new_helper(plan):
            return report.site.node
        return report.site.node if plan.needs_torch and not self._torch_is_local(report.site) else None

    def _torch_is_local(self, site: Site) -> bool:
        """At ``site`` the name ``torch`` is a function's own (``torch, ... = load_modules()``, a
        parameter, an import in the function): the new code's ``torch.`` reads that binding, as
        the code it replaces did, and a module-level ``import torch`` would not be used."""
        found = next(iter(self.model.lookup("torch", site.scope)), None)
        return found is not None and found[0].kind != "module"

    def _torch_imported(self, site: Site) -> bool:
        """At ``site`` the name ``torch`` is a function's own (``_torch_is_local``) or the module's,
        bound only by imports (also inside ``try:``, or below the functions): new code that only
        names ``torch`` reads that binding, as the code it replaces did, and needs no import of its
        own; an unguarded ``import torch`` above a guarded one would make the module fail to import
        without torch (Megatron-DeepSpeed's testing_utils.py)."""
        if self._torch_is_local(site):
            return True
        bindings = self.model.module_scope.bindings.get("torch", [])
        # Asked per fix: a module of many `import torch` lines reads them once.
        return bool(bindings) and self.indexed("torch bound only by imports", lambda: all(b.kind == "import" for b in bindings))

    def _fix(
        self, plan: FixPlan | None, spot: cst.SimpleStatementLine | None, insertion: Insertion, source: Source, torch_imported: bool
    ) -> Fix | None:
        """The plan as edits of the text, with the insertions its new code needs (a module that
        imports torch only inside functions gets the definition after the function's own import).
        Kept by plan: reports sharing a plan share its fix, built once."""
        if plan is None:
            return None
        kept = self._fixes.get(id(plan))
        if kept is None or kept[0] is not plan or kept[1] is not spot or kept[2] is not insertion or kept[3] is not source or kept[4] is not torch_imported:
            kept = self._fixes[id(plan)] = (plan, spot, insertion, source, torch_imported, self._fix_of(plan, spot, insertion, source, torch_imported))
        return kept[5]

    def _fix_of(
        self, plan: FixPlan, spot: cst.SimpleStatementLine | None, insertion: Insertion, source: Source, torch_imported: bool
    ) -> Fix | None:
        if self._breaks_fstring(plan):
            return None
        edits = [self._edit(r, source.positions, source.lines, insertion.torch_as) for r in plan.replacements]
        hazards: list[str | None] = []
        inserts = _uses_definition(plan) or _calls_new_helper(plan)
        if spot is not None:
            if _uses_definition(plan):
                edits.append(local_definition(source, spot, self._inserted_name))
        else:
            if (inserts or (plan.needs_torch and not torch_imported)) and insertion.torch is not None:
                edits.append(insertion.torch)
                hazards.append(insertion.import_hazard)
            if _uses_definition(plan) and insertion.device is not None:
                edits.append(insertion.device)
                hazards.append(insertion.definition_hazard)
            if _calls_new_helper(plan):
                assert plan.helper is not None
                edits.append(dict(insertion.helpers)[plan.helper.name])
        applicability, message = plan.applicability, plan.message
        for hazard in hazards:
            if hazard is not None:
                applicability = "unsafe"
                message += f" (unsafe: {hazard})"
        return Fix(applicability, message, tuple(sorted(edits, key=lambda e: e.start_offset)))

    def _finding(self, report: Report, note: str, fix: Fix | None, source: Source) -> Finding:
        start = source.positions[report.start].start
        end = source.positions[report.node].end
        return Finding(
            code=report.rule.code,
            name=report.rule.name,
            message=report.message + note,
            filename=self.filename,
            location=Location(start.line, start.column + 1 - report.lead),
            end_location=Location(end.line, end.column + 1),
            fix=fix,
            source_line=source.lines.line(start.line),
            noqa_row=start.line,
        )

    def _breaks_fstring(self, plan: FixPlan) -> bool:
        """Before Python 3.12 an f-string's replacement field may not reuse its quote character:
        a fix writing `"cuda"` inside `f"{...}"` would not compile there, so it is not offered.
        Kept by plan, as the requirement is."""
        kept = self._fstring_breaks.get(id(plan))
        if kept is None or kept[0] is not plan:
            kept = self._fstring_breaks[id(plan)] = (plan, self._reuses_quote(plan))
        return kept[1]

    def _reuses_quote(self, plan: FixPlan) -> bool:
        for replace in plan.replacements:
            quotes = self._climbed("f-string quotes", replace.node, _fstring_quotes, frozenset())
            new = replace.new
            if isinstance(new, cst.CSTNode):
                new = self.code(new)
            text = "".join(new) if isinstance(new, tuple) else new
            if any(quote in text for quote in quotes):
                return True
        return False

    def render(self, original: cst.CSTNode, new: cst.CSTNode) -> str:
        """The source of ``new`` as it reads where ``original`` stands, block indentation included."""
        indent = self._climbed("block indentation", original, self._indented, "")
        # A node's source span excludes its own parentheses (they stay in the file around the
        # edit), while rendering includes them: drop as many as the original owns.
        own = len(getattr(original, "lpar", ()))
        if own and len(getattr(new, "lpar", ())) >= own:
            new = new.with_changes(lpar=new.lpar[own:], rpar=new.rpar[: len(new.rpar) - own])
        return code_at_indent(self.module, new, indent)

    def _climbed(self, question: str, node: cst.CSTNode, step: Callable[[cst.CSTNode, cst.CSTNode, T], T], top: T) -> T:
        """``climbed`` (devlint.analysis.tree) with the answers kept for the file, by question."""
        return climbed(node, self.parents.get, self.indexed(("climbed", question), dict), step, top)

    def _indented(self, parent: cst.CSTNode, child: cst.CSTNode, above: str) -> str:
        """The indentation of the blocks around ``child``, outermost first."""
        if type(parent) is not cst.IndentedBlock:
            return above
        return above + (self.module.default_indent if parent.indent is None else parent.indent)

    def _edit(self, replace: Replace, positions: Positions, lines: LineIndex, torch_as: str | None) -> Edit:
        span = positions[replace.node]
        start = lines.offset(span.start.line, span.start.column)
        last = span.end
        if replace.until is not None:
            last = positions[replace.until].start
        end = lines.offset(last.line, last.column)
        if replace.through is not None:
            last = positions[replace.through].end
            end = lines.next_line(last.line)
        new = replace.new
        if isinstance(new, cst.CSTNode):
            content = self.render(replace.node, new)
        elif isinstance(new, tuple):
            content = (self.module.default_newline + lines.indent(span.start.line)).join(new)
        else:
            content = new
        if torch_as is not None:
            content = renamed_torch(content, torch_as)
        edit = lines.edit(start, end, content)
        if not replace.whole_lines and not replace.holds:
            return edit
        low, high = lines.around(span.start.line, last.line) if replace.whole_lines else (start, end)
        for node in replace.holds:
            other = positions[node]
            low = min(low, lines.offset(other.start.line, other.start.column))
            high = max(high, lines.offset(other.end.line, other.end.column))
        return dataclasses.replace(edit, held=(min(low, start), max(high, end)))


def _releasing(fix: Fix, releases: tuple[Release, ...], lines: LineIndex) -> Fix:
    """``fix`` with the uses of imported names it removes, and the edits removing the imports it
    alone leaves unused (devlint.engine.unused_imports)."""
    alone = tuple(unused_import_edits(lines.text, list(releases), lines))
    edits = tuple(sorted((*fix.edits, *alone), key=lambda e: e.start_offset))
    return dataclasses.replace(fix, edits=edits, releases=releases, unused_imports=alone)


def _fstring_quotes(parent: cst.CSTNode, child: cst.CSTNode, above: frozenset[str]) -> frozenset[str]:
    """The quote characters of the f-strings around ``child``."""
    return above | {parent.start.lstrip("rRbBfF")[0]} if isinstance(parent, cst.FormattedString) else above


def _uses_definition(plan: FixPlan) -> bool:
    return plan.device is not None and plan.device.inserted


def _calls_new_helper(plan: FixPlan) -> bool:
    return plan.helper is not None and plan.helper.inserted


def _rows_of(text: str) -> tuple[int, ...] | None:
    """``statement_rows`` of ``text``, None where CPython cannot read it (syntax newer than this
    interpreter's, which LibCST accepts)."""
    tree = cpython_tree(text)
    return None if tree is None else statement_rows(tree, text)
