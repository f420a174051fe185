"""Small questions about call nodes that several rules ask, and builders for the code fixes write."""

from __future__ import annotations

from functools import lru_cache

import libcst as cst

from devlint.analysis.semantic import SemanticModel, dotted_name, string_value
from devlint.analysis.tree import children, climbed
from devlint.rule import RuleContext, Site


def method_call(node: cst.Call, name: str) -> cst.Attribute | None:
    """The ``receiver.name`` attribute when ``node`` is ``receiver.name(...)``."""
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == name:
        return func
    return None


def keyword(node: cst.Call, name: str) -> cst.Arg | None:
    return next((arg for arg in node.args if arg.keyword is not None and arg.keyword.value == name), None)


def imported_qualname(model: SemanticModel, func: cst.BaseExpression, last_names: frozenset[str]) -> str | None:
    """``model.qualname(func)`` for a callee that may resolve to a name ending in one of
    ``last_names``, else None without resolving: every call in a file passes through several
    rules' ``visit_Call``, and most are ruled out by their last name or an unimported root."""
    if isinstance(func, cst.Attribute):
        if func.attr.value not in last_names:
            return None
    elif not isinstance(func, cst.Name) or func.value not in model.imports:
        return None
    return model.qualname(func)


def positional(node: cst.Call) -> list[cst.Arg]:
    return [arg for arg in node.args if arg.keyword is None and not arg.star]


# What a tensor says about itself without its data.
_METADATA = frozenset({"shape", "size", "dtype", "ndim", "dim", "numel"})


def names_in(node: cst.CSTNode) -> set[str]:
    """Every plain name an expression mentions (the receiver of a call, say).

    The value of a ``device=`` argument is left out: it names where the data goes, not the data,
    so ``torch.zeros(2, device=device).cuda()`` may still reuse ``device``, and so are the arguments
    of ``.to(...)`` (``x.to(device).cuda()``). So is a tensor whose
    metadata only is read (``x.shape``, ``x.size(0)``, ``x.dtype``): ``torch.ones(x.shape[0]).cuda()``
    holds none of ``x``'s data, and inside ``forward`` may go to ``x.device``.
    """
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            found.add(current.value)
        elif isinstance(current, cst.Attribute):
            if current.attr.value not in _METADATA or not isinstance(current.value, cst.Name):
                stack.append(current.value)
        elif isinstance(current, cst.Arg) and current.keyword is not None and current.keyword.value == "device":
            continue
        elif isinstance(current, cst.Call) and method_call(current, "to") is not None:
            # `.to(...)`'s arguments say where (or as what) the data goes, as `device=` does: the
            # `.to(device)` an earlier fix wrote into a nested `.cuda().cuda()` keeps `device` usable.
            stack.append(current.func.value)  # type: ignore[attr-defined]
        else:
            stack.extend(children(current))
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


def append_arg(node: cst.Call, new: cst.Arg) -> cst.Call:
    """``node`` with one more argument at the end, laid out like the others: a call written one
    argument a line keeps that shape and its trailing comma."""
    args = list(node.args)
    if not args:
        return node.with_changes(args=[new])
    last = args[-1]
    earlier = next((a.comma for a in reversed(args[:-1]) if isinstance(a.comma, cst.Comma)), None)
    separator = _separator(earlier.whitespace_after if earlier is not None else node.whitespace_before_args)
    if isinstance(last.comma, cst.Comma):
        new = new.with_changes(comma=last.comma)
    else:
        new = new.with_changes(whitespace_after_arg=last.whitespace_after_arg)
        last = last.with_changes(whitespace_after_arg=cst.SimpleWhitespace(""))
    return node.with_changes(args=[*args[:-1], last.with_changes(comma=separator), new])


def kept_args(node: cst.Call, kept: list[cst.Arg]) -> list[cst.Arg]:
    """``kept`` (some of ``node``'s arguments, in order) ending as the call's arguments ended: where
    the last argument is dropped, the last one kept takes its comma (a trailing one, or none) and
    the line break before the closing parenthesis, so no ``x, )`` is left behind."""
    if not kept or not node.args or kept[-1] is node.args[-1]:
        return kept
    last = node.args[-1]
    return [*kept[:-1], kept[-1].with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)]


