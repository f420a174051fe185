"""What the DEV6 rules share: from which torch release each device-generic API exists, and the
rewrites that keep a fixed call doing on a CUDA machine what it did, while it also runs on a
machine with no accelerator at all.

The trap every DEV6 fix avoids: on a CPU-only build ``torch.accelerator.synchronize()``,
``empty_cache()``, ``memory_allocated()`` and ``current_device_index()`` raise "Cannot access
accelerator device when none is available", where ``torch.cuda.memory_allocated()`` returns 0 and
``torch.cuda.empty_cache()`` does nothing. A call that returns nothing is therefore guarded by
``torch.accelerator.is_available()``; one that returns a value gets the value the CUDA call
returns without CUDA (``0``, ``{}``); a call that needs a device module takes the one of the
device in scope (``torch.get_device_module(device)``), which is ``torch.cpu`` on the CPU.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import libcst as cst

from devlint.analysis.devices import attribute_device_read, cuda_device_module, device_read_from_input, guarded_index, is_cuda_string, reach_of
from devlint.analysis.semantic import dotted_name, string_value
from devlint.analysis.tree import descendants
from devlint.fixes import DeviceRef, Replace
from devlint.rule import RuleContext, Site
from devlint.rulekit.calls import append_arg, arg, closed, code_in_place, imported_qualname, keyword, kept_args, prepend_arg
from devlint.rulekit.device_checks import exits
from devlint.rulekit.guards import guarded
from devlint.rulekit.siblings import siblings
from devlint.torchfacts.api_versions import SINCE
from devlint.torchfacts.names import CUDA_SUBMODULES, DEVICE_NAMES, AmpCall
from devlint.torchfacts.version import TorchVersion

# From which torch release (major, minor) each API exists: devlint.torchfacts.api_versions' table, which also
# holds every fix to the project's `torch-version`.
AMP_DEVICE_ARGUMENT: TorchVersion = SINCE["torch.amp.GradScaler"]  # torch.amp.GradScaler(device, ...)
GET_DEVICE_MODULE: TorchVersion = SINCE["torch.get_device_module"]
ACCELERATOR: TorchVersion = SINCE["torch.accelerator.is_available"]  # and device_count, synchronize, ...
ACCELERATOR_INDEX: TorchVersion = SINCE["torch.accelerator.current_device_index"]  # and set_device_index
ACCELERATOR_DEVICE_INDEX: TorchVersion = SINCE["torch.accelerator.device_index"]  # the context manager
ACCELERATOR_MEMORY: TorchVersion = SINCE["torch.accelerator.empty_cache"]  # and memory_allocated, ...

AVAILABLE = "torch.accelerator.is_available()"
CURRENT = "torch.accelerator.current_accelerator()"
# Parents under which `a if b else c` needs no parentheses of its own.
_LOOSE = (
    cst.Arg, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Element, cst.DictElement, cst.Expr, cst.Lambda,
)
# Expressions that bind at least as tightly as `and`: `E and x` reads as `(E) and x`.
_TIGHT = (
    cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Comparison, cst.UnaryOperation,
    cst.SimpleString, cst.Integer, cst.Float,
)


def cuda_function(ctx: RuleContext, node: cst.Call, names: frozenset[str]) -> str | None:
    """``X`` when ``node`` calls ``torch.cuda.X`` (through any import or alias) for X in ``names``,
    or ``torch.get_device_module("cuda").X``, the same function, also through a name that holds
    that module on every path to the call (``m = torch.get_device_module("cuda")`` ... ``m.X()``)."""
    func = node.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and func.attr.value in names:
        return func.attr.value if cuda_device_module(ctx.model, func.value) else None
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.attr.value in names:
        if func.value.value not in ctx.model.imports and holds_cuda_module(ctx, func.value, node):
            return func.attr.value
    qual = imported_qualname(ctx.model, node.func, names)
    if qual is None:
        return None
    last = qual.rsplit(".", 1)[-1]
    if last in names and any(qual == prefix + last for prefix in CUDA_SUBMODULES):
        return last
    return None


def holds_cuda_module(ctx: RuleContext, name: cst.Name, site: cst.CSTNode) -> bool:
    """Every binding of ``name`` that can reach ``site`` is ``torch.cuda`` (or one of its
    submodules) or ``torch.get_device_module("cuda")``, and one reaches it on every path
    (devlint.analysis.reaching): the name stands for the module there. A rebinding on some path,
    a parameter or an import of the name is something else."""
    found = reach_of(name.value, ctx.site(site).scope, site, ctx.flows)
    reach = found[1] if found is not None else None
    if reach is None or not reach.bindings or reach.maybe_unbound or reach.unknown or reach.params:
        return False
    return all(_cuda_module(ctx, value) for value in reach.values) and not ctx.flows.declared_global(name.value)


def _cuda_module(ctx: RuleContext, value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.Call):
        return cuda_device_module(ctx.model, value)
    return f"{ctx.model.qualname(value)}." in CUDA_SUBMODULES


def positional_device(node: cst.Call, name: str = "device") -> list[cst.Arg]:
    """The call's arguments with a ``name=`` keyword made positional: the torch.accelerator
    functions take their device positionally only (``synchronize(device=None, /)``)."""
    return [a.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT) if _named(a, name) else a for a in node.args]


def _named(argument: cst.Arg, name: str) -> bool:
    return argument.keyword is not None and argument.keyword.value == name


def call_text(ctx: RuleContext, node: cst.Call, func: str, args: Sequence[cst.Arg] | None = None) -> str:
    """``node`` calling ``func`` instead, with ``args`` (default: its own), as it reads in place."""
    new = node.with_changes(func=cst.parse_expression(func), args=list(node.args if args is None else args))
    return code_in_place(ctx, node, new)


def sole_statement(ctx: RuleContext, node: cst.Call) -> cst.Expr | None:
    """The expression statement ``node`` is, when it stands alone on its line in a block."""
    statement = ctx.parent(node)
    line = ctx.parent(statement) if statement is not None else None
    if not (isinstance(statement, cst.Expr) and isinstance(line, cst.SimpleStatementLine)):
        return None
    return statement if len(line.body) == 1 else None


@dataclass(frozen=True)
class Guarded:
    """How a call to a torch.accelerator function that needs an accelerator is written in place
    of ``node``: bare where an enclosing check already ensures a GPU, else as a statement under
    ``if torch.accelerator.is_available():``, else as ``(call if available else fallback)``."""

    node: cst.Call
    already_checked: bool
    fallback: str

    def replace(self, ctx: RuleContext, new_call: str) -> Replace:
        if self.already_checked:
            return Replace(self.node, new_call)
        statement = sole_statement(ctx, self.node) if self.fallback == "None" else None
        if statement is not None:
            return guarded(ctx, statement, AVAILABLE, new_call)
        return Replace(self.node, conditional_in_place(ctx, self.node, f"{new_call} if {AVAILABLE} else {self.fallback}"))


def conditional_in_place(ctx: RuleContext, node: cst.CSTNode, expression: str) -> str:
    """``a if b else c`` to stand where ``node`` stands: parenthesized unless nothing there binds tighter."""
    return expression if isinstance(ctx.parent(node), _LOOSE) else f"({expression})"


def guards_cuda_code(ctx: RuleContext, node: cst.CSTNode) -> bool:
    """``node`` is part of a test that decides whether CUDA code runs: the rest of the test, the
    code it guards (the ``if``/``else`` blocks, what follows an early exit, a function or class
    under ``@skipUnless(...)``, the body of a ``for`` over ``range(...)`` of it) names CUDA. A
    device-generic test would run that code on other accelerators, where it fails."""
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, _TEST_PARTS):
            child = ancestor
            continue
        if isinstance(ancestor, (cst.If, cst.IfExp)) and child is ancestor.test:
            guarded = [ancestor.test.deep_replace(node, cst.Name("_")), ancestor.body, ancestor.orelse]
            return any(_names_cuda(ctx, part) for part in guarded if part is not None) or _cuda_after_exit(ctx, ancestor)
        if isinstance(ancestor, cst.For) and child is ancestor.iter:
            # `for i in range(n): torch.cuda.mem_get_info(i)`: the count decides how often it runs
            return _names_cuda(ctx, ancestor.body)
        if isinstance(ancestor, cst.Decorator):
            return _names_cuda(ctx, ctx.parent(ancestor))
        return False
    return False


# What a test is made of between a call and the `if` that holds it.
_TEST_PARTS = (cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation, cst.UnaryOperation, cst.Arg, cst.Call)


def _names_cuda(ctx: RuleContext, node: cst.CSTNode | None) -> bool:
    return node is not None and "cuda" in ctx.code(node).lower()


def _cuda_after_exit(ctx: RuleContext, guard: cst.If | cst.IfExp) -> bool:
    """``if not <check>: return`` protects the rest of its block."""
    block = ctx.parent(guard)
    if not isinstance(guard, cst.If) or not exits(guard.body) or not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return False
    body, at = siblings(ctx, block, guard)
    return ctx.indexed(("names CUDA later", id(block)), lambda: _CudaLater(ctx, body)).after(at)


class _CudaLater:
    """Whether a statement of a block after a position names CUDA. The block is read forward
    only as far as a question needs, each statement at most once, however many guards ask."""

    def __init__(self, ctx: RuleContext, body: Sequence[cst.BaseStatement]) -> None:
        self._ctx = ctx
        self._body = body
        self._read = 0
        self._naming: list[int] = []

    def after(self, position: int) -> bool:
        if self._naming and self._naming[-1] > position:
            return True
        while self._read < len(self._body):
            read = self._read
            self._read += 1
            if _names_cuda(self._ctx, self._body[read]):
                self._naming.append(read)
                if read > position:
                    return True
        return False


def device_module(ctx: RuleContext, site: Site, avoid: Iterable[str] = ()) -> tuple[str, DeviceRef]:
    """``torch.get_device_module(<device in scope>)``: ``torch.cuda`` where the device is CUDA,
    ``torch.cpu`` on the CPU, the backend's module on other accelerators."""
    device = ctx.device(site, avoid)
    return f"torch.get_device_module({device.expr})", device


