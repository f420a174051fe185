"""Which parameters of a module's own functions reach a device sink.

ControlNet's ``def load_state_dict(ckpt_path, location='cpu')`` gives ``location`` to
``torch.load(ckpt_path, map_location=torch.device(location))`` and to safetensors'
``load_file(ckpt_path, device=location)``: a caller's ``load_state_dict(path, location='cuda')``
places the checkpoint on CUDA as surely as ``map_location="cuda"`` would. A parameter *reaches a
device sink* when the function gives it, unchanged (or wrapped in ``torch.device(...)``), as:

- the device of ``x.to(...)`` (first positional or ``device=``);
- the first argument (or ``type=``) of ``torch.device``;
- ``map_location`` of ``torch.load``; ``device=`` of any other torch call;
- ``device`` of safetensors' ``load_file`` and ``safe_open``;
- an argument of one of the module's own functions whose parameter reaches one (``self.m(...)``
  for a method of the same class).

A parameter the function rebinds reaches nothing here: what it holds at the sink is not known.
The index is worked out per function when asked (a function's facts read once, a worklist over
the calls between the functions asked about and those they hand values on to: linear in the
module), and read at every call site. It reads the
module's own imports flow-insensitively (as the gate does), so the same code indexes the checked
file and the source of another module's function that the run hands over (devlint.project)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import libcst as cst

from devlint.analysis.semantic import dotted_name
from devlint.analysis.tree import descendants, statement_children

# qualified callee -> (position, keyword) of its argument that is a device, for the sinks
# that are functions (`.to` is a method of any receiver).
_SINKS: Mapping[str, tuple[int | None, str]] = MappingProxyType(
    {
        "torch.load": (1, "map_location"),
        "torch.device": (0, "type"),
        "safetensors.torch.load_file": (1, "device"),
        "safetensors.safe_open": (2, "device"),
        "safetensors.torch.safe_open": (2, "device"),
    }
)
# Names a function can rebind a parameter through.
_BINDERS = (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.AsName, cst.NamedExpr)


@dataclass(frozen=True)
class Signature:
    """A function's parameters in positional order (a method's ``self``/``cls`` left out), its
    keyword-only ones, and those of them that reach a device sink."""

    params: tuple[str, ...]
    kwonly: tuple[str, ...]
    reaching: frozenset[str]

    def parameter(self, position: int | None, keyword: str | None) -> str | None:
        """The parameter an argument binds: by keyword, else by position."""
        if keyword is not None:
            return keyword if keyword in self.params or keyword in self.kwonly else None
        if position is not None and position < len(self.params):
            return self.params[position]
        return None


class DeviceParams:
    """The module's functions that have a parameter reaching a device sink, by name: ``f`` for a
    module-level function, ``Class.m`` for a method of a module-level class. Worked out when
    asked: a function's answer needs the facts of the functions it hands parameters to, theirs,
    and so on, not those of the whole module; each function is read once however many ask."""

    def __init__(self, module: cst.Module) -> None:
        self._module = module
        self._imports: dict[str, str] | None = None
        self._defs: dict[str, cst.FunctionDef] | None = None
        self._facts: dict[str, _Facts] = {}
        # name -> the parameters of it that reach a sink, once known (empty: none)
        self._reaching: dict[str, frozenset[str]] = {}

    @classmethod
    def of(cls, module: cst.Module) -> DeviceParams:
        return cls(module)

    def get(self, name: str) -> Signature | None:
        defs = self._definitions()
        if name not in defs:
            return None
        if name not in self._reaching:
            self._solve(name)
        reaching = self._reaching[name]
        if not reaching:
            return None
        fact = self._fact(name)
        return Signature(fact.params, fact.kwonly, reaching)

    def _solve(self, name: str) -> None:
        """The parameters reaching a sink of ``name`` and of every function it hands a value
        on to, at any remove (those already known stay as they are)."""
        new = [name]
        seen = {name}
        for current in new:
            for _, callee, _ in self._fact(current).handed:
                if callee not in seen and callee not in self._reaching:
                    seen.add(callee)
                    new.append(callee)
        reaching = {function: set(self._fact(function).direct) for function in new}
        # (callee, its parameter) -> the (caller, its parameter) pairs that hand a value on to it
        callers: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for function in new:
            for own, callee, theirs in self._fact(function).handed:
                if callee in reaching:
                    callers.setdefault((callee, theirs), []).append((function, own))
                elif theirs in self._reaching[callee]:
                    reaching[function].add(own)
        pending = [(function, param) for function, params in reaching.items() for param in params]
        while pending:
            for caller, param in callers.get(pending.pop(), ()):
                if param not in reaching[caller]:
                    reaching[caller].add(param)
                    pending.append((caller, param))
        self._reaching.update((function, frozenset(params)) for function, params in reaching.items())

    def _fact(self, name: str) -> _Facts:
        if name not in self._facts:
            if self._imports is None:
                self._imports = _imports(self._module)
            self._facts[name] = _Facts.of(name, self._definitions()[name], self._imports, self._definitions())
        return self._facts[name]

    def _definitions(self) -> dict[str, cst.FunctionDef]:
        if self._defs is None:
            self._defs = dict(_functions(self._module))
        return self._defs


def signature_of(source: str, name: str) -> Signature | None:
    """``name``'s signature in the module ``source`` (another module's imports and function,
    devlint.project.Function), or None where it does not parse or has no such function."""
    try:
        module = cst.parse_module(source)
    except (cst.ParserSyntaxError, RecursionError):
        return None
    return DeviceParams.of(module).get(name)


@dataclass(frozen=True)
class _Facts:
    params: tuple[str, ...]
    kwonly: tuple[str, ...]
    # parameters given straight to a sink
    direct: frozenset[str]
    # (parameter, own function, that function's parameter it is given as)
    handed: tuple[tuple[str, str, str], ...]

    @classmethod
    def of(
        cls, name: str, function: cst.FunctionDef, imports: Mapping[str, str], defs: Mapping[str, cst.FunctionDef]
    ) -> _Facts:
        owner = name.rpartition(".")[0]
        names = [param.name.value for param in function.params.params]
        if owner and names and not _is_static(function):
            names = names[1:]
        kwonly = tuple(param.name.value for param in function.params.kwonly_params)
        params = tuple(names)
        rebound: set[str] = set()
        direct: set[str] = set()
        handed: list[tuple[str, str, str]] = []
        calls: list[cst.Call] = []
        for node in descendants(function.body):
            if isinstance(node, cst.Call):
                calls.append(node)
            elif isinstance(node, _BINDERS):
                rebound.update(_bound(node))
        candidates = set(params + kwonly) - rebound
        if not candidates:
            return cls(params, kwonly, frozenset(), ())
        for call in calls:
            for expression in _sink_arguments(call, imports):
                held = _parameter(expression, candidates, imports)
                if held is not None:
                    direct.add(held)
            callee = _own_callee(call, owner, defs)
            if callee is None:
                continue
            for position, keyword, value in _arguments(call):
                held = _parameter(value, candidates, imports)
                theirs = _param_of(callee, defs[callee], position, keyword)
                if held is not None and theirs is not None:
                    handed.append((held, callee, theirs))
        return cls(params, kwonly, frozenset(direct), tuple(handed))


def _functions(module: cst.Module) -> Iterator[tuple[str, cst.FunctionDef]]:
    """Module-level functions and the methods of module-level classes; a name defined twice
    holds no one function."""
    seen: dict[str, int] = {}
    found: dict[str, cst.FunctionDef] = {}
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            seen[statement.name.value] = seen.get(statement.name.value, 0) + 1
            found[statement.name.value] = statement
        elif isinstance(statement, cst.ClassDef):
            for member in statement.body.body:
                if isinstance(member, cst.FunctionDef):
                    key = f"{statement.name.value}.{member.name.value}"
                    seen[key] = seen.get(key, 0) + 1
                    found[key] = member
    for name, function in found.items():
        if seen[name] == 1:
            yield name, function


def _imports(module: cst.Module) -> dict[str, str]:
    """Local name -> qualified name, from every import of the module (inside functions too), as
    SemanticModel.record_import binds them."""
    imports: dict[str, str] = {}
    for node in _statements(module):
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted_name(alias.name)
                if full is None:
                    continue
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    imports[alias.asname.name.value] = full
                else:
                    imports[full.split(".")[0]] = full.split(".")[0]
        elif isinstance(node, cst.ImportFrom) and not node.relative and node.module is not None:
            base = dotted_name(node.module)
            if base is None or isinstance(node.names, cst.ImportStar):
                continue
            for alias in node.names:
                name = dotted_name(alias.name)
                local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
                if name is not None and local is not None:
                    imports[local] = f"{base}.{name}"
    return imports


def _statements(module: cst.Module) -> list[cst.CSTNode]:
    """The module's statements and their parts, in ``descendants``' order (the imports a later
    one binds are read first, so the first import of a name wins, as before): only these can
    be an import, and a module's expressions are most of its nodes."""
    found: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(statement_children(node))
    return found


