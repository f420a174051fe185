"""Where the code of a class, and the file around it, stores values: what a method binds to names
and to attributes of ``self``, what it returns, where it lets an attribute's object escape, and
which attributes the file sets from outside. devlint.rulekit.dataset_items reads them.

Every scan keeps its own stack, never Python's: a chain of thousands of operators must not exhaust
the recursion limit (LibCST's own ``visit`` recurses once per level).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import libcst as cst

from devlint.analysis.semantic import dotted_name, string_value
from devlint.analysis.tree import children

Value = cst.BaseExpression | None  # None: a value that cannot be told (`with ... as x`, a nested `def x`)
# calls that put their arguments into the container they are called on
_MUTATORS = frozenset({"append", "extend", "insert", "update", "setdefault", "add", "set_", "__setitem__"})
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
# where a value is bound to another name or put into a container: the same object, reachable another way
_ALIASING = (
    cst.Assign, cst.NamedExpr, cst.Element, cst.StarredElement, cst.DictElement, cst.StarredDictElement,
    cst.Yield, cst.WithItem, cst.AugAssign, cst.AnnAssign, cst.IfExp, cst.BooleanOperation, cst.Lambda,
)


def _scan(root: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]]:
    """Every node under ``root`` with its parent and grandparent, nested functions, classes and
    lambdas left out (their names are still seen)."""
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = [(root, ())]
    while stack:
        node, above = stack.pop()
        yield node, above
        if node is root or not isinstance(node, _SCOPES):
            inner = (node, *above[:1])
            stack.extend((child, inner) for child in reversed(children(node)))


def self_name(function: cst.FunctionDef) -> str | None:
    """The first parameter of a method called on an instance; None for a static method."""
    if any(dotted_name(d.decorator) == "staticmethod" for d in function.decorators):
        return None
    params = function.params.posonly_params or function.params.params
    return params[0].name.value if params else None


@dataclass
class Stores:
    """What one function stores where."""

    names: dict[str, list[Value]] = field(default_factory=dict)
    # what goes into a container a name holds (`out[k] = v`, `out.append(v)`), not a new value of it
    filled: dict[str, list[Value]] = field(default_factory=dict)
    # `self.x = v`, `self.x[k] = v`, `self.x.append(v)`
    attributes: dict[str, list[Value]] = field(default_factory=dict)

    def store(self, target: cst.BaseExpression, value: Value, owner: str | None) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            # an element of a host value is on the host: each name gets the whole value
            for element in target.elements:
                self.store(element.value, value, owner)
            return
        if isinstance(target, cst.StarredElement):
            self.store(target.value, value, owner)
            return
        root, first = target, None
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            if isinstance(root, cst.Attribute):
                first = root.attr.value
            root = root.value
        if not isinstance(root, cst.Name):
            return
        if root.value == owner and first is not None:
            self.attributes.setdefault(first, []).append(value)
            return
        self.names.setdefault(root.value, []).append(value)
        if root is not target:
            self.filled.setdefault(root.value, []).append(value)


def function_stores(function: cst.FunctionDef) -> Stores:
    """The stores of ``function``'s own body; ``self`` is its first parameter where it is a method."""
    into = Stores()
    owner = self_name(function)
    for node, _ in _scan(function.body):
        for target, value in _stored(node):
            into.store(target, value, owner)
    return into


def _stored(node: cst.CSTNode) -> Iterator[tuple[cst.BaseExpression, Value]]:
    """The (target, value) pairs one node stores."""
    if isinstance(node, cst.Assign):
        yield from ((target.target, node.value) for target in node.targets)
    elif isinstance(node, (cst.AnnAssign, cst.AugAssign)) and node.value is not None:
        yield node.target, node.value
    elif isinstance(node, cst.For):
        yield node.target, node.iter
    elif isinstance(node, cst.NamedExpr):
        yield node.target, node.value
    elif isinstance(node, cst.AsName) and isinstance(node.name, (cst.Name, cst.Attribute, cst.Tuple, cst.List)):
        yield node.name, None
    elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        yield node.name, None
    elif isinstance(node, (cst.Global, cst.Nonlocal)):
        yield from ((item.name, None) for item in node.names)
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _MUTATORS:
        # the receiver's container gets the argument: stored as into an element of it
        element = cst.Subscript(node.func.value, [cst.SubscriptElement(cst.Index(cst.Integer("0")))])
        yield from ((element, argument.value) for argument in node.args)


