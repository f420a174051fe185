"""Which bindings of a name can reach a point of the code, and whether the name is bound on every
path there.

A fix that reuses a variable (``device``) in place of ``.cuda()`` is only right when every value
the variable can hold at that point is a device, and when it holds one on every path: a variable
set in one branch of an ``if`` and read where the other branch flows is an ``UnboundLocalError``.
This module answers that question for one name at one point, by a small reaching-definitions
analysis over the structured statements of the function (or module) in which the name is local.

Precision is traded for safety everywhere: a path that cannot be followed exactly (a ``break``, an
exception inside a ``try``, a loop running again) adds possibilities instead of removing them, so
the answer may say "maybe unbound" or "maybe something else" where it is not, never the reverse.
"""

from __future__ import annotations

import weakref
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from devlint.analysis.semantic import dotted_name
from devlint.analysis.tree import children, statement_children


@dataclass(frozen=True)
class Unknown:
    """A binding whose value is not an expression we can read: a loop target, an import, a
    ``with ... as``, an augmented assignment, a ``global`` declaration, a nested def."""

    node: cst.CSTNode


@dataclass(frozen=True)
class Unbound:
    """No binding: the name may be unbound on this path."""


@dataclass(frozen=True)
class ParamBinding:
    param: cst.Param


# A binding that reaches: the assigned expression, a parameter, or something unknown.
Reaching = cst.BaseExpression | ParamBinding | Unknown | Unbound
# The set of bindings that may reach a point; None: no path reaches it (after return/raise).
State = frozenset[Reaching] | None

_UNBOUND = Unbound()
_LOOP_PASSES = 3
# A name no statement binds: its analysis says which statements any path leaves (``_Index``).
_NO_NAME = "\0"


@dataclass(frozen=True)
class Reach:
    """What ``name`` may hold at a point: every binding that can reach it."""

    bindings: frozenset[Reaching]

    @property
    def maybe_unbound(self) -> bool:
        return _UNBOUND in self.bindings

    @property
    def values(self) -> list[cst.BaseExpression]:
        return [b for b in self.bindings if isinstance(b, cst.BaseExpression)]

    @property
    def params(self) -> list[cst.Param]:
        return [b.param for b in self.bindings if isinstance(b, ParamBinding)]

    @property
    def unknown(self) -> bool:
        return any(isinstance(b, Unknown) for b in self.bindings)


def reaching_at(
    name: str, scope: cst.CSTNode, site: cst.CSTNode, parent_of: Callable[[cst.CSTNode], cst.CSTNode | None]
) -> Reach | None:
    """The bindings of ``name`` that may reach ``site`` inside ``scope`` (a Module or FunctionDef
    in which ``name`` is local); None when ``site`` is not inside ``scope``'s own statements."""
    return Flows(parent_of).at(name, scope, site)


def reaching_at_end(name: str, scope: cst.CSTNode, walrus: bool = True) -> Reach:
    """The bindings of ``name`` that may be live when ``scope`` (a Module or FunctionDef) has run to
    its end: what a function defined in it sees when it is called later."""
    analysis = _Analysis(name, walrus, _Index(walrus))
    state = analysis.run(_owner(scope), _body(scope), analysis.entry(scope))
    return Reach(state if state is not None else frozenset())


def declared_names(module: cst.Module, text: str) -> frozenset[str]:
    """Every name a ``global`` or ``nonlocal`` statement of the file (``text``) declares: a function
    may then rebind it in another scope, whose analysis skips function bodies and does not see it.
    One walk of the module's statements (a declaration is a statement, never inside an
    expression); callers ask through ``Flows.declared_global``."""
    if "global" not in text and "nonlocal" not in text:
        return frozenset()
    found: set[str] = set()
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            found.update(item.name.value for item in node.names)
        stack.extend(statement_children(node))
    return frozenset(found)


