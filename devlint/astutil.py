"""Small questions about call nodes that several rules ask, and builders for the code fixes write."""

from __future__ import annotations

import libcst as cst

from devlint.context import FileContext, Site
from devlint.semantic import dotted_name


def method_call(node: cst.Call, name: str) -> cst.Attribute | None:
    """The ``receiver.name`` attribute when ``node`` is ``receiver.name(...)``."""
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == name:
        return func
    return None


def keyword(node: cst.Call, name: str) -> cst.Arg | None:
    return next((arg for arg in node.args if arg.keyword is not None and arg.keyword.value == name), None)


def positional(node: cst.Call) -> list[cst.Arg]:
    return [arg for arg in node.args if arg.keyword is None and not arg.star]


def names_in(node: cst.CSTNode) -> set[str]:
    """Every plain name an expression mentions (the receiver of a call, say)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            found.add(current.value)
        elif isinstance(current, cst.Attribute):
            stack.append(current.value)
        else:
            stack.extend(current.children)
    return found


def with_args(node: cst.Call, method: str, args: list[cst.Arg]) -> cst.Call:
    """``node`` with its method renamed and its arguments replaced; commas are rebuilt."""
    assert isinstance(node.func, cst.Attribute)
    fixed: list[cst.Arg] = []
    for i, arg in enumerate(args):
        last = i == len(args) - 1
        if last:
            fixed.append(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        elif arg.comma is cst.MaybeSentinel.DEFAULT:
            fixed.append(arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))))
        else:
            fixed.append(arg)
    return node.with_changes(func=node.func.with_changes(attr=cst.Name(method)), args=fixed)


def arg(expr: str, keyword_name: str | None = None) -> cst.Arg:
    value = cst.parse_expression(expr)
    if keyword_name is None:
        return cst.Arg(value=value)
    return cst.Arg(
        value=value,
        keyword=cst.Name(keyword_name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def receiver_is_foreign(ctx: FileContext, receiver: cst.BaseExpression, site: Site, method: str) -> bool:
    """True when the receiver is known not to be a tensor or module: a module object
    (``numba.cuda``), or an instance of a local class with its own ``method`` that does not
    inherit from nn.Module / Tensor. Unknown receivers are assumed to be torch objects."""
    model = ctx.model
    if isinstance(receiver, cst.Name):
        if receiver.value in model.imports:
            return not model.imports[receiver.value].startswith("torch.")
        if receiver.value == "self":
            return _enclosing_class_has_own(ctx, site, method)
        for _, binding in model.lookup(receiver.value, site.scope):
            if binding.order < site.order or binding.kind == "param":
                return _constructs_foreign(ctx, binding.value, method)
        return False
    return _constructs_foreign(ctx, receiver, method)


def _constructs_foreign(ctx: FileContext, value: cst.BaseExpression | None, method: str) -> bool:
    if isinstance(value, cst.Call):
        name = dotted_name(value.func)
        return name is not None and ctx.model.has_own_method(name, method)
    return False


def _enclosing_class_has_own(ctx: FileContext, site: Site, method: str) -> bool:
    scope = site.scope
    while scope is not None and scope.kind != "class":
        scope = scope.parent
    return scope is not None and ctx.model.has_own_method(scope.name, method)


def inside_method_named(site: Site, name: str) -> bool:
    """The site is inside a function called ``name`` (e.g. a class implementing ``cuda`` itself)."""
    scope = site.scope
    while scope is not None:
        if scope.kind == "function" and scope.name == name:
            return True
        scope = scope.parent
    return False
