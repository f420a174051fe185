"""Everything rules share about one file, and the turning of their reports into findings."""

from __future__ import annotations

import io
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from devlint.analysis.cuda_regions import CudaRegions
from devlint.analysis.devices import DeviceFinder, device_expression, free_name
from devlint.analysis.reaching import Flows
from devlint.analysis.semantic import Scope, SemanticModel, dotted_name, string_value
from devlint.analysis.tracker import ScopeTracker
from devlint.analysis.tree import children
from devlint.analysis.version_guards import older_branches, runs_only_below
from devlint.engine.positions import positions as node_positions
from devlint.engine.render import code_at_indent
from devlint.findings import Edit, Finding, Fix, Location
from devlint.fixes import DeviceRef, FixPlan, LineIndex, Replace
from devlint.rule import FixFactory, Report, Rule, Site
from devlint.settings import FixSettings
from devlint.torchfacts.api_versions import Requirement, introduced, newest
from devlint.torchfacts.version import shown


class FileContext:
    def __init__(
        self, filename: str, text: str, module: cst.Module, settings: FixSettings = FixSettings(), stitched: bool = False
    ) -> None:
        self.filename = filename
        self.text = text
        self.module = module
        # Parsed in sections (devlint.engine.sections): it must print back to the text exactly.
        self.stitched = stitched
        self.settings = settings
        self.model = SemanticModel(module)
        self.tracker = ScopeTracker(self.model)
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.flows = Flows(self.parents.get, walrus=":=" in text)
        self._devices = DeviceFinder(self.model, self.flows, settings.device_name)
        self._regions = CudaRegions(self)
        self.reports: list[Report] = []
        self._inserted_name: str | None = None
        # Why the inserted definition may change what the program does (then its fixes are unsafe).
        self._definition_hazard: str | None = None
        # The name new code uses for torch when the file imports it only under another name.
        self._torch_as: str | None = None

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
        lead: int = 0,
    ) -> None:
        self.reports.append(Report(rule, node, start or node, message, fix, self.site(node), lead))

    # -- for fixes, after the walk ---------------------------------------------------------

    def device(self, site: Site, avoid: Iterable[str] = ()) -> DeviceRef:
        """The device expression a fix at ``site`` uses (see devlint.analysis.devices)."""
        found = self._devices.find(site.scope, site.node, avoid)
        if found is not None:
            return DeviceRef(found.expr)
        if self._inserted_name is None:
            self._inserted_name = free_name(self.model, self.settings.device_name)
        return DeviceRef(self._inserted_name, inserted=True)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def qualname(self, node: cst.CSTNode) -> str | None:
        return self.model.qualname(node)

    def module_constant(self, name: str) -> cst.BaseExpression | None:
        """The value of a module-level name assigned exactly once, else None."""
        bindings = self.model.module_scope.bindings.get(name, [])
        if len(bindings) == 1 and bindings[0].kind == "assign":
            return bindings[0].value
        return None

    def _reportable(self, report: Report) -> bool:
        """False for code in a branch that only runs on a torch older than the project supports,
        or than the one the rule's advice needs (devlint.analysis.version_guards), and, for the rules that
        ask, for code that only runs where a tensor or device is known to be on CUDA
        (devlint.analysis.cuda_regions)."""
        since = max(self.settings.torch_version, report.rule.advice_since)
        if runs_only_below(older_branches(report.node, self), since):
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
        """The newest API ``plan``'s new code introduces, or the rule's own bound if that is newer."""
        names: set[str] = set()
        for replace in plan.replacements:
            new = replace.new
            text = self.module.code_for_node(new) if isinstance(new, cst.CSTNode) else "\n".join(new) if isinstance(new, tuple) else new
            names |= introduced(text, self.code(replace.node))
        found = newest(names)
        if found is None or plan.requires > found.since:
            return Requirement("", plan.requires)
        return found

    def findings(self) -> list[Finding]:
        self.reports = [report for report in self.reports if self._reportable(report)]
        if not self.reports:
            return []
        lines = LineIndex(self.text)
        planned = [self._plan(report) for report in self.reports]
        plans = [plan for plan, _ in planned]
        # Only these nodes' positions are needed (devlint.engine.positions; any other is still found).
        wanted = [node for report in self.reports for node in (report.start, report.node)]
        wanted += [r.node for plan in plans if plan is not None for r in plan.replacements]
        positions = node_positions(self.module, lines, [*wanted, *self.module.body], strict=self.stitched)
        # A module that imports torch only inside functions runs without torch: new code goes
        # after the function's own `import torch`, never into a new module-level import.
        local = {
            id(report): self._local_torch(report.site.node)
            for report, plan in zip(self.reports, plans)
            if plan is not None and (plan.needs_torch or (plan.device is not None and plan.device.inserted))
        }
        needing = [report.site for report in self.reports if id(report) in local and local[id(report)] is None]
        insertions = self._insertion_edits(needing, positions, lines) if needing else {}
        optional_torch = self._torch_only_in_functions() if needing else None
        findings: list[Finding] = []
        for report, (plan, note) in zip(self.reports, planned):
            start = positions[report.start].start
            end = positions[report.node].end
            fix = None
            if plan is not None and not self._breaks_fstring(plan):
                edits = [self._edit(r, positions, lines) for r in plan.replacements]
                uses_definition = plan.device is not None and plan.device.inserted
                applicability, message = plan.applicability, plan.message
                spot = local.get(id(report))
                if spot is not None:
                    if uses_definition:
                        edits.append(self._local_definition(spot, positions, lines))
                else:
                    if (plan.needs_torch or uses_definition) and "torch" in insertions:
                        edits.append(insertions["torch"])
                        if optional_torch is not None:
                            applicability = "unsafe"
                            message += (
                                f" (unsafe: the module imports torch only inside functions (line {positions[optional_torch].start.line}); "
                                "a module-level `import torch` makes it fail to import where torch is missing)"
                            )
                    if uses_definition:
                        edits.append(insertions["device"])
                        if self._definition_hazard is not None:
                            applicability = "unsafe"
                            message += f" (unsafe: {self._definition_hazard})"
                fix = Fix(applicability, message, tuple(sorted(edits, key=lambda e: e.start_offset)))
            findings.append(
                Finding(
                    code=report.rule.code,
                    name=report.rule.name,
                    message=report.message + note,
                    filename=self.filename,
                    location=Location(start.line, start.column + 1 - report.lead),
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
        if self._torch_as is not None:
            content = renamed_torch(content, self._torch_as)
        return lines.edit(start, end, content)

    def _insertion_edits(self, sites: list[Site], positions, lines: LineIndex) -> dict[str, Edit]:
        """``import torch`` (when missing) and ``device = ...`` (when used), placed once: after the
        last top-level import before the first statement that needs them."""
        body = list(self.module.body)
        index = {id(stmt): i for i, stmt in enumerate(body)}
        first_use = self._deadline(sites, body, index)
        imports = [i for i in range(first_use) if _is_import_line(body[i])]
        if self.settings.cell_break is not None:
            imports = self._torch_cell_imports(body, imports)
        # The definition asks torch whether CUDA is available, which fixes the visible GPUs for
        # the rest of the run: it must come after the script's own CUDA_VISIBLE_DEVICES (and
        # default device) settings that precede the first use.
        settings = [
            i
            for i in range(first_use)
            if not isinstance(body[i], (cst.FunctionDef, cst.ClassDef)) and self._changes_gpu_environment(body[i])
        ]
        if settings and (not imports or settings[-1] > imports[-1]):
            imports.append(settings[-1])
        newline = self.module.default_newline
        prefix = ""
        if imports:
            after = imports[-1]
            row = positions[body[after]].end.line
            offset = lines.starts[row] if row < len(lines.starts) else len(self.text)
            if offset == len(self.text) and not self.text.endswith(("\n", "\r")):
                prefix = newline
            bound = {name for i in range(after + 1) for name in _torch_names(body[i])}
            torch_bound = "torch" in bound
            # `import torch as th` alone: the new code says `th.` rather than adding `import torch`.
            alias = self.model.torch_alias()
            if not torch_bound and alias in bound and "torch" not in self.model.module_scope.bindings:
                self._torch_as, torch_bound = alias, True
        else:
            after = -1
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
        self._definition_hazard = None
        later = self._visible_devices_set_after(after) if self._inserted_name is not None else None
        if later is not None:
            row = self._line_mentioning(later, "CUDA_VISIBLE_DEVICES", positions, lines)
            self._definition_hazard = (
                f"the inserted `{self._inserted_name}` definition asks torch for the GPU before line {row} sets CUDA_VISIBLE_DEVICES"
            )
        # `try: import torch` / `except ImportError:` keeps the module importable without torch;
        # a module-level definition would not be
        name = self._torch_as or "torch"
        binders = [body[i] for i in range(after + 1) if name in _torch_names(body[i])]
        if self._inserted_name is not None and binders and all(_tolerates_missing_torch(b) for b in binders):
            row = positions[binders[0]].start.line
            self._definition_hazard = (
                f"torch is imported inside `try:` at line {row}; the inserted `{self._inserted_name}` definition "
                "fails where torch is missing"
            )
        edits: dict[str, Edit] = {}
        if not torch_bound:
            edits["torch"] = lines.edit(offset, offset, f"{prefix}import torch{newline}")
            prefix = ""
        if self._inserted_name is not None:
            expression = device_expression(self.settings.device_expression)
            if self._torch_as is not None:
                expression = renamed_torch(expression, self._torch_as)
            edits["device"] = lines.edit(offset, offset, f"{prefix}{self._inserted_name} = {expression}{newline}")
        return edits

    def _local_torch(self, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
        """The ``import torch`` line of the function that holds ``node``, when the module binds no
        torch at its top level and that function imports it in its own body before ``node``."""
        if any("torch" in _torch_names(stmt) or _imports_torch(stmt) for stmt in self.module.body):
            return None
        child: cst.CSTNode = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.IndentedBlock) and isinstance(self.parent(ancestor), cst.FunctionDef):
                for stmt in ancestor.body:
                    if stmt is child:
                        break
                    if "torch" in _torch_names(stmt) and isinstance(stmt, cst.SimpleStatementLine):
                        return stmt
            child = ancestor
        return None

    def _torch_only_in_functions(self) -> cst.CSTNode | None:
        """The first ``import torch`` inside a function, in a module that has none at its top level."""
        if any(_imports_torch(stmt) or _torch_names(stmt) for stmt in self.module.body):
            return None
        return next((n for n in _nodes(self.module) if isinstance(n, cst.SimpleStatementLine) and _imports_torch(n)), None)

    def _local_definition(self, spot: cst.SimpleStatementLine, positions, lines: LineIndex) -> Edit:
        """The device definition on the line after the function's own ``import torch``."""
        span = positions[spot]
        row = span.end.line
        offset = lines.starts[row] if row < len(lines.starts) else len(self.text)
        newline = self.module.default_newline
        prefix = newline if offset == len(self.text) and not self.text.endswith(("\n", "\r")) else ""
        expression = device_expression(self.settings.device_expression)
        return lines.edit(offset, offset, f"{prefix}{lines.indent(span.start.line)}{self._inserted_name} = {expression}{newline}")

    @staticmethod
    def _line_mentioning(node: cst.CSTNode, word: str, positions, lines: LineIndex) -> int:
        span = positions[node]
        return next((row for row in range(span.start.line, span.end.line + 1) if word in lines.line(row)), span.start.line)

    def _deadline(self, sites: list[Site], body: list[cst.BaseStatement], index: dict[int, int]) -> int:
        """The first top-level statement that may run code needing the definition: one that uses it
        as it runs, or, after a function using it is defined, anything but further definitions and
        imports (which may then still come first: a later `import torch` included)."""
        tops: dict[int, list[Site]] = {}
        for site in sites:
            tops.setdefault(self._top_level_index(site.node, index), []).append(site)
        first = min(tops)
        for i in range(first, len(body)):
            if any(not self._deferred(site.node, body[i]) for site in tops.get(i, ())):
                return i
            if not isinstance(body[i], (cst.FunctionDef, cst.ClassDef)) and not _is_import_line(body[i]):
                return i
        return len(body)

    def _deferred(self, node: cst.CSTNode, top: cst.CSTNode) -> bool:
        """``node`` (in the top-level statement ``top``) runs only when a function is called."""
        child, current = node, self.parents.get(node)
        while current is not None:
            if isinstance(current, (cst.FunctionDef, cst.Lambda)) and child is current.body:
                return True
            if current is top:
                return False
            child, current = current, self.parents.get(current)
        return False

    def _changes_gpu_environment(self, stmt: cst.CSTNode) -> bool:
        """``stmt`` touches the environment or the default device in code (not in a docstring)."""
        if not any(word in self.text for word in _GPU_SETTINGS):
            return False
        return any(isinstance(node, cst.Name) and node.value in _GPU_SETTINGS for node in _nodes(stmt))

    def _visible_devices_set_after(self, after: int) -> cst.CSTNode | None:
        """Code setting CUDA_VISIBLE_DEVICES that runs after top-level statement ``after`` (later
        at top level, or inside a function): the definition would run first."""
        if "CUDA_VISIBLE_DEVICES" not in self.text:
            return None
        for i, stmt in enumerate(self.module.body):
            if i <= after and not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            setting = next((node for node in _nodes(stmt) if _sets_visible_devices(node)), None)
            if setting is not None:
                return setting
        return None

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


# Names whose use changes which GPUs torch sees, or the default device.
_GPU_SETTINGS = ("environ", "putenv", "set_default_device", "set_default_tensor_type")
_VISIBLE = "CUDA_VISIBLE_DEVICES"


def _sets_visible_devices(node: cst.CSTNode) -> bool:
    """``node`` writes CUDA_VISIBLE_DEVICES: `environ[...] = v` (also `+=`, `del`), or
    `environ.update(...)`, `.setdefault(...)`, `.pop(...)`, `putenv(...)` naming it. Reading it
    (`os.environ.get(...)`, a comparison) changes nothing."""
    if isinstance(node, (cst.Assign, cst.AugAssign, cst.Del)):
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        return any(_is_visible_devices_slot(t) for target in targets for t in _nodes(target))
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if name not in ("update", "setdefault", "pop", "putenv"):
        return False
    named = any(a.keyword is not None and a.keyword.value == _VISIBLE for a in node.args)
    given = any(
        string_value(n) == _VISIBLE for a in node.args for n in _nodes(a.value) if isinstance(n, cst.SimpleString)
    )
    return named or given


def _is_visible_devices_slot(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Subscript)
        and len(node.slice) == 1
        and isinstance(node.slice[0].slice, cst.Index)
        and string_value(node.slice[0].slice.value) == _VISIBLE
    )


def _nodes(root: cst.CSTNode) -> list[cst.CSTNode]:
    """Every node under ``root`` that the walk visits (attribute names included)."""
    found: list[cst.CSTNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(children(node))
    return found


def _is_import_line(stmt: cst.CSTNode) -> bool:
    """An import line, or a `try:` whose body only imports (``except ImportError`` fallbacks)."""
    if isinstance(stmt, cst.Try):
        return all(_is_import_line(inner) for inner in stmt.body.body)
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


def _tolerates_missing_torch(stmt: cst.CSTNode) -> bool:
    """A `try:` import block with a handler that lets the module go on without torch (one that
    does not end by raising or exiting)."""
    if not isinstance(stmt, cst.Try):
        return False
    for handler in stmt.handlers:
        last = handler.body.body[-1] if handler.body.body else None
        small = last.body[-1] if isinstance(last, cst.SimpleStatementLine) and last.body else None
        if isinstance(small, cst.Raise):
            continue
        call = small.value if isinstance(small, cst.Expr) else None
        if isinstance(call, cst.Call) and dotted_name(call.func) in ("exit", "quit", "sys.exit", "os._exit"):
            continue
        return True
    return False


def _torch_names(stmt: cst.CSTNode) -> set[str]:
    """The names an import line (or a `try:` block of them) binds to the torch module itself:
    ``import torch`` binds ``torch``, ``import torch as th`` binds ``th``."""
    if isinstance(stmt, cst.Try):
        return {name for inner in stmt.body.body for name in _torch_names(inner)}
    if not isinstance(stmt, cst.SimpleStatementLine):
        return set()
    names = set()
    for small in stmt.body:
        if not isinstance(small, cst.Import):
            continue
        for alias in small.names:
            name = dotted_name(alias.name)
            if name is None or name.split(".")[0] != "torch":
                continue
            if alias.asname is None:
                names.add("torch")
            elif name == "torch" and isinstance(alias.asname.name, cst.Name):
                names.add(alias.asname.name.value)
    return names


def renamed_torch(code: str, alias: str) -> str:
    """``code`` with the module name ``torch`` (a name followed by a dot, not inside a string or
    comment) spelled ``alias``; unchanged when it does not tokenize."""
    try:
        # newline="": lines end at \r, \n or \r\n, as LineIndex counts them
        tokens = list(tokenize.generate_tokens(io.StringIO(code, newline="").readline))
    except (tokenize.TokenError, SyntaxError):
        return code
    index = LineIndex(code)
    offsets = [
        index.offset(*token.start)
        for token, following in zip(tokens, tokens[1:])
        if token.type == tokenize.NAME and token.string == "torch" and following.string == "."
    ]
    for offset in reversed(offsets):
        code = code[:offset] + alias + code[offset + len("torch"):]
    return code


def _is_preamble(stmt: cst.CSTNode, position: int) -> bool:
    """A module docstring or a ``from __future__`` import: nothing may come before them."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    small = stmt.body[0]
    if position == 0 and isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
        return True
    return isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and small.module.value == "__future__"