class Flows:
    """The analyses of one file. Fix sites ask the same questions again and again (one per site
    and candidate name): each name's analysis keeps the state before each statement of every
    block it entered (``_Block``), and what a scope leaves at its end, so a question costs the
    depth of its site; the statements that can bind a name, and those no path leaves, are
    indexed once for every name (``_Index``)."""

    def __init__(
        self,
        parent_of: Callable[[cst.CSTNode], cst.CSTNode | None],
        walrus: bool = True,
        declared: Callable[[], frozenset[str]] = frozenset,
    ) -> None:
        self.parent_of = parent_of
        # Whether the file has `:=` at all: if not, expressions need no search for one.
        self.walrus = walrus
        self._ends: dict[tuple[str, int], Reach] = {}
        self._index = _Index(walrus)
        self._analyses: dict[str, _Analysis] = {}
        # each scope's statements, listed once (a module's list is as long as the file)
        self._bodies: dict[int, list[cst.CSTNode]] = {}
        self._declare = declared
        self._declared: frozenset[str] | None = None

    def declared_global(self, name: str) -> bool:
        """``global name`` or ``nonlocal name`` somewhere in the file (see ``declared_names``),
        from the file's one index of them."""
        if self._declared is None:
            self._declared = self._declare()
        return name in self._declared

    def at(self, name: str, scope: cst.CSTNode, site: cst.CSTNode) -> Reach | None:
        path: list[cst.CSTNode] = [site]
        current = self.parent_of(site)
        while current is not None and current is not scope:
            path.append(current)
            current = self.parent_of(current)
        if current is None:
            return None
        path.reverse()
        depth = 0
        if isinstance(scope, cst.FunctionDef):
            if path[0] is not scope.body:
                return None  # a decorator, a default, an annotation: evaluated outside the function
            depth = 1
        if depth >= len(path):
            return None
        analysis = self._analysis(name)
        block = analysis.block(_owner(scope), self._body(scope), analysis.entry(scope))
        position = block.positions.get(id(path[depth]))
        before = block.before(position) if position is not None else None
        if before is None:
            return Reach(frozenset())
        found = analysis._inside(path[depth], path, depth, before)
        return Reach(found if found is not None else frozenset())

    def at_end(self, name: str, scope: cst.CSTNode) -> Reach:
        key = (name, id(scope))
        if key not in self._ends:
            analysis = self._analysis(name)
            state = analysis.run(_owner(scope), self._body(scope), analysis.entry(scope))
            self._ends[key] = Reach(state if state is not None else frozenset())
        return self._ends[key]

    def _body(self, scope: cst.CSTNode) -> list[cst.CSTNode]:
        if id(scope) not in self._bodies:
            self._bodies[id(scope)] = _body(scope)
        return self._bodies[id(scope)]

    def _analysis(self, name: str) -> _Analysis:
        if name not in self._analyses:
            self._analyses[name] = _Analysis(name, self.walrus, self._index)
        return self._analyses[name]


def _owner(scope: cst.CSTNode) -> cst.CSTNode:
    """The node holding ``_body(scope)``: the module, or the function's suite."""
    return scope.body if isinstance(scope, cst.FunctionDef) else scope


def _body(scope: cst.CSTNode) -> list[cst.CSTNode]:
    return _statements(scope.body) if isinstance(scope, cst.FunctionDef) else list(scope.body)  # type: ignore[attr-defined]


