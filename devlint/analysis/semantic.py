"""A light semantic model, filled in during the one tree walk.

LibCST's scope and qualified-name providers cost about five times the parse itself. Rules only
need to know what a name means in torch terms (``t.cuda.FloatTensor`` is
``torch.cuda.FloatTensor``), which names are bound where (to pick a device in scope and never
shadow a name), and which local classes bring their own ``cuda()``. This module keeps exactly that.
"""

from __future__ import annotations

import warnings
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import libcst as cst

from devlint.analysis.tree import children, descendants

# Textual order of nodes in the walk; bindings and uses compare these to know what came first.
Order = int


@dataclass
class Binding:
    name: str
    order: Order
    kind: str  # "param", "assign", "import", "def", "class", "loop", "other"
    value: cst.BaseExpression | None = None
    # A module-level binding under if/try/with/for: it may not exist when a function runs.
    conditional: bool = False
    annotation: cst.BaseExpression | None = None
    param: cst.Param | None = None


# Binding kinds that give a name a value of the scope's own.
_OWN_VALUES = frozenset(("param", "def", "class"))


def _order_of(binding: Binding) -> Order:
    return binding.order


@dataclass
class Scope:
    kind: str  # "module", "class", "function", "lambda", "comprehension"
    node: cst.CSTNode
    parent: Scope | None
    name: str = ""
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    params: list[str] = field(default_factory=list)
    # The names an import binds here, each with the qualified name of its latest import (None:
    # a module of the file's own package).
    imported: dict[str, str | None] = field(default_factory=dict)
    # The names imported here from two places (`from torch_musa.amp import autocast` in one
    # branch, `from torch.cuda.amp import autocast` in the other; `torch.musa.amp` and
    # `torch.cuda.amp`): which one a use holds is decided when the program runs, so no rule may
    # take it for either.
    mixed_imports: set[str] = field(default_factory=set)
    # The names bound here otherwise than as a parameter, a function or a class (or an import):
    # `torch = reload(torch)`, `torch, _ = load_modules()` may well hold what an import bound.
    _assigned: set[str] = field(default_factory=set)
    # Where each name's parameter bindings stand in its list, and the names whose list is not in
    # textual order (then ``before`` scans the whole list): see ``before``.
    _param_indices: dict[str, list[int]] = field(default_factory=dict)
    _unordered: set[str] = field(default_factory=set)

    def bind(self, binding: Binding) -> None:
        bindings = self.bindings.setdefault(binding.name, [])
        if bindings and binding.order < bindings[-1].order:
            self._unordered.add(binding.name)
        if binding.kind == "param":
            self._param_indices.setdefault(binding.name, []).append(len(bindings))
        elif binding.kind not in _OWN_VALUES:
            self._assigned.add(binding.name)
        bindings.append(binding)

    def own_value(self, name: str) -> bool:
        """``name`` is bound here only as a parameter, a function or a class: never as what an
        import of another scope bound."""
        return name in self.bindings and name not in self._assigned

    def before(self, name: str, order: Order) -> Iterator[Binding]:
        """The bindings of ``name`` here that come before ``order`` or are parameters, latest
        first: a site asked about after the walk skips the name's later bindings without
        stepping over each of them (``x = x.cuda()`` N times in one scope)."""
        bindings = self.bindings.get(name, [])
        if name in self._unordered:
            yield from (b for b in reversed(bindings) if b.order < order or b.kind == "param")
            return
        cut = bisect_left(bindings, order, key=_order_of)
        for index in reversed(self._param_indices.get(name, ())):
            if index < cut:
                break
            yield bindings[index]
        for index in range(cut - 1, -1, -1):
            yield bindings[index]

    def function_scope(self) -> Scope | None:
        scope: Scope | None = self
        while scope is not None and scope.kind not in ("function", "module"):
            scope = scope.parent
        return scope if scope is not None and scope.kind == "function" else None


@dataclass
class ClassInfo:
    name: str
    bases: tuple[str, ...]  # dotted base names as written or resolved
    methods: set[str]


def dotted_name(node: cst.CSTNode) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def string_value(node: cst.CSTNode) -> str | None:
    """The value of a plain (non-f, non-concatenated-with-expressions) string literal."""
    if isinstance(node, cst.SimpleString):
        try:
            if "\\" in node.value:
                # An invalid escape warns (an error under ``-W error``): the user's, not ours.
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    value = node.evaluated_value
            else:
                value = node.evaluated_value
        except Exception:  # noqa: BLE001 - malformed escapes: not a literal we can reason about
            return None
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        left, right = string_value(node.left), string_value(node.right)
        if left is not None and right is not None:
            return left + right
    return None


