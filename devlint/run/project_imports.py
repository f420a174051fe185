"""The constants a file imports from other modules of its project, read from disk with CPython's
``ast`` (never imported), and every file that reading consulted, for the cache.

``from mypkg.compat import IS_TORCH_2_4`` in ``train.py``: ``IS_TORCH_2_4 = TORCH_VERSION >= (2, 4)``
in ``mypkg/compat.py`` is what decides which branch of ``if IS_TORCH_2_4:`` is for an older torch
(devlint.analysis.version_guards). The engine checks one text and opens no other file: this
module resolves the imports and hands it the values as plain data (devlint.project); a run hands
it a ``ProjectImports``, which resolves them the first time the engine asks for a value, so that
a file whose check never asks reads no other module.

A module is found as the interpreter would find it from the file: a relative import from the
file's own package; an absolute one from the file's folder, from the folder above the file's
top-level package, or from the project root (the folder of the configuration file, else where
the run started), the first of these that holds its first package, else the first that holds
the module in folders without ``__init__.py`` (a namespace package). Only imported names the
analyses read are looked up: those a test of the file reads (``if``, ``while``, a conditional
expression), since only a test decides which branch is for an older torch, and those given as
the backend of a process group (``init_process_group(BACKEND)``, DEV603: ``BACKEND = "nccl"``
in ``dist_config.py``), or copied into a name given as one (``backend = BACKEND``), and the
functions the file calls with a CUDA device string among the arguments (``load_state_dict(path,
location="cuda")``, whose parameter may reach ``torch.load(map_location=)``: DEV103 reads the
function, devlint.analysis.device_params). Imports
inside functions are read as well as the module's own: the result is keyed by the name alone,
so a name imported in several places is kept only where every import gives it the same meaning
(which import reaches a given read is the engine's to decide). Of the other module, only
module-level names bound once, by an assignment of the module itself or by a ``from ... import``
that is followed in turn, count (a function: a ``def`` at module level, handed over with the
module's top-level imports; the functions it calls in turn are not); at most ``MAX_HOPS``
modules are followed from the file, and never one twice.

The language server checks an unsaved buffer, but the other modules are read from disk: an edit
of ``compat.py`` counts once it is saved.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

from devlint.gate.literals import is_cuda_literal
from devlint.gate.facts import descendants
from devlint.project import NONE, Constant, Function, ImportedConstants
from devlint.run.cache import content_digest
from devlint.torchfacts.names import PROCESS_GROUP_BACKEND

MAX_HOPS = 3
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
# What reading a file found: its content digest, or None where there is no such file.
# Where a process group's backend is given, by the callee's last name: its position (or `backend=`).
_BACKEND_AT = {qualified.rsplit(".", 1)[-1]: position for qualified, position in PROCESS_GROUP_BACKEND.items()}
Read = tuple[str, "str | None"]
# What an import gives a name: a constant, a module (read through `module.NAME`), or nothing known.
_Meaning = Constant | Path | None
# What an import gives a name called with a CUDA device: a function, a module, or nothing known.
_Callee = Function | Path | None


@dataclass(frozen=True)
class Dependencies:
    """What a file's result depends on besides its own text: where resolution started (the
    file's folder and the project root) and every file it consulted, with what it found."""

    origin: str
    files: tuple[Read, ...]

    def unchanged(self, origin: str, digest_of: Callable[[str], str | None]) -> bool:
        return origin == self.origin and all(digest_of(path) == digest for path, digest in self.files)


def origin(filename: str, root: str) -> str:
    return f"{Path(filename).resolve().parent}\n{root}"


def digest_of(path: str) -> str | None:
    try:
        return content_digest(Path(path).read_bytes())
    except OSError:
        return None


def imported_constants(
    text: str, filename: str, root: str, tree: ast.Module | None = None, scans: Sequence[Scan] | None = None
) -> tuple[ImportedConstants, Dependencies | None]:
    """The project constants ``text`` (the file ``filename``) imports, and what was read to
    find them (None: nothing, as no test of the file reads an imported name: its result depends
    on no other file). ``tree``: CPython's tree of ``text``, where the caller has it; ``scans``:
    the scan of each of its top-level statements, where the caller kept them."""
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return NONE, None
    return _resolved(scan_imports(tree) if scans is None else _merged(scans), filename, root)


