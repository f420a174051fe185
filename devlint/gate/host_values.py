"""Values that DEV304's flow (devlint.rulekit.value_flow) can never find on the device, told from
CPython's tree: the gate's exemption for `.numpy()` and numpy's copies of host values.

The flow sets a fact on a name only where the name is bound by ``=``, an annotated ``=``, ``:=``
(``Flow.bind``), a loop (a batch, never a device fact), or where a statement
``name.append(v)`` / ``name.to(d)`` / ``name.cuda()`` gathers or moves it. So, read without
regard to order or scope, a name is on the host when every value any of those assignments gives
it anywhere in the file is, and no such statement names it: whatever the flow knows of it then
is no device fact. Each answer here is a "no" of ``Flow.value(expr).kind is Kind.DEVICE``; where
the shape is not one listed, the answer is "not known" and the rule decides.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from devlint.gate.facts import Facts
from devlint.gate.paths import MAX_DEPTH
from devlint.torchfacts.dtypes import DTYPE_NAMES
from devlint.torchfacts.names import LEAVES_DEVICE

# What `Flow.value` knows nothing about: it answers None for these shapes whatever they hold.
_NO_FACT = (
    ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp,
    ast.DictComp, ast.GeneratorExp, ast.Lambda, ast.Compare, ast.BoolOp,
)
# Statements `name.<method>(...)` that may give `name` a device fact (`Flow.gathered`, `Flow.moved_in_place`).
_RECEIVING = ("append", "to", "cuda")
_HOST_PREFIXES = ("cpu", "meta")


class Bindings:
    """What the flow may bind names to in some code (a file, or one function): the value each
    assignment gives each name (None: "not known"), and the names that a statement may gather
    into or move (receivers of ``append``, ``to``, ``cuda``)."""

    def __init__(self, facts: Facts) -> None:
        assigned: dict[str, list[ast.expr | None]] = {}
        for targets, value in facts.assignments:
            for target in targets:
                _bind(assigned, target, value)
        self.assigned = assigned
        # `a.b = ...`: a dotted name the semantic model may bind
        self.dotted_targets = {
            name for targets, _ in facts.assignments for target in targets if (name := _dotted(target)) is not None
        }
        self.receivers = {
            call.func.value.id
            for method in _RECEIVING
            for call in facts.calls.get(method, ())
            if type(call.func) is ast.Attribute and type(call.func.value) is ast.Name
        }

    def untouched(self, name: str) -> bool:
        return name not in self.assigned and name not in self.receivers


class HostValues:
    """Answers ``on_host(expr)`` for one file's facts; each name is looked at once."""

    def __init__(self, facts: Facts) -> None:
        self._facts = facts
        self._file: Bindings | None = None
        self._names: dict[str, bool] = {}

    def on_host(self, expr: ast.expr, depth: int = 0) -> bool:
        """The flow never finds ``expr`` on the device (nor, for a name, gathered into a list of
        device values), wherever in the file it is read. Past ``MAX_DEPTH`` nested reads (a
        chain of 3,000 `+`, names copied into names) the answer is "not known"."""
        if depth > MAX_DEPTH:
            return False
        kind = type(expr)
        if isinstance(expr, _NO_FACT):
            return True
        if kind is ast.Name:
            return self._name(expr.id, depth + 1)
        if kind is ast.Attribute or kind is ast.Subscript:
            return self.on_host(expr.value, depth + 1)
        if kind is ast.BinOp:
            return self.on_host(expr.left, depth + 1) and self.on_host(expr.right, depth + 1)
        if kind is ast.UnaryOp:
            return self.on_host(expr.operand, depth + 1)
        if kind is ast.IfExp:
            return self.on_host(expr.body, depth + 1) or self.on_host(expr.orelse, depth + 1)
        if kind is ast.Call:
            return self._call(expr, depth + 1)
        return False

    def name_on_host(self, name: str, local: Bindings) -> bool:
        """``name`` is on the host where the flow looks it up in one function only (the caller
        knows the function binds it before the read): ``local`` is that function's code."""
        return name not in local.receivers and self._values_on_host(local.assigned.get(name, ()), 1)

    def _call(self, call: ast.Call, depth: int) -> bool:
        if any(type(arg) is ast.Starred for arg in call.args) or any(k.arg is None for k in call.keywords):
            return False
        func = call.func
        if type(func) is ast.Attribute:
            method = func.attr
            if method in LEAVES_DEVICE:
                # (`cpu` too: a host copy, or one still in flight)
                return True
            if method == "to":
                return _host_target(call) or (self._cast(call) and self.on_host(func.value, depth))
            if method == "cuda":
                return False
            # a tensor method keeps the device of its receiver (a name holds no moved module
            # where it is on the host); a torch function places its result where its arguments
            # or `device=` say
            return self.on_host(func.value, depth) and self._not_torch(func)
        if type(func) is ast.Name:
            if func.id == "next" and call.args:
                return True
            # neither a device value called, nor a torch module, nor a torch function
            return self._bindings().untouched(func.id) and self._not_torch(func)
        return False

    def _cast(self, call: ast.Call) -> bool:
        """``x.to(torch.float32)``, ``x.to(y.dtype)``, ``x.to(dtype=...)`` or ``x.to()``: no
        device named (`Flow.move_target` answers "dtype", or None for a name no code binds
        where its last name is no device's), so the result is where ``x`` is."""
        if any(k.arg == "device" for k in call.keywords):
            return False
        if not call.args:
            return True
        first = call.args[0]
        dotted = _dotted(first)
        return (
            type(first) is ast.Attribute
            and (first.attr in DTYPE_NAMES or first.attr == "dtype")
            and dotted is not None
            and dotted not in self._bindings().dotted_targets
        )

    def _not_torch(self, func: ast.expr) -> bool:
        """The callee's qualified name never starts with ``torch.``: its root is no name (the
        flow resolves no qualified name then), or a name never assigned (no value alias) that
        no import binds to torch."""
        while type(func) is ast.Attribute:
            func = func.value
        if type(func) is not ast.Name:
            return True
        bound = self._facts.imports.get(func.id, ())
        return self._bindings().untouched(func.id) and not any(name == "torch" or name.startswith("torch.") for name in bound)

    def _name(self, name: str, depth: int) -> bool:
        known = self._names.get(name)
        if known is not None:
            return known
        bindings = self._bindings()
        # a cycle (`x = x.float()`) answers "not known" until every value is read
        self._names[name] = False
        answer = name not in bindings.receivers and self._values_on_host(bindings.assigned.get(name, ()), depth)
        # (a "not known" that the cut-off gave is kept too: it only leaves the decision to the rule)
        self._names[name] = answer
        return answer

    def _values_on_host(self, values: Iterable[ast.expr | None], depth: int) -> bool:
        return all(value is not None and self.on_host(value, depth) for value in values)

    def _bindings(self) -> Bindings:
        if self._file is None:
            self._file = Bindings(self._facts)
        return self._file


