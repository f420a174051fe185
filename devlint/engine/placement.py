"""Where the code a fix needs beyond its own edit goes, and when adding it is unsafe.

A fix may name torch in a file that does not import it, use a device name the file does not
define (``DeviceRef.inserted``) or call a helper function it does not define (``HelperRef``): then
one ``import torch``, one definition and one function are inserted for the whole file, after the
last top-level import before the first statement that needs them. In a
module that imports torch only inside functions, the definition goes after the function's own
``import torch`` instead. These functions only decide; FileContext attaches the edits to fixes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from devlint.analysis.devices import device_expression
from devlint.analysis.semantic import SemanticModel
from devlint.analysis.tree import ancestors, climbed, descendants
from devlint.engine.gpu_environment import changes_gpu_environment, may_change_gpu_environment, visible_devices_set_after
from devlint.engine.positions import Positions
from devlint.engine.render import in_file_style
from devlint.engine.torch_imports import imports_torch, is_import_line, renamed_torch, tolerates_missing_torch, torch_names
from devlint.findings import Edit
from devlint.fixes import HelperRef, LineIndex
from devlint.settings import FixSettings
from devlint.torchfacts.names import VISIBLE_DEVICES


@dataclass(frozen=True)
class Source:
    """What placement reads of one file: its tree, semantic model and parent links, the positions
    findings looked up, its line index (which holds the text) and the fix settings."""

    module: cst.Module
    model: SemanticModel
    parents: Mapping[cst.CSTNode, cst.CSTNode]
    positions: Positions
    lines: LineIndex
    settings: FixSettings


@dataclass(frozen=True)
class Insertion:
    """The module-level lines fixes may add, placed once for the file, and what makes them unsafe."""

    # ``import torch``, where the file binds no torch before the spot.
    torch: Edit | None = None
    # ``name = expression``, where some fix uses the inserted device name.
    device: Edit | None = None
    # ``def name(): ...`` per helper function some fix calls, by name.
    helpers: tuple[tuple[str, Edit], ...] = ()
    # New code's name for torch: the file imports it only as ``import torch as <name>``.
    torch_as: str | None = None
    # Why a module-level ``import torch`` may break the module.
    import_hazard: str | None = None
    # Why the inserted definition may change what the program does.
    definition_hazard: str | None = None


@dataclass(frozen=True)
class Placement:
    """Per fix, the function's own ``import torch`` its definition goes after (None: the module
    level), and the one module-level insertion the file gets."""

    local: tuple[cst.SimpleStatementLine | None, ...]
    module: Insertion


@dataclass(frozen=True)
class _Spot:
    """Where the module-level insertion goes: after top-level statement ``after`` (-1: none), at
    text ``offset``, behind ``prefix`` (a newline the file lacks at its end)."""

    after: int
    offset: int
    prefix: str
    torch_bound: bool
    torch_as: str | None


def place(
    source: Source,
    needs: Sequence[cst.CSTNode | None],
    inserted_name: str | None,
    helpers: Sequence[HelperRef] = (),
) -> Placement:
    """``needs``: per fix, the node it was reported at when it needs torch, the inserted
    definition or a helper, else None. ``inserted_name``: the definition's name, once some fix
    asked for it; ``helpers``: those fixes call that the file lacks."""
    top_level = binds_torch_at_top_level(source.module)
    local = tuple(None if node is None or top_level else local_torch_import(source, node) for node in needs)
    needing = [node for node, spot in zip(needs, local) if node is not None and spot is None]
    module = _module_insertion(source, needing, inserted_name, helpers) if needing else Insertion()
    return Placement(local, module)


def binds_torch_at_top_level(module: cst.Module) -> bool:
    """A top-level statement of ``module`` imports torch or binds the name ``torch``."""
    return any("torch" in torch_names(stmt) or imports_torch(stmt) for stmt in module.body)


def local_torch_import(source: Source, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
    """The ``import torch`` line of the function that holds ``node``, for a module that binds no
    torch at its top level (``binds_torch_at_top_level``, asked once by the caller), when that
    function imports it in its own body before ``node``."""
    child: cst.CSTNode = node
    for ancestor in ancestors(source.parents, node):
        if isinstance(ancestor, cst.IndentedBlock) and isinstance(source.parents.get(ancestor), cst.FunctionDef):
            for stmt in ancestor.body:
                if stmt is child:
                    break
                if "torch" in torch_names(stmt) and isinstance(stmt, cst.SimpleStatementLine):
                    return stmt
        child = ancestor
    return None


def local_definition(source: Source, spot: cst.SimpleStatementLine, name: str | None) -> Edit:
    """The device definition on the line after the function's own ``import torch``."""
    span = source.positions[spot]
    offset, prefix = _line_after(source, span.end.line)
    newline = source.module.default_newline
    expression = device_expression(source.settings.device_expression)
    return source.lines.edit(offset, offset, f"{prefix}{source.lines.indent(span.start.line)}{name} = {expression}{newline}")