class ProjectImports:
    """``imported_constants``, read the first time the engine asks for a constant or a function:
    most files that pass the gate never ask (only a report under a test of an imported name, a
    backend given by one, or a call of an imported function with a CUDA device does), and then
    read no other module. What was read, for the cache, is known once the check is done."""

    def __init__(self, text: str, filename: str, root: str, tree: ast.Module | None = None) -> None:
        if tree is None:
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = None
        # The scan is what the reading needs of the file: CPython's tree itself is not kept.
        self._scanned = scan_imports(tree) if tree is not None else None
        self._filename = filename
        self._root = root
        self._read: tuple[ImportedConstants, Dependencies | None] | None = None

    def get(self, reference: str) -> Constant | None:
        return self._constants().get(reference)

    def function(self, reference: str) -> Function | None:
        return self._constants().function(reference)

    def dependencies(self) -> Dependencies | None:
        """The files read to answer the engine (None: it asked nothing, or nothing was read)."""
        return self._read[1] if self._read is not None else None

    def _constants(self) -> ImportedConstants:
        if self._read is None:
            self._read = _resolved(self._scanned, self._filename, self._root) if self._scanned is not None else (NONE, None)
        return self._read[0]


def _resolved(scanned: Scan, filename: str, root: str) -> tuple[ImportedConstants, Dependencies | None]:
    project = _Project(Path(filename).resolve(), Path(root).resolve() if root else None)
    found: dict[str, Constant] = {}
    for reference, constant in project.references(scanned):
        found.setdefault(reference, constant)
    functions = dict(project.functions(scanned))
    if not project.reads:
        return NONE, None
    dependencies = Dependencies(origin(filename, root), tuple(sorted(project.reads.items())))
    return ImportedConstants(tuple(sorted(found.items())), tuple(sorted(functions.items()))), dependencies


@dataclass
class _Module:
    """A module's top-level names: each bound once to a value or an import, else ``None``."""

    text: str
    bindings: dict[str, ast.expr | ast.ImportFrom | None] = field(default_factory=dict)
    # functions defined once at module level, and the module's top-level imports
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    imports: list[ast.Import | ast.ImportFrom] = field(default_factory=list)

    @cached_property
    def lines(self) -> list[bytes]:
        # As CPython's parser ends lines (a form feed does not), in UTF-8: ast's columns count bytes.
        return [line.encode() for line in _LINE.findall(self.text)]

    def function(self, name: str) -> Function | None:
        """``name``'s definition, with the module's imports before it."""
        node = self.functions.get(name)
        parts = [self.source(statement) for statement in [*self.imports, node]] if node is not None else [None]
        if any(part is None for part in parts):
            return None
        return Function(name, "\n".join(parts) + "\n")  # type: ignore[arg-type]

    def source(self, node: ast.expr | ast.stmt) -> str | None:
        """``node``'s text (ast.get_source_segment, without splitting the module again each time)."""
        end_line, end_column = node.end_lineno, node.end_col_offset
        if end_line is None or end_column is None or end_line > len(self.lines):
            return None
        lines = self.lines[node.lineno - 1 : end_line]
        if len(lines) == 1:
            return lines[0][node.col_offset : end_column].decode("utf-8", "replace")
        text = lines[0][node.col_offset :] + b"".join(lines[1:-1]) + lines[-1][:end_column]
        return text.decode("utf-8", "replace")


