"""Which device a fix uses: one already in scope, else one module-level definition.

Order of preference at a fix site:
1. inside ``forward(self, x, ...)`` of a class, when the method treats ``x`` as a tensor
   (``x.shape``, ``x.view(...)``, ``x * w``, an annotation): ``x.device`` (unless the fixed
   expression is ``x`` itself: moving ``x`` to its own device would do nothing), also where
   ``x`` is rebound to values computed from it (``x = self.conv(x)``), not where it is rebound
   to other data or moved (``x = x.cuda()``);
2. the device the program itself chose: a name every binding of which that can reach the site
   (devlint.analysis.reaching) is a device, bound on every path there: ``torch.device(...)``, the
   ``"cuda" if ... else "cpu"`` idiom, ``something.device``, the accelerator API, or a parameter
   named or annotated as a device whose default is not None or the CPU. A choice between CUDA (or
   an accelerator) and the CPU is the program's choice and is reused; a name that is only ever
   the CPU, or one GPU picked by index, is not what ``.cuda()`` meant;
3. one module-level ``device = <device-expression>`` inserted after the imports, under a name that
   appears nowhere else in the file (see devlint.engine.context for where it goes).

This module also answers what a ``.cuda(arg)`` argument is (``index_kind``) and spells the GPU
of an index where CUDA is available (``guarded_index``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import libcst as cst

from devlint.analysis.reaching import Flows, ParamBinding, Reach, Unknown
from devlint.analysis.reader import FileReader
from devlint.analysis.semantic import Binding, Scope, SemanticModel, dotted_name, string_value
from devlint.analysis.tree import children, climbed, descendants
from devlint.torchfacts.names import DEVICE_MODULE, DEVICE_NAMES, MOVES, SPAWNS

DEFAULT_EXPRESSION = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")'
ACCELERATOR_EXPRESSION = (
    'torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")'
)
_NON_CUDA_PREFIXES = ("cpu", "meta")

# The device types `torch.device(...)` parses (c10's DeviceType names: `torch.device("mps")` works,
# `torch.device("gpu")` raises; the same on 2.4.1 and 2.14.1; "ort" before MAIA took its place), and
# the names out-of-tree backends give "privateuseone" (Ascend's "npu", Cambricon's "mlu", Moore
# Threads' "musa": mmcv's tests compare `device` with them). A variable a program compares with
# another string ("gpu", "auto") holds values that are no device.
_DEVICE_TYPES = frozenset({
    "cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "ort",
    "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone", "npu", "mlu", "musa",
})


def device_expression(setting: str) -> str:
    if setting in ("", "default"):
        return DEFAULT_EXPRESSION
    if setting == "accelerator":
        return ACCELERATOR_EXPRESSION
    return setting


def is_cuda_string(value: str | None) -> bool:
    return value is not None and (value == "cuda" or value.startswith("cuda:"))


def is_guarded_device_choice(model: SemanticModel, node: cst.CSTNode) -> bool:
    """``"cuda" if <cond> else "cpu"`` (strings or torch.device calls on either side)."""
    if not isinstance(node, cst.IfExp):
        return False
    sides = [_device_literal(model, node.body), _device_literal(model, node.orelse)]
    return any(is_cuda_string(s) for s in sides) and any(s is not None and not is_cuda_string(s) for s in sides)


_AVAILABILITY_CHECKS = ("torch.cuda.is_available", "torch.cuda.device_count")


def checks_cuda_available(
    model: SemanticModel, test: cst.BaseExpression, scope: Scope, order: int, depth: int = 2
) -> bool:
    """True when ``test`` can only hold where torch sees a CUDA device: ``torch.cuda.is_available()``,
    ``torch.cuda.device_count() > 0``, ``True if <such a test> else False``, an ``and`` containing
    one, or a variable assigned one of those."""
    if isinstance(test, cst.BooleanOperation):
        checks = [checks_cuda_available(model, part, scope, order, depth) for part in (test.left, test.right)]
        return any(checks) if isinstance(test.operator, cst.And) else all(checks)
    if isinstance(test, cst.Comparison):
        return len(test.comparisons) == 1 and isinstance(
            test.comparisons[0].operator, (cst.GreaterThan, cst.GreaterThanEqual, cst.NotEqual)
        ) and checks_cuda_available(model, test.left, scope, order, depth)
    if isinstance(test, cst.IfExp):
        falsy = isinstance(test.orelse, cst.Name) and test.orelse.value == "False"
        return falsy and checks_cuda_available(model, test.test, scope, order, depth)
    if isinstance(test, cst.Call):
        return model.qualname(test.func) in _AVAILABILITY_CHECKS
    if isinstance(test, (cst.Name, cst.Attribute)) and depth > 0:
        # a flag: `use_cuda = torch.cuda.is_available()`, `self.cuda = torch.cuda.is_available() and ...`
        name = dotted_name(test)
        if name is None:
            return False
        bindings = model.visible_bindings(name, scope, order)
        return bool(bindings) and all(
            b.kind == "assign" and b.value is not None
            and checks_cuda_available(model, b.value, scope, order, depth - 1)
            for b in bindings
        )
    return False


def _device_literal(model: SemanticModel, node: cst.CSTNode) -> str | None:
    value = string_value(node)
    if value is not None:
        return value
    if isinstance(node, cst.Call) and model.qualname(node.func) == "torch.device" and node.args:
        return string_value(node.args[0].value)
    return None


def cuda_device_module(model: SemanticModel, call: cst.Call) -> bool:
    """``torch.get_device_module("cuda")``, ``torch.get_device_module(torch.device("cuda:0"))``:
    the module ``torch.cuda`` itself (it returns ``getattr(torch, torch.device(device).type)``)."""
    if len(call.args) != 1 or model.qualname(call.func) != DEVICE_MODULE:
        return False
    given = call.args[0]
    if given.star or (given.keyword is not None and given.keyword.value != "device"):
        return False
    return is_cuda_string(_device_literal(model, given.value))


def device_value(model: SemanticModel, value: cst.BaseExpression | None) -> bool | None:
    """True: a device a CUDA run keeps on CUDA (or an unknown one); False: a CPU-only device;
    None: not a device at all."""
    if value is None:
        return None
    if is_guarded_device_choice(model, value):
        return True
    literal = _device_literal(model, value)
    if isinstance(value, cst.Call) and model.qualname(value.func) == "torch.device":
        return not (literal is not None and literal.startswith(_NON_CUDA_PREFIXES))
    if literal is not None and isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
        if is_cuda_string(literal):
            return True
        return False if literal.startswith(_NON_CUDA_PREFIXES) else None
    if isinstance(value, cst.Attribute) and value.attr.value == "device":
        declared, default = model.option_default("device") if isinstance(value.value, cst.Name) else (False, None)
        if declared:
            # `args.device` of an argparse `--device` option: what its default says (none: None,
            # which `.to()` takes as "stay where you are"); `default="cpu"` is no GPU
            return None if default is None or _names_gpu_index(model, default) else device_value(model, default)
        return True
    if isinstance(value, cst.Call) and (model.qualname(value.func) or "").startswith("torch.accelerator."):
        return True
    if isinstance(value, cst.IfExp):
        sides = (device_value(model, value.body), device_value(model, value.orelse))
        return None if None in sides else any(sides)
    return None


def _is_device_param(model: SemanticModel, param: cst.Param) -> bool:
    """A parameter named or annotated as a device whose default, if any, is a CUDA-capable device:
    ``device=None`` is no device (``.to(None)`` leaves the tensor where it is), and
    ``device="cpu"`` would move a CUDA program onto the CPU whenever a caller leaves it out. Nor
    is one that a test's parametrization may give None, or one without a default that its
    annotation lets be None (``device: Optional[torch.device]``: with a device for its default,
    ``Optional`` more often says "may be left out" than that callers pass None)."""
    if param in model.given_none:
        return False
    annotation = param.annotation.annotation if param.annotation is not None else None
    if annotation is not None and param.default is None and _admits_none(annotation):
        return False
    named = False
    if annotation is not None:
        text = string_value(annotation) or dotted_name(annotation) or ""
        named = text in ("torch.device", "device") or model.qualname(annotation) == "torch.device"
    name = param.name.value
    named = named or name in DEVICE_NAMES or name.endswith("_device")
    return named and (param.default is None or bool(device_value(model, param.default)))


def _names_none(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"


_NONE_IN_ANNOTATION = re.compile(r"\b(?:None|Optional)\b")


def _admits_none(annotation: cst.BaseExpression) -> bool:
    """``Optional[X]``, ``X | None``, ``Union[X, None]``, also written as a string."""
    text = string_value(annotation)
    if text is not None:
        return _NONE_IN_ANNOTATION.search(text) is not None
    for node in descendants(annotation):
        if isinstance(node, cst.Name) and node.value in ("None", "Optional"):
            return True
    return False


@dataclass(frozen=True)
class DeviceInScope:
    expr: str


# Decorators after which a method's first parameter is not the instance.
_NOT_BOUND = frozenset({"staticmethod", "classmethod"})
# Tensor attributes and methods: a forward() input used with one of these (or in arithmetic) is a
# tensor, and its `.device` is where the computation runs (a dict or a list of inputs has none).
_TENSOR_ATTRIBUTES = frozenset(
    {
        "shape", "size", "dim", "ndim", "device", "dtype", "view", "reshape", "permute", "transpose",
        "unsqueeze", "squeeze", "flatten", "expand", "expand_as", "contiguous", "float", "half", "double",
        "numel", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "type_as", "matmul",
        "mean", "sum", "max", "min", "softmax", "masked_fill", "repeat", "chunk", "split", "clone", "detach",
    }
)


class DeviceFinder:
    """Finds the device a fix at a site can use (see the module docstring). One per file: which
    names of a scope may hold a device at all is worked out once per scope, since a file with
    thousands of findings asks at thousands of sites."""

    def __init__(self, model: SemanticModel, flows: Flows, preferred: str = "device") -> None:
        self.model = model
        self.flows = flows
        self.preferred = preferred
        self._candidates: dict[int, list[str]] = {}
        # per scope, the names that may be the device somewhere in it, best first (see _ranked)
        self._ranks: dict[int, list[str]] = {}
        # calls in the file by the name they call (`f(...)`, `obj.f(...)`), found on first need
        self._calls: dict[str, list[cst.Call]] | None = None
        # per forward scope (kept alive so its id stays unique), the input whose device new tensors
        # follow: the body is read once, however many sites it holds
        self._inputs: dict[int, tuple[Scope, str | None]] = {}
        # per node, whether it lies in the body of the function around it (see _in_function_body)
        self._in_body: dict[int, bool] = {}
        # per scope (kept alive so its id stays unique), the names its code moves to CUDA: read
        # once, however many of its names were set from a `.device`
        self._moved: dict[int, tuple[Scope, set[str]]] = {}
        # per scope (kept alive so its id stays unique), the names its own code compares with a
        # string that is no device
        self._other_strings: dict[int, tuple[Scope, set[str]]] = {}
        # whether a call gives a CPU device to a parameter, by (function name, parameter, its
        # position, a method's): functions of one name (`run` in every class) share the calls
        self._no_gpu_given: dict[tuple[str, str, int, bool], bool] = {}

    def find(self, scope: Scope, site: cst.CSTNode, avoid: Iterable[str] = ()) -> DeviceInScope | None:
        """A device expression usable at ``site`` (in ``scope``): the program's own device, bound
        to a device on every path that reaches the site (devlint.analysis.reaching)."""
        avoid = set(avoid)
        function = scope.function_scope()
        if (
            function is not None
            and function.name == "forward"
            and function.parent is not None
            and function.parent.kind == "class"
            and self._in_function_body(site)
        ):
            tensor_input = self._forward_input(function)
            if tensor_input is not None and tensor_input not in avoid and not self._carries(function, tensor_input, avoid, site):
                return DeviceInScope(f"{tensor_input}.device")
        flow_scope = _flow_scope(scope)
        inner: list[Scope] = []
        current: Scope | None = scope
        while current is not None:
            if current.kind in ("class", "comprehension"):
                current = current.parent
                continue
            # The first that is usable here is the best: the preferred name, then the first in
            # sort order.
            for name in self._ranked(current):
                if (
                    name.split(".")[0] not in avoid
                    and not any(name in shadowing.bindings for shadowing in inner)
                    and _usable(self.model, name, current, flow_scope, site, self.flows)
                ):
                    return DeviceInScope(name)
            inner.append(current)
            current = current.parent
        return None

    def _carries(self, function: Scope, name: str, avoid: set[str], site: cst.CSTNode) -> bool:
        """The fixed expression need not be where the input ``name`` is: it sits under a test of
        the program's own GPU flag (lpips' `if self.use_gpu: ret_var = ret_var.cuda()`, whose
        inputs may be on the CPU), or a name of ``avoid`` (what it reads) is bound in ``function``
        only to values computed from the input (`dist = ((a - b) ** 2).mean(1)` before
        `dist.cuda()`; the site's own binding aside): moving that to the input's device would do
        nothing, where the original moved the input's data to the GPU whenever it was elsewhere."""
        around: set[int] = set()
        node: cst.CSTNode | None = site
        while node is not None and node is not function.node:
            parent = self.flows.parent_of(node)
            if isinstance(parent, cst.If) and node is not parent.test and _asks_for_a_gpu(parent.test):
                # `if self.use_gpu: out = out.cuda()` (lpips): the program's flag, not the input,
                # says where the value goes
                return True
            around.add(id(node))
            node = parent
        for avoided in avoid:
            bindings = [b for b in function.bindings.get(avoided, []) if b.value is None or id(b.value) not in around]
            if bindings and all(b.kind == "assign" and _computed_from(b.value, name) for b in bindings):
                return True
        return False

    def _in_function_body(self, site: cst.CSTNode) -> bool:
        """``site`` runs when its function runs: in its body, not in a decorator, a default or an
        annotation, which run where the function is defined (`@autocast("cuda")` above
        `forward(self, x)` cannot name `x`). Answers are kept along the way up."""
        return climbed(site, self.flows.parent_of, self._in_body, _step_into_body, True)

    def _forward_input(self, function: Scope) -> str | None:
        """The input of ``forward`` whose device new tensors follow, read once per method."""
        if id(function) not in self._inputs:
            own_parts = _places_own_parts(function.parent.node) if function.parent is not None else True
            self._inputs[id(function)] = (function, None if own_parts else _tensor_input(function))
        return self._inputs[id(function)][1]

    def _read_before_a_move(self, scope: Scope, name: str) -> bool:
        """``saved = t.device`` where the scope also moves ``t`` to CUDA (``t.cuda()``,
        ``t.to("cuda")``): ``t`` was not on the GPU, so its device is where it came from, not
        where ``.cuda()`` goes (``original = t.device; t = t.to("cuda"); ...; t.to(original)``)."""
        read = [
            binding.value.value.value
            for binding in scope.bindings.get(name, [])
            if binding.kind == "assign"
            and isinstance(binding.value, cst.Attribute)
            and binding.value.attr.value == "device"
            and isinstance(binding.value.value, cst.Name)
        ]
        if not read:
            return False
        if id(scope) not in self._moved:
            self._moved[id(scope)] = (scope, _moved_to_cuda(self.model, scope.node))
        return bool(set(read) & self._moved[id(scope)][1])

    def given_no_gpu(self, scope: Scope, name: str) -> bool:
        """A call in this file passes a CPU-only device or None for parameter ``name`` of the
        function ``scope``: there the parameter is no GPU, whatever `.cuda()` in the body meant
        (and `.to(None)` does not move at all, where `.cuda(None)` moves to the current GPU)."""
        if scope.kind != "function" or name not in scope.params or not isinstance(scope.node, cst.FunctionDef):
            return False
        key = (scope.name, name, scope.params.index(name), scope.params[:1] in (["self"], ["cls"]))
        if key not in self._no_gpu_given:
            self._no_gpu_given[key] = self._a_call_gives_no_gpu(*key)
        return self._no_gpu_given[key]

    def _a_call_gives_no_gpu(self, function: str, name: str, position: int, method: bool) -> bool:
        if self._calls is None:
            self._calls = _calls_by_name(self.model.module_scope.node)
        for call in self._calls.get(function, []):
            shift = 1 if isinstance(call.func, cst.Attribute) and method else 0
            given = [a for a in call.args if a.keyword is not None and a.keyword.value == name]
            plain = [a for a in call.args if a.keyword is None and not a.star]
            if not given and 0 <= position - shift < len(plain) and not any(a.star for a in call.args):
                given = [plain[position - shift]]
            if given and (_names_none(given[0].value) or device_value(self.model, given[0].value) is False):
                return True
        return False

    def _compared_with_no_device(self, scope: Scope, name: str) -> bool:
        """The scope's code compares ``name`` with a string torch takes for no device
        (``if device == "gpu": batch = batch.cuda()``): its values are the program's own words,
        and ``.to("gpu")`` raises where ``.cuda()`` ran."""
        if id(scope) not in self._other_strings:
            self._other_strings[id(scope)] = (scope, _compared_with_no_device(scope.node))
        return name in self._other_strings[id(scope)][1]

    def _placement_for_some_data(self, scope: Scope, name: str) -> bool:
        """A name that says what its device is for (``gather_device``, not ``device``), bound to
        a choice between CUDA and the CPU on a flag the function's caller passes: where some data
        goes at each caller's wish, not the program's device. dinov2 keeps gathered features on
        the CPU (``gather_device = torch.device("cpu") if gather_on_cpu else
        torch.device("cuda")``) while `.cuda()` moves each batch to the GPU beside the model.
        (nanoGPT's ``device_type = "cuda" if "cuda" in device else "cpu"`` follows the program's
        own device and is reused.)"""
        if name in DEVICE_NAMES or name == self.preferred or scope.kind != "function":
            return False
        for binding in scope.bindings[name]:
            value = binding.value
            if binding.kind != "assign" or value is None:
                continue
            if isinstance(value, cst.Call) and self.model.qualname(value.func) == "torch.device" and len(value.args) == 1:
                value = value.args[0].value
            if not is_guarded_device_choice(self.model, value):
                continue
            test = value.test  # type: ignore[attr-defined]
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test = test.expression
            if isinstance(test, cst.Name) and test.value in scope.params:
                return True
        return False

    def _ranked(self, scope: Scope) -> list[str]:
        """The names of ``scope`` that ``_usable`` may accept at some site, best first, without
        those a caller gives the CPU or that were read before a move: what does not depend on
        the site, asked once per scope, however many sites ask (a file binding a device name per
        block would otherwise ask every name at every site)."""
        key = id(scope)
        if key not in self._ranks:
            names = [
                name
                for name in self._names_holding_devices(scope)
                if (scope.kind == "lambda" or self.flows.walrus or _may_be_usable(self.model, scope.bindings[name]))
                and not self.given_no_gpu(scope, name)
                and not self._read_before_a_move(scope, name)
                and not self._compared_with_no_device(scope, name)
                and not self._placement_for_some_data(scope, name)
            ]
            self._ranks[key] = sorted(names, key=lambda name: (name != self.preferred, name))
        return self._ranks[key]

    def _names_holding_devices(self, scope: Scope) -> list[str]:
        key = id(scope)
        if key not in self._candidates:
            self._candidates[key] = [
                name for name, bindings in scope.bindings.items() if _may_hold_a_device(self.model, bindings)
            ]
        return self._candidates[key]


def _asks_for_a_gpu(test: cst.BaseExpression) -> bool:
    """``test`` reads a name or attribute that speaks of a GPU or CUDA (`self.use_gpu`, `args.cuda`,
    `torch.cuda.is_available()`)."""
    for node in descendants(test):
        word = node.value if isinstance(node, cst.Name) else node.attr.value if isinstance(node, cst.Attribute) else None
        if word is not None and ("gpu" in word.lower() or "cuda" in word.lower()):
            return True
    return False


def _calls_by_name(module: cst.CSTNode) -> dict[str, list[cst.Call]]:
    found: dict[str, list[cst.Call]] = {}
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            func = node.func
            name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
            if name is not None:
                found.setdefault(name, []).append(node)
        stack.extend(children(node))
    return found


def _compared_with_no_device(node: cst.CSTNode) -> set[str]:
    """The names that the code of the scope ``node`` (not of the functions, lambdas and classes
    inside it) compares (``==``, ``!=``, ``in``) with a string that is no device."""
    found: set[str] = set()
    stack: list[cst.CSTNode] = [part for part in children(node) if not isinstance(part, cst.Decorator)]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(children(current))
        if not isinstance(current, cst.Comparison) or len(current.comparisons) != 1:
            continue
        target = current.comparisons[0]
        if not isinstance(target.operator, (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)):
            continue
        for subject, other in ((current.left, target.comparator), (target.comparator, current.left)):
            name = dotted_name(subject) if isinstance(subject, (cst.Name, cst.Attribute)) else None
            words = other.elements if isinstance(other, (cst.Tuple, cst.List, cst.Set)) else [other]
            strings = [string_value(word.value if isinstance(word, cst.BaseElement) else word) for word in words]
            if name is not None and any(text is not None and not _is_device_string(text) for text in strings):
                found.add(name)
    return found


def _is_device_string(text: str) -> bool:
    """``text`` is what ``torch.device`` parses: a device type, with an index or without."""
    kind, colon, index = text.partition(":")
    return kind in _DEVICE_TYPES and (not colon or index.isdigit())


def _may_hold_a_device(model: SemanticModel, bindings: list[Binding]) -> bool:
    """A cheap first look before the flow analysis: some binding is a device."""
    for binding in bindings:
        if binding.kind == "param" and binding.param is not None and _is_device_param(model, binding.param):
            return True
        if binding.kind == "assign" and device_value(model, binding.value) is not None:
            return True
    return False


def _may_be_usable(model: SemanticModel, bindings: list[Binding]) -> bool:
    """What ``_usable`` asks of every binding that reaches a site, asked of the scope's bindings
    of the name: a device parameter, or a value that is a device, names no GPU index and is not
    the CPU by a flag's default. In a file without `:=`, every value the flow analysis finds for
    the name is the value of one of these bindings (an assignment or an annotated one in the
    scope's own statements), so a name with none such is usable nowhere in the scope; a `:=` in
    a comprehension binds in the enclosing function, but the model records it in the
    comprehension's scope."""
    for binding in bindings:
        if binding.kind == "param" and binding.param is not None and _is_device_param(model, binding.param):
            return True
        if (
            binding.kind == "assign"
            and device_value(model, binding.value)
            and not _names_gpu_index(model, binding.value)
            and device_value(model, _chosen_by_default(model, binding.value)) is not False
        ):
            return True
    return False


def _moved_to_cuda(model: SemanticModel, node: cst.CSTNode) -> set[str]:
    """Names the code under ``node`` moves to CUDA: ``x.cuda(...)``, ``x.to("cuda")``,
    ``x.to(torch.device("cuda"))``, ``x.to(device="cuda:0")``."""
    found: set[str] = set()
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        stack.extend(children(current))
        if not (isinstance(current, cst.Call) and isinstance(current.func, cst.Attribute)):
            continue
        receiver, method = current.func.value, current.func.attr.value
        if not isinstance(receiver, cst.Name):
            continue
        if method == "cuda":
            found.add(receiver.value)
        elif method == "to" and current.args:
            given = next((a.value for a in current.args if a.keyword is not None and a.keyword.value == "device"), None)
            given = given if given is not None else current.args[0].value
            literal = _device_literal(model, given)
            if literal is not None and is_cuda_string(literal):
                found.add(receiver.value)
    return found


def _flow_scope(scope: Scope) -> Scope | None:
    """The function or module whose statements run the site (lambdas and comprehensions run inside
    them); None for a class body."""
    current: Scope | None = scope
    while current is not None and current.kind in ("lambda", "comprehension"):
        current = current.parent
    return current if current is not None and current.kind in ("function", "module") else None


def _places_own_parts(class_node: cst.CSTNode) -> bool:
    """A class that moves some of its own parts (`self.head = nn.Linear(4, 1).cuda()`,
    `self.head.to(device)`) outside ``forward``: its parts may live apart (an embedding on the CPU,
    a head on the GPU), so where an input comes in says nothing about where ``.cuda()`` goes."""
    if not isinstance(class_node, cst.ClassDef):
        return False
    stack: list[cst.CSTNode] = [
        statement for statement in class_node.body.body
        if not (isinstance(statement, cst.FunctionDef) and statement.name.value == "forward")
    ]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Assign) and any(_on_self(t.target) for t in node.targets) and _moves(node.value):
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MOVES:
            if _on_self(node.func.value):
                return True
        stack.extend(children(node))
    return False