def never_an_index(ctx: RuleContext, site: Site, device: DeviceRef) -> bool:
    """Whether ``device`` holds a device, a string or None on every path, never the int index
    ``.to(0)`` and the ``torch.cuda`` calls also take: ``torch.get_device_module`` raises on an int
    ("Invalid value of device", torch/__init__.py, 2.4.1 to 2.14.1). A parameter counts where
    annotated so, given such a default, or read as a device (``_param_no_index``); a value only
    where it is written as one (not a name bound elsewhere, an unknown call)."""
    if device.inserted:
        # the built-in definitions are torch.device objects; a configured expression is the
        # project's own device
        return True
    if "." in device.expr:
        base, _, attribute = device.expr.rpartition(".")
        return attribute == "device" and _tensor_device(ctx, base)
    found = reach_of(device.expr, site.scope, site.node, ctx.flows)
    if found is None or found[1] is None or not found[1].bindings or found[1].unknown:
        return False
    scope, reach = found[0], found[1]
    return all(_param_no_index(ctx, scope.node, param) for param in reach.params) and all(
        surely_no_index(ctx, value) for value in reach.values
    )


def _param_no_index(ctx: RuleContext, function: cst.CSTNode, param: cst.Param) -> bool:
    """A parameter annotated as devices, strings or None only; without an annotation, one whose
    default is a device or a string (the value its callers are expected to vary), or whose
    function reads its ``.type``, as of a ``torch.device`` (an int has none)."""
    if param.annotation is not None:
        return _names_no_index(ctx, param.annotation.annotation)
    if param.default is not None and surely_no_index(ctx, param.default):
        return True
    return param.name.value in ctx.indexed(("reads .type", id(function)), lambda: _types_read(function))