@dataclass
class _Project:
    path: Path
    root: Path | None
    reads: dict[str, str | None] = field(default_factory=dict)
    _modules: dict[Path, _Module | None] = field(default_factory=dict)
    _texts: dict[str, str | None] = field(default_factory=dict)

    # -- the checked file's imports ---------------------------------------------------------------

    def references(self, scanned: Scan) -> Iterator[tuple[str, Constant]]:
        """Only names a test reads (``if``, ``while``, a conditional expression) can decide a
        branch, and only names given as a backend (or copied into one) can name it: only those are
        looked up, which spares reading modules for every import. A name imported in more than one
        place (a function's own import, another function's) counts only where every import of it
        gives it the same meaning: the engine looks it up by the name alone."""
        tested = scanned.wanted
        roots = {name.split(".")[0] for name in tested}
        meanings: dict[str, set[_Meaning]] = {}
        for node in scanned.imports:
            found = self._from_import(node, roots) if isinstance(node, ast.ImportFrom) else self._import(node, roots, tested)
            for local, meaning in found:
                meanings.setdefault(local, set()).add(meaning)
        agreed = {local: next(iter(found)) for local, found in meanings.items() if len(found) == 1}
        for local, meaning in agreed.items():
            if isinstance(meaning, Constant):
                yield local, meaning
        for name in sorted(tested):
            owner, _, attribute = name.rpartition(".")
            target = agreed.get(owner)
            constant = self._constant(target, attribute, MAX_HOPS - 1, frozenset()) if isinstance(target, Path) else None
            if constant is not None:
                yield name, constant

    def _import(self, node: ast.Import, roots: set[str], tested: frozenset[str]) -> Iterator[tuple[str, _Meaning]]:
        """``import mypkg.compat as compat``: ``compat`` is that module, read through ``compat.NAME``."""
        for alias in node.names:
            local = alias.asname or alias.name
            if local.split(".")[0] not in roots:
                continue
            if any(name.startswith(local + ".") for name in tested):
                yield local, self._find(self.path, alias.name, 0)
            elif local in tested:
                # `import x as BACKEND`: a module, never a constant (nothing to read)
                yield local, None

    def _from_import(self, node: ast.ImportFrom, roots: set[str]) -> Iterator[tuple[str, _Meaning]]:
        wanted = [alias for alias in node.names if alias.name != "*" and (alias.asname or alias.name) in roots]
        target = self._find(self.path, node.module or "", node.level) if wanted else None
        for alias in wanted:
            local = alias.asname or alias.name
            constant = self._constant(target, alias.name, MAX_HOPS - 1, frozenset()) if target is not None else None
            if constant is None and target is not None and target.name == "__init__.py":
                # `from mypkg import compat`: a submodule, read through `compat.NAME`
                yield local, self._module_file(target.parent, [alias.name])
            else:
                yield local, constant

    # -- functions the file calls with a CUDA device ---------------------------------------------------

    def functions(self, scanned: Scan) -> Iterator[tuple[str, Function]]:
        """``load_state_dict`` after ``from cldm.model import load_state_dict``, ``model.load`` after
        ``import pkg.model as model``: each function the file calls with a CUDA device string, where
        every import of its first name gives it the same meaning."""
        called = scanned.called
        if not called:
            return
        roots = {name.split(".")[0] for name in called}
        meanings: dict[str, set[_Callee]] = {}
        for node in scanned.imports:
            if isinstance(node, ast.ImportFrom):
                wanted = [alias for alias in node.names if alias.name != "*" and (alias.asname or alias.name) in roots]
                target = self._find(self.path, node.module or "", node.level) if wanted else None
                for alias in wanted:
                    meaning: _Callee = self._function(target, alias.name, MAX_HOPS - 1, frozenset()) if target else None
                    if meaning is None and target is not None and target.name == "__init__.py":
                        meaning = self._module_file(target.parent, [alias.name])
                    meanings.setdefault(alias.asname or alias.name, set()).add(meaning)
                continue
            for alias in node.names:
                local = alias.asname or alias.name
                if any(name.startswith(local + ".") for name in called):
                    meanings.setdefault(local, set()).add(self._find(self.path, alias.name, 0))
        agreed = {local: next(iter(found)) for local, found in meanings.items() if len(found) == 1}
        for name in sorted(called):
            meaning = agreed.get(name)
            if isinstance(meaning, Function):
                yield name, meaning
                continue
            owner, _, attribute = name.rpartition(".")
            target = agreed.get(owner)
            function = self._function(target, attribute, MAX_HOPS - 1, frozenset()) if isinstance(target, Path) else None
            if function is not None:
                yield name, function

    def _function(self, path: Path, name: str, hops: int, seen: frozenset[tuple[Path, str]]) -> Function | None:
        module = self._module(path)
        if module is None or (path, name) in seen:
            return None
        bound = module.bindings.get(name)
        if isinstance(bound, ast.ImportFrom) and hops > 0:
            target = self._find(path, bound.module or "", bound.level)
            original = next(alias.name for alias in bound.names if (alias.asname or alias.name) == name)
            return self._function(target, original, hops - 1, seen | {(path, name)}) if target is not None else None
        return module.function(name)

    # -- constants of other modules -----------------------------------------------------------------

    def _constant(self, path: Path, name: str, hops: int, seen: frozenset[tuple[Path, str]]) -> Constant | None:
        module = self._module(path)
        if module is None or (path, name) in seen:
            return None
        bound = module.bindings.get(name)
        seen = seen | {(path, name)}
        if isinstance(bound, ast.ImportFrom):
            if hops <= 0:
                return None
            target = self._find(path, bound.module or "", bound.level)
            original = next(alias.name for alias in bound.names if (alias.asname or alias.name) == name)
            return self._constant(target, original, hops - 1, seen) if target is not None else None
        if bound is None:
            return None
        source = module.source(bound)
        if source is None:
            return None
        names = {node.id for node in ast.walk(bound) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
        read = ((used, self._constant(path, used, hops, seen)) for used in sorted(names))
        return Constant(source, tuple((used, constant) for used, constant in read if constant is not None))

    def _module(self, path: Path) -> _Module | None:
        if path not in self._modules:
            text = self._read(path)
            self._modules[path] = _bindings(text) if text is not None else None
        return self._modules[path]

    # -- finding modules ----------------------------------------------------------------------------

    def _find(self, path: Path, dotted: str, level: int) -> Path | None:
        """The file of the module ``dotted`` imported from ``path`` (``level``: leading dots)."""
        parts = [part for part in dotted.split(".") if part]
        if level > 0:
            base = path.parent
            for _ in range(level - 1):
                base = base.parent
            return self._module_file(base, parts) if parts else self._file(base / "__init__.py")
        bases = self._bases(path)
        for base in bases:
            if self._module_file(base, parts[:1]) is not None:
                return self._module_file(base, parts)
        # A folder without `__init__.py` (ControlNet's `cldm/model.py`) is a namespace package,
        # which the interpreter makes only where no base holds a regular package or module.
        for base in bases if len(parts) > 1 else ():
            found = self._module_file(base, parts)
            if found is not None:
                return found
        return None

    def _bases(self, path: Path) -> list[Path]:
        top = path.parent
        while self._file(top / "__init__.py") is not None and top.parent != top:
            top = top.parent
        bases = [path.parent, top]
        if self.root is not None:
            bases.append(self.root)
        return list(dict.fromkeys(bases))

    def _module_file(self, base: Path, parts: list[str]) -> Path | None:
        if not parts:
            return None
        folder = base.joinpath(*parts)
        # A package comes before a module of the same name, as the interpreter finds them.
        return self._file(folder / "__init__.py") or self._file(folder.with_name(parts[-1] + ".py"))

    def _file(self, path: Path) -> Path | None:
        return path if self._read(path) is not None else None

    def _read(self, path: Path) -> str | None:
        key = str(path)
        if key not in self._texts:
            try:
                data = path.read_bytes()
            except OSError:
                self.reads[key] = self._texts[key] = None
                return None
            self.reads[key] = content_digest(data)
            self._texts[key] = data.decode("utf-8", "replace")
        return self._texts[key]


@lru_cache(maxsize=512)
def _bindings(text: str) -> _Module | None:
    """Kept by text: the files of a project import the same few modules, and a worker checks
    many of those files (the reads, and their digests, are still made for each file)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    module = _Module(text)
    counts: dict[str, int] = {}
    for statement in tree.body:
        for name in _bound_names(statement):
            counts[name] = counts.get(name, 0) + 1
            module.bindings[name] = None
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            module.bindings[statement.targets[0].id] = statement.value
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value is not None:
            module.bindings[statement.target.id] = statement.value
        elif isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                if alias.name != "*":
                    module.bindings[alias.asname or alias.name] = statement
        elif isinstance(statement, ast.FunctionDef):
            module.functions[statement.name] = statement
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            module.imports.append(statement)
    # A name bound more than once (or anywhere under a block), or that a function may rebind
    # (`global`), holds no one value.
    rebound = {name for node in _statements(tree) if isinstance(node, ast.Global) for name in node.names} if "global" in text else set()
    for name, count in counts.items():
        if count > 1 or name in rebound:
            module.bindings[name] = None
            module.functions.pop(name, None)
    return module


def _statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Every statement of ``tree``, at every depth; no expression is visited (a ``global`` is a
    statement: a tenth of the nodes ``ast.walk`` would visit)."""
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.stmt):
            yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                pending.extend(item for item in value if isinstance(item, (ast.stmt, ast.excepthandler, ast.match_case)))


