"""The findings of a file's last check, reused where an edit cannot have changed them.

The language server checks the same file after every edit, and most edits change the body of one
top-level function. A finding's fix is the costly part of a check (its device, its new code
printed, its edits placed): for a report in an unchanged statement it is taken from the last check
instead, shifted past the edit, when everything the fix reads outside its own statement is as it
was. The walk still sees the whole file, so which reports exist, their messages and whether they
are reported are always worked out anew; only their fixes and positions are reused.

What a fix may read outside its own statement, and how each is held equal:
- the file's semantic facts (imports, value aliases, classes, function names, the bindings of the
  module scope, the name a device definition would get, the indentation and line endings, the
  constants it imports from other modules of its project): held in ``FileFacts`` and compared;
- what the edited function holds that analyses look up file-wide (argparse options, attribute
  assignments, calls of the file's functions, names moved to CUDA that a module-level
  ``x.device`` reads, nested functions): compared in ``_function_facts`` between the old and new
  function, which must import nothing, declare no ``global``/``nonlocal`` and define no class, and
  keep its header;
- where the import and definition fixes insert go (devlint.engine.placement): compared by the
  caller after placing them anew;
- only rules whose fixes read nothing else opt in (``Rule.reusable_fixes``).

Anything else, or a check whose new statement positions are not the old ones shifted, gets every
fix built anew. Tests hold every finding equal to a fresh check's over seeded edits of the fixture
programs and real files.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import libcst as cst

from devlint.analysis.devices import free_name
from devlint.analysis.semantic import SemanticModel
from devlint.analysis.tree import children
from devlint.engine.placement import Insertion
from devlint.findings import Edit, Finding, Fix, Location
from devlint.fixes import HelperRef, LineIndex, trimmed
from devlint.project import Imports
from devlint.settings import FixSettings
from devlint.torchfacts.names import MOVES

# The files whose last check is kept: an editor has a few open at once.
KEPT_FILES = 8

_STUB = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Pass()])])
_FORBIDDEN = (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal, cst.ClassDef)


@dataclass(frozen=True)
class FileFacts:
    """What fixes read of the whole file that an edit inside one function body could change."""

    style: tuple[str, str]
    imports: tuple
    value_aliases: tuple
    classes: tuple
    function_names: frozenset[str]
    module_bindings: tuple
    device_name: str
    torch_imported: bool
    imported: Imports

    @classmethod
    def of(cls, module: cst.Module, model: SemanticModel, settings: FixSettings, imported: Imports) -> FileFacts:
        return cls(
            (module.default_indent, module.default_newline),
            tuple(sorted(model.imports.items())),
            tuple(sorted((name, tuple(sorted(values))) for name, values in model.value_aliases.items())),
            tuple(sorted(model.classes.items())),
            frozenset(model.function_names),
            tuple(sorted((name, tuple(b.kind for b in found)) for name, found in model.module_scope.bindings.items())),
            free_name(model, settings.device_name),
            model.torch_imported_at is not None,
            imported,
        )


@dataclass(frozen=True)
class Kept:
    """One finding of a check, with what the next check needs to place its fix: ``statement``, the
    index of the top-level statement it is in (a kept tree of a section whose text recurs may
    stand elsewhere in the next check: its nodes are then another place's)."""

    finding: Finding
    needs_insertion: bool
    uses_definition: bool
    statement: int
    # The helper function the fix calls (devlint.fixes.HelperRef), to be placed again.
    helper: HelperRef | None = None


@dataclass(frozen=True)
class Check:
    """One check of a file, as the next check of it reads it."""

    lines: LineIndex
    rules: tuple[str, ...]
    settings: FixSettings
    body: tuple[cst.BaseStatement, ...]
    spans: tuple[tuple[int, int], ...]
    facts: FileFacts
    insertion: Insertion | None
    kept: dict[tuple, Kept]


def report_key(code: str, node: cst.CSTNode, start: cst.CSTNode, message: str, lead: int) -> tuple:
    return (code, node, start, message, lead)


class EarlierChecks:
    """The last check of each of the files checked lately (held by the caller for as long as it
    checks the same files: the language server's worker)."""

    def __init__(self, kept_files: int = KEPT_FILES) -> None:
        self._checks: OrderedDict[str, Check] = OrderedDict()
        self._kept_files = kept_files

    def get(self, filename: str) -> Check | None:
        return self._checks.get(filename)

    def put(self, filename: str, check: Check | None) -> None:
        self._checks.pop(filename, None)
        if check is not None:
            self._checks[filename] = check
            while len(self._checks) > self._kept_files:
                self._checks.popitem(last=False)


@dataclass(frozen=True)
class Window:
    """The one top-level statement an edit changed: statement ``index``, which spans ``old`` in
    the earlier text (``lines``); everything after it moved by ``delta`` characters and ``rows``
    lines."""

    index: int
    old: tuple[int, int]
    delta: int
    rows: int
    lines: LineIndex

    def expected(self, spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """The new spans of the earlier statements."""
        return [
            (start, end + self.delta) if i == self.index else (start, end) if end <= self.old[0] else (start + self.delta, end + self.delta)
            for i, (start, end) in enumerate(spans)
        ]

    def shifted(self, finding: Finding) -> Finding | None:
        """``finding`` where the edit moved it; None when it touches the changed statement."""
        edits = finding.fix.edits if finding.fix is not None else ()
        offsets = [o for e in edits for o in (e.start_offset, e.end_offset, *e.span)]
        if any(self.old[0] < offset < self.old[1] for offset in offsets):
            return None
        first, last = self.lines.location(self.old[0]).row, self.lines.location(self.old[1]).row
        rows = [finding.location.row, finding.end_location.row, *(r for e in edits for r in (e.start.row, e.end.row))]
        if any(first <= row <= last for row in rows):
            return None
        if finding.location.row < first and not any(offset >= self.old[1] for offset in offsets):
            return finding  # before the edit, and so are its edits (an insertion at the top)
        fix = finding.fix
        if fix is not None:
            fix = Fix(fix.applicability, fix.message, tuple(self._edit(e, last) for e in fix.edits))
        # Built field by field (every field of Finding): a check takes over thousands of them.
        return Finding(
            finding.code, finding.name, finding.message, finding.filename,
            self._location(finding.location, last), self._location(finding.end_location, last),
            fix, finding.cell, finding.source_line,
            finding.noqa_row + self.rows if finding.noqa_row > last else finding.noqa_row,
        )

    def _location(self, location: Location, last: int) -> Location:
        return Location(location.row + self.rows, location.column) if location.row > last else location

    def _edit(self, edit: Edit, last: int) -> Edit:
        if edit.end_offset <= self.old[0] and (edit.held is None or edit.held[1] <= self.old[0]):
            return edit
        held = None if edit.held is None else (edit.held[0] + self.delta, edit.held[1] + self.delta)
        return Edit(
            edit.start_offset + self.delta, edit.end_offset + self.delta, edit.content,
            self._location(edit.start, last), self._location(edit.end, last), held,
        )


def window(earlier: Check, lines: LineIndex, module: cst.Module, model: SemanticModel, facts: FileFacts) -> Window | None:
    """The statement an edit from ``earlier``'s text to ``lines.text`` changed, when the findings
    outside it may be reused (see the module docstring); None otherwise."""
    old, text = earlier.lines.text, lines.text
    if len(module.body) != len(earlier.body) or facts != earlier.facts:
        return None
    start, end, content = trimmed(old, 0, len(old), text)
    index = next((i for i, (first, last) in enumerate(earlier.spans) if first <= start and end <= last), None)
    if index is None:
        return None
    before, after = earlier.body[index], module.body[index]
    if not (isinstance(before, cst.FunctionDef) and isinstance(after, cst.FunctionDef)):
        return None
    moved = _read_devices(model)
    old_facts = _function_facts(module.code_for_node, before, facts.function_names, moved)
    if old_facts is None or old_facts != _function_facts(module.code_for_node, after, facts.function_names, moved):
        return None
    return Window(index, earlier.spans[index], len(text) - len(old), len(lines.starts) - len(earlier.lines.starts), earlier.lines)


def _function_facts(
    code: Callable[[cst.CSTNode], str], function: cst.FunctionDef, function_names: frozenset[str], moved: frozenset[str]
) -> tuple | None:
    """What file-wide lookups see of ``function``; None when it may change more than they see."""
    header = code(function.with_changes(body=_STUB))
    nested: list[str] = []
    options: list[str] = []
    attributes: list[tuple[str, str]] = []
    calls: list[str] = []
    moves: set[str] = set()
    stack: list[cst.CSTNode] = list(children(function.body))
    while stack:
        node = stack.pop()
        if isinstance(node, _FORBIDDEN):
            return None
        if isinstance(node, cst.FunctionDef):
            nested.append(node.name.value)
        elif isinstance(node, cst.Call):
            name = _called(node)
            if name == "add_argument":
                options.append(code(node))
            if name in function_names:
                calls.append(code(node))
            if name in MOVES and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name):
                if node.func.value.value in moved:
                    moves.add(code(node))
        elif isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                for part in _attributes(target):
                    attributes.append((part, code(node)))
        stack.extend(children(node))
    return (header, sorted(nested), sorted(options), sorted(attributes), sorted(calls), sorted(moves))


def _called(call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def _attributes(target: cst.CSTNode) -> list[str]:
    found: list[str] = []
    stack = [target]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Attribute):
            found.append(node.attr.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            stack.extend(element.value for element in node.elements)
        elif isinstance(node, cst.StarredElement):
            stack.append(node.value)
    return found


def _read_devices(model: SemanticModel) -> frozenset[str]:
    """Names whose device a module-level binding reads (``saved = t.device``): the device finder
    asks whether the file moves them to CUDA anywhere (devlint.analysis.devices)."""
    names = set()
    for found in model.module_scope.bindings.values():
        for binding in found:
            value = binding.value
            if isinstance(value, cst.Attribute) and value.attr.value == "device" and isinstance(value.value, cst.Name):
                names.add(value.value.value)
    return frozenset(names)