def literal_is(node: cst.CSTNode, value: str) -> bool:
    """``node`` is a string literal equal to ``value`` and spelled as written, so that a textual
    prefilter looking for ``value`` sees it (no escapes, no implicit concatenation)."""
    return isinstance(node, cst.SimpleString) and value in node.value and string_value(node) == value


def _import_alias_name(alias: cst.ImportAlias) -> str | None:
    return dotted_name(alias.name)


@dataclass(frozen=True)
class Option:
    """A command-line option declared with argparse's ``add_argument``: the ``type=`` it converts
    its value with (dotted, as written) and whether it takes several values or an action of its own."""

    type: str | None
    plain: bool  # no nargs=, no action= other than "store": one value, converted by type=


class _OptionCollector:
    """argparse options and attribute assignments of a file, from one walk in source order over
    the nodes ``devlint.analysis.tree.children`` reaches (LibCST's visitor, which also calls
    on every whitespace node, took several times as long on a large file)."""

    def __init__(self) -> None:
        self.options: dict[str, cst.BaseExpression | None] = {}
        self.declared: dict[str, list[Option]] = {}
        # `args.gpu = gpu`: values the program itself gives an attribute named like an option
        self.attribute_values: dict[str, list[cst.BaseExpression]] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Attribute):
                self.attribute_values.setdefault(target.target.attr.value, []).append(node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Attribute):
            self.attribute_values.setdefault(node.target.attr.value, []).append(node.value)

    def collect(self, root: cst.CSTNode) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is cst.Assign:
                self.visit_Assign(node)
            elif kind is cst.AugAssign:
                self.visit_AugAssign(node)
            elif kind is cst.Call:
                self.visit_Call(node)
            stack.extend(reversed(children(node)))

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "add_argument"):
            return
        flags = [string_value(a.value) for a in node.args if a.keyword is None]
        given = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        dest = string_value(given["dest"]) if "dest" in given else None
        if dest is None:
            longs = [f for f in flags if f is not None and f.startswith("--")]
            dest = longs[0][2:].replace("-", "_") if longs else None
        if dest is not None:
            default = given.get("default")
            action = string_value(given["action"]) if "action" in given else None
            if default is None and action in ("store_true", "store_false"):
                default = cst.Name("False" if action == "store_true" else "True")
            self.options[dest] = default
            kind = dotted_name(given["type"]) if "type" in given else None
            self.declared.setdefault(dest, []).append(Option(kind, "nargs" not in given and action in (None, "store")))


