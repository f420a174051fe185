"""The program's own functions whose parameters reach a device sink, seen from a call or a
parameter of the file: ``load_state_dict(path, location="cuda")`` where ``location`` ends up in
``torch.load(map_location=...)`` (devlint.analysis.device_params holds what reaches a sink).

The file's own functions are indexed once per file (``ctx.indexed``); a function imported from
another module of the project comes from the run (``ctx.imported_signature``)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from devlint.analysis.device_params import DeviceParams, Signature
from devlint.analysis.semantic import dotted_name
from devlint.rule import RuleContext


def own_functions(ctx: RuleContext) -> DeviceParams:
    return ctx.indexed("device-params", lambda: DeviceParams.of(ctx.module))


def callee_signature(ctx: RuleContext, call: cst.Call) -> tuple[str, Signature] | None:
    """The called function, as the file spells it, and its signature, where it is one of the
    program's own functions with a parameter that reaches a device sink: a module-level function
    of the file (not shadowed where it is called), ``self.m(...)`` in a method of the class that
    defines ``m``, or a function another module of the project defines and the file imports."""
    func = call.func
    name = dotted_name(func)
    if name is None:
        return None
    root = name.split(".")[0]
    site = ctx.site(call)
    found = next(iter(ctx.model.lookup(root, site.scope)), None)
    binding = found[1] if found is not None else None
    if isinstance(func, cst.Name):
        if binding is None or (binding.kind == "def" and found[0] is ctx.model.module_scope):  # type: ignore[index]
            signature = own_functions(ctx).get(name)
        elif binding.kind == "import":
            signature = ctx.imported_signature(name)
        else:
            signature = None
    elif root == "self" and name.count(".") == 1:
        owner = _enclosing_class(ctx, call)
        signature = own_functions(ctx).get(f"{owner}.{name[5:]}") if owner is not None else None
    elif binding is not None and binding.kind == "import":
        signature = ctx.imported_signature(name)
    else:
        signature = None
    return (name, signature) if signature is not None else None


def reaching_arguments(signature: Signature, call: cst.Call) -> Iterator[tuple[str, cst.BaseExpression]]:
    """(parameter, argument) for each argument given to a parameter that reaches a device sink;
    none after ``*args`` or ``**kwargs``, where positions are unknown."""
    position = 0
    for arg in call.args:
        if arg.star:
            return
        keyword = arg.keyword.value if arg.keyword is not None else None
        param = signature.parameter(None if keyword else position, keyword)
        if keyword is None:
            position += 1
        if param is not None and param in signature.reaching:
            yield param, arg.value


def param_reaches(ctx: RuleContext, param: cst.Param) -> bool:
    """``param`` is a parameter of one of the file's own functions (module-level, or a method of
    a module-level class) that reaches a device sink."""
    parameters = ctx.parent(param)
    function = ctx.parent(parameters) if parameters is not None else None
    if not isinstance(function, cst.FunctionDef):
        return False
    block = ctx.parent(function)
    owner = ctx.parent(block) if block is not None else None
    if isinstance(owner, cst.ClassDef) and isinstance(ctx.parent(owner), cst.Module):
        key = f"{owner.name.value}.{function.name.value}"
    elif isinstance(block, cst.Module):
        key = function.name.value
    else:
        return False
    signature = own_functions(ctx).get(key)
    return signature is not None and param.name.value in signature.reaching


def _enclosing_class(ctx: RuleContext, node: cst.CSTNode) -> str | None:
    """The module-level class whose method holds ``node``."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.ClassDef):
            return ancestor.name.value if isinstance(ctx.parent(ancestor), cst.Module) else None
    return None