def _module_insertion(source: Source, nodes: list[cst.CSTNode], inserted_name: str | None, helpers: Sequence[HelperRef]) -> Insertion:
    """``import torch`` (when missing) and the definition (when used), placed once: after the last
    top-level import before the first statement that needs them."""
    body = list(source.module.body)
    first_use = _deadline(source, nodes, body)
    anchors = _anchors(source, body, first_use)
    spot = _after_anchor(source, body, anchors[-1]) if anchors else _at_top(source, body, first_use)
    newline = source.module.default_newline
    torch = None if spot.torch_bound else source.lines.edit(spot.offset, spot.offset, f"{spot.prefix}import torch{newline}")
    functions = tuple((helper.name, _function(source, body, spot, helper, torch)) for helper in helpers)
    device = None
    if inserted_name is not None:
        device = _definition(source, body, spot, inserted_name, torch, {edit.start_offset for _, edit in functions})
    return Insertion(
        torch=torch,
        device=device,
        helpers=functions,
        torch_as=spot.torch_as,
        import_hazard=_import_hazard(source),
        definition_hazard=_definition_hazard(source, body, spot, inserted_name),
    )


def _definition(source: Source, body: list[cst.BaseStatement], spot: _Spot, name: str, torch: Edit | None, functions: set[int]) -> Edit:
    """``name = <device expression>`` at ``spot``: a blank line after the imports, as isort and
    ruff leave code after them, and two before a function or class right after it, as ruff and
    black leave one (unless a helper function inserted there comes between)."""
    newline = source.module.default_newline
    expression = device_expression(source.settings.device_expression)
    if spot.torch_as is not None:
        expression = renamed_torch(expression, spot.torch_as)
    prefix = spot.prefix if torch is None else ""
    if _ends_import_block(source, body, spot, torch):
        prefix += newline
    trail = ""
    following = body[spot.after + 1] if spot.after + 1 < len(body) else None
    if isinstance(following, (cst.FunctionDef, cst.ClassDef)) and source.settings.cell_break is None and spot.offset not in functions:
        trail = newline * max(0, 2 - _blank_rows(source.lines.text[spot.offset :].splitlines()))
    return _ranked(source.lines.edit(spot.offset, spot.offset, f"{prefix}{name} = {expression}{newline}{trail}"), 1)


def _function(source: Source, body: list[cst.BaseStatement], spot: _Spot, helper: HelperRef, torch: Edit | None) -> Edit:
    """``helper``'s definition at ``spot``, after the import and the device definition inserted
    there, or after that definition where an earlier fix inserted it: so the two end in one order
    whichever fix comes first. Two blank lines on either side, as ruff and black leave a
    top-level function."""
    assert helper.definition is not None
    text, lines, newline = source.lines.text, source.lines, source.module.default_newline
    offset, prefix = spot.offset, spot.prefix
    following = body[spot.after + 1] if spot.after + 1 < len(body) else None
    if following is not None and _is_device_definition(source, following, spot):
        offset, prefix = _line_after(source, source.positions[following].end.line)
    after_import = torch is not None and torch.start_offset == offset
    before = 0 if after_import else _blank_rows(text[:offset].splitlines()[::-1])
    lead = "" if offset == 0 and not prefix else newline * max(0, 2 - before)
    trail = newline * max(0, 2 - _blank_rows(text[offset:].splitlines())) if text[offset:].strip() else ""
    code = in_file_style(source.module, helper.definition, spot.torch_as)
    return _ranked(lines.edit(offset, offset, f"{prefix}{lead}{code}{newline}{trail}"), 2)