def _qualname(expression: cst.BaseExpression, imports: Mapping[str, str]) -> str | None:
    name = dotted_name(expression)
    if name is None:
        return None
    root, _, rest = name.partition(".")
    bound = imports.get(root)
    if bound is None:
        return None
    return f"{bound}.{rest}" if rest else bound


def _arguments(call: cst.Call) -> Iterator[tuple[int | None, str | None, cst.BaseExpression]]:
    """(position, keyword, value) of each argument; none after a ``*args`` (positions unknown)."""
    position = 0
    for arg in call.args:
        if arg.star:
            return
        if arg.keyword is not None:
            yield None, arg.keyword.value, arg.value
        else:
            yield position, None, arg.value
            position += 1


def _sink_arguments(call: cst.Call, imports: Mapping[str, str]) -> Iterator[cst.BaseExpression]:
    qualified = _qualname(call.func, imports)
    if qualified in _SINKS:
        at, word = _SINKS[qualified]
    elif isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" and qualified is None:
        at, word = 0, "device"
    elif qualified is not None and qualified.startswith("torch."):
        at, word = None, "device"
    else:
        return
    for position, keyword, value in _arguments(call):
        if keyword == word or (keyword is None and position == at):
            yield value


def _parameter(expression: cst.BaseExpression, candidates: set[str], imports: Mapping[str, str]) -> str | None:
    """The parameter ``expression`` is, as it is or as ``torch.device(parameter)``."""
    if isinstance(expression, cst.Call) and _qualname(expression.func, imports) == "torch.device":
        plain = [arg for arg in expression.args if arg.keyword is None and not arg.star]
        if len(expression.args) != 1 or not plain:
            return None
        expression = plain[0].value
    if isinstance(expression, cst.Name) and expression.value in candidates:
        return expression.value
    return None