def closed(node: cst.Call) -> cst.Call:
    """``node`` without a comma between its last argument and a ``)`` on the same line: a call a
    fix reorders reads ``f(a, b)``, never ``f(a, b, )``. A trailing comma before a line break
    (one argument a line) stays."""
    if not node.args:
        return node
    last = node.args[-1]
    if not (isinstance(last.comma, cst.Comma) and isinstance(last.comma.whitespace_after, cst.SimpleWhitespace)):
        return node
    return node.with_changes(args=[*node.args[:-1], last.with_changes(comma=cst.MaybeSentinel.DEFAULT)])


def in_slots(node: cst.Call, args: list[cst.Arg]) -> list[cst.Arg]:
    """``args`` (as many as ``node`` has, reordered) in ``node``'s layout: each takes the comma
    and the whitespace after it of the argument that stood in its place, so a call written one
    argument a line stays so and a trailing comma stays last."""
    assert len(args) == len(node.args)
    return [new.with_changes(comma=old.comma, whitespace_after_arg=old.whitespace_after_arg) for new, old in zip(args, node.args)]


def code_in_place(ctx: RuleContext, original: cst.CSTNode, new: cst.CSTNode) -> str:
    """The source of ``new`` as it reads where ``original`` stands (see ``RuleContext.render``)."""
    return ctx.render(original, new)


def prepend_arg(node: cst.Call, new: cst.Arg) -> cst.Call:
    """``node`` with one more argument in front, separated like the call's other arguments."""
    if not node.args:
        return node.with_changes(args=[new])
    return node.with_changes(args=[new.with_changes(comma=_separator(node.whitespace_before_args)), *node.args])


def _separator(model: cst.BaseParenthesizableWhitespace) -> cst.Comma:
    """A comma followed by the line break and indentation of ``model`` when the arguments stand one
    a line (without the comment that line may carry), else by one space."""
    if isinstance(model, cst.ParenthesizedWhitespace):
        return cst.Comma(whitespace_after=cst.ParenthesizedWhitespace(indent=model.indent, last_line=model.last_line))
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


@lru_cache(maxsize=256)
def _expression(expr: str) -> cst.BaseExpression:
    # Parsing costs milliseconds and fixes ask for the same few device expressions many times;
    # CST nodes are immutable, so one parsed node can sit in many new calls.
    return cst.parse_expression(expr)