def _types_read(function: cst.CSTNode) -> frozenset[str]:
    return frozenset(
        node.value.value
        for node in descendants(function)
        if isinstance(node, cst.Attribute) and node.attr.value == "type" and isinstance(node.value, cst.Name)
    )


def surely_no_index(ctx: RuleContext, value: cst.BaseExpression) -> bool:
    """``value`` is a device or a string, as written: ``torch.device(...)``, a string literal or
    formatted string, a choice between such, or a tensor's or stream's ``x.device`` (not
    ``self.device`` or an ``args.device`` option, which may hold an int)."""
    if isinstance(value, cst.IfExp):
        return surely_no_index(ctx, value.body) and surely_no_index(ctx, value.orelse)
    if isinstance(value, cst.FormattedString) or string_value(value) is not None:
        return True
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Modulo):
        # "cuda:%d" % rank
        return string_value(value.left) is not None
    if isinstance(value, cst.Attribute) and value.attr.value == "device":
        return isinstance(value.value, cst.Name) and _tensor_device(ctx, value.value.value)
    if isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value == "format":
            return string_value(func.value) is not None
        return ctx.model.qualname(func) in ("torch.device", "torch.accelerator.current_accelerator")
    return False


def _tensor_device(ctx: RuleContext, base: str) -> bool:
    return base.isidentifier() and base not in ("self", "cls") and not ctx.model.option_default("device")[0]