def _own_callee(call: cst.Call, owner: str, defs: Mapping[str, cst.FunctionDef]) -> str | None:
    """The module's own function a call in a function (of class ``owner``) calls, if known:
    ``f(...)`` a module-level function, ``self.m(...)`` a method of the same class."""
    func = call.func
    if isinstance(func, cst.Name) and func.value in defs:
        return func.value
    if owner and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        key = f"{owner}.{func.attr.value}"
        return key if key in defs else None
    return None


def _param_of(name: str, function: cst.FunctionDef, position: int | None, keyword: str | None) -> str | None:
    names = [param.name.value for param in function.params.params]
    if "." in name and names and not _is_static(function):
        names = names[1:]
    if keyword is not None:
        kwonly = [param.name.value for param in function.params.kwonly_params]
        return keyword if keyword in names or keyword in kwonly else None
    return names[position] if position is not None and position < len(names) else None


def _is_static(function: cst.FunctionDef) -> bool:
    return any(dotted_name(decorator.decorator) == "staticmethod" for decorator in function.decorators)


def _bound(node: cst.CSTNode) -> Iterator[str]:
    """The plain names a binding node binds."""
    if isinstance(node, cst.AssignTarget):
        target: cst.BaseExpression = node.target
    elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For, cst.CompFor)):
        target = node.target
    elif isinstance(node, cst.AsName):
        target = node.name  # type: ignore[assignment]
    else:
        return
    pending = [target]
    while pending:
        part = pending.pop()
        if isinstance(part, cst.Name):
            yield part.value
        elif isinstance(part, (cst.Tuple, cst.List)):
            pending.extend(element.value for element in part.elements)
        elif isinstance(part, cst.StarredElement):
            pending.append(part.value)
