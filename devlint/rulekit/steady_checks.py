"""Code that cannot change what `torch.accelerator.is_available()` answers, so that a second check
right after it may be dropped: `if <check>: A` followed by `if <check>: B` runs as
`if <check>: A; B` when A keeps the answer (devlint.rulekit.guards joins such blocks).

Why a check can answer differently after A, from torch 2.13's sources:

- `torch.accelerator.is_available()` asks `torch._C._accelerator_getAccelerator()` (ATen's
  `getAccelerator`), which returns a registered PrivateUse1 backend before CUDA: importing an
  extension (`torch_npu`) or `torch.utils.rename_privateuse1_backend` in A changes the accelerator.
  It then calls that device module's `is_available()`: `torch.cuda.is_available()` answers from
  `torch._C._cuda_getDeviceCount()`, which c10 counts once per process, but with
  `PYTORCH_NVML_BASED_CUDA_CHECK=1` from NVML and `CUDA_VISIBLE_DEVICES` on every call before CUDA
  is initialized (`torch.cuda.device_count`): A writing the environment can change it.
- A can rebind the names the check reads (`torch = ...`, `torch.accelerator.is_available = ...`,
  `mock.patch(...)`), or suspend (`yield`, `await`) and let other code run before the check.

So A keeps the answer when it imports nothing, declares no global, neither yields nor awaits,
defines nothing (decorators and class bodies run code), stores into no module's attributes or
items (`os.environ[...]`, `torch.x`; `torch.backends` flags, which no availability check reads,
excepted), and calls only torch's own public functions (not those that load or register code:
`torch.utils`, `torch.hub`, `torch.library`, `torch.load`, ...) and builtins that run no code of
their own. A call of the program's own code, a method of one of its values or another module's
function could do any of the above: no join. As everywhere in devlint, the special methods an
operator, an attribute or an item of a value runs are taken not to do so.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from devlint.rule import RuleContext

# torch namespaces whose functions load, register or run code given to them.
_LOADERS = (
    "torch.utils.", "torch.hub.", "torch.library.", "torch.ops.", "torch.classes.", "torch.load",
    "torch.compile", "torch.jit.", "torch.export.", "torch.package.", "torch.multiprocessing.",
)
_FLAGS = "torch.backends."
# Builtins that call nothing but the special methods of their arguments.
_PLAIN_BUILTINS = frozenset({
    "print", "len", "isinstance", "int", "float", "str", "bool", "min", "max", "abs", "round",
    "range", "list", "tuple", "dict", "set", "sorted", "sum", "enumerate", "zip", "repr", "format",
})
_NEVER = (
    cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal, cst.Yield, cst.Await,
    cst.FunctionDef, cst.ClassDef, cst.Lambda,
)


def keeps_availability(ctx: RuleContext, block: cst.BaseSuite) -> bool:
    """Running ``block`` cannot change what an availability check answers right after it."""
    for node in _walk(block):
        if isinstance(node, _NEVER):
            return False
        if isinstance(node, cst.Call) and not _plain_call(ctx, node):
            return False
        if any(_module_state(ctx, target) for target in _stores(node)):
            return False
        if isinstance(node, cst.WithItem) and not isinstance(node.item, cst.Call):
            return False  # `with lock:` runs the object's `__enter__`, code of the program
    return True


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _walk(child)


def _plain_call(ctx: RuleContext, node: cst.Call) -> bool:
    qual = ctx.model.qualname(node.func)
    if qual is not None:
        parts = qual.split(".")
        return parts[0] == "torch" and not qual.startswith(_LOADERS) and not any(p.startswith("_") for p in parts)
    if isinstance(node.func, cst.Name) and node.func.value in _PLAIN_BUILTINS:
        # the builtin, unless the program binds that name itself
        return not any(True for _ in ctx.model.lookup(node.func.value, ctx.model.scope))
    return False


def _stores(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The expressions ``node`` assigns or deletes."""
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.CompFor, cst.Del)):
        targets = [node.target]
    elif isinstance(node, cst.AsName):
        targets = [node.name]
    else:
        return []
    flat: list[cst.BaseExpression] = []
    while targets:
        target = targets.pop()
        if isinstance(target, (cst.Tuple, cst.List)):
            targets += [e.value for e in target.elements]
        else:
            flat.append(target.value if isinstance(target, cst.StarredElement) else target)
    return flat


def _module_state(ctx: RuleContext, target: cst.BaseExpression) -> bool:
    """``target`` is a name that holds a module, or an attribute or item reached from one."""
    root = target
    while isinstance(root, (cst.Attribute, cst.Subscript)):
        root = root.value
    if not isinstance(root, cst.Name) or root.value not in ctx.model.imports:
        return False
    qual = ctx.model.qualname(target) if isinstance(target, cst.Attribute) else None
    return qual is None or not qual.startswith(_FLAGS)