def _names_no_index(ctx: RuleContext, annotation: cst.BaseExpression) -> bool:
    """An annotation admitting only devices, strings and None (``torch.device``, ``str``,
    ``Optional[...]``, ``... | None``, ``Union[...]`` of those)."""
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        return _names_no_index(ctx, annotation.left) and _names_no_index(ctx, annotation.right)
    if isinstance(annotation, cst.Subscript):
        outer = ctx.model.qualname(annotation.value) or dotted_name(annotation.value)
        if outer not in ("typing.Optional", "typing.Union", "Optional", "Union"):
            return False
        parts = [element.slice for element in annotation.slice]
        return all(isinstance(part, cst.Index) and _names_no_index(ctx, part.value) for part in parts)
    written = string_value(annotation) or dotted_name(annotation)
    return written in ("str", "None", "torch.device") or ctx.model.qualname(annotation) == "torch.device"


def device_type(ctx: RuleContext, site: Site, avoid: Iterable[str] = ()) -> tuple[str, DeviceRef]:
    """The device type of the device in scope: ``device.type``, or ``torch.device(device).type``
    where the device may be a string (``device = "cuda" if ... else "cpu"``, ``config.device``), whose ``.type``
    would fail."""
    device = ctx.device(site, avoid)
    if _is_device_object(ctx, site, device):
        return f"{device.expr}.type", device
    return f"torch.device({device.expr}).type", device


def _is_device_object(ctx: RuleContext, site: Site, device: DeviceRef) -> bool:
    if device.inserted:
        # the built-in expressions are torch.device objects; a configured one may be a string
        return ctx.settings.device_expression in ("", "default", "accelerator")
    if device.expr.endswith(".device"):
        # an input's `x.device`, as the device finder follows it; not `self.device` or an option
        base = device.expr.removesuffix(".device")
        return _tensor_device(ctx, base)
    # Every binding that can reach the site (devlint.analysis.reaching), as the device finder saw them.
    found = reach_of(device.expr, site.scope, site.node, ctx.flows)
    reach = found[1] if found is not None else None
    if reach is None or not reach.bindings:
        return False
    return all(_annotated_device(ctx, param) for param in reach.params) and all(
        _device_object(ctx, value) for value in reach.values
    )


