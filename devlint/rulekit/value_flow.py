"""Intraprocedural facts about values, gathered during the one walk.

The copy rules (DEV301-DEV304) need to know a little about where values come from: which names
hold batches of a DataLoader, which values live on the device, which host copies are
non-blocking copies still in flight. ``Flow`` keeps those facts per scope, in textual order, as
the walk goes: a fact is set when a name is bound to a value we understand and dropped when the
name is bound to anything else. Nothing is guessed: a value we cannot place has no fact, and the
rules stay silent about it.

What counts:
- a *loader* is a ``DataLoader(...)`` call, a name bound to one, or a name or attribute whose name
  ends in ``loader``/``Loader``;
- a *batch* is a target of ``for ... in LOADER`` (also through ``enumerate``, ``tqdm``, ``iter``),
  ``next(iter(LOADER))``, and what unpacking, indexing, attribute access and iteration
  (``.items()``, ``.values()``) of a batch give;
- a value is *on the device* when it was moved there (``.to(<device>)``, ``.cuda()``), created
  there (a torch call with ``device=<device>``), computed from one by a tensor method, a torch
  function, arithmetic or indexing, or returned by calling a module that was moved;
- a *pending* value is ``.to("cpu", non_blocking=True)`` / ``.cpu(non_blocking=True)`` until a
  synchronize.

``FlowRule`` wires the binding hooks; rules built on it add their own hooks and must call the
base hook when they override one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

import libcst as cst

from devlint.analysis.devices import device_value, is_guarded_device_choice
from devlint.analysis.semantic import Binding, Scope, dotted_name, string_value
from devlint.rule import Rule, RuleContext
from devlint.rulekit.calls import keyword, positional, receiver_is_foreign
from devlint.torchfacts.dtypes import DTYPE_NAMES
from devlint.torchfacts.names import (
    COLLATE_FN_POSITION,
    DEVICE_NAMES,
    HOST_READ_METHODS,
    LEAVES_DEVICE,
    LOOP_WRAPPERS,
    MOVES,
)

# Device types a string may name; anything else (a path, a dtype name) is not a device string.
_DEVICE_TYPES = frozenset({"cuda", "mps", "xpu", "npu", "hpu", "xla", "mtia", "privateuseone"})
_HOST_TYPES = ("cpu", "meta")
_NOT_TENSORS = frozenset({"shape", "device", "dtype", "ndim", "is_cuda", "layout", "names", "requires_grad"})
HOST_READ_FUNCTIONS = frozenset({"print", "float", "int", "bool", "str", "repr", "complex"})


class Kind(Enum):
    LOADER = "loader"
    BATCH = "batch"
    DEVICE = "device"  # a tensor on the device, or a module moved there by assignment
    MOVED_MODULE = "moved-module"  # `model.to(device)` as a statement: the name itself moved in place
    DEVICE_DATA = "device-data"  # a dataset built from tensors on the device
    PENDING = "pending"  # a non-blocking copy to the host, not yet synchronized


@dataclass(frozen=True, eq=False)
class Loader:
    """Where a batch comes from: the ``DataLoader(...)`` call when it is known, or the parameter
    of the enclosing function that holds the loader (``param``: that function's scope, the name))."""

    call: cst.Call | None = None
    param: tuple[Scope, str] | None = None
    on_device: bool = False


@dataclass(frozen=True, eq=False)
class Fact:
    kind: Kind
    loader: Loader | None = None
    copy: cst.Call | None = None
    # A batch as the loader yields it, not a part of it: an object of whatever type the collate
    # function made (a tokenizer's `BatchEncoding`, a graph library's batch), whose own `to()`
    # may take other arguments than a tensor's.
    whole: bool = False
    # Each value of such a batch in turn (`for k, v in batch.items()`), where the program's own
    # collate function made them: any type, flex attention's `BlockMask` among them, whose `to()`
    # takes no `non_blocking` (torch/nn/attention/flex_attention.py, 2.13).
    each: bool = False


def _part(fact: Fact | None) -> Fact | None:
    """The fact of a part of what ``fact`` is about (an element, a field, an item): no longer the
    batch as a whole; a part of a value of unknown type is of unknown type too."""
    return replace(fact, whole=False) if fact is not None and fact.whole else fact


def _each_value(fact: Fact) -> Fact | None:
    """The fact of every value of the batch, or of a part of it, that ``fact`` is about, in turn
    (a loop over it, its ``.items()`` or ``.values()``): under ``default_collate`` each is a
    tensor (it makes nothing else with a ``to()``); under the program's own collate function,
    whatever it made (maskrcnn-benchmark's targets, a tuple of its own `BoxList`s, whose `to()`
    takes no `non_blocking`)."""
    if fact.loader is None or not _default_collate(fact.loader):
        return replace(fact, whole=False, each=True)
    return _part(fact)


def _default_collate(loader: Loader) -> bool:
    """The loader is a ``DataLoader(...)`` call in sight that batches with ``default_collate``: no
    ``collate_fn``, no ``batch_size=None`` (which hands the dataset's samples through as they are)."""
    call = loader.call
    if call is None or any(arg.star for arg in call.args) or len(positional(call)) > COLLATE_FN_POSITION:
        return False
    size = keyword(call, "batch_size")
    unbatched = size is not None and isinstance(size.value, cst.Name) and size.value.value == "None"
    return keyword(call, "collate_fn") is None and not unbatched


DEVICE = Fact(Kind.DEVICE)
# A list that device values were appended to: what joins or indexes it is on the device, and a
# host copy must move each of its elements (``np.array(results)``).
GATHERED = Fact(Kind.DEVICE)
MOVED_MODULE = Fact(Kind.MOVED_MODULE)
DEVICE_DATA = Fact(Kind.DEVICE_DATA)


def is_dataloader_call(node: cst.CSTNode) -> bool:
    """``DataLoader(...)`` whatever it resolves to (any DataLoader yields host batches)."""
    if not isinstance(node, cst.Call):
        return False
    name = dotted_name(node.func)
    return name is not None and name.split(".")[-1] == "DataLoader"


def is_loader_name(name: str) -> bool:
    last = name.split(".")[-1]
    return last.endswith(("loader", "Loader"))


def literal_true(node: cst.Arg | None) -> bool:
    return node is not None and isinstance(node.value, cst.Name) and node.value.value == "True"


def last_name(node: cst.CSTNode) -> str | None:
    name = dotted_name(node)
    return None if name is None else name.split(".")[-1]


@dataclass
class Flow:
    ctx: RuleContext
    # id(scope) -> (the scope, kept alive so that its id is never reused; facts of its names)
    _facts: dict[int, tuple[Scope, dict[str, Fact]]] = field(default_factory=dict)
    pending_count: int = 0

    # -- questions -------------------------------------------------------------------------

    def fact(self, name: str, own_function: bool = False) -> Fact | None:
        """The fact about ``name`` where the walk is now (a later untracked binding hides it).
        ``own_function``: only facts of the enclosing function (or module) body itself count, not
        those of the code around a nested function, which may run at any later time."""
        scope: Scope | None = self.ctx.model.scope
        first = True
        while scope is not None:
            if scope.kind != "class" or first:
                entry = self._facts.get(id(scope))
                if entry is not None and name in entry[1]:
                    return entry[1][name]
                if name in scope.bindings:
                    return None
            if own_function and scope.kind in ("function", "module"):
                return None
            first = False
            scope = scope.parent
        return None

    def value(self, expr: cst.BaseExpression) -> Fact | None:
        """What we know about the value of ``expr`` here, if anything."""
        if isinstance(expr, cst.Name):
            return self.fact(expr.value)
        if isinstance(expr, (cst.Attribute, cst.Subscript)):
            base = self.value(expr.value)
            if base is None or base.kind not in (Kind.BATCH, Kind.DEVICE):
                return None
            if isinstance(expr, cst.Attribute) and expr.attr.value in _NOT_TENSORS:
                return None
            return DEVICE if base is GATHERED else _part(base)
        if isinstance(expr, cst.Call):
            return self._call_value(expr)
        if isinstance(expr, cst.BinaryOperation):
            return DEVICE if DEVICE in (self._device(expr.left), self._device(expr.right)) else None
        if isinstance(expr, cst.UnaryOperation):
            return self._device(expr.expression)
        if isinstance(expr, cst.IfExp):
            both = self._device(expr.body) is DEVICE and self._device(expr.orelse) is DEVICE
            return DEVICE if both else None
        return None

    def _device(self, expr: cst.BaseExpression) -> Fact | None:
        found = self.value(expr)
        return DEVICE if found is not None and found.kind is Kind.DEVICE else None

    def _call_value(self, call: cst.Call) -> Fact | None:
        func = call.func
        if isinstance(func, cst.Attribute):
            method, receiver = func.attr.value, func.value
            if method in ("to", "cuda", "cpu"):
                where = "device" if method == "cuda" else "cpu" if method == "cpu" else self.move_target(call)
                if where == "device":
                    foreign = receiver_is_foreign(self.ctx, receiver, self.ctx.site(call), method)
                    return None if foreign else DEVICE
                if where == "cpu":
                    return Fact(Kind.PENDING, copy=call) if literal_true(keyword(call, "non_blocking")) else None
                if where == "dtype":
                    return self._device(receiver)
                return None
            if method in LEAVES_DEVICE:
                return None
            base = self.value(receiver)
            if base is not None and base.kind in (Kind.DEVICE, Kind.MOVED_MODULE):
                # a tensor method keeps the device; `moved_model.forward(x)` computes there
                return DEVICE
            return self._torch_call_value(call) if base is None else None
        if isinstance(func, cst.Name) and func.value == "next" and call.args:
            inner = call.args[0].value
            if isinstance(inner, cst.Call) and last_name(inner.func) == "iter" and inner.args:
                loader = self.loader(inner.args[0].value)
                if loader is not None and not loader.on_device:
                    return Fact(Kind.BATCH, loader=loader, whole=True)
            return None
        callee = self.value(func)
        if callee is not None and callee.kind in (Kind.DEVICE, Kind.MOVED_MODULE):
            return DEVICE
        if self._is_torch_module(func) and any(self._device(a.value) is DEVICE for a in positional(call)):
            # `criterion(model(x), y)`: a torch module computes where its inputs are
            return DEVICE
        return self._torch_call_value(call)

    def _is_torch_module(self, func: cst.BaseExpression) -> bool:
        """A name bound to an instance of a torch.nn class (``criterion = nn.CrossEntropyLoss()``)."""
        if not isinstance(func, cst.Name):
            return False
        binding = self.binding(func.value)
        if binding is None or binding.kind != "assign" or not isinstance(binding.value, cst.Call):
            return False
        root = dotted_name(binding.value.func)
        if root is None or root.split(".")[0] not in self.ctx.model.imports:
            return False
        return (self.ctx.model.qualname(binding.value.func) or "").startswith("torch.nn.")

    def _torch_call_value(self, call: cst.Call) -> Fact | None:
        root = dotted_name(call.func)
        if root is None or root.split(".")[0] not in self.ctx.model.imports:
            return None
        qual = self.ctx.model.qualname(call.func)
        if qual is None or not qual.startswith("torch."):
            return None
        device = keyword(call, "device")
        if device is not None:
            return DEVICE if self.device_kind(device.value) == "device" else None
        first = positional(call)
        return self._device(first[0].value) if first else None

    def move_target(self, call: cst.Call) -> str | None:
        """For ``x.to(...)``: "device" (a non-CPU device), "cpu", "dtype" (dtype only), or None."""
        device = keyword(call, "device")
        if device is not None:
            return self.device_kind(device.value)
        args = positional(call)
        if args:
            first = args[0].value
            if self.is_dtype(first):
                return "dtype"
            return self.device_kind(first)
        if keyword(call, "dtype") is not None:
            return "dtype"
        return None

    def is_dtype(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Attribute) and expr.attr.value == "dtype":
            return True
        qual = self.ctx.model.qualname(expr)
        return qual is not None and qual.startswith("torch.") and qual.split(".")[-1] in DTYPE_NAMES

    def device_kind(self, expr: cst.BaseExpression) -> str | None:
        """"device" for an expression naming a device a CUDA run keeps on the GPU, "cpu" for a
        host-only device, None when we cannot tell (a tensor, an integer rank, ...)."""
        model = self.ctx.model
        text = string_value(expr)
        if text is not None:
            if text.startswith(_HOST_TYPES):
                return "cpu"
            return "device" if text.split(":")[0] in _DEVICE_TYPES else None
        if is_guarded_device_choice(model, expr):
            return "device"
        if isinstance(expr, cst.Call):
            qual = model.qualname(expr.func) or ""
            if qual == "torch.device":
                return "device" if device_value(model, expr) else "cpu"
            if qual in ("torch.accelerator.current_accelerator", "torch.cuda.current_device"):
                return "device"
            return None
        if isinstance(expr, cst.Attribute) and expr.attr.value == "device":
            return "device"
        name = dotted_name(expr)
        if name is None:
            return None
        binding = self.binding(name)
        if binding is not None and binding.kind == "assign":
            known = device_value(model, binding.value)
            if known is not None:
                return "device" if known else "cpu"
        if binding is not None and binding.kind == "param" and binding.annotation is not None:
            if model.qualname(binding.annotation) == "torch.device":
                return "device"
        last = name.split(".")[-1]
        return "device" if last in DEVICE_NAMES or last.endswith("_device") else None

    def binding(self, name: str) -> Binding | None:
        """The latest binding of ``name`` visible where the walk is now."""
        model = self.ctx.model
        order = self.ctx.tracker.order
        for _, binding in model.lookup(name, model.scope, before=order):
            return binding
        return None

    def loader(self, expr: cst.BaseExpression) -> Loader | None:
        """The loader an expression is, if it is one."""
        if is_dataloader_call(expr):
            assert isinstance(expr, cst.Call)
            return Loader(call=expr, on_device=self._dataset_on_device(expr))
        name = dotted_name(expr)
        if name is None:
            return None
        found = self.fact(name) if isinstance(expr, cst.Name) else None
        if found is not None:
            return found.loader if found.kind is Kind.LOADER else None
        if not is_loader_name(name):
            return None
        if isinstance(expr, cst.Name):
            param = self._param_scope(name)
            if param is not None:
                return Loader(param=(param, name))
        return Loader()

    def _param_scope(self, name: str) -> Scope | None:
        model = self.ctx.model
        for scope, binding in model.lookup(name, model.scope):
            return scope if binding.kind == "param" and scope.kind == "function" else None
        return None

    def _dataset_on_device(self, call: cst.Call) -> bool:
        """The dataset already lives on the device: its batches are no host memory to pin."""
        dataset = keyword(call, "dataset")
        args = positional(call)
        expr = dataset.value if dataset is not None else args[0].value if args else None
        if expr is None:
            return False
        if isinstance(expr, cst.Call):
            return any(self._device(arg.value) is DEVICE for arg in expr.args)
        found = self.value(expr)
        return found is not None and found.kind in (Kind.DEVICE, Kind.DEVICE_DATA)

    def batch_move(self, call: cst.Call) -> Fact | None:
        """The batch fact when ``call`` copies a DataLoader batch from the host to the device
        (``.to(<device>)`` or ``.cuda(...)``), with or without ``non_blocking``."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in MOVES:
            return None
        if func.attr.value == "to" and self.move_target(call) != "device":
            return None
        found = self.value(func.value)
        if found is None or found.kind is not Kind.BATCH:
            return None
        if not isinstance(func.value, (cst.Name, cst.Attribute, cst.Subscript)):
            return None  # `x.float().to(device)` copies a fresh, unpinned tensor
        return found

    # -- updates, called from the binding hooks -------------------------------------------

    def _set(self, name: str, fact: Fact | None) -> None:
        scope = self.ctx.model.scope
        facts = self._facts.setdefault(id(scope), (scope, {}))[1]
        old = facts.pop(name, None)
        if old is not None and old.kind is Kind.PENDING:
            self.pending_count -= 1
        if fact is not None:
            facts[name] = fact
            if fact.kind is Kind.PENDING:
                self.pending_count += 1

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        """``target = value`` (``value`` None: bound to something we know nothing about)."""
        if isinstance(target, cst.Name):
            self._set(target.value, self._assigned(value) if value is not None else None)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements) and not any(
                isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)
            ):
                for element, item in zip(elements, value.elements):
                    self.bind(element, item.value)
                return
            found = self.value(value) if value is not None else None
            batch = found if found is not None and found.kind is Kind.BATCH else None
            for element in elements:
                self._bind_all(element, _part(batch))
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, None)

    def _bind_all(self, target: cst.BaseExpression, fact: Fact | None) -> None:
        if isinstance(target, cst.Name):
            self._set(target.value, fact)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_all(element.value, _part(fact))
        elif isinstance(target, cst.StarredElement):
            self._bind_all(target.value, _part(fact))

    def _assigned(self, value: cst.BaseExpression) -> Fact | None:
        if is_dataloader_call(value):
            return Fact(Kind.LOADER, loader=self.loader(value))
        found = self.value(value)
        if found is not None:
            return found
        if isinstance(value, cst.Call) and any(self._device(arg.value) is DEVICE for arg in value.args):
            return DEVICE_DATA
        return None

    def bind_loop(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """``for target in iterable`` (a statement or a comprehension)."""
        batch, index = self._loop_items(iterable)
        if batch is None or index is None:
            self._bind_all(target, None)
            return
        if index:
            if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != 2:
                self._bind_all(target, None)
                return
            self._bind_all(target.elements[0].value, None)
            target = target.elements[1].value
        self._bind_all(target, batch)

    def bind_comprehension(self, clause: cst.CompFor | None) -> None:
        while clause is not None:
            self.bind_loop(clause.target, clause.iter)
            clause = clause.inner_for_in

    def _loop_items(self, iterable: cst.BaseExpression) -> tuple[Fact | None, bool | None]:
        """The fact of the batch a loop yields, and whether the batch is the second of a pair."""
        enumerated = 0
        expr = iterable
        while isinstance(expr, cst.Call) and last_name(expr.func) in LOOP_WRAPPERS and expr.args:
            if last_name(expr.func) == "enumerate":
                enumerated += 1
            expr = expr.args[0].value
        if enumerated > 1:
            return None, None
        loader = self.loader(expr)
        if loader is not None:
            return (None if loader.on_device else Fact(Kind.BATCH, loader=loader, whole=True)), bool(enumerated)
        # iterating a batch (a list of tensors, or a dict through .items()/.values())
        pair = False
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args:
            pair = expr.func.attr.value == "items"
            if expr.func.attr.value not in ("items", "values"):
                return None, None
            expr = expr.func.value
        found = self.value(expr)
        if found is None or found.kind is not Kind.BATCH or enumerated:
            return None, None
        return _each_value(found), pair

    def moved_in_place(self, statement: cst.BaseExpression) -> None:
        """``model.to(device)`` / ``model.cuda()`` as a statement: a module moved in place (a
        tensor statement like this would do nothing, so the name is not a device tensor)."""
        if not isinstance(statement, cst.Call) or not isinstance(statement.func, cst.Attribute):
            return
        receiver, method = statement.func.value, statement.func.attr.value
        moves = method == "cuda" or (method == "to" and self.move_target(statement) == "device")
        if moves and isinstance(receiver, cst.Name) and self._call_value(statement) is DEVICE:
            self._set(receiver.value, MOVED_MODULE)

    def gathered(self, statement: cst.BaseExpression) -> None:
        """``results.append(value)`` as a statement, ``value`` on the device: the list now holds a
        device tensor, and what joins it (``torch.cat(results)``, ``torch.stack``) or indexes it is
        on the device too. A host value appended leaves what is known as it was."""
        if not isinstance(statement, cst.Call) or not isinstance(statement.func, cst.Attribute):
            return
        receiver, method = statement.func.value, statement.func.attr.value
        if method != "append" or not isinstance(receiver, cst.Name) or len(statement.args) != 1:
            return
        if self.binding(receiver.value) is not None and self._device(statement.args[0].value) is DEVICE:
            self._set(receiver.value, GATHERED)

    def synchronized(self) -> None:
        """A host synchronize: every copy in flight has landed."""
        if not self.pending_count:
            return
        scope: Scope | None = self.ctx.model.scope
        while scope is not None:
            facts = self._facts[id(scope)][1] if id(scope) in self._facts else {}
            for name in [n for n, f in facts.items() if f.kind is Kind.PENDING]:
                del facts[name]
                self.pending_count -= 1
            # a synchronize inside a function body waits when the function runs, not here
            scope = None if scope.kind in ("function", "module") else scope.parent


def host_read(ctx: RuleContext, node: cst.CSTNode) -> bool:
    """The value of ``node`` is read on the host right here: ``.numpy()``/``.item()``/
    ``.tolist()``, printed or converted (``print``, ``float``, ``int``, f-strings), indexed, or
    an operand of Python arithmetic or a comparison."""
    parent = ctx.parent(node)
    if isinstance(parent, cst.Attribute) and parent.value is node:
        call = ctx.parent(parent)
        return parent.attr.value in HOST_READ_METHODS and isinstance(call, cst.Call) and call.func is parent
    if isinstance(parent, cst.Subscript) and parent.value is node:
        return not isinstance(ctx.parent(parent), (cst.AssignTarget, cst.Del))
    if isinstance(parent, cst.Arg) and parent.value is node and parent.keyword is None:
        call = ctx.parent(parent)
        return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in HOST_READ_FUNCTIONS
    if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget)):
        return True
    return isinstance(parent, cst.FormattedStringExpression)


def is_synchronize(call: cst.Call) -> bool:
    """``torch.cuda.synchronize()``, ``torch.accelerator.synchronize()``, an event's or stream's
    ``.synchronize()``, or ``.wait()`` (which only ever makes us quieter)."""
    return last_name(call.func) in ("synchronize", "wait")


class FlowRule(Rule):
    """A rule with a ``Flow`` kept current through the binding hooks."""

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self.flow = Flow(ctx)

    def visit_For(self, node: cst.For) -> None:
        self.flow.bind_loop(node.target, node.iter)

    # A comprehension's element is visited before its `for`: bind the targets on entry.
    def visit_ListComp(self, node: cst.ListComp) -> None:
        self.flow.bind_comprehension(node.for_in)

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self.flow.bind_comprehension(node.for_in)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self.flow.bind_comprehension(node.for_in)

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self.flow.bind_comprehension(node.for_in)

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self.flow.bind(target.target, node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.flow.bind(node.target, node.value)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self.flow.bind(node.asname.name, None)

    def leave_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.flow.bind(node.target, node.value)

    def leave_Expr(self, node: cst.Expr) -> None:
        self.flow.moved_in_place(node.value)
        self.flow.gathered(node.value)