def _statements(block: cst.BaseSuite | cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    if isinstance(block, cst.SimpleStatementSuite):
        return list(block.body)
    return [block]


def _join(*states: State) -> State:
    live = [s for s in states if s is not None]
    if not live:
        return None
    joined: frozenset[Reaching] = frozenset()
    for s in live:
        joined |= s
    return joined


@dataclass(frozen=True)
class _Statements:
    """What a block's statements are to every name's analysis: each one's position, the positions
    of those that may bind each name (``_bound_names``), and of those after which no path goes
    on (a ``return``, a ``raise`` on every path)."""

    positions: Mapping[int, int]
    binders: Mapping[str, list[int]]
    stops: list[int]


class _Index:
    """``_Statements`` of each block, worked out once for every name of a file. A statement that
    cannot bind a name leaves that name's state as it was, or ends every path (None): which of
    the two depends on the statement alone, so it is asked once, of a name nothing binds."""

    def __init__(self, walrus: bool) -> None:
        self.walrus = walrus
        self._blocks: dict[int, _Statements] = {}
        self._params: dict[int, dict[str, cst.Param]] = {}
        # A proxy, not a reference back: a cycle would hold the parameters above (nodes of the
        # tree) until the garbage collector walks them (tests/test_performance_features.py).
        self._nothing = _Analysis(_NO_NAME, walrus, weakref.proxy(self))

    def statements(self, owner: cst.CSTNode, statements: Sequence[cst.CSTNode]) -> _Statements:
        found = self._blocks.get(id(owner))
        if found is None:
            binders: dict[str, list[int]] = {}
            for position, statement in enumerate(statements):
                for name in _bound_names(statement, self.walrus):
                    binders.setdefault(name, []).append(position)
            entry = frozenset({_UNBOUND})
            stops = [position for position, statement in enumerate(statements) if self._nothing.step(statement, entry) is None]
            found = _Statements({id(statement): position for position, statement in enumerate(statements)}, binders, stops)
            self._blocks[id(owner)] = found
        return found

    def params(self, function: cst.FunctionDef) -> Mapping[str, cst.Param]:
        """The function's parameters by name, listed once: every name of the file asks (a
        function of N parameters, each read, would otherwise cost N squared)."""
        found = self._params.get(id(function))
        if found is None:
            params = function.params
            every = [*params.posonly_params, *params.params, *params.kwonly_params]
            every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
            found = {}
            for param in every:
                # The first of a name, as a scan in order finds it (CPython refuses a repeated
                # name only when it compiles, so the tree may hold one).
                found.setdefault(param.name.value, param)
            self._params[id(function)] = found
        return found


@dataclass(frozen=True)
class _Block:
    """What one name may hold before each statement of one block, entered in one state: it
    changes only at the statements that may bind the name (``points``, the state after each in
    ``states``), and no path goes past ``stop``."""

    positions: Mapping[int, int]
    entry: State
    points: list[int]
    states: list[State]
    stop: int | None

    def before(self, position: int) -> State:
        if self.stop is not None and position > self.stop:
            return None
        passed = bisect_left(self.points, position)
        return self.states[passed - 1] if passed else self.entry

    @property
    def end(self) -> State:
        if self.stop is not None:
            return None
        return self.states[-1] if self.states else self.entry


class _Analysis:
    def __init__(self, name: str, walrus: bool, index: _Index) -> None:
        self.name = name
        self.walrus = walrus
        self.index = index
        self._blocks: dict[tuple[int, State], _Block] = {}
        self._heads: dict[tuple[int, State], State] = {}

    def entry(self, scope: cst.CSTNode) -> State:
        if isinstance(scope, cst.FunctionDef):
            param = self.index.params(scope).get(self.name)
            if param is not None:
                return frozenset({ParamBinding(param)})
        return frozenset({_UNBOUND})

    # -- whole statements ----------------------------------------------------------------------

    def run(self, owner: cst.CSTNode, statements: Sequence[cst.CSTNode], state: State) -> State:
        """The state after ``statements``, the statements of ``owner`` (a block, a line)."""
        if state is None:
            return None
        return self.block(owner, statements, state).end

    def block(self, owner: cst.CSTNode, statements: Sequence[cst.CSTNode], entry: frozenset[Reaching]) -> _Block:
        key = (id(owner), entry)
        found = self._blocks.get(key)
        if found is None:
            found = self._blocks[key] = self._through(owner, statements, entry)
        return found

    def _through(self, owner: cst.CSTNode, statements: Sequence[cst.CSTNode], entry: frozenset[Reaching]) -> _Block:
        """Steps only the statements that may bind the name: any other one passes the state on
        unchanged, or ends every path, the first such statement ending the block."""
        shape = self.index.statements(owner, statements)
        binders = shape.binders.get(self.name, [])
        binding = set(binders)
        stop = next((position for position in shape.stops if position not in binding), None)
        points: list[int] = []
        states: list[State] = []
        state: State = entry
        for position in binders:
            if stop is not None and position > stop:
                break
            state = self.step(statements[position], state)
            points.append(position)
            states.append(state)
            if state is None:
                stop = position
                break
        return _Block(shape.positions, entry, points, states, stop)

    def _run_block(self, block: cst.CSTNode, state: State) -> State:
        return self.run(block, _statements(block), state)

    def step(self, node: cst.CSTNode, state: State) -> State:
        if state is None:
            return None
        if isinstance(node, cst.SimpleStatementLine):
            return self.run(node, node.body, state)
        if isinstance(node, cst.If):
            state = self._walrus(node.test, state)
            orelse = self.step(node.orelse, state) if node.orelse is not None else state
            return _join(self._run_block(node.body, state), orelse)
        if isinstance(node, cst.Else):
            return self._run_block(node.body, state)
        if isinstance(node, (cst.For, cst.While)):
            head = self._loop_head(node, state)
            return self.step(node.orelse, head) if node.orelse is not None else head
        if isinstance(node, (cst.Try, cst.TryStar)):
            return self._try(node, state)
        if isinstance(node, cst.With):
            return self._run_block(node.body, self._with_items(node, state))
        if isinstance(node, cst.Match):
            outs = [self._run_block(case.body, self._captures(case.pattern, state)) for case in node.cases]
            return _join(state, *outs)
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return self._bind(node.name.value, Unknown(node), state)
        return self._small(node, state)

    def _small(self, node: cst.CSTNode, state: State) -> State:
        if isinstance(node, (cst.Return, cst.Raise)):
            return None
        if isinstance(node, cst.Assign):
            state = self._walrus(node.value, state)
            for target in node.targets:
                state = self._assign(target.target, node.value, state)
            return state
        if isinstance(node, cst.AnnAssign):
            if node.value is None:
                return state
            return self._assign(node.target, node.value, self._walrus(node.value, state))
        if isinstance(node, cst.AugAssign):
            return self._bind(dotted_name(node.target), Unknown(node), state)
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            return self._import(node, state)
        if isinstance(node, cst.Del):
            return frozenset({_UNBOUND}) if self.name in _names_of(node.target) else state
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            named = any(n.name.value == self.name for n in node.names)
            return frozenset({Unknown(node)}) if named else state
        return self._walrus(node, state)

    # -- bindings ------------------------------------------------------------------------------

    def _bind(self, bound: str | None, value: Reaching, state: State) -> State:
        if state is None or bound != self.name:
            return state
        return frozenset({value})

    def _assign(self, target: cst.BaseExpression, value: cst.BaseExpression, state: State) -> State:
        if dotted_name(target) == self.name:
            return frozenset({value})
        if self.name in _names_of(target):
            return frozenset({Unknown(target)})
        return state

    def _import(self, node: cst.Import | cst.ImportFrom, state: State) -> State:
        for local in _imported_names(node):
            state = self._bind(local, Unknown(node), state)
        return state

    def _walrus(self, node: cst.CSTNode, state: State) -> State:
        """``(name := value)`` anywhere in an expression, nested functions aside."""
        if not self.walrus:
            return state
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(current, cst.NamedExpr) and dotted_name(current.target) == self.name:
                state = frozenset({current.value}) if state is not None else None
            stack.extend(children(current))
        return state

    def _with_items(self, node: cst.With, state: State) -> State:
        for item in node.items:
            state = self._walrus(item.item, state)
            if item.asname is not None and self.name in _names_of(item.asname.name):
                state = frozenset({Unknown(item)})
        return state

    def _captures(self, pattern: cst.MatchPattern, state: State) -> State:
        names = {n.value for n in _descendants(pattern) if isinstance(n, cst.Name)}
        return frozenset({Unknown(pattern)}) if self.name in names else state

    # -- control flow ----------------------------------------------------------------------------

    def _loop_entry(self, node: cst.For | cst.While, head: State) -> State:
        if isinstance(node, cst.For):
            head = self._walrus(node.iter, head)
            if self.name in _names_of(node.target):
                return frozenset({Unknown(node)}) if head is not None else None
            return head
        return self._walrus(node.test, head)

    def _loop_head(self, node: cst.For | cst.While, state: State) -> State:
        """The state at the top of the loop: before the first pass or after any number of passes.
        ``break`` and ``continue`` are followed as if they fell through (more paths, never fewer).
        Kept: every site in the loop's body asks it."""
        key = (id(node), state)
        if key in self._heads:
            return self._heads[key]
        head = state
        for _ in range(_LOOP_PASSES):
            out = self._run_block(node.body, self._loop_entry(node, head))
            joined = _join(head, out)
            if joined == head:
                break
            head = joined
        self._heads[key] = head
        return head

    def _try(self, node: cst.Try | cst.TryStar, state: State) -> State:
        body = self._run_block(node.body, state)
        # An exception may come from anywhere in the body: a handler starts from any state in it.
        raised = _join(state, body)
        outs = [self._run_block(h.body, self._handler_entry(h, raised)) for h in node.handlers]
        normal = self.step(node.orelse, body) if node.orelse is not None else body
        out = _join(normal, *outs)
        if node.finalbody is not None:
            return self._run_block(node.finalbody.body, out)
        return out

    def _handler_entry(self, handler: cst.ExceptHandler | cst.ExceptStarHandler, state: State) -> State:
        if handler.name is not None and self.name in _names_of(handler.name.name):
            return frozenset({Unknown(handler)}) if state is not None else None
        return state

    # -- the state just before a node deep inside the statements ---------------------------------

    def before(
        self, owner: cst.CSTNode, statements: Sequence[cst.CSTNode], path: list[cst.CSTNode], depth: int, state: State
    ) -> frozenset[Reaching] | None:
        """The state right before ``path[-1]``, where ``path[depth]`` is one of ``statements``
        (those of ``owner``)."""
        if state is None:
            return None
        block = self.block(owner, statements, state)
        position = block.positions.get(id(path[depth]))
        if position is None:
            return block.end
        found = block.before(position)
        return self._inside(path[depth], path, depth, found) if found is not None else None

    def _inside(self, node: cst.CSTNode, path: list[cst.CSTNode], depth: int, state: State) -> frozenset[Reaching] | None:
        if depth + 1 >= len(path) or state is None:
            return state
        child = path[depth + 1]
        if isinstance(node, cst.SimpleStatementLine):
            return self.before(node, node.body, path, depth + 1, state)
        if isinstance(node, cst.If):
            if child is node.body:
                return self._in_block(node.body, path, depth + 2, self._walrus(node.test, state))
            if child is node.orelse:
                return self._inside(child, path, depth + 1, self._walrus(node.test, state))
            return state
        if isinstance(node, cst.Else):
            return self._in_block(node.body, path, depth + 2, state)
        if isinstance(node, (cst.For, cst.While)):
            head = self._loop_head(node, state)
            if child is node.body:
                return self._in_block(node.body, path, depth + 2, self._loop_entry(node, head))
            if child is node.orelse:
                return self._inside(child, path, depth + 1, head)
            return head if isinstance(node, cst.While) else state
        if isinstance(node, (cst.Try, cst.TryStar)):
            return self._in_try(node, child, path, depth, state)
        if isinstance(node, cst.With):
            if child is node.body:
                return self._in_block(node.body, path, depth + 2, self._with_items(node, state))
            return state
        if isinstance(node, cst.Match):
            for case in node.cases:
                if child is case:
                    return self._in_block(case.body, path, depth + 3, self._captures(case.pattern, state))
            return state
        # Inside an expression of this statement (or a decorator, a default): what held before it.
        return state

    def _in_try(self, node: cst.Try | cst.TryStar, child: cst.CSTNode, path: list[cst.CSTNode], depth: int, state: State) -> frozenset[Reaching] | None:
        if child is node.body:
            return self._in_block(node.body, path, depth + 2, state)
        body = self._run_block(node.body, state)
        raised = _join(state, body)
        for handler in node.handlers:
            if child is handler:
                return self._in_block(handler.body, path, depth + 3, self._handler_entry(handler, raised))
        if node.orelse is not None and child is node.orelse:
            return self._inside(child, path, depth + 1, body)
        if node.finalbody is not None and child is node.finalbody:
            outs = [self._run_block(h.body, self._handler_entry(h, raised)) for h in node.handlers]
            normal = self.step(node.orelse, body) if node.orelse is not None else body
            return self._in_block(node.finalbody.body, path, depth + 3, _join(normal, raised, *outs))
        return state

    def _in_block(self, block: cst.BaseSuite, path: list[cst.CSTNode], depth: int, state: State) -> frozenset[Reaching] | None:
        """``path[depth - 1]`` is ``block`` (an IndentedBlock or a one-line suite)."""
        if depth >= len(path):
            return state
        return self.before(block, _statements(block), path, depth, state)


def _imported_names(node: cst.Import | cst.ImportFrom) -> list[str]:
    """The names an import binds: `import a.b` binds `a`, `from m import f as g` binds `g`."""
    if isinstance(node.names, cst.ImportStar):
        return []
    found: list[str] = []
    for alias in node.names:
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            found.append(alias.asname.name.value)
        else:
            full = dotted_name(alias.name) or ""
            found.append(full.split(".")[0] if isinstance(node, cst.Import) else full)
    return found


def _bound_names(statement: cst.CSTNode, walrus: bool) -> set[str]:
    """Every name ``_Analysis.step`` may bind in ``statement`` (any other name it leaves as it
    was): the targets of its assignments, loops, `with ... as`, handlers, match patterns, imports,
    `del`, `global`, the defs and classes it holds (not what they bind inside), and with
    ``walrus`` every `:=` outside nested functions. More names than it binds only cost time."""
    found: set[str] = set()
    stack = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            found.add(node.name.value)
            continue
        if isinstance(node, cst.Assign):
            found.update(name for target in node.targets for name in _names_of(target.target))
        elif isinstance(node, (cst.AnnAssign, cst.Del, cst.For)):
            found.update(_names_of(node.target))
        elif isinstance(node, cst.AugAssign):
            found.add(dotted_name(node.target) or "")
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            found.update(_imported_names(node))
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            found.update(item.name.value for item in node.names)
        elif isinstance(node, cst.With):
            found.update(name for item in node.items if item.asname is not None for name in _names_of(item.asname.name))
        elif isinstance(node, (cst.ExceptHandler, cst.ExceptStarHandler)) and node.name is not None:
            found.update(_names_of(node.name.name))
        elif isinstance(node, cst.MatchCase):
            found.update(n.value for n in _descendants(node.pattern) if isinstance(n, cst.Name))
        stack.extend(statement_children(node))
    if walrus:
        pending = [statement]
        while pending:
            current = pending.pop()
            if isinstance(current, (cst.Lambda, cst.FunctionDef, cst.ClassDef)) and current is not statement:
                continue
            if isinstance(current, cst.NamedExpr):
                found.add(dotted_name(current.target) or "")
            pending.extend(children(current))
    return found


def _names_of(target: cst.CSTNode) -> set[str]:
    """Every name (or dotted name) a target binds: ``a``, ``a.b``, the parts of ``a, (b, *c)``;
    a subscript ``a[i]`` binds none."""
    dotted = dotted_name(target)
    if dotted is not None:
        return {dotted}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for element in target.elements for n in _names_of(element.value)}
    if isinstance(target, cst.StarredElement):
        return _names_of(target.value)
    return set()


def _descendants(node: cst.CSTNode) -> list[cst.CSTNode]:
    found = [node]
    for child in children(node):
        found.extend(_descendants(child))
    return found