def _annotated_device(ctx: RuleContext, param: cst.Param) -> bool:
    annotation = param.annotation.annotation if param.annotation is not None else None
    if annotation is None:
        return False
    written = string_value(annotation) or dotted_name(annotation)
    return written == "torch.device" or ctx.model.qualname(annotation) == "torch.device"


# torch.autocast and GradScaler take "mps" (Apple) from torch 2.5; before, they raise for it.
AMP_ON_OTHER_ACCELERATORS = (2, 5)


def amp_device(ctx: RuleContext, site: Site) -> tuple[str, str, DeviceRef]:
    """The device type an AMP call gets, the test that keeps it ``enabled`` only where the CUDA-only
    original was, and the device used. Before torch 2.5 autocast and GradScaler raise for a device
    type such as "mps" (Apple), where the original only disabled itself: unless the device is CUDA
    or the CPU on every path, the type is then "cuda" on CUDA and "cpu" elsewhere, off there."""
    own = _lightning_device(ctx, site) or _device_the_call_reads(ctx, site)
    kind, device = (f"{own.expr}.type", own) if own is not None else device_type(ctx, site)
    if device.inserted:
        read = _device_the_function_reads(ctx, site)
        if read is not None:
            kind, device = f"{read.expr}.type", read
    if _may_be_another_accelerator(ctx, site, device) and ctx.settings.torch_version < AMP_ON_OTHER_ACCELERATORS:
        return f'"cuda" if {kind} == "cuda" else "cpu"', f'{kind} == "cuda"', device
    return kind, f'{kind} != "cpu"', device


# Lightning's module knows its device (`self.device`, where the trainer placed it and moves each
# batch): an AMP call in its methods follows it rather than a second, module-level notion.
LIGHTNING_MODULES = frozenset(
    {
        "pytorch_lightning.LightningModule",
        "pytorch_lightning.core.LightningModule",
        "pytorch_lightning.core.module.LightningModule",
        "lightning.LightningModule",
        "lightning.pytorch.LightningModule",
        "lightning.pytorch.core.LightningModule",
        "lightning.pytorch.core.module.LightningModule",
    }
)


def _lightning_device(ctx: RuleContext, site: Site) -> DeviceRef | None:
    """``self.device`` at a site in a method of a LightningModule. Only for AMP calls: their fix
    keeps autocast and the scaler on exactly where the CUDA-only original was (CUDA autocast did
    nothing to a module Lightning left on the CPU, and the fix turns it off there), whereas a
    ``.cuda()`` moved to ``self.device`` would go elsewhere when the module is not on the GPU."""
    method = site.scope.function_scope()
    owner = method.parent if method is not None else None
    if owner is None or owner.kind != "class" or not isinstance(owner.node, cst.ClassDef) or not method.params:
        return None
    if method.params[0] != "self" or not isinstance(method.node, cst.FunctionDef) or method.node.decorators:
        return None
    if not any(ctx.model.qualname(base.value) in LIGHTNING_MODULES for base in owner.node.bases):
        return None
    return DeviceRef("self.device")


def _device_the_call_reads(ctx: RuleContext, site: Site) -> DeviceRef | None:
    """``p.device`` (or ``device``) where the AMP call's own arguments read ``p.device.type`` (or
    ``device.type``, a name such as ``device`` or ``dev``) and no other device's type (yolov7's
    `amp.autocast(enabled=p.device.type != "cpu")`, YOLOP's `amp.GradScaler(enabled=device.type
    != 'cpu')`): the call already ties itself to that device, which has a `.type` there, so its
    fix follows it rather than a second, module-level notion (on, as before, exactly where the
    original was)."""
    call = site.node
    if not isinstance(call, cst.Call):
        return None
    read = {
        ctx.code(node.value)
        for arg in call.args
        for node in descendants(arg.value)
        if isinstance(node, cst.Attribute) and node.attr.value == "type" and _names_a_device(node.value)
    }
    return DeviceRef(read.pop()) if len(read) == 1 else None