def _is_device_definition(source: Source, stmt: cst.BaseStatement, spot: _Spot) -> bool:
    """``stmt`` is ``name = <the device expression>``, as a fix inserts it."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
        return False
    expression = device_expression(source.settings.device_expression)
    written = source.module.code_for_node(stmt.body[0].value)
    return written in (expression, renamed_torch(expression, spot.torch_as or "torch"))


def _blank_rows(rows: list[str]) -> int:
    return next((i for i, row in enumerate(rows) if row.strip()), len(rows))


def _ranked(edit: Edit, rank: int) -> Edit:
    """``edit`` going after the insertions of lower rank at its offset (see devlint.fixes.apply_fixes)."""
    return dataclasses.replace(edit, rank=rank)


def _ends_import_block(source: Source, body: list[cst.BaseStatement], spot: _Spot, torch: Edit | None) -> bool:
    """The insertion follows an import (a parenthesised one spans lines: its end counts), or the
    ``import torch`` inserted there, so the definition starts the code after the import block."""
    follows_import = torch is not None or (spot.after >= 0 and is_import_line(body[spot.after]))
    return source.settings.cell_break is None and follows_import


def _deadline(source: Source, nodes: list[cst.CSTNode], body: list[cst.BaseStatement]) -> int:
    """The first top-level statement that may run code needing the definition: one that uses it
    as it runs, or, after a function using it is defined, anything but further definitions and
    imports (which may then still come first: a later `import torch` included)."""
    # Per node: the index of its top-level statement, and whether it runs only when a function
    # is called; found by one climb for all the nodes (devlint.analysis.tree.climbed).
    known: dict[int, tuple[int, bool]] = {id(stmt): (i, False) for i, stmt in enumerate(body)}
    tops: dict[int, list[bool]] = {}
    for node in nodes:
        top, deferred = climbed(node, source.parents.get, known, _deferring, (0, False))
        tops.setdefault(top, []).append(deferred)
    for i in range(min(tops), len(body)):
        if not all(tops.get(i, ())):
            return i
        if not isinstance(body[i], (cst.FunctionDef, cst.ClassDef)) and not is_import_line(body[i]):
            return i
    return len(body)


def _anchors(source: Source, body: list[cst.BaseStatement], first_use: int) -> list[int]:
    """The top-level statements before ``first_use`` the insertion must follow: the imports (in a
    notebook, those of the cell that imports torch) and the last GPU setting, if it comes later."""
    imports = [i for i in range(first_use) if is_import_line(body[i])]
    if source.settings.cell_break is not None:
        imports = _torch_cell_imports(source, body, imports)
    # The definition asks torch whether CUDA is available, which fixes the visible GPUs for
    # the rest of the run: it must come after the script's own CUDA_VISIBLE_DEVICES (and
    # default device) settings that precede the first use.
    settings = [
        i
        for i in range(first_use if may_change_gpu_environment(source.lines.text) else 0)
        if not isinstance(body[i], (cst.FunctionDef, cst.ClassDef)) and changes_gpu_environment(body[i])
    ]
    if settings and (not imports or settings[-1] > imports[-1]):
        imports.append(settings[-1])
    return imports


def _after_anchor(source: Source, body: list[cst.BaseStatement], after: int) -> _Spot:
    """The line after top-level statement ``after``, and whether torch is bound by then."""
    offset, prefix = _line_after(source, source.positions[body[after]].end.line)
    bound = {name for i in range(after + 1) for name in torch_names(body[i])}
    # `import torch as th` alone: the new code says `th.` rather than adding `import torch`.
    alias = source.model.torch_alias()
    if "torch" not in bound and alias in bound and "torch" not in source.model.module_scope.bindings:
        return _Spot(after, offset, prefix, torch_bound=True, torch_as=alias)
    return _Spot(after, offset, prefix, torch_bound="torch" in bound, torch_as=None)


def _at_top(source: Source, body: list[cst.BaseStatement], first_use: int) -> _Spot:
    """With no import to follow: before the first statement that is neither the docstring, a
    ``from __future__`` import nor a notebook's cell break."""
    at = next(
        (i for i, stmt in enumerate(body[: first_use + 1]) if not _is_preamble(stmt, i) and not _is_cell_break(source, stmt)),
        first_use,
    )
    # A decorated function or class starts at its first decorator: LibCST's span starts at `def`.
    stmt = body[at]
    first = stmt.decorators[0] if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.decorators else stmt
    offset = source.lines.starts[source.positions[first].start.line - 1]
    return _Spot(-1, offset, "", torch_bound=False, torch_as=None)


