"""Keeps the semantic model in step with the walk: scopes, bindings, imports, textual order."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.parametrized import may_be_given_none
from devlint.analysis.semantic import Binding, Scope, SemanticModel

_COMPOUND = (cst.If, cst.Try, cst.TryStar, cst.With, cst.For, cst.While, cst.Match)
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
# Every node passes through enter/leave and LibCST classes are ABCs (a slow isinstance): the
# classes above and in _RECORDED have no subclasses (tests/test_flow.py), so the type alone
# decides whether and what a node needs.
_COMPREHENSION_TYPES = frozenset(_COMPREHENSIONS)
_SCOPES = frozenset((cst.FunctionDef, cst.Lambda, cst.ClassDef, *_COMPREHENSIONS))
_COMPOUND_TYPES = frozenset(_COMPOUND)
_RECORDED = _SCOPES | _COMPOUND_TYPES | {
    cst.Import, cst.ImportFrom, cst.Module, cst.Assign, cst.AnnAssign, cst.AugAssign,
    cst.CompFor, cst.WithItem, cst.NamedExpr, cst.ExceptHandler,
}


class ScopeTracker:
    # The node types whose leave() does something: the walker leaves no other node.
    LEFT_TYPES = _SCOPES | _COMPOUND_TYPES

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.order = 0
        # Nesting of if/try/with/for/while at module level: bindings there are conditional.
        self._module_compound_depth = 0
        # Top-level statements in order, for placing a module-level definition.
        self.top_level: list[cst.BaseStatement] = []
        # `x.device` and `f(device=...)` name no variable: their Name nodes are not identifiers.
        self._not_identifiers: set[int] = set()

    def enter(self, node: cst.CSTNode) -> None:
        self.order += 1
        model = self.model
        order = self.order
        kind = type(node)
        if kind is cst.Name:
            if id(node) in self._not_identifiers:
                self._not_identifiers.discard(id(node))
            else:
                model.identifiers.add(node.value)
            return
        if kind is cst.Attribute:
            self._not_identifiers.add(id(node.attr))
            return
        if kind is cst.Arg:
            if node.keyword is not None:
                self._not_identifiers.add(id(node.keyword))
            return
        if kind not in _RECORDED:
            return
        if kind is cst.Import or kind is cst.ImportFrom:
            model.record_import(node, order)
            return
        if kind is cst.Module:
            self.top_level = list(node.body)
            return
        if kind is cst.Assign:
            for target in node.targets:
                model.record_assignment(target.target, node.value, order, self._conditional())
        elif kind is cst.AnnAssign or kind is cst.NamedExpr:
            model.record_assignment(node.target, node.value, order, self._conditional())
        elif kind is cst.AugAssign or kind is cst.For or kind is cst.CompFor:
            model.record_assignment(node.target, None, order, self._conditional())
        elif kind is cst.WithItem:
            if node.asname is not None:
                model.record_assignment(node.asname.name, None, order, self._conditional())
        elif kind is cst.ExceptHandler:
            if node.name is not None:
                model.record_assignment(node.name.name, None, order, self._conditional())
        elif kind is cst.FunctionDef:
            outer = model.scope
            model.bind(node.name.value, order, "def")
            model.function_names.add(node.name.value)
            scope = model.push_scope("function", node, node.name.value)
            self._bind_params(node.params, order, scope)
            self._parametrized(node, outer)
        elif kind is cst.Lambda:
            scope = model.push_scope("lambda", node)
            self._bind_params(node.params, order, scope)
        elif kind is cst.ClassDef:
            model.bind(node.name.value, order, "class")
            model.record_class(node)
            model.push_scope("class", node, node.name.value)
        elif kind in _COMPREHENSION_TYPES:
            model.push_scope("comprehension", node)
        if kind in _COMPOUND_TYPES and model.scope.kind == "module":
            self._module_compound_depth += 1

    def leave(self, node: cst.CSTNode) -> None:
        kind = type(node)
        if kind in _SCOPES:
            self.model.pop_scope()
        elif kind in _COMPOUND_TYPES and self.model.scope.kind == "module":
            self._module_compound_depth -= 1

    def _conditional(self) -> bool:
        return self.model.scope.kind == "module" and self._module_compound_depth > 0

    def _parametrized(self, node: cst.FunctionDef, outer: Scope) -> None:
        """Records the parameters that the function's or its class' parametrize decorators may
        give None (devlint.analysis.parametrized)."""
        decorators = [*node.decorators, *(outer.node.decorators if isinstance(outer.node, cst.ClassDef) else ())]
        if not decorators:
            return
        names = may_be_given_none(self.model, decorators)
        if names:
            params = node.params
            every = [*params.posonly_params, *params.params, *params.kwonly_params]
            self.model.given_none.update(param for param in every if param.name.value in names)

    def _bind_params(self, params: cst.Parameters, order: int, scope) -> None:
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        for extra in (params.star_arg, params.star_kwarg):
            if isinstance(extra, cst.Param):
                every.append(extra)
        # By identity, once: `in` on the tuples compares with each node's Python-level __eq__
        # (a function of N parameters cost N squared).
        positional = {id(param) for param in (*params.posonly_params, *params.params)}
        for param in every:
            name = param.name.value
            annotation = param.annotation.annotation if param.annotation is not None else None
            scope.bind(Binding(name, order, "param", param.default, annotation=annotation, param=param))
            if id(param) in positional:
                scope.params.append(name)
            self.model.identifiers.add(name)