def _names_a_device(node: cst.BaseExpression) -> bool:
    """``p.device``, or a name for a device (``device``, ``dev``)."""
    if isinstance(node, cst.Attribute):
        return node.attr.value == "device"
    return isinstance(node, cst.Name) and node.value in DEVICE_NAMES


def _device_the_function_reads(ctx: RuleContext, site: Site) -> DeviceRef | None:
    """``x.device`` for an autocast in the body of a function that computes on the device of its
    tensor parameter ``x`` (devlint.analysis.devices.device_read_from_input), or
    ``torch.device(self.X)`` in a method that moves its data to ``self.X`` (``attribute_device_read``),
    where no device is in scope: the fix follows the function's own device rather than a second,
    module-level one. On a CUDA machine with ``x`` on the GPU that is CUDA's autocast, as the
    original; with ``x`` on the CPU the original CUDA autocast did nothing to the function's CPU
    work, and the fix is off. Autocast only: an enabled CUDA scaler skips an optimizer step whose gradients overflow,
    even on the CPU, where a scaler turned off would step: GradScaler keeps the module-level device."""
    call = site.node
    if not isinstance(call, cst.Call) or (dotted_name(call.func) or "").split(".")[-1] != "autocast":
        return None
    function = site.scope.function_scope()
    if function is None or not isinstance(function.node, cst.FunctionDef):
        return None
    child: cst.CSTNode = call
    for ancestor in ctx.ancestors(call):
        if ancestor is function.node:
            break
        child = ancestor
    if child is not function.node.body:
        # a decorator, a default or an annotation runs where the function is defined
        return None
    name = ctx.indexed(("device read from input", id(function.node)), lambda: device_read_from_input(function))
    if name is not None:
        return DeviceRef(f"{name}.device")
    # a method that moves its data to `self.X`: a string or a torch.device there, so its type is
    # read through torch.device
    attribute = ctx.indexed(("attribute device read", id(function.node)), lambda: attribute_device_read(function))
    return DeviceRef(f"torch.device({attribute})") if attribute is not None else None


def _may_be_another_accelerator(ctx: RuleContext, site: Site, device: DeviceRef) -> bool:
    """False when ``device`` is CUDA or the CPU on every path: the default inserted definition, or
    the program's own `"cuda" if ... else "cpu"` choice."""
    if device.inserted:
        return ctx.settings.device_expression not in ("", "default")
    if device.expr.endswith(".device"):
        return True
    found = reach_of(device.expr, site.scope, site.node, ctx.flows)
    reach = found[1] if found is not None else None
    if reach is None or not reach.bindings or reach.params:
        return True
    return not all(_cuda_or_cpu(ctx, value) for value in reach.values)


def _cuda_or_cpu(ctx: RuleContext, value: cst.BaseExpression) -> bool:
    """A device that is CUDA or the CPU, whatever the machine."""
    if isinstance(value, cst.IfExp):
        return _cuda_or_cpu(ctx, value.body) and _cuda_or_cpu(ctx, value.orelse)
    if isinstance(value, cst.Call) and ctx.model.qualname(value.func) == "torch.device" and value.args:
        return _cuda_or_cpu(ctx, value.args[0].value)
    literal = string_value(value)
    return literal is not None and (literal == "cpu" or is_cuda_string(literal))


def _device_object(ctx: RuleContext, value: cst.BaseExpression) -> bool:
    """A ``torch.device`` as written, or the ``.device`` of a computed value
    (``next(model.parameters()).device``); not a named object's ``x.device``, which is a string
    where ``x`` is a configuration (ignite's ``config.device = "cuda"``), not a tensor."""
    if isinstance(value, cst.IfExp):
        return _device_object(ctx, value.body) and _device_object(ctx, value.orelse)
    if isinstance(value, cst.Attribute):
        return value.attr.value == "device" and isinstance(value.value, (cst.Call, cst.Subscript))
    if isinstance(value, cst.Call):
        qual = ctx.model.qualname(value.func) or ""
        return qual == "torch.device" or qual == "torch.accelerator.current_accelerator"
    return False