def _bound_names(statement: ast.stmt) -> Iterator[str]:
    """Every name ``statement`` binds in the module's namespace, blocks under it included (not
    function or class bodies, which bind their own)."""
    pending: list[ast.AST] = [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
            pending.extend(node.decorator_list)
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    yield alias.asname or alias.name.split(".")[0]
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            yield node.id
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            yield from node.names
        pending.extend(ast.iter_child_nodes(node))


@dataclass(frozen=True)
class Scan:
    """What ``scan_imports`` reads of a statement: its import statements, every name and dotted
    name (``compat.IS_NEW``) read in the test of an ``if``, a ``while`` or a conditional
    expression in it, or given as the backend of a process group, which of those were given as
    a backend, its copies of one name into another (``backend = BACKEND``: target, source), and
    the callees (dotted) of its calls given a CUDA device string."""

    imports: list[ast.Import | ast.ImportFrom]
    tested: frozenset[str]
    backends: frozenset[str] = frozenset()
    copies: frozenset[tuple[str, str]] = frozenset()
    called: frozenset[str] = frozenset()

    @property
    def wanted(self) -> frozenset[str]:
        """The names to look up: those tested, and what a name given as a backend may copy, at
        any remove (``backend = BACKEND`` then ``init_process_group(backend)``); which copy holds
        at the call is the rule's to decide."""
        if not self.backends or not self.copies:
            return self.tested
        sources: dict[str, list[str]] = {}
        for target, source in self.copies:
            sources.setdefault(target, []).append(source)
        found, pending = set(self.backends), list(self.backends)
        while pending:
            for source in sources.get(pending.pop(), ()):
                if source not in found:
                    found.add(source)
                    pending.append(source)
        return self.tested | found


def scan_imports(node: ast.AST) -> Scan:
    """Runs for every file a rule may report in (and in the language server for each top-level
    statement an edit changed). Function and class bodies are read too: an import there binds
    the name in that body, which the engine tells apart."""
    imports: list[ast.Import | ast.ImportFrom] = []
    tests: list[ast.expr] = []
    backends: list[ast.expr] = []
    copies: set[tuple[str, str]] = set()
    called: set[str] = set()
    for each in descendants([node]):
        kind = type(each)
        if kind is ast.If or kind is ast.IfExp or kind is ast.While:
            tests.append(each.test)  # type: ignore[attr-defined]
        elif kind is ast.Import or kind is ast.ImportFrom:
            imports.append(each)  # type: ignore[arg-type]
        elif kind is ast.Call:
            backend = _backend(each)  # type: ignore[arg-type]
            if backend is not None:
                backends.append(backend)
            callee = _called_with_cuda(each)  # type: ignore[arg-type]
            if callee is not None:
                called.add(callee)
        elif kind is ast.Assign or kind is ast.AnnAssign:
            copy = _copy(each)  # type: ignore[arg-type]
            if copy is not None:
                copies.add(copy)
    tested = _names(tests)
    given = _names(backends)
    return Scan(imports, tested | given, given, frozenset(copies), frozenset(called))


def _names(expressions: list[ast.expr]) -> frozenset[str]:
    return frozenset(
        name
        for expression in expressions
        for part in ast.walk(expression)
        if isinstance(part, (ast.Name, ast.Attribute)) and (name := _dotted(part)) is not None
    )


def _copy(node: ast.Assign | ast.AnnAssign) -> tuple[str, str] | None:
    """``backend = BACKEND``, ``backend: str = conf.BACKEND``: one name bound to another's value."""
    targets = node.targets if type(node) is ast.Assign else [node.target]  # type: ignore[union-attr]
    value = node.value
    if len(targets) != 1 or type(targets[0]) is not ast.Name or value is None:
        return None
    kind = type(value)
    source = _dotted(value) if kind is ast.Name or kind is ast.Attribute else None
    return (targets[0].id, source) if source is not None else None  # type: ignore[attr-defined]


def _merged(parts: Sequence[Scan]) -> Scan:
    """The scan of a module whose top-level statements scan as ``parts``: what ``scan_imports`` gives
    for the module (its stack takes the last statement first)."""
    return Scan(
        [node for part in reversed(parts) for node in part.imports],
        frozenset().union(*(p.tested for p in parts)),
        frozenset().union(*(p.backends for p in parts)),
        frozenset().union(*(p.copies for p in parts)),
        frozenset().union(*(p.called for p in parts)),
    )


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _backend(call: ast.Call) -> ast.expr | None:
    """The backend given to ``call`` where its callee's last name is one of torch.distributed's
    calls that make a process group (imports are resolved by the rule, not here)."""
    func = call.func
    last = func.id if type(func) is ast.Name else func.attr if type(func) is ast.Attribute else None
    position = _BACKEND_AT.get(last) if last is not None else None
    if position is None:
        return None
    given = next((keyword.value for keyword in call.keywords if keyword.arg == "backend"), None)
    if given is not None or any(type(arg) is ast.Starred for arg in call.args[: position + 1]):
        return given
    return call.args[position] if len(call.args) > position else None


def _called_with_cuda(call: ast.Call) -> str | None:
    """The dotted callee of ``call`` where one of its arguments is a CUDA device string."""
    given = [*call.args, *(keyword.value for keyword in call.keywords)]
    if not any(is_cuda_literal(value) for value in given):
        return None
    kind = type(call.func)
    return _dotted(call.func) if kind is ast.Name or kind is ast.Attribute else None
