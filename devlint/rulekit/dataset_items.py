"""What a Dataset class of the file hands a DataLoader: whether every value its ``__getitem__`` can
return is built on the host, and if not, why it may hold device tensors.

DataLoader's ``pin_memory`` calls ``pin_memory()`` on each tensor of a collated batch
(torch/utils/data/_utils/pin_memory.py), and a tensor off the CPU cannot be pinned ("cannot pin
'torch.cuda.FloatTensor' only dense CPU tensors can be pinned", ATen's ``_pin_memory``). Strings,
numbers and other objects pass through it, and default_collate stacks CPU tensors into CPU tensors
and turns numbers and NumPy arrays into CPU tensors. So where every item is built on the host,
pinning changes no value.

Built on the host: literals; lists, tuples, sets and dicts of host values; an element, slice or
attribute of a host value; ``torch.tensor``/``torch.as_tensor`` of a list display (the data is
read into a new tensor on the default device, whatever devices its elements are on:
``internal_new_from_data`` in torch/csrc/utils/tensor_new.cpp) or of a host value;
``torch.from_numpy``; ``torch.load(..., map_location="cpu")``; other torch and NumPy functions of
host values without ``device=``; ``.cpu()``, ``.numpy()``, ``.tolist()``, ``.item()``; methods of a
host value other than the moves. The default device is taken to be the CPU: the caller says
nothing where the file changes it. Anything else, an argument of the constructor or a name of
another module among them, is not known to be on the host.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import libcst as cst

from devlint.analysis.semantic import dotted_name, string_value
from devlint.rulekit.calls import keyword, positional
from devlint.rulekit.class_stores import Stores, escaped_attributes, foreign_attributes, function_stores, outputs, self_name
from devlint.torchfacts.names import DATASETS, MOVES, TO_HOST

# Why a returned value may not be on the host.
LOADED = "loaded"  # what torch.load restored without map_location="cpu"
MOVED = "moved"  # put on a device: `.cuda()`, `.to(...)`, `device=`
UNKNOWN = "unknown"  # not traced to the host
Causes = frozenset[str]
HOST: Causes = frozenset()
Qualname = Callable[[cst.CSTNode], "str | None"]

_TENSOR_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor"})
# methods that may put a tensor on a device besides `.cuda()`/`.to()`: other backends' moves, and
# `.type("torch.cuda.FloatTensor")`
_OTHER_MOVES = frozenset({"xpu", "ipu", "mtia", "hpu", "npu", "type"})
# `.to(...)` keywords that change no device
_TO_KEYWORDS = frozenset({"dtype", "copy", "non_blocking", "memory_format"})
_SCALAR_BUILTINS = frozenset({"len", "int", "float", "str", "bool", "repr", "hash", "range", "isinstance"})
_PASSING_BUILTINS = frozenset({"list", "tuple", "set", "dict", "sorted", "reversed", "zip", "enumerate", "min", "max", "sum", "abs", "round"})
_HOST_LIBRARIES = ("torch.", "numpy.", "math.")
_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
# expressions looked at for one class, and how deep in one another, before giving up (a chain of
# thousands of `+` must not exhaust Python's recursion limit)
_BUDGET = 2000
_DEPTH = 100


def cpu_map_location(load: cst.Call) -> bool:
    """`torch.load(..., map_location="cpu")` (or `torch.device("cpu")`): whatever was saved comes back on the host."""
    given = keyword(load, "map_location")
    plain = positional(load)
    value = given.value if given is not None else plain[1].value if len(plain) > 1 else None
    return value is not None and _names_the_cpu(value)


def _names_the_cpu(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.Call) and dotted_name(value.func) in ("torch.device", "device") and value.args:
        value = value.args[0].value
    return string_value(value) == "cpu"


@dataclass(frozen=True)
class _Frame:
    """One method being read: its ``self``, what its parameters hold (only where it was called with
    known arguments), and what it stores."""

    function: cst.FunctionDef | None  # None: the class body
    self_name: str | None
    params: dict[str, Causes]
    stores: Stores


def item_causes(cls: cst.ClassDef, module: cst.Module, qualname: Qualname) -> Causes:
    """Why a value the DataLoader gets from ``cls`` may be off the host (LOADED, MOVED, UNKNOWN);
    empty when every value its ``__getitem__`` can return is built on the host."""
    return _ClassItems(cls, module, qualname).causes()


class _ClassItems:
    """Reads one class: its `__getitem__`'s returns, through its own methods and attributes."""

    def __init__(self, cls: cst.ClassDef, module: cst.Module, qualname: Qualname) -> None:
        self.cls = cls
        self.module = module
        self.qualname = qualname
        self.methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
        self.budget = _BUDGET
        self.depth = 0
        self.active: set[tuple[object, str]] = set()
        self.read: set[str] = set()  # the attributes a returned value was traced through
        self._stores: dict[int, Stores] = {}
        self._attributes: dict[str, list[tuple[cst.BaseExpression | None, cst.FunctionDef | None]]] | None = None

    def causes(self) -> Causes:
        getitem = self.methods.get("__getitem__")
        if getitem is None or not self._plain():
            return frozenset({UNKNOWN})
        found = set(self._returns(getitem, {}))
        found |= self._filled_elsewhere()
        if found:
            return frozenset(found)
        foreign = foreign_attributes(self.module)
        escaped: set[str] = set()
        for method in self.methods.values():
            escaped |= escaped_attributes(method, self._known_call)
        if foreign.any or self.read & (foreign.names | escaped):
            return frozenset({UNKNOWN})
        return HOST

    def _plain(self) -> bool:
        """Only torch's Dataset (or nothing) as a base, no decorator, and no hook that goes around
        `__getitem__` (`__getitems__`, which DataLoader's fetcher prefers) or the attributes it reads."""
        hooks = {"__getitems__", "__iter__", "__getattr__", "__getattribute__", "__setattr__", "__new__"}
        if self.cls.decorators or hooks & self.methods.keys():
            return False
        return all(
            base.keyword is None and (self.qualname(base.value) in DATASETS or dotted_name(base.value) == "object")
            for base in self.cls.bases
        )

    def _filled_elsewhere(self) -> set[str]:
        """What the class's methods put into containers other than its own attributes (`out.append(v)`,
        `out[k] = v`): such a container may be one `__getitem__` returns, reached another way."""
        found: set[str] = set()
        for method in self.methods.values():
            frame = self._frame(method, {})
            for values in frame.stores.filled.values():
                for value in values:
                    found |= self._expr(value, frame, {}) if value is not None else {UNKNOWN}
        return found

    def _frame(self, function: cst.FunctionDef, params: dict[str, Causes]) -> _Frame:
        key = id(function)
        if key not in self._stores:
            self._stores[key] = function_stores(function)
        return _Frame(function, self_name(function), params, self._stores[key])

    def _guarded(self, key: tuple[object, str], compute: Callable[[], Causes]) -> Causes:
        """``compute()``, or nothing where it is already under way: a value that feeds itself
        (`x = x[1:]`) adds no cause of its own."""
        if key in self.active:
            return HOST
        self.active.add(key)
        try:
            return compute()
        finally:
            self.active.discard(key)

    def _returns(self, function: cst.FunctionDef, params: dict[str, Causes]) -> Causes:
        returned = outputs(function)
        if returned.yields:
            return frozenset({UNKNOWN})
        frame = self._frame(function, params)

        def compute() -> Causes:
            found: set[str] = set()
            for value in returned.values:
                if value is not None:
                    found |= self._expr(value, frame, {})
            return frozenset(found)

        return self._guarded((id(function), "return"), compute)

    def _expr(self, node: cst.BaseExpression, frame: _Frame, env: dict[str, Causes]) -> Causes:
        """Why ``node``'s value may be off the host (empty: built on the host)."""
        self.budget -= 1
        if self.budget < 0 or self.depth >= _DEPTH:
            return frozenset({UNKNOWN})
        self.depth += 1
        try:
            return self._expr_at(node, frame, env)
        finally:
            self.depth -= 1

    def _expr_at(self, node: cst.BaseExpression, frame: _Frame, env: dict[str, Causes]) -> Causes:
        if isinstance(node, _LITERALS):
            return HOST
        if isinstance(node, cst.Name):
            return self._name(node, frame, env)
        if isinstance(node, cst.Attribute):
            return self._attribute_of(node, frame, env)
        if isinstance(node, (cst.Subscript, cst.NamedExpr)):
            return self._expr(node.value, frame, env)
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            return self._union((e.value for e in node.elements), frame, env)
        if isinstance(node, cst.Dict):
            parts = [p for e in node.elements for p in ((e.key, e.value) if isinstance(e, cst.DictElement) else (e.value,))]
            return self._union(parts, frame, env)
        if isinstance(node, _COMPREHENSIONS):
            return self._comprehension(node, frame, env)
        if isinstance(node, (cst.BinaryOperation, cst.BooleanOperation)):
            return self._union((node.left, node.right), frame, env)
        if isinstance(node, cst.UnaryOperation):
            return self._expr(node.expression, frame, env)
        if isinstance(node, cst.Comparison):
            return self._union((node.left, *(c.comparator for c in node.comparisons)), frame, env)
        if isinstance(node, cst.IfExp):
            return self._union((node.body, node.orelse), frame, env)
        if isinstance(node, cst.Call):
            return self._call(node, frame, env)
        return frozenset({UNKNOWN})

    def _union(self, nodes: Iterable[cst.BaseExpression], frame: _Frame, env: dict[str, Causes]) -> Causes:
        found: set[str] = set()
        for node in nodes:
            found |= self._expr(node, frame, env)
        return frozenset(found)

    def _name(self, node: cst.Name, frame: _Frame, env: dict[str, Causes]) -> Causes:
        name = node.value
        if name in env:
            return env[name]
        if name in ("None", "True", "False"):
            return HOST
        params = {p.name.value for p in (*frame.function.params.posonly_params, *frame.function.params.params,
                                          *frame.function.params.kwonly_params)} if frame.function is not None else set()
        values = frame.stores.names.get(name)
        if name not in params and values is None:
            return self._imported(node)
        # the dataset object itself, or a parameter no known call gave a value
        found: set[str] = set(frame.params.get(name, {UNKNOWN})) if name in params or name == frame.self_name else set()
        for value in values or ():
            found |= self._guarded(
                (id(frame.function), name),
                lambda value=value: self._expr(value, frame, {}) if value is not None else frozenset({UNKNOWN}),
            )
        return frozenset(found)

    def _imported(self, node: cst.BaseExpression) -> Causes:
        """A name of another module: torch's, NumPy's and math's constants (`torch.long`) are on
        the host, torch.cuda's are not; anything else is not known."""
        qual = self.qualname(node)
        if qual is not None and qual.startswith("torch.cuda."):
            return frozenset({MOVED})
        return HOST if qual is not None and qual.startswith(_HOST_LIBRARIES) else frozenset({UNKNOWN})

    def _attribute_of(self, node: cst.Attribute, frame: _Frame, env: dict[str, Causes]) -> Causes:
        if isinstance(node.value, cst.Name) and node.value.value == frame.self_name and frame.self_name not in env:
            return self._attribute(node.attr.value)
        if self.qualname(node) is not None:
            return self._imported(node)
        return self._expr(node.value, frame, env)

    def _attribute(self, name: str) -> Causes:
        """``self.<name>``: every value the class stores there (a method read as a value is not followed)."""
        self.read.add(name)
        stores = self._attribute_stores().get(name)
        if name in self.methods or not stores:
            return frozenset({UNKNOWN})

        def compute() -> Causes:
            found: set[str] = set()
            for value, function in stores:
                if value is None:
                    return frozenset({UNKNOWN})
                frame = self._frame(function, {}) if function is not None else _Frame(None, None, {}, Stores())
                found |= self._expr(value, frame, {})
            return frozenset(found)

        return self._guarded(("attribute", name), compute)

    def _attribute_stores(self) -> dict[str, list[tuple[cst.BaseExpression | None, cst.FunctionDef | None]]]:
        if self._attributes is None:
            found: dict[str, list[tuple[cst.BaseExpression | None, cst.FunctionDef | None]]] = {}
            for statement in self.cls.body.body:
                if isinstance(statement, cst.SimpleStatementLine):
                    for small in statement.body:
                        if isinstance(small, cst.Assign):
                            for target in small.targets:
                                if isinstance(target.target, cst.Name):
                                    found.setdefault(target.target.value, []).append((small.value, None))
            for method in self.methods.values():
                for name, values in self._frame(method, {}).stores.attributes.items():
                    found.setdefault(name, []).extend((value, method) for value in values)
            self._attributes = found
        return self._attributes

    def _comprehension(self, node: cst.BaseExpression, frame: _Frame, env: dict[str, Causes]) -> Causes:
        inner = dict(env)
        for_in: cst.CompFor | None = node.for_in
        while for_in is not None:
            # an element of a host value is on the host
            items = self._expr(for_in.iter, frame, inner)
            for name in _bound_names(for_in.target):
                inner[name] = items
            for_in = for_in.inner_for_in
        if isinstance(node, cst.DictComp):
            return self._union((node.key, node.value), frame, inner)
        return self._expr(node.elt, frame, inner)

    def _call(self, node: cst.Call, frame: _Frame, env: dict[str, Causes]) -> Causes:
        func = node.func
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        if method in TO_HOST or (method == "to" and _to_the_cpu(node)):
            return HOST
        if method == "to" and self._dtype_only(node):
            return self._expr(func.value, frame, env)
        if method in MOVES or (method in _OTHER_MOVES and node.args):
            return frozenset({MOVED})
        device = keyword(node, "device")
        if device is not None and not _names_the_cpu(device.value):
            return frozenset({MOVED})
        qual = self.qualname(func)
        if qual is not None:
            return self._library_call(qual, node, frame, env)
        arguments = [a.value for a in node.args]
        if isinstance(func, cst.Attribute):
            if isinstance(func.value, cst.Name) and func.value.value == frame.self_name and frame.self_name not in env:
                return self._method(func.attr.value, node, frame, env)
            # a method of a value: on the host, a host value's methods other than the moves give host values
            return self._union([func.value, *arguments], frame, env)
        if isinstance(func, cst.Name) and not self._bound_here(func.value, frame, env):
            if func.value in _SCALAR_BUILTINS:
                return HOST
            if func.value in _PASSING_BUILTINS:
                return self._union(arguments, frame, env)
        return frozenset({UNKNOWN})

    def _library_call(self, qual: str, node: cst.Call, frame: _Frame, env: dict[str, Causes]) -> Causes:
        if qual == "torch.load":
            return HOST if cpu_map_location(node) else frozenset({LOADED})
        if qual == "torch.from_numpy" or qual.startswith(("numpy.", "math.")):
            # NumPy's arrays live in host memory (a device tensor given to NumPy raises)
            return HOST
        if qual in _TENSOR_FROM_DATA:
            given = keyword(node, "data")
            plain = positional(node)
            data = given.value if given is not None else plain[0].value if plain else None
            if data is None:
                return frozenset({UNKNOWN})
            # a sequence is read into a new tensor on the default device (tensor_new.cpp); a tensor keeps its own
            return HOST if isinstance(data, (cst.List, cst.Tuple, cst.ListComp)) else self._expr(data, frame, env)
        if qual.startswith("torch.cuda.") or qual.rsplit(".", 1)[-1] in (*MOVES, *_OTHER_MOVES):
            return frozenset({MOVED})  # torch.cuda's, or a move called through its class (`torch.Tensor.cuda(x)`)
        if qual.startswith("torch."):
            return self._union([a.value for a in node.args], frame, env)
        return frozenset({UNKNOWN})

    def _method(self, name: str, node: cst.Call, frame: _Frame, env: dict[str, Causes]) -> Causes:
        """``self.<name>(...)``: what the class's own method returns for these arguments."""
        target = self.methods.get(name)
        if target is None or target.decorators or target.params.star_arg is not cst.MaybeSentinel.DEFAULT:
            return frozenset({UNKNOWN})
        names = [p.name.value for p in (*target.params.posonly_params, *target.params.params)][1:]
        bound: dict[str, Causes] = {}
        for position, argument in enumerate(node.args):
            if argument.star:
                return frozenset({UNKNOWN})
            if argument.keyword is not None:
                bound[argument.keyword.value] = self._expr(argument.value, frame, env)
            elif position < len(names):
                bound[names[position]] = self._expr(argument.value, frame, env)
            else:
                return frozenset({UNKNOWN})
        empty = _Frame(None, None, {}, Stores())
        for param in (*target.params.params, *target.params.kwonly_params):
            if param.name.value not in bound and param.default is not None:
                bound[param.name.value] = self._expr(param.default, empty, {})
        return self._returns(target, bound)

    def _dtype_only(self, node: cst.Call) -> bool:
        """`.to(torch.float32)`, `.to(dtype=...)`, `.to(x.dtype)`: a new dtype on the same device."""
        for argument in node.args:
            if argument.keyword is not None:
                if argument.keyword.value not in _TO_KEYWORDS:
                    return False
                continue
            value = argument.value
            qual = self.qualname(value)
            dtype = qual is not None and qual.count(".") == 1 and qual.startswith("torch.")
            if argument.star or not (dtype or (isinstance(value, cst.Attribute) and value.attr.value == "dtype")):
                return False
        return bool(node.args)

    def _bound_here(self, name: str, frame: _Frame, env: dict[str, Causes]) -> bool:
        return name in env or name in frame.stores.names or name in frame.params

    def _known_call(self, node: cst.Call) -> bool:
        """A call whose effect on its arguments is known: torch's, NumPy's, math's, a builtin that
        reads its arguments, or a method of the class (whose stores are read too)."""
        func = node.func
        qual = self.qualname(func)
        if qual is not None:
            return qual.startswith(_HOST_LIBRARIES)
        if isinstance(func, cst.Name):
            return func.value in _SCALAR_BUILTINS | _PASSING_BUILTINS
        return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.attr.value in self.methods


def _to_the_cpu(node: cst.Call) -> bool:
    """`.to("cpu")`, `.to(torch.device("cpu"))`, `.to(device="cpu")`."""
    given = keyword(node, "device")
    plain = positional(node)
    value = given.value if given is not None else plain[0].value if plain else None
    return value is not None and _names_the_cpu(value)


def _bound_names(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _bound_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _bound_names(target.value)