class SemanticModel:
    """Imports, aliases, scopes and classes of one file, as far as the walk has seen."""

    def __init__(self, module: cst.Module) -> None:
        self.module_scope = Scope("module", module, None)
        self.scope = self.module_scope
        # local name -> fully qualified name, from imports
        self.imports: dict[str, str] = {}
        # local name -> the qualified names it may hold, from `x = torch.cuda.FloatTensor`
        # or `T = torch.cuda.FloatTensor if cuda else torch.FloatTensor`
        self.value_aliases: dict[str, set[str]] = {}
        self.identifiers: set[str] = set()
        # the names of the functions the file defines, at any depth (methods included)
        self.function_names: set[str] = set()
        self.classes: dict[str, ClassInfo] = {}
        self.import_statements: list[tuple[Order, cst.SimpleStatementLine]] = []
        self.torch_imported_at: Order | None = None
        # parameters a test's parametrize decorator may give None (devlint.analysis.parametrized)
        self.given_none: set[cst.Param] = set()
        # argparse options the file declares: dest -> the `default=` expression (None: no default)
        self._options: _OptionCollector | None = None
        self._names: dict[str, list[cst.Name]] | None = None

    # -- name resolution -------------------------------------------------------------------

    def name_nodes(self, name: str) -> list[cst.Name]:
        """Every ``Name`` node of the file spelled ``name``, in the tree's walk order (attribute
        names such as the ``f`` of ``x.f`` included): indexed by one walk of the module, however
        many callers ask."""
        if self._names is None:
            self._names = {}
            for node in descendants(self.module_scope.node):
                if isinstance(node, cst.Name):
                    self._names.setdefault(node.value, []).append(node)
        return self._names.get(name, [])

    def qualname(self, node: cst.CSTNode) -> str | None:
        """The one qualified name an expression refers to through imports, else None."""
        names = self.qualnames(node, follow_values=False)
        return next(iter(names)) if len(names) == 1 else None

    def qualnames(self, node: cst.CSTNode, follow_values: bool = True) -> set[str]:
        """Every qualified name an expression may refer to (value aliases included)."""
        if isinstance(node, cst.Name):
            if node.value in self.imports:
                imported = self._imported(node.value)
                if imported != "":
                    return {imported} if imported is not None else set()
            if follow_values and node.value in self.value_aliases:
                return set(self.value_aliases[node.value])
            return set()
        if isinstance(node, cst.Attribute):
            return {f"{base}.{node.attr.value}" for base in self.qualnames(node.value, follow_values)}
        if isinstance(node, cst.IfExp) and follow_values:
            return self.qualnames(node.body) | self.qualnames(node.orelse)
        return set()

    def _imported(self, name: str) -> str | None:
        """What ``name`` refers to through an import, seen from the scope the walk is in: the
        qualified name of the latest import of the innermost scope that imports it (class scopes
        skipped, as Python does; None when that import names the file's own package), or "" when
        a scope nearer binds it only as a parameter, a function or a class (a parameter
        ``FloatTensor`` is not the ``torch.cuda.FloatTensor`` another function imports). A name
        no scope around imports is taken from the file's last import of it: after the walk,
        when every question is asked from the module, a function's own import still resolves
        its code."""
        current: Scope | None = self.scope
        first = True
        while current is not None:
            if first or current.kind != "class":
                if name in current.imported:
                    return None if name in current.mixed_imports else current.imported[name]
                if current.own_value(name):
                    return ""
            first = False
            current = current.parent
        return self.imports[name]

    def option_default(self, dest: str) -> tuple[bool, cst.BaseExpression | None]:
        """Whether the file declares a command-line option ``dest`` with argparse's
        ``add_argument`` (``"--device"`` declares ``device``), and its ``default=`` (None: none;
        a ``store_true``/``store_false`` flag without one defaults to ``False``/``True``)."""
        collector = self._collected()
        return dest in collector.options, collector.options.get(dest)

    def option_declarations(self, dest: str) -> list[Option]:
        """Every ``add_argument`` of the file that declares ``dest``."""
        return self._collected().declared.get(dest, [])

    def attribute_assignments(self, attribute: str) -> list[cst.BaseExpression]:
        """The values the file assigns to any ``x.<attribute>``."""
        return self._collected().attribute_values.get(attribute, [])

    def _collected(self) -> _OptionCollector:
        if self._options is None:
            collector = _OptionCollector()
            collector.collect(self.module_scope.node)
            self._options = collector
        return self._options

    def torch_alias(self) -> str | None:
        """A local name bound to the torch module itself (`torch`, or `t` after `import torch as t`)."""
        if self.imports.get("torch") == "torch":
            return "torch"
        for local, qual in self.imports.items():
            if qual == "torch":
                return local
        return None

    # -- recording ---------------------------------------------------------------------------

    def record_import(self, node: cst.Import | cst.ImportFrom, order: Order) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _import_alias_name(alias)
                if full is None:
                    continue
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    local = alias.asname.name.value
                    self.imports[local] = full
                else:
                    local = full.split(".")[0]
                    self.imports[local] = local
                self._bind_import(local, order, self.imports[local])
                if full.split(".")[0] == "torch" and self.torch_imported_at is None:
                    self.torch_imported_at = order
            return
        if node.relative or node.module is None:
            # A module of the file's own package: no qualified name is known (it is not torch),
            # but the names are bound all the same.
            if not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    name = _import_alias_name(alias)
                    if name is not None:
                        asname = alias.asname.name if alias.asname is not None else None
                        self._bind_import(asname.value if isinstance(asname, cst.Name) else name, order, None)
            return
        module = dotted_name(node.module)
        if module is None or isinstance(node.names, cst.ImportStar):
            return
        if module.split(".")[0] == "torch" and self.torch_imported_at is None:
            self.torch_imported_at = order
        for alias in node.names:
            name = _import_alias_name(alias)
            if name is None:
                continue
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.imports[local] = f"{module}.{name}"
            self._bind_import(local, order, self.imports[local])

    def _bind_import(self, local: str, order: Order, qualified: str | None) -> None:
        self.identifiers.add(local)
        scope = self.scope
        scope.bind(Binding(local, order, "import"))
        if local in scope.imported and scope.imported[local] != qualified:
            scope.mixed_imports.add(local)
        scope.imported[local] = qualified

    def record_assignment(
        self, target: cst.BaseExpression, value: cst.BaseExpression | None, order: Order, conditional: bool
    ) -> None:
        """Bind the names a target binds; remember torch value aliases of plain names."""
        if isinstance(target, cst.Name):
            self.scope.bind(Binding(target.value, order, "assign", value, conditional))
            if value is not None:
                quals = {q for q in self.qualnames(value) if q.startswith("torch.")}
                if quals:
                    self.value_aliases[target.value] = quals
                else:
                    self.value_aliases.pop(target.value, None)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.record_assignment(element.value, None, order, conditional)
        elif isinstance(target, cst.StarredElement):
            self.record_assignment(target.value, None, order, conditional)
        elif isinstance(target, cst.Attribute) and value is not None:
            # `args.device = torch.device(...)`: an attribute can carry a device too.
            dotted = dotted_name(target)
            if dotted is not None:
                self.scope.bind(Binding(dotted, order, "assign", value, conditional))

    def bind(self, name: str, order: Order, kind: str, **extra: object) -> None:
        self.identifiers.add(name)
        self.scope.bind(Binding(name, order, kind, **extra))  # type: ignore[arg-type]

    def push_scope(self, kind: str, node: cst.CSTNode, name: str = "") -> Scope:
        self.scope = Scope(kind, node, self.scope, name)
        return self.scope

    def pop_scope(self) -> None:
        assert self.scope.parent is not None
        self.scope = self.scope.parent

    def record_class(self, node: cst.ClassDef) -> None:
        bases = tuple(
            self.qualname(arg.value) or dotted_name(arg.value) or ""
            for arg in node.bases
            if arg.keyword is None
        )
        methods = {
            stmt.name.value for stmt in node.body.body if isinstance(stmt, cst.FunctionDef)
        }
        self.classes[node.name.value] = ClassInfo(node.name.value, bases, methods)

    # -- questions rules ask ---------------------------------------------------------------

    def is_module_like_class(self, name: str, _seen: frozenset[str] = frozenset()) -> bool:
        """A local class that is (or may be) an nn.Module or Tensor subclass."""
        info = self.classes.get(name)
        if info is None or name in _seen:
            return True  # unknown: assume the torch behaviour
        for base in info.bases:
            short = base.split(".")[-1]
            if base.startswith("torch.") or short in ("Module", "Tensor", "Parameter"):
                return True
            if short in self.classes and self.is_module_like_class(short, _seen | {name}):
                return True
        return False

    def has_own_method(self, class_name: str, method: str) -> bool:
        """A local non-Module class that defines ``method`` itself (e.g. its own ``cuda``)."""
        info = self.classes.get(class_name)
        return info is not None and method in info.methods and not self.is_module_like_class(class_name)

    def lookup(self, name: str, scope: Scope, before: Order | None = None) -> Iterable[tuple[Scope, Binding]]:
        """Bindings of ``name`` visible from ``scope``, innermost first (class scopes skipped);
        ``before``: only those before that order, and parameters (``Scope.before``)."""
        current: Scope | None = scope
        first = True
        while current is not None:
            if current.kind != "class" or first:
                if before is None:
                    for binding in reversed(current.bindings.get(name, [])):
                        yield current, binding
                else:
                    for binding in current.before(name, before):
                        yield current, binding
            first = False
            current = current.parent

    def visible_bindings(self, name: str, scope: Scope, order: Order) -> list[Binding]:
        """The bindings ``name`` may hold when code at ``order`` in ``scope`` runs.

        In the site's own scope (comprehensions and class bodies run in place) only the latest
        binding before the site counts; a name from an enclosing function or the module may hold
        any of its bindings there, since the inner function runs later. Empty: unknown name.
        """
        current: Scope | None = scope
        first = True
        immediate = True
        while current is not None:
            if current.kind != "class" or first:
                bindings = current.bindings.get(name, [])
                if bindings:
                    if not immediate:
                        return list(bindings)
                    # the last of those before the site, or the last parameter (Scope.before)
                    latest = next(current.before(name, order), None)
                    return [latest] if latest is not None else []
            if current.kind in ("function", "lambda"):
                immediate = False
            first = False
            current = current.parent
        return []
