"""Which imports a fix leaves unused, so that the fix itself removes them.

A fix that writes ``torch.amp.autocast(device.type, ...)`` for ``autocast(...)`` stops using the
name ``from torch.cuda.amp import autocast`` binds; left there, the import is what an import
linter reports next (ruff's F401). A fix removes the uses of imported names inside the nodes it
replaces, unless its new code names them again; each such removal is a ``Release``. The fix that
removes every use of a name alone carries the edit removing its import; fixes applied together
remove it between them (devlint.fixes.apply_fixes), and a fix left out (unsafe, ``# noqa``,
another rule) keeps its use and so the import.

Only what is certainly unused goes: a name of a torch module (importing it again costs nothing,
so removing it loses no side effect) that no other code of the file names (an ``except
ImportError:`` fallback that assigns it is such code), bound only by import statements that
stand alone on their lines outside a class body (an import that is its block's only statement
becomes ``pass``), not re-exported (a package's ``__init__.py``, ``__all__``, ``import a as
a``), and named in no string annotation. Every question is answered from indexes built once per
file: the name's nodes (``SemanticModel.name_nodes``), and the strings that may name it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePath

import libcst as cst

from devlint.analysis.semantic import SemanticModel, dotted_name, string_value
from devlint.analysis.tree import ancestors, child_fields, descendants
from devlint.engine.positions import Positions
from devlint.findings import ImportNames, Release
from devlint.fixes import FixPlan, LineIndex

_WORD = re.compile(r"[A-Za-z_]\w*")
# Calls whose string arguments name types, as an annotation does.
_TYPE_CALLS = frozenset({"cast", "TypeVar", "ForwardRef", "NewType"})


@dataclass(frozen=True)
class _Name:
    """One imported name: its uses (node id -> its order among them) and the import aliases that
    bind it (the statement and the alias' index in it)."""

    uses: Mapping[int, int]
    bindings: tuple[tuple[cst.SimpleStatementLine, int], ...]


class UnusedImports:
    """The imported names of one file that fixes may leave unused."""

    def __init__(self, filename: str, module: cst.Module, model: SemanticModel, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> None:
        self._module = module
        self._model = model
        self._parents = parents
        package = PurePath(filename).name == "__init__.py"
        # Names torch's modules give: the only ones a fix rewrites uses of.
        self._candidates = frozenset(
            () if package else (local for local, qual in model.imports.items() if qual.startswith("torch.") and local != "torch")
        )
        self._names: dict[str, _Name | None] = {}
        self._strings: tuple[frozenset[str], bool] | None = None
        self._placed: dict[str, tuple[tuple[ImportNames, int], ...]] = {}

    def released(self, plan: FixPlan, code: Callable[[cst.CSTNode], str]) -> dict[str, frozenset[int]]:
        """The names whose uses ``plan`` removes, each with those uses (by order); ``code``
        prints a node."""
        if not self._candidates:
            return {}
        found: dict[str, set[int]] = {}
        for replace in plan.replacements:
            kept = self._kept(replace.node, replace.until) if replace.until is not None else set()
            inside = [
                n for n in descendants(replace.node) if isinstance(n, cst.Name) and n.value in self._candidates and id(n) not in kept
            ]
            if not inside:
                continue
            new = replace.new
            written = code(new) if isinstance(new, cst.CSTNode) else "\n".join(new) if isinstance(new, tuple) else new
            for node in inside:
                name = self._name(node.value)
                order = name.uses.get(id(node)) if name is not None else None
                if order is not None and not _names(written, node.value):
                    found.setdefault(node.value, set()).add(order)
        return {name: frozenset(uses) for name, uses in found.items()}

    def _kept(self, node: cst.CSTNode, until: cst.CSTNode) -> set[int]:
        """The nodes of ``node`` a replacement that runs on only to ``until`` leaves in the text
        (an `if` joined to the block before it loses its header line, not its body): ``until``,
        what follows it in its block, and the blocks after that one in each statement between it
        and ``node`` (an `else`); none where ``until`` lies after ``node``. Fields are taken in
        their dataclass order, the source order of every compound statement's blocks but a
        definition's, whose decorators and annotations come after its body there: what they
        name then counts as kept, and its import stays."""
        roots: list[cst.CSTNode] = []
        child, parent = until, self._parents.get(until)
        while parent is not None and child is not node:
            later = False
            for name in child_fields(type(parent)):
                value = getattr(parent, name)
                values = list(value) if isinstance(value, (list, tuple)) else [value]
                at = 0 if later else next((i for i, v in enumerate(values) if v is child), None)
                if at is not None:
                    later = True
                    roots += values[at:]
            child, parent = parent, self._parents.get(parent)
        if child is not node:
            return set()
        return {id(n) for root in roots if isinstance(root, cst.CSTNode) for n in descendants(root)}

    def statements(self, names: Mapping[str, frozenset[int]]) -> list[cst.CSTNode]:
        """The nodes whose positions the releases of ``names`` need."""
        nodes: list[cst.CSTNode] = []
        for name in names:
            for statement, _ in self._bound(name):
                small = statement.body[0]
                nodes += [statement, small, *small.names]
        return nodes

    def releases(self, names: Mapping[str, frozenset[int]], positions: Positions, lines: LineIndex) -> tuple[Release, ...]:
        """``names``' uses as releases of the statements that import them."""
        return tuple(Release(name, self._spans(name, positions, lines), uses, len(self._bound_name(name).uses)) for name, uses in names.items())

    def _spans(self, name: str, positions: Positions, lines: LineIndex) -> tuple[tuple[ImportNames, int], ...]:
        """The imports of ``name`` as spans of the text, worked out once for every fix."""
        if name not in self._placed:
            self._placed[name] = tuple((_spans(s, positions, lines, self.sole(s)), index) for s, index in self._bound(name))
        return self._placed[name]

    def _bound(self, name: str) -> tuple[tuple[cst.SimpleStatementLine, int], ...]:
        return self._bound_name(name).bindings

    def _bound_name(self, name: str) -> _Name:
        found = self._name(name)
        assert found is not None
        return found

    def _name(self, name: str) -> _Name | None:
        """``name``'s uses and imports, None when its imports must stay whatever fixes do."""
        if name not in self._names:
            self._names[name] = self._index(name)
        return self._names[name]

    def _index(self, name: str) -> _Name | None:
        uses: dict[int, int] = {}
        bindings: list[tuple[cst.SimpleStatementLine, int]] = []
        for node in self._model.name_nodes(name):
            parent = self._parents.get(node)
            if isinstance(parent, cst.AsName) or (isinstance(parent, cst.ImportAlias) and parent.asname is None):
                binding = self._removable(parent if isinstance(parent, cst.ImportAlias) else self._parents.get(parent), name)
                if binding is None:
                    return None
                bindings.append(binding)
            elif not _not_a_use(node, parent):
                uses[id(node)] = len(uses)
        if not bindings or self._in_strings(name):
            return None
        return _Name(uses, tuple(bindings))

    def _removable(self, alias: cst.CSTNode | None, name: str) -> tuple[cst.SimpleStatementLine, int] | None:
        """The statement and index of ``alias``, when it may go: a torch import standing alone
        on its lines in the module or a function body, and not ``import a as a``."""
        small = self._parents.get(alias) if alias is not None else None
        line = self._parents.get(small) if small is not None else None
        if not isinstance(alias, cst.ImportAlias) or not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        if isinstance(small, cst.ImportFrom):
            module = dotted_name(small.module) if small.module is not None and not small.relative else None
        elif isinstance(small, cst.Import):
            module = dotted_name(alias.name)
        else:
            return None
        if module is None or not (module == "torch" or module.startswith("torch.")) or dotted_name(alias.name) == name and alias.asname is not None:
            return None
        if self._in_class(line):
            return None
        return line, list(small.names).index(alias)  # type: ignore[union-attr]

    def _in_class(self, line: cst.SimpleStatementLine) -> bool:
        """An import in a class body (under ``if`` there too) binds an attribute of the class,
        which code anywhere may read."""
        for node in ancestors(self._parents, line):
            if isinstance(node, (cst.FunctionDef, cst.Module)):
                return False
            if isinstance(node, cst.ClassDef):
                return True
        return False

    def sole(self, statement: cst.SimpleStatementLine) -> bool:
        """``statement`` is the only statement of its block (the module's excepted)."""
        block = self._parents.get(statement)
        return isinstance(block, cst.IndentedBlock) and len(block.body) == 1

    def _in_strings(self, name: str) -> bool:
        """``name`` may be named by a string: a string annotation, ``__all__``, ``cast("T", x)``;
        or ``__all__`` is built from something other than strings, which may hold it."""
        if self._strings is None:
            self._strings = self._string_words()
        words, opaque = self._strings
        return opaque or name in words

    def _string_words(self) -> tuple[frozenset[str], bool]:
        words: set[str] = set()
        opaque = False
        for statement in {id(s): s for s in map(self._statement, self._model.name_nodes("__all__"))}.values():
            for node in descendants(statement):
                if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
                    words.update(_WORD.findall(string_value(node) or ""))
                elif isinstance(node, (cst.Name, cst.Call, cst.FormattedString)) and not (isinstance(node, cst.Name) and node.value == "__all__"):
                    opaque = opaque or not _is_method_of_all(node, self._parents)
        for node in descendants(self._module):
            if isinstance(node, cst.Annotation):
                words.update(w for s in descendants(node) if isinstance(s, cst.SimpleString) for w in _WORD.findall(string_value(s) or ""))
            elif isinstance(node, cst.Call) and (dotted_name(node.func) or "").rsplit(".", 1)[-1] in _TYPE_CALLS:
                words.update(w for a in node.args if isinstance(a.value, cst.SimpleString) for w in _WORD.findall(string_value(a.value) or ""))
        return frozenset(words), opaque

    def _statement(self, node: cst.CSTNode) -> cst.CSTNode:
        current = node
        while not isinstance(current, (cst.SimpleStatementLine, cst.Module)):
            parent = self._parents.get(current)
            if parent is None:
                break
            current = parent
        return current


def _not_a_use(node: cst.Name, parent: cst.CSTNode | None) -> bool:
    """``node`` only spells the name: an attribute (``x.autocast``), a keyword (``f(autocast=1)``),
    the name an import reads (``from m import autocast as a``) or the module it reads from."""
    if isinstance(parent, cst.Attribute):
        return parent.attr is node
    if isinstance(parent, cst.Arg):
        return parent.keyword is node
    return isinstance(parent, (cst.ImportAlias, cst.ImportFrom))


def _is_method_of_all(node: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> bool:
    """``__all__.append("x")`` / ``__all__.extend([...])``: the call and its method name."""
    if isinstance(node, cst.Name):
        parent = parents.get(node)
        return isinstance(parent, cst.Attribute) and parent.attr is node and dotted_name(parent.value) == "__all__"
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and dotted_name(node.func.value) == "__all__"


def _names(code: str, name: str) -> bool:
    """``code`` names ``name`` itself (not as an attribute: ``torch.amp.autocast`` does not)."""
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", code) is not None


def _spans(statement: cst.SimpleStatementLine, positions: Positions, lines: LineIndex, sole: bool) -> ImportNames:
    small = statement.body[0]
    assert isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar)
    span = positions[statement]
    whole = (lines.starts[span.start.line - 1], lines.next_line(span.end.line))
    names = []
    for alias in small.names:
        where = positions[alias]
        names.append((lines.offset(where.start.line, where.start.column), lines.offset(where.end.line, where.end.column)))
    end = positions[small]
    close = lines.offset(end.end.line, end.end.column)
    parenthesised = isinstance(small, cst.ImportFrom) and small.rpar is not None
    emptied = ""
    if sole:
        # A block needs a statement: the import's lines become one `pass`, ending as they did.
        ending = lines.text[whole[0] : whole[1]]
        emptied = lines.indent(span.start.line) + "pass" + ending[len(ending.rstrip("\r\n")) :]
    return ImportNames(whole, tuple(names), close - 1 if parenthesised else names[-1][1], emptied)