def _on_self(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"


def _moves(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MOVES


def _step_into_body(parent: cst.CSTNode, child: cst.CSTNode, above: bool) -> bool:
    return child is parent.body if isinstance(parent, cst.FunctionDef) else above


def _tensor_input(function: Scope) -> str | None:
    """The first input of ``forward(self, x, ...)`` when the method treats it as a tensor."""
    if len(function.params) < 2 or not isinstance(function.node, cst.FunctionDef):
        return None
    node = function.node
    if any(dotted_name(decorator.decorator) in _NOT_BOUND for decorator in node.decorators):
        # an autograd Function's `forward(ctx, *inputs)` and other static or class methods: the
        # second parameter is no module's input (apex's `forward(ctx, spatial_group_size, ...)`
        # took an int's `.device`)
        return None
    name = function.params[1]
    if _rebound_away(node.body, name):
        # `x = x.cuda()`, `x = x.detach().cpu()`, `x = batch["image"]`: where `x` is at the fix is
        # not where it came in
        return None
    params = [*node.params.posonly_params, *node.params.params]
    param = next((p for p in params if p.name.value == name), None)
    if param is not None and param.annotation is not None:
        annotation = dotted_name(param.annotation.annotation) or ""
        if annotation.split(".")[-1] == "Tensor":
            return name
    stack: list[cst.CSTNode] = [node.body]
    while stack:
        current = stack.pop()
        if (
            isinstance(current, cst.Attribute)
            and isinstance(current.value, cst.Name)
            and current.value.value == name
            and current.attr.value in _TENSOR_ATTRIBUTES
        ):
            return name
        if isinstance(current, cst.BinaryOperation) and any(
            isinstance(side, cst.Name) and side.value == name for side in (current.left, current.right)
        ):
            return name
        if not isinstance(current, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            stack.extend(children(current))
    return None


def device_read_from_input(function: Scope) -> str | None:
    """The parameter ``x`` of ``function`` whose ``x.device`` its body reads, when the body reads no
    other parameter's device, treats ``x`` as a tensor (another tensor attribute, arithmetic, or a
    ``Tensor`` annotation) and never rebinds it to other data (DWT's `afb1d(x, h0, h1, ...)` makes
    its filters with `device=x.device`): the device the function computes on."""
    node = function.node
    if not isinstance(node, cst.FunctionDef):
        return None
    read: set[str] = set()
    tensors: set[str] = set()
    stack: list[cst.CSTNode] = [node.body]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Attribute) and isinstance(current.value, cst.Name) and current.value.value in function.params:
            if current.attr.value == "device":
                read.add(current.value.value)
            elif current.attr.value in _TENSOR_ATTRIBUTES:
                tensors.add(current.value.value)
        if isinstance(current, cst.BinaryOperation):
            tensors.update(side.value for side in (current.left, current.right) if isinstance(side, cst.Name))
        if not isinstance(current, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            stack.extend(children(current))
    if len(read) != 1:
        return None
    name = read.pop()
    params = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
    param = next((p for p in params if p.name.value == name), None)
    annotated = param is not None and param.annotation is not None and (dotted_name(param.annotation.annotation) or "").split(".")[-1] == "Tensor"
    if param is None or name in ("self", "cls") or not (annotated or name in tensors) or _rebound_away(node.body, name):
        return None
    return name


def attribute_device_read(function: Scope) -> str | None:
    """``self.X`` where the body of the method ``function`` moves data to it (``.to(self.X, ...)``
    for an ``X`` named as a device, ``device=self.X``) and to no other attribute of its instance,
    whose name it never rebinds (Time-Series-Library's `batch_x.float().to(self.device)` beside
    its autocast): the device that method computes on, set when it runs."""
    node = function.node
    owner = function.parent
    if not isinstance(node, cst.FunctionDef) or owner is None or owner.kind != "class" or not function.params:
        return None
    if any(dotted_name(decorator.decorator) in _NOT_BOUND for decorator in node.decorators):
        return None
    instance = function.params[0]
    read: set[str] = set()
    stack: list[cst.CSTNode] = [node.body]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            moved = [a.value for a in current.args if a.keyword is not None and a.keyword.value == "device"]
            if isinstance(current.func, cst.Attribute) and current.func.attr.value == "to" and current.args and current.args[0].keyword is None:
                first = current.args[0].value
                # `.to(self.data_type)` (YOLOX) converts: positionally, only a name that says device
                if isinstance(first, cst.Attribute) and first.attr.value.lower().endswith("device"):
                    moved.append(first)
            read.update(
                value.attr.value for value in moved
                if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == instance
            )
        if not isinstance(current, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            stack.extend(children(current))
    if len(read) != 1 or _rebound_away(node.body, instance):
        return None
    return f"{instance}.{read.pop()}"


def reach_of(name: str, site_scope: Scope, site: cst.CSTNode, flows: Flows) -> tuple[Scope, Reach | None] | None:
    """The scope that binds ``name`` as seen from ``site``, and what the name may hold there;
    None for a name bound nowhere in sight."""
    flow_scope = _flow_scope(site_scope)
    current: Scope | None = site_scope
    while current is not None:
        if current.kind not in ("class", "comprehension") and name in current.bindings:
            return current, _reach_in(name, current, flow_scope, site, flows)
        current = current.parent
    return None


def _reach_in(name: str, scope: Scope, flow_scope: Scope | None, site: cst.CSTNode, flows: Flows) -> Reach | None:
    if scope.kind == "lambda":
        return None
    if scope is flow_scope:
        return flows.at(name, scope.node, site)
    closure = _closure_reach(name, scope, flow_scope, flows) if scope.kind == "function" else None
    if closure is not None:
        return closure
    # A function defined here runs later, when this scope has (typically) run to its end.
    return flows.at_end(name, scope.node)


def _closure_reach(name: str, scope: Scope, flow_scope: Scope | None, flows: Flows) -> Reach | None:
    """What a function defined in the function ``scope`` reads of ``name`` whenever it is called:
    the value bound where its `def` runs, when ``scope`` binds the name nowhere after the `def`
    and no `global` or `nonlocal` names it (a closure returned by `return inner` sees what
    reached the `def`; the end of a function that ends in `return` is reached by nothing).
    None where that does not hold."""
    child = flow_scope
    while child is not None and child.parent is not scope:
        child = child.parent
    if child is None or child.kind != "function" or flows.declared_global(name):
        return None
    defs = [binding for binding in scope.bindings.get(child.name, []) if binding.kind == "def"]
    if len(defs) != 1 or any(binding.order > defs[0].order for binding in scope.bindings.get(name, [])):
        return None
    return flows.at(name, scope.node, child.node)


def always_a_device(model: SemanticModel, reach: Reach | None, where_bound: bool = False) -> bool:
    """Bound on every path, and to a device each time (CPU devices included). ``where_bound``:
    paths where the name is unbound do not count (code that already reads the name fails there
    whatever it does with it)."""
    if reach is None or not reach.bindings or reach.unknown or (reach.maybe_unbound and not where_bound):
        return False
    if where_bound and not (reach.values or reach.params):
        return False
    if not all(_is_device_param(model, param) for param in reach.params):
        return False
    return all(device_value(model, value) is not None for value in reach.values)


def _rebound_away(body: cst.CSTNode, name: str) -> bool:
    """The function body binds ``name`` (nested functions and classes aside) to something other
    than a value computed from ``name`` itself: a loop or `with` target, an assignment from other
    data, or a move (`x = x.cuda()`, `x = x.detach().cpu()`), after which ``name`` is not where the
    input came in. `x = self.conv(x)`, `x = x * mask`, `x, h = self.rnn(x)` and `x += bias` keep
    computing on the input: the value stays on its device (an operand elsewhere fails there)."""
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(children(node))
        value: cst.BaseExpression | None = None
        targets: list[cst.CSTNode] = []
        if isinstance(node, cst.Assign):
            targets, value = [t.target for t in node.targets], node.value
        elif isinstance(node, cst.NamedExpr) or (isinstance(node, cst.AnnAssign) and node.value is not None):
            targets, value = [node.target], node.value
        elif isinstance(node, cst.AugAssign):
            targets, value = [node.target], node.target
        elif isinstance(node, (cst.For, cst.CompFor)):
            targets = [node.target]
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            targets = [node.asname.name]
        if any(name in _target_names(target) for target in targets) and not _computed_from(value, name):
            return True
    return False


def _target_names(target: cst.CSTNode) -> set[str]:
    found: set[str] = set()
    pending = [target]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Name):
            found.add(current.value)
        elif isinstance(current, (cst.Tuple, cst.List)):
            pending.extend(element.value for element in current.elements)
        elif isinstance(current, cst.StarredElement):
            pending.append(current.value)
    return found


# Calls after which a value is no longer where it was computed, or no tensor.
_LEAVES = frozenset({"to", "cuda", "cpu", "type", "type_as", "numpy", "tolist", "item"})


# What a tensor says about itself rather than holds: `cache[x.shape[0]]` is none of x's data.
_METADATA = frozenset({"shape", "size", "dim", "ndim", "dtype", "device", "numel", "is_cuda", "ndimension"})


def _computed_from(value: cst.BaseExpression | None, name: str) -> bool:
    """``value`` computes on ``name``'s data (not only its shape, not as an index into other data)
    and neither moves anything (`.to`, `.cuda`, `.cpu`, `.type_as`, `device=`) nor leaves tensors
    (`.numpy()`, `.item()`); None (a loop target) is no such value."""
    if value is None:
        return False
    reads = False
    stack: list[cst.CSTNode] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value == name:
            reads = True
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _LEAVES:
                return False
            if any(a.keyword is not None and a.keyword.value == "device" for a in node.args):
                return False
        if isinstance(node, cst.Attribute):
            if node.attr.value not in _METADATA:
                stack.append(node.value)  # `.attr` is no read of a name; `x.shape` none of x's data
        elif isinstance(node, cst.Subscript):
            stack.append(node.value)  # `table[x]` is on the table's device, `x[i]` on x's
        elif isinstance(node, cst.Arg):
            stack.append(node.value)  # nor is a keyword's name
        elif isinstance(node, (cst.Lambda, cst.FunctionDef)):
            continue
        else:
            stack.extend(children(node))
    return reads


def _usable(
    model: SemanticModel,
    name: str,
    scope: Scope,
    flow_scope: Scope | None,
    site: cst.CSTNode,
    flows: Flows,
) -> bool:
    """Every binding of ``name`` that can reach ``site`` is a device the program chose, and one
    reaches on every path: the device ``.cuda()`` can give way to."""
    if scope.kind == "lambda":
        params = [b for b in scope.bindings.get(name, []) if b.kind == "param"]
        return bool(params) and all(_lambda_param_is_device(model, scope, b.name) for b in params)
    reach = _reach_in(name, scope, flow_scope, site, flows)
    if reach is None or not always_a_device(model, reach):
        return False
    values = reach.values
    if any(_names_gpu_index(model, value) for value in values):
        return False
    if any(device_value(model, _chosen_by_default(model, value)) is False for value in values):
        # `torch.device("cuda" if args.cuda else "cpu")` with `--cuda` off by default: the CPU
        return False
    # The program's own choice, CPU on some paths included; a device that is only ever the CPU
    # is not the device `.cuda()` meant.
    return bool(reach.params) or any(device_value(model, value) for value in values)


def _chosen_by_default(model: SemanticModel, value: cst.BaseExpression) -> cst.BaseExpression | None:
    """For a choice on a command-line flag (`"cuda" if args.cuda else "cpu"`, also inside
    `torch.device(...)`), the side the flag's declared default picks; None when that is unknown."""
    if isinstance(value, cst.Call) and model.qualname(value.func) == "torch.device" and len(value.args) == 1:
        value = value.args[0].value
    if not isinstance(value, cst.IfExp):
        return None
    test, negated = value.test, False
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = test.expression, True
    if not (isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name)):
        return None
    declared, default = model.option_default(test.attr.value)
    truth = _literal_truth(default) if declared else None
    if truth is None:
        return None
    return value.body if truth != negated else value.orelse


def _literal_truth(value: cst.BaseExpression | None) -> bool | None:
    if value is None:
        return False  # argparse's default default
    if isinstance(value, cst.Name) and value.value in ("True", "False", "None"):
        return value.value == "True"
    if isinstance(value, cst.Integer):
        return value.evaluated_value != 0
    text = string_value(value)
    return bool(text) if text is not None else None


def _lambda_param_is_device(model: SemanticModel, scope: Scope, name: str) -> bool:
    node = scope.node
    if not isinstance(node, cst.Lambda):
        return False
    every = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
    return any(p.name.value == name and _is_device_param(model, p) for p in every)


def _names_gpu_index(model: SemanticModel, node: cst.BaseExpression | None) -> bool:
    """One GPU picked by index: `"cuda:1"`, `f"cuda:{rank}"`, `torch.device("cuda", i)`, and
    those inside `torch.device(...)` or either side of a conditional expression."""
    if node is None:
        return False
    if isinstance(node, cst.IfExp):
        return _names_gpu_index(model, node.body) or _names_gpu_index(model, node.orelse)
    if isinstance(node, cst.FormattedString):
        first = node.parts[0] if node.parts else None
        return isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda:")
    literal = _device_literal(model, node)
    if literal is not None and literal.startswith("cuda:"):
        return True
    if isinstance(node, cst.Call) and model.qualname(node.func) == "torch.device":
        return len(node.args) > 1 or (len(node.args) == 1 and _names_gpu_index(model, node.args[0].value))
    return False


GUARD = " if torch.cuda.is_available() else "


def guarded_index(index: str, literal: bool = False) -> str:
    """The GPU ``.cuda(index)`` means where CUDA is available, else the CPU: the same device on a
    CUDA machine (``torch.device("cuda", None)`` is the current GPU, as ``.cuda(None)`` is)."""
    if literal:
        return f'"cuda:{index}"{GUARD}"cpu"'
    return f'torch.device("cuda", {index}){GUARD}torch.device("cpu")'


# Callees that return a GPU index (or a count, or a rank) as an int.
_INT_CALLS = frozenset({"int", "len", "current_device", "get_rank", "get_local_rank", "get_world_size", "device_count"})
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)
_DEVICE_NAMES = re.compile(r"(^|_)(device|dev)$")


def index_kind(reader: FileReader, value: cst.BaseExpression, site: object, depth: int = 2) -> str | None:
    """What ``.cuda(value)`` was given: ``"int"`` (an index, or None, on every path), ``"device"``
    (named like a device: it may be a torch.device, an index or None), else None (unknown)."""
    if _is_int(reader, value, site, depth):
        return "int"
    name = dotted_name(value)
    if name is not None and _DEVICE_NAMES.search(name.split(".")[-1]):
        return "device"
    return None


def _is_int(reader: FileReader, value: cst.BaseExpression, site: object, depth: int, assuming: frozenset[str] = frozenset()) -> bool:
    """``assuming``: the options being shown int; where one's value flows back into it
    (`args.gpu = gpu`, `main_worker(args.gpu, ...)`), it is taken to hold, since every other value
    it gets is an int."""
    if isinstance(value, cst.Integer) or (isinstance(value, cst.Name) and value.value == "None"):
        return True
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        return _is_int(reader, value.expression, site, depth, assuming)
    if isinstance(value, cst.Attribute) and value.attr.value == "index":
        # `t.device.index`: an int on a GPU, None on the CPU
        inner = value.value
        return isinstance(inner, cst.Attribute) and inner.attr.value == "device"
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, _ARITHMETIC):
        return _is_int(reader, value.left, site, depth) and _is_int(reader, value.right, site, depth)
    if isinstance(value, cst.Call):
        callee = dotted_name(value.func)
        if callee in ("max", "min", "abs"):
            return bool(value.args) and all(a.keyword is None and not a.star and _is_int(reader, a.value, site, depth) for a in value.args)
        return callee is not None and callee.split(".")[-1] in _INT_CALLS
    if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and _int_option(reader, value.attr.value, site, depth, assuming):
        return True
    name = dotted_name(value)
    if name is None or depth <= 0:
        return False
    found = reach_of(name, site.scope, site.node, reader.flows)  # type: ignore[attr-defined]
    if found is None or found[1] is None:
        return False
    reach = found[1]
    if not reach.bindings or reach.maybe_unbound:
        return False
    for binding in reach.bindings:
        if isinstance(binding, ParamBinding):
            if not _int_param(reader, binding, site, depth, assuming):
                return False
        elif isinstance(binding, Unknown):
            if not _range_target(binding.node):
                return False
        elif not _is_int(reader, binding, site, depth - 1):
            return False
    return True