def arg(expr: str, keyword_name: str | None = None) -> cst.Arg:
    value = _expression(expr)
    if keyword_name is None:
        return cst.Arg(value=value)
    return cst.Arg(
        value=value,
        keyword=cst.Name(keyword_name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def receiver_is_foreign(ctx: RuleContext, receiver: cst.BaseExpression, site: Site, method: str) -> bool:
    """True when the receiver is known not to be a tensor or module: a module object
    (``numba.cuda``), or an instance of a local class with its own ``method`` that does not
    inherit from nn.Module / Tensor. Unknown receivers are assumed to be torch objects.

    What a name is depends on its binding at the site: ``import data`` says nothing about a
    parameter ``data`` or a later ``for data in loader``."""
    model = ctx.model
    if isinstance(receiver, cst.Name):
        if receiver.value == "self":
            return _enclosing_class_has_own(ctx, site, method)
        # `batch = batch.cuda()` binds `batch` in the very statement being checked: that binding
        # says nothing about what `batch` was before, so look past it.
        for _, binding in model.lookup(receiver.value, site.scope, before=site.order):
            if binding.value is not None and _encloses(ctx, binding.value, site.node):
                continue
            if binding.kind == "import":
                return not model.imports.get(receiver.value, "torch.").startswith("torch.")
            return _constructs_foreign(ctx, binding.value, method)
        return False
    return _constructs_foreign(ctx, receiver, method)


def foreign_after_all(ctx: RuleContext, call: cst.CSTNode, site: Site, method: str) -> bool:
    """For ``Rule.withdraws``: the receiver of ``call``, ``x.method(...)``, is known after the
    walk not to be a torch object, where the walk had not yet met what says so (a local class
    with its own ``method`` defined below the function that makes one)."""
    attribute = method_call(call, method) if isinstance(call, cst.Call) else None
    return attribute is not None and receiver_is_foreign(ctx, attribute.value, site, method)


def _encloses(ctx: RuleContext, value: cst.BaseExpression, node: cst.CSTNode) -> bool:
    """``value`` (a binding's expression) is ``node`` or holds it. An expression lies within one
    statement: the climb stops at the first statement above ``node``, however deep that is."""
    current: cst.CSTNode | None = node
    while current is not None:
        if current is value:
            return True
        if isinstance(current, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
        current = ctx.parent(current)
    return False


def own_override(ctx: RuleContext, receiver: cst.BaseExpression, site: Site, method: str) -> str | None:
    """The local class whose own ``method`` a call on ``receiver`` runs, when that class is (or may
    be) an nn.Module: `.to(device)` would skip the override (a class that is no Module, with its
    own ``method``, is no torch object at all: see receiver_is_foreign)."""
    model = ctx.model
    if isinstance(receiver, cst.Name) and receiver.value == "self":
        scope = site.scope
        while scope is not None and scope.kind != "class":
            scope = scope.parent
        return scope.name if scope is not None and _defines(ctx, scope.name, method) else None
    value: cst.BaseExpression | None = receiver
    if isinstance(receiver, cst.Name):
        value = None
        for _, binding in model.lookup(receiver.value, site.scope, before=site.order):
            if binding.value is not None and _encloses(ctx, binding.value, site.node):
                continue
            value = binding.value
            break
    if isinstance(value, cst.Call):
        name = dotted_name(value.func)
        if name is not None and _defines(ctx, name, method):
            return name
    return None


def _defines(ctx: RuleContext, class_name: str, method: str, seen: frozenset[str] = frozenset()) -> bool:
    """The local class, or a local base of it, defines ``method`` itself."""
    info = ctx.model.classes.get(class_name)
    if info is None or class_name in seen:
        return False
    if method in info.methods:
        return True
    return any(_defines(ctx, base.split(".")[-1], method, seen | {class_name}) for base in info.bases)


def duck_typed(ctx: RuleContext, call: cst.Call, receiver: cst.BaseExpression, method: str) -> bool:
    """``call`` runs only where ``receiver`` was found to have ``method``: `if hasattr(obj, "cuda"):`
    or `callable(getattr(obj, "cuda", None))`, or in the body of a `try:` that catches
    `AttributeError` (pytorch3d's `try_to_cuda(t: Any)`: `try: t = t.cuda() except
    AttributeError: pass`). The object may be anything with that method, and nothing says it has
    a `to`, or one that takes the same arguments."""
    known: dict[int, frozenset[tuple[str, str]]] = ctx.indexed("objects tested for a method", dict)
    tested = climbed(call, ctx.parent, known, lambda ancestor, child, above: _tested_above(ctx, ancestor, child, above), frozenset())
    # The receiver's code is printed only where a test names some object's method.
    return bool(tested) and (_ANY_METHOD in tested or (ctx.code(receiver), method) in tested)


# What a `try:` that catches AttributeError tests: any object for any method.
_ANY_METHOD = ("", "")


def _tested_above(
    ctx: RuleContext, ancestor: cst.CSTNode, child: cst.CSTNode, above: frozenset[tuple[str, str]]
) -> frozenset[tuple[str, str]]:
    """The objects (by their code) and methods that `hasattr`/`getattr` tests of the branches
    enclosing ``child`` in its function or class found, ``ancestor`` included."""
    if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
        return frozenset()
    if isinstance(ancestor, cst.Try) and child is ancestor.body and any(_catches_attribute_error(h) for h in ancestor.handlers):
        return above | {_ANY_METHOD}
    if not isinstance(ancestor, (cst.If, cst.IfExp)) or child is ancestor.test:
        return above
    found = {
        (ctx.code(node.args[0].value), method)
        for node in calls_in(ancestor.test)
        if dotted_name(node.func) in ("hasattr", "getattr")
        and len(node.args) >= 2
        and (method := string_value(node.args[1].value)) is not None
    }
    return above | found if found else above


def _catches_attribute_error(handler: cst.ExceptHandler) -> bool:
    caught = handler.type
    kinds = [element.value for element in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
    return any(isinstance(kind, cst.Name) and kind.value == "AttributeError" for kind in kinds)


def calls_in(node: cst.CSTNode) -> list[cst.Call]:
    """Every call in ``node``, ``node`` itself included."""
    found: list[cst.Call] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            found.append(current)
        stack.extend(children(current))
    return found


# Methods that return a storage: `.cuda()` of one is no tensor move (its `to` takes keywords only).
_STORAGE_METHODS = frozenset({"storage", "untyped_storage", "_typed_storage"})


def is_storage(receiver: cst.BaseExpression) -> bool:
    """``t.storage()``, ``t.untyped_storage()``, or a name that says it holds a storage."""
    if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
        return receiver.func.attr.value in _STORAGE_METHODS
    name = dotted_name(receiver)
    return name is not None and name.split(".")[-1].lower().endswith("storage")


def map_location_lambda(ctx: RuleContext, call: cst.Call) -> cst.Lambda | None:
    """The lambda when ``call`` is the whole body of ``lambda storage, loc: storage.cuda(...)``
    given as ``torch.load``'s ``map_location``."""
    function = ctx.parent(call)
    if not isinstance(function, cst.Lambda) or function.body is not call:
        return None
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    params = function.params.params
    if not (isinstance(receiver, cst.Name) and params and params[0].name.value == receiver.value):
        return None
    argument = ctx.parent(function)
    load = ctx.parent(argument) if isinstance(argument, cst.Arg) else None
    if not isinstance(load, cst.Call) or ctx.model.qualname(load.func) != "torch.load":
        return None
    assert isinstance(argument, cst.Arg)
    if argument.keyword is not None:
        return function if argument.keyword.value == "map_location" else None
    plain = positional(load)
    return function if len(plain) > 1 and plain[1] is argument else None


# Test doubles record whatever they are called with: a device given to one is data, not placement.
_MOCKS = frozenset({"Mock", "MagicMock", "NonCallableMock", "NonCallableMagicMock", "AsyncMock", "create_autospec"})


def _constructs_foreign(ctx: RuleContext, value: cst.BaseExpression | None, method: str) -> bool:
    if isinstance(value, cst.Call):
        name = dotted_name(value.func)
        if name is None:
            return False
        qualname = ctx.model.qualname(value.func) or name
        if qualname.split(".")[-1] in _MOCKS and "mock" in qualname.lower():
            return True
        return ctx.model.has_own_method(name, method)
    return False


def _enclosing_class_has_own(ctx: RuleContext, site: Site, method: str) -> bool:
    scope = site.scope
    while scope is not None and scope.kind != "class":
        scope = scope.parent
    return scope is not None and ctx.model.has_own_method(scope.name, method)


def forwards_own_parameter(site: Site, value: cst.BaseExpression, name: str) -> bool:
    """Inside a method called ``name``, ``value`` is one of that method's own parameters: the
    method passes its caller's device on (``def cuda(self, device): ... t.cuda(device)``)."""
    if not isinstance(value, cst.Name):
        return False
    scope = site.scope
    while scope is not None:
        if scope.kind == "function" and scope.name == name:
            return value.value in scope.params
        scope = scope.parent
    return False


def delegates_to_own_method(site: Site, receiver: cst.BaseExpression, name: str) -> bool:
    """``super().cuda()`` or ``self.cuda()`` inside a method called ``cuda``: a class implementing
    the method by delegation, not code that moves a tensor."""
    delegating = isinstance(receiver, cst.Name) and receiver.value == "self"
    delegating |= isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super"
    if not delegating:
        return False
    scope = site.scope
    while scope is not None:
        if scope.kind == "function" and scope.name == name:
            return True
        scope = scope.parent
    return False