@dataclass(frozen=True)
class Outputs:
    values: tuple[Value, ...]  # the `return` values (None: a bare `return`)
    yields: bool


def outputs(function: cst.FunctionDef) -> Outputs:
    values: list[Value] = []
    yields = False
    for node, _ in _scan(function.body):
        if isinstance(node, cst.Return):
            values.append(node.value)
        yields = yields or isinstance(node, cst.Yield)
    return Outputs(tuple(values), yields)


def escaped_attributes(function: cst.FunctionDef, known_call: Callable[[cst.Call], bool]) -> set[str]:
    """The attributes of ``self`` whose object ``function`` lets escape: bound to another name, put
    into a container, or handed to a call whose effect is not known. What escapes may be filled by
    code nobody follows."""
    owner = self_name(function)
    escaped: set[str] = set()
    for node, above in _scan(function.body):
        if (
            isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == owner
            and _escapes(node, above, known_call)
        ):
            escaped.add(node.attr.value)
    return escaped


def _escapes(node: cst.Attribute, above: tuple[cst.CSTNode, ...], known_call: Callable[[cst.Call], bool]) -> bool:
    parent = above[0] if above else None
    if isinstance(parent, cst.Arg):
        call = above[1] if len(above) > 1 else None
        return not (isinstance(call, cst.Call) and known_call(call))
    if isinstance(parent, (cst.AugAssign, cst.AnnAssign)):
        return parent.value is node  # as the target, a store
    if isinstance(parent, cst.IfExp):
        return parent.test is not node
    return isinstance(parent, _ALIASING)


@dataclass(frozen=True)
class Foreign:
    """Attribute names the file stores on something other than the instance a method runs for
    (`ds.items = ...`, `setattr(ds, "items", ...)`): they may be a dataset's."""

    names: frozenset[str]
    any: bool  # `setattr(x, name, v)` with a name that is no literal


def foreign_attributes(module: cst.Module) -> Foreign:
    names: set[str] = set()
    anything = False
    # each node with the `self` of the method it is in (None outside methods)
    stack: list[tuple[cst.CSTNode, str | None, bool]] = [(module, None, False)]
    while stack:
        node, owner, in_class = stack.pop()
        if isinstance(node, cst.FunctionDef):
            owner = self_name(node) if in_class else None
        for target in _attribute_targets(node):
            names.update(_foreign_names(target, owner))
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "setattr" and len(node.args) > 1:
            literal = string_value(node.args[1].value)
            anything = anything or literal is None
            names.update([literal] if literal is not None else [])
        body_of_class = isinstance(node, cst.ClassDef) or (in_class and isinstance(node, cst.IndentedBlock))
        stack.extend((child, owner, body_of_class) for child in children(node))
    return Foreign(frozenset(names), anything)


def _attribute_targets(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    if isinstance(node, cst.AssignTarget):
        yield node.target
    elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
        yield node.target


def _foreign_names(target: cst.BaseExpression, owner: str | None) -> Iterator[str]:
    """The first attribute a store target sets on an object other than ``owner``."""
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _foreign_names(element.value, owner)
        return
    first = None
    while isinstance(target, (cst.Attribute, cst.Subscript, cst.StarredElement)):
        if isinstance(target, cst.Attribute):
            first = target.attr.value
        target = target.value
    if first is not None and not (isinstance(target, cst.Name) and target.value == owner):
        yield first