def off_on_cpu(ctx: RuleContext, on: str, enabled: cst.BaseExpression | None) -> str:
    """The ``enabled=`` value that keeps autocast or scaling off where the CUDA-only original
    disabled itself (``on`` is false there), and otherwise as ``enabled`` says."""
    off = on
    constant = enabled.value if isinstance(enabled, cst.Name) and enabled.value in ("True", "False") else None
    if enabled is None or constant == "True":
        return off
    if constant == "False":
        return "False"
    text = ctx.code(enabled)
    if _normal(text) in _implying(on):
        # `enabled=device.type == "cuda"` is already off on the CPU: `and device.type != "cpu"` is noise
        return text
    if not isinstance(enabled, _TIGHT) and not enabled.lpar and not _is_and(enabled):
        text = f"({text})"
    return f"{text} and {off}"


def _implying(on: str) -> set[str]:
    """Tests that are false wherever ``on`` (``<type> != "cpu"``) is: ``<type> == "cuda"``, ``on`` itself."""
    if not on.endswith(' != "cpu"'):
        return {_normal(on)}
    kind = on.removesuffix(' != "cpu"')
    return {_normal(on), _normal(f'{kind} == "cuda"'), _normal(f'"cuda" == {kind}')}


def _normal(text: str) -> str:
    return "".join(text.split()).replace("'", '"')


def _is_and(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And)


def amp_fix_text(
    ctx: RuleContext, node: cst.Call, func: str | None, call: AmpCall, kind: str, on: str, dtype: str | None = None
) -> str:
    """``node`` with the device type ``kind`` and ``enabled=`` only where ``on``; positional
    arguments after the device type become keywords (the torch.amp signatures order them
    differently from the torch.cuda.amp ones); ``dtype``: the one to write where the call gives
    none (the deprecated class's own default, which the new class does not share)."""
    args = _named_args(node, call)
    enabled = next((a for a in args if _named(a, "enabled")), None)
    value = off_on_cpu(ctx, on, enabled.value if enabled is not None else None)
    args = [a.with_changes(value=cst.parse_expression(value)) if a is enabled else a for a in args]
    new = node.with_changes(args=args) if func is None else node.with_changes(func=cst.parse_expression(func), args=args)
    if enabled is None:
        new = append_arg(new, arg(value, "enabled"))
    if dtype is not None and not any(_named(a, "dtype") for a in args):
        new = prepend_arg(new, arg(dtype, "dtype"))
    device_keyword = keyword(node, call.device_parameter) if call.device_parameter is not None else None
    new = prepend_arg(new, arg(kind, device_keyword.keyword.value if device_keyword is not None else None))
    return code_in_place(ctx, node, closed(new))


def _named_args(node: cst.Call, call: AmpCall) -> list[cst.Arg]:
    """``node``'s arguments but the device type, each positional one by its parameter's name."""
    rest = [a for a in node.args if not _is_device_argument(a, node, call)]
    if call.device_parameter is not None and any(a.keyword is None for a in node.args):
        # the first positional argument was the device type
        first = next(a for a in node.args if a.keyword is None)
        rest = [a for a in node.args if a is not first]
    rest = kept_args(node, rest)
    given = [a for a in rest if a.keyword is None]
    names = iter(call.parameters)
    return [_as_keyword(a, next(names)) if a in given else a for a in rest]


def turns_cpu_autocast_off(node: cst.Call, call: AmpCall) -> bool:
    """An autocast given ``enabled=False`` as written: with the CPU's device type (the fixed
    call's, without CUDA) it turns CPU autocast off inside, as entering it sets the thread's state
    for its type, where the CUDA-only original disabled itself there and left the CPU's as it was."""
    if not call.thread_state:
        return False
    enabled = next((a for a in _named_args(node, call) if _named(a, "enabled")), None)
    return enabled is not None and isinstance(enabled.value, cst.Name) and enabled.value.value == "False"


