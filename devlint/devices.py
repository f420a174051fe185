"""Which device a fix uses: one already in scope, else one module-level definition.

Order of preference at a fix site:
1. inside ``forward(self, x, ...)`` of a class: ``x.device`` (unless the fixed expression is
   ``x`` itself: moving ``x`` to its own device would do nothing);
2. a device already bound in scope: a parameter named or annotated as a device, or a variable or
   attribute assigned a device (``torch.device(...)``, the ``"cuda" if ... else "cpu"`` idiom,
   ``something.device``, the accelerator API). Bindings to a CPU-only device are never used: that
   would move a CUDA program onto the CPU;
3. one module-level ``device = <device-expression>`` inserted after the imports, under a name that
   appears nowhere else in the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import libcst as cst

from devlint.semantic import Binding, Scope, SemanticModel, dotted_name, string_value

DEFAULT_EXPRESSION = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")'
ACCELERATOR_EXPRESSION = (
    'torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")'
)
_NON_CUDA_PREFIXES = ("cpu", "meta")


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
    if isinstance(test, cst.Name) and depth > 0:
        bindings = model.visible_bindings(test.value, scope, order)
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
        return True
    if isinstance(value, cst.Call) and (model.qualname(value.func) or "").startswith("torch.accelerator."):
        return True
    if isinstance(value, cst.IfExp):
        return device_value(model, value.body) or device_value(model, value.orelse)
    return None


def _is_device_param(model: SemanticModel, binding: Binding) -> bool:
    annotation = binding.annotation
    if annotation is not None:
        text = string_value(annotation) or dotted_name(annotation) or ""
        if text in ("torch.device", "device") or model.qualname(annotation) == "torch.device":
            return True
    name = binding.name
    return name in ("device", "dev") or name.endswith("_device")


@dataclass(frozen=True)
class DeviceInScope:
    expr: str


def find_device_in_scope(
    model: SemanticModel, scope: Scope, order: int, avoid: Iterable[str] = (), preferred: str = "device"
) -> DeviceInScope | None:
    """A device expression usable at a site in ``scope`` at walk position ``order``."""
    avoid = set(avoid)
    function = scope.function_scope()
    if (
        function is not None
        and function.name == "forward"
        and function.parent is not None
        and function.parent.kind == "class"
        and len(function.params) >= 2
        and function.params[1] not in avoid
    ):
        return DeviceInScope(f"{function.params[1]}.device")
    candidates: list[tuple[int, str]] = []
    shadowed: set[str] = set()
    current: Scope | None = scope
    own_function = True
    while current is not None:
        if current.kind == "class" and not own_function:
            current = current.parent
            continue
        for name, bindings in current.bindings.items():
            if name in shadowed or name.split(".")[0] in avoid:
                continue
            usable = _latest_usable(model, current, bindings, order, own_function)
            if usable is None:
                continue
            shadowed.add(name)
            if usable:
                rank = 0 if name == preferred else 1
                candidates.append((rank, name))
        if candidates:
            break
        if current.kind in ("function", "lambda"):
            own_function = False
        current = current.parent
    if not candidates:
        return None
    candidates.sort()
    return DeviceInScope(candidates[0][1])


def _latest_usable(
    model: SemanticModel, scope: Scope, bindings: list[Binding], order: int, own_function: bool
) -> bool | None:
    """None: the name is not visible at the site; True/False: its visible binding is/isn't a usable device."""
    if scope.kind == "module" and not own_function:
        visible = [b for b in bindings if not b.conditional]
    else:
        visible = [b for b in bindings if b.order < order]
    if not visible:
        return None
    latest = visible[-1]
    if latest.kind == "param":
        return _is_device_param(model, latest) or _reusable(model, latest.value)
    if scope.kind == "module" and not own_function and len(visible) != len(bindings):
        return False
    if latest.conditional:
        # `if torch.cuda.is_available(): d = ...` may not have run: without an unconditional
        # binding before it the name may be unbound, and any binding since then may be the live one.
        since = next((i for i in range(len(visible) - 1, -1, -1) if not visible[i].conditional), None)
        if since is None:
            return False
        return all(_reusable(model, b.value) for b in visible[since:])
    return _reusable(model, latest.value)


def _reusable(model: SemanticModel, value: cst.BaseExpression | None) -> bool:
    """A device a fix may put in place of `.cuda()`: CUDA when there is a GPU (or unknown), and
    not one GPU picked by index: reusing `torch.device("cuda:1")` would switch GPUs."""
    return bool(device_value(model, value)) and not _names_gpu_index(model, value)


def _names_gpu_index(model: SemanticModel, node: cst.BaseExpression | None) -> bool:
    if node is None:
        return False
    if isinstance(node, cst.IfExp):
        return _names_gpu_index(model, node.body) or _names_gpu_index(model, node.orelse)
    literal = _device_literal(model, node)
    if literal is not None and literal.startswith("cuda:"):
        return True
    return isinstance(node, cst.Call) and model.qualname(node.func) == "torch.device" and len(node.args) > 1


def free_name(model: SemanticModel, preferred: str) -> str:
    """``preferred`` unless the file already uses that identifier for anything."""
    for candidate in (preferred, f"torch_{preferred}", *(f"{preferred}_{i}" for i in range(2, 100))):
        if candidate not in model.identifiers:
            return candidate
    raise RuntimeError("no free name for the device variable")  # 100 taken names: not real code