def _int_param(reader: FileReader, binding: ParamBinding, site: object, depth: int, assuming: frozenset[str]) -> bool:
    """The parameter is annotated ``int``, or every call of its function passes it an int."""
    annotation = binding.param.annotation
    annotated = annotation is not None and dotted_name(annotation.annotation) == "int"
    return annotated or _param_is_int(reader, binding.param, site, depth, assuming)


def _int_option(reader: FileReader, dest: str, site: object, depth: int, assuming: frozenset[str] = frozenset()) -> bool:
    """``args.gpu`` where the file declares ``--gpu`` only with ``type=int`` and a default that is
    None or an int (argparse converts a string default with ``type=`` too), and assigns ``x.gpu``
    nothing but ints: an int or None on every path, as a literal is."""
    if dest in assuming:
        return True
    assuming = assuming | {dest}
    declared = reader.model.option_declarations(dest)
    if not declared or not all(option.plain and option.type == "int" for option in declared):
        return False
    default = reader.model.option_default(dest)[1]
    if not (default is None or _int_default(default)):
        return False
    return all(depth > 0 and _assigned_int(reader, assigned, site, depth - 1, assuming) for assigned in reader.model.attribute_assignments(dest))


def _assigned_int(reader: FileReader, value: cst.BaseExpression, site: object, depth: int, assuming: frozenset[str]) -> bool:
    """A value assigned to ``x.<option>`` is an int or None. A plain name is read where the
    assignment is, inside its function (`args.gpu = gpu` in `main_worker(gpu, ...)`)."""
    function = next((a for a in _ancestors(reader, value) if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)
    if not isinstance(value, cst.Name) or not isinstance(function, cst.FunctionDef):
        return _is_int(reader, value, site, depth, assuming)
    reach = reader.flows.at(value.value, function, value)
    if reach is None or not reach.bindings or reach.maybe_unbound:
        return False
    for binding in reach.bindings:
        if isinstance(binding, ParamBinding):
            if not _int_param(reader, binding, site, depth, assuming):
                return False
        elif not (isinstance(binding, cst.BaseExpression) and _int_here(reader, binding, site, depth, assuming)):
            return False
    return True


def _ancestors(reader: FileReader, node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    current = reader.parent(node)
    while current is not None:
        yield current
        current = reader.parent(current)


def _int_here(reader: FileReader, value: cst.BaseExpression, site: object, depth: int, assuming: frozenset[str]) -> bool:
    """An int or None that needs no name of its own scope: a literal, or an int option (``args.gpu``)."""
    return (
        isinstance(value, cst.Integer)
        or (isinstance(value, cst.Name) and value.value == "None")
        or (isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and _int_option(reader, value.attr.value, site, depth, assuming))
    )


def _param_is_int(reader: FileReader, param: cst.Param, site: object, depth: int, assuming: frozenset[str]) -> bool:
    """A parameter of a module-level function that every use of the function in the file gives an
    int or None: a call with an int literal or an int option (``args.gpu``) in its place, or
    ``torch.multiprocessing.spawn(fn, ...)``, which passes each process its index as the first
    argument. Any other use of the name (passed elsewhere, rebound) leaves it unknown."""
    parameters = reader.parent(param)
    function = reader.parent(parameters) if parameters is not None else None
    if not isinstance(function, cst.FunctionDef) or not isinstance(reader.parent(function), cst.Module):
        return False
    positional = [*function.params.posonly_params, *function.params.params]
    if param not in positional:
        return False
    position = positional.index(param)
    uses = [node for node in reader.model.name_nodes(function.name.value) if node is not function.name]
    return bool(uses) and all(_gives_int(reader, use, param, position, site, depth, assuming) for use in uses)


def _gives_int(
    reader: FileReader, use: cst.Name, param: cst.Param, position: int, site: object, depth: int, assuming: frozenset[str]
) -> bool:
    parent = reader.parent(use)
    if isinstance(parent, cst.Arg) and position == 0:
        call = reader.parent(parent)
        return isinstance(call, cst.Call) and call.args[0] is parent and reader.qualname(call.func) in SPAWNS
    if not (isinstance(parent, cst.Call) and parent.func is use) or any(a.star for a in parent.args):
        return False
    given = [a.value for a in parent.args if a.keyword is not None and a.keyword.value == param.name.value]
    plain = [a.value for a in parent.args if a.keyword is None]
    value = given[0] if given else plain[position] if position < len(plain) else param.default
    # the value is read where the call is, not at the site: only what needs no local name
    return value is not None and _int_here(reader, value, site, depth, assuming)


def _int_default(default: cst.BaseExpression) -> bool:
    if isinstance(default, cst.Integer) or (isinstance(default, cst.Name) and default.value == "None"):
        return True
    text = string_value(default)
    return text is not None and text.strip().lstrip("+-").isdigit()


def _range_target(node: cst.CSTNode) -> bool:
    """The target of ``for i in range(...)``."""
    return (
        isinstance(node, cst.For)
        and isinstance(node.target, cst.Name)
        and isinstance(node.iter, cst.Call)
        and dotted_name(node.iter.func) == "range"
    )


def free_name(model: SemanticModel, preferred: str) -> str:
    """``preferred`` unless the file already uses that identifier for anything."""
    bare = preferred.lstrip("_")
    lead = preferred[: len(preferred) - len(bare)]
    for candidate in (preferred, f"{lead}torch_{bare}", *(f"{preferred}_{i}" for i in range(2, 100))):
        if candidate not in model.identifiers:
            return candidate
    raise RuntimeError(f"no free name for {preferred}")  # 100 taken names: not real code