def _line_after(source: Source, row: int) -> tuple[int, str]:
    """The offset where the line after ``row`` starts, and the newline to write first there when
    ``row`` is the file's last line and has none."""
    lines, text = source.lines, source.lines.text
    offset = lines.starts[row] if row < len(lines.starts) else len(text)
    prefix = source.module.default_newline if offset == len(text) and not text.endswith(("\n", "\r")) else ""
    return offset, prefix


def _import_hazard(source: Source) -> str | None:
    inside = torch_only_in_functions(source.module)
    if inside is None:
        return None
    return (
        f"the module imports torch only inside functions (line {source.positions[inside].start.line}); "
        "a module-level `import torch` makes it fail to import where torch is missing"
    )


def _definition_hazard(source: Source, body: list[cst.BaseStatement], spot: _Spot, name: str | None) -> str | None:
    if name is None:
        return None
    # `try: import torch` / `except ImportError:` keeps the module importable without torch;
    # a module-level definition would not be
    torch = spot.torch_as or "torch"
    binders = [body[i] for i in range(spot.after + 1) if torch in torch_names(body[i])]
    if binders and all(tolerates_missing_torch(b) for b in binders):
        row = source.positions[binders[0]].start.line
        return f"torch is imported inside `try:` at line {row}; the inserted `{name}` definition fails where torch is missing"
    later = visible_devices_set_after(source.module, source.lines.text, spot.after)
    if later is not None:
        row = _line_mentioning(source, later, VISIBLE_DEVICES)
        return f"the inserted `{name}` definition asks torch for the GPU before line {row} sets CUDA_VISIBLE_DEVICES"
    return None


def torch_only_in_functions(module: cst.Module) -> cst.CSTNode | None:
    """The first ``import torch`` inside a function, in a module that has none at its top level."""
    if any(imports_torch(stmt) or torch_names(stmt) for stmt in module.body):
        return None
    return next((n for n in descendants(module) if isinstance(n, cst.SimpleStatementLine) and imports_torch(n)), None)


def _line_mentioning(source: Source, node: cst.CSTNode, word: str) -> int:
    span = source.positions[node]
    return next((row for row in range(span.start.line, span.end.line + 1) if word in source.lines.line(row)), span.start.line)


def _deferring(parent: cst.CSTNode, child: cst.CSTNode, above: tuple[int, bool]) -> tuple[int, bool]:
    """``child`` is in the top-level statement ``above`` names, and runs only when a function is
    called if ``above`` says so or ``child`` is the body of a function (``parent``)."""
    return above[0], above[1] or (isinstance(parent, (cst.FunctionDef, cst.Lambda)) and child is parent.body)


def _torch_cell_imports(source: Source, body: list[cst.BaseStatement], imports: list[int]) -> list[int]:
    """Of ``imports``, those in the cell of the first import that binds torch itself (``import
    torch``), else of the first torch import: a notebook keeps its setup in that cell even when
    later cells import more before the first use. A cell of ``from torch.nn import ...`` alone
    would take an ``import torch`` that a later cell already makes."""
    first = next((i for i in imports if torch_names(body[i])), None)
    if first is None:
        first = next((i for i in imports if imports_torch(body[i])), None)
    if first is None:
        return imports
    start = max((i for i in range(first) if _is_cell_break(source, body[i])), default=-1)
    end = next((i for i in range(first, len(body)) if _is_cell_break(source, body[i])), len(body))
    return [i for i in imports if start < i < end]


def _is_cell_break(source: Source, stmt: cst.CSTNode) -> bool:
    cell_break = source.settings.cell_break
    if cell_break is None or not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    small = stmt.body[0]
    return isinstance(small, cst.Expr) and isinstance(small.value, cst.Name) and small.value.value == cell_break


def _is_preamble(stmt: cst.CSTNode, position: int) -> bool:
    """A module docstring or a ``from __future__`` import: nothing may come before them."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    small = stmt.body[0]
    if position == 0 and isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
        return True
    return isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and small.module.value == "__future__"