# Said of a fix where `turns_cpu_autocast_off`.
CPU_AUTOCAST_NOTE = " (unsafe: without CUDA it also turns CPU autocast off inside, which the original left as it was)"


def _is_device_argument(argument: cst.Arg, node: cst.Call, call: AmpCall) -> bool:
    return call.device_parameter is not None and _named(argument, call.device_parameter)


def _as_keyword(argument: cst.Arg, name: str) -> cst.Arg:
    return argument.with_changes(
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def accelerator_form(literal: str, as_string: bool, quote: str) -> str | None:
    """The accelerator's counterpart of the CUDA device ``literal`` (``"cuda"``, ``"cuda:1"``), as a
    string or a torch.device; the same value on a CUDA machine. None for what is no such literal."""
    if literal == "cuda":
        return CURRENT + ".type" if as_string else CURRENT
    index = literal.removeprefix("cuda:")
    if not index.isdigit():
        return None
    if as_string:
        return f"f{quote}{{{CURRENT}.type}}:{index}{quote}"
    return f"torch.device({CURRENT}.type, {index})"


def index_choice(ctx: RuleContext, index: str) -> tuple[str, TorchVersion]:
    """The GPU ``index`` (an expression: ``args.gpu``, ``local_rank``) as a torch.device where the
    definition fixes insert finds a GPU, else the CPU, through that definition's own check, so one
    file's fixes hold one notion of the device: with the accelerator definition (DEV604 selected)
    ``torch.device(torch.accelerator.current_accelerator().type, index) if
    torch.accelerator.is_available() else torch.device("cpu")``, else the CUDA check. Both are
    ``torch.device("cuda", index)`` on a CUDA machine, ``torch.device("cuda", None)`` the current
    GPU as ``.cuda(None)`` is; elsewhere the model and its data meet on the accelerator the inserted
    ``device`` names (or the CPU). Also the torch release the form needs."""
    if ctx.settings.device_expression == "accelerator":
        return f'torch.device({CURRENT}.type, {index}) if {AVAILABLE} else torch.device("cpu")', ACCELERATOR
    return guarded_index(index), (0, 0)


def second_gpu(literal: str) -> bool:
    """``"cuda:N"`` for N > 0."""
    index = literal.removeprefix("cuda:")
    return index != literal and index.isdigit() and int(index) > 0


def accelerator_choice(literal: str, quote: str) -> tuple[str, str] | None:
    """``"cuda:1"`` chosen as DEV604 writes it: that index of the accelerator where one is
    available, else the CPU; with the caveat that makes it unsafe (an index above 0, which an
    accelerator with a single device, Apple's MPS, lacks), else "". None for what is no such
    literal."""
    current = accelerator_form(literal, True, quote)
    if current is None:
        return None
    index = literal.removeprefix("cuda:")
    caveat = f" (unsafe: an accelerator with a single device has no device {index})" if second_gpu(literal) else ""
    return f"{current} if {AVAILABLE} else {quote}cpu{quote}", caveat


def accelerator_fstring(node: cst.BaseExpression) -> cst.FormattedString | None:
    """``f"cuda:{i}"`` as ``f"{torch.accelerator.current_accelerator().type}:{i}"``: the same
    string on a CUDA machine. None for what is no f-string starting with ``cuda:``. The new
    replacement field holds no quote, so it fits any f-string (before Python 3.12 too)."""
    if not isinstance(node, cst.FormattedString) or not node.parts:
        return None
    first = node.parts[0]
    if not isinstance(first, cst.FormattedStringText) or not first.value.startswith("cuda:"):
        return None
    kind = cst.FormattedStringExpression(cst.parse_expression(CURRENT + ".type"))
    rest = first.with_changes(value=first.value.removeprefix("cuda"))
    return node.with_changes(parts=[kind, rest, *node.parts[1:]])