def _bind(assigned: dict[str, list[ast.expr | None]], target: ast.expr, value: ast.expr | None) -> None:
    """What ``target = value`` gives each name: an element of a display unpacked into as many
    targets, else the whole value (for a tuple target: None, "not known", where the value is a
    display that does not unpack element by element)."""
    kind = type(target)
    if kind is ast.Name:
        assigned.setdefault(target.id, []).append(value)
    elif kind is ast.Tuple or kind is ast.List:
        elements = target.elts
        if (
            type(value) in (ast.Tuple, ast.List)
            and len(value.elts) == len(elements)
            and not any(type(e) is ast.Starred for e in (*elements, *value.elts))
        ):
            for element, item in zip(elements, value.elts):
                _bind(assigned, element, item)
            return
        for element in elements:
            _bind(assigned, element, None if type(value) in (ast.Tuple, ast.List) else value)
    elif kind is ast.Starred:
        _bind(assigned, target.value, None)


def _host_target(call: ast.Call) -> bool:
    """``x.to("cpu")``, ``x.to(device="cpu", ...)``: where `Flow.move_target` answers "cpu"."""
    given = next((k.value for k in call.keywords if k.arg == "device"), None)
    if given is None:
        given = call.args[0] if call.args else None
    return type(given) is ast.Constant and type(given.value) is str and given.value.startswith(_HOST_PREFIXES)


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
