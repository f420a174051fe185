"""Each rule's condition over CPython's tree: true for every file in which the rule can report.

A condition may be true where the rule finds nothing (it is cheap and coarse), never false where
the rule would report: each states what every finding of its rule requires, as read from the
rule's code, and the comment above it says why. ``tests/test_gate.py`` runs every file of the
installed torch package, every fixture and every rule example with and without the gate and
compares the findings.

Facts of the tree map to LibCST's nodes as follows: a call's ``*x`` is an ``ast.Starred`` in
``args`` and ``**x`` a keyword without a name; a LibCST positional argument is any other element
of ``args``; a string literal (implicitly concatenated or not) is an ``ast.Constant`` holding its
value; an f-string is an ``ast.JoinedStr`` whose literal parts are constants; ``True`` is
``ast.Constant(True)``.

Names resolve as devlint.analysis.semantic resolves them: ``SemanticModel.qualname`` follows imports only
(``may_be``), ``SemanticModel.qualnames`` also value aliases (``x = torch.cuda.FloatTensor``).
Either way a qualified name is an imported name followed by attribute names, so each of its
parts is a part of some import or the name of some attribute access in the file (``mentions``),
and its first part is the first part of what some import binds (``Facts.import_roots``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator

from devlint.gate.cuda_only import only_on_cuda
from devlint.gate.facts import Facts, collect
from devlint.gate.guards import certainly_guarded, cuda_query
from devlint.gate.host_values import Bindings, HostValues
from devlint.gate.literals import is_cuda_literal
from devlint.gate.paths import Paths
from devlint.gate.torch_name import TorchName
from devlint.torchfacts.api_versions import SINCE
from devlint.torchfacts.names import (
    AMP_DEVICE_TYPE,
    AMP_MODULES,
    CUDA_BACKEND,
    CUDA_DEVICE_KEYWORDS,
    CUDA_ONLY_CALLS,
    CUDA_MEMORY_API,
    CUDA_OUT_OF_MEMORY,
    CUDA_RUNS_WITHOUT_CUDA,
    CUDA_RUNTIME_API,
    CUDA_SEED_API,
    CUDA_SUBMODULES,
    DATA_PARALLEL,
    DATALOADERS,
    DEPRECATED_AMP,
    DEVICE_API_CLASSES,
    DEVICE_API_MODULES,
    DEVICE_KEYWORDS,
    DEVICE_METHODS,
    DEVICE_MODULE,
    LEGACY_TENSOR_TYPES,
    LOOP_WRAPPERS,
    LOSS_TENSOR_ARGUMENTS,
    MESH_DEVICE_TYPE,
    MOVES,
    NUMPY_HOST_COPIES,
    PIN_MEMORY_POSITION,
    POSITIONAL_DEVICE_FUNCTIONS,
    PROCESS_GROUP_BACKEND,
    VISIBLE_DEVICES,
)
from devlint.torchfacts.version import TorchVersion

Condition = Callable[[Facts], bool]


# -- reading calls ----------------------------------------------------------------------------


def positional(call: ast.Call) -> list[ast.expr]:
    return [arg for arg in call.args if type(arg) is not ast.Starred]


def unpacks(call: ast.Call) -> bool:
    """``f(*a)`` or ``f(**k)``."""
    return any(type(arg) is ast.Starred for arg in call.args) or any(k.arg is None for k in call.keywords)


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def method_calls(facts: Facts, name: str) -> Iterator[ast.Call]:
    """``x.name(...)``."""
    return (call for call in facts.calls.get(name, ()) if type(call.func) is ast.Attribute)


def may_be(facts: Facts, expr: ast.expr, qualified: str) -> bool:
    """``SemanticModel.qualname(expr)`` may be ``qualified``: ``expr`` is a name or an attribute
    chain on a name that some import binds to the right prefix."""
    suffix = ""
    while type(expr) is ast.Attribute:
        suffix = f".{expr.attr}{suffix}"
        expr = expr.value
    if type(expr) is not ast.Name:
        return False
    return any(bound + suffix == qualified for bound in facts.imports.get(expr.id, ()))


def calls_to(facts: Facts, qualified: str) -> Iterator[ast.Call]:
    """Calls whose callee may resolve to ``qualified``: ``torch.load(...)``, ``t.load(...)``,
    ``load(...)`` after ``from torch import load``, ``ld(...)`` after ``... import load as ld``."""
    last = qualified.rsplit(".", 1)[-1]
    names = {last} | {local for local, bound in facts.imports.items() if qualified in bound}
    for name in names:
        for call in facts.calls.get(name, ()):
            if may_be(facts, call.func, qualified):
                yield call


def calls_to_any(facts: Facts, qualified: Iterable[str]) -> Iterator[ast.Call]:
    for name in qualified:
        yield from calls_to(facts, name)


def from_torch(facts: Facts, func: ast.expr) -> bool:
    """The callee may resolve to a name under ``torch.``: its root name is imported from torch."""
    while type(func) is ast.Attribute:
        func = func.value
    return type(func) is ast.Name and any(
        bound == "torch" or bound.startswith("torch.") for bound in facts.imports.get(func.id, ())
    )


def mentions(facts: Facts, *parts: str) -> bool:
    """Each of ``parts`` is part of an import or an attribute name: what a qualified name made of
    them needs."""
    return all(part in facts.import_parts or part in facts.attributes for part in parts)


def moves(facts: Facts) -> bool:
    """Some ``x.to(...)`` or ``x.cuda(...)``: where values reach the device."""
    return any(next(method_calls(facts, name), None) is not None for name in MOVES)


# -- the conditions, by rule ------------------------------------------------------------------


def cuda_call(facts: Facts) -> bool:
    # DEV101 reports `x.cuda(...)` with no argument unpacked, no positional and no `device=` or
    # `device_id=`.
    return any(
        not unpacks(call) and not positional(call) and all(keyword(call, name) is None for name in CUDA_DEVICE_KEYWORDS)
        for call in method_calls(facts, "cuda")
    )


def cuda_call_with_index(facts: Facts) -> bool:
    # DEV102 reports `x.cuda(...)` with no argument unpacked, given a positional, `device=` or
    # `device_id=`.
    return any(_indexed_cuda(call) for call in method_calls(facts, "cuda"))


def _indexed_cuda(call: ast.Call) -> bool:
    return not unpacks(call) and bool(positional(call) or any(keyword(call, name) is not None for name in CUDA_DEVICE_KEYWORDS))


def cuda_call_in_tree(facts: Facts, tree: ast.Module) -> bool:
    # As `cuda_call`, less what DEV101 certainly leaves alone: a call that runs only where CUDA
    # is known to be in use (`quiet_where_cuda_is_known`, devlint.gate.cuda_only), and
    # `self.cuda()` / `super().cuda()` in a method called `cuda` (`delegates_to_own_method`).
    paths = Paths(tree)
    return any(
        not _indexed_cuda(call) and not unpacks(call) and not _cuda_call_exempt(paths, call, forwarding=False)
        for call in method_calls(facts, "cuda")
    )


def cuda_call_with_index_in_tree(facts: Facts, tree: ast.Module) -> bool:
    # As `cuda_call_with_index`, less what DEV102 certainly leaves alone: as for DEV101, and a
    # method called `cuda` passing its own parameter on (`forwards_own_parameter`:
    # `def cuda(self, device=None): return self._apply(lambda t: t.cuda(device))`).
    paths = Paths(tree)
    return any(
        _indexed_cuda(call) and not _cuda_call_exempt(paths, call, forwarding=True)
        for call in method_calls(facts, "cuda")
    )


def _cuda_call_exempt(paths: Paths, call: ast.Call, forwarding: bool) -> bool:
    path = paths.to(call)
    if path is None:
        return False
    if only_on_cuda(paths, call, path):
        return True
    # The model's scopes are the functions, lambdas, classes and comprehensions around the
    # call; a function's decorators and defaults count as inside it (devlint.analysis.tracker).
    method = next((node for node in reversed(path) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "cuda"), None)
    if method is None:
        return False
    receiver = call.func.value  # type: ignore[attr-defined]
    if (type(receiver) is ast.Name and receiver.id == "self") or (
        type(receiver) is ast.Call and type(receiver.func) is ast.Name and receiver.func.id == "super"
    ):
        return True
    if not forwarding:
        return False
    given = (positional(call) or [keyword(call, name) for name in CUDA_DEVICE_KEYWORDS if keyword(call, name) is not None])[0]
    params = {arg.arg for arg in (*method.args.posonlyargs, *method.args.args)}
    return type(given) is ast.Name and given.id in params


def hardcoded_device_string(facts: Facts) -> bool:
    return _hardcoded_device_string(facts, _never)


def hardcoded_device_string_in_tree(facts: Facts, tree: ast.Module) -> bool:
    # As `hardcoded_device_string`, less the `torch.device("cuda...")` calls `_exempt` certainly
    # leaves alone: the CUDA side of a choice on `torch.cuda.is_available()` (or
    # `device_count()`), alone or in a list, tuple, set or dict of devices
    # (`_in_guarded_choice`), where `torch` certainly is torch (devlint.gate.torch_name).
    # Nor a call that runs only where CUDA is known to be in use (`quiet_where_cuda_is_known`,
    # devlint.gate.cuda_only): what DEV103 reports of a call stands in it, an argument.
    torch, paths = TorchName(tree, facts), Paths(tree)
    return _hardcoded_device_string(facts, lambda call: _device_call_exempt(paths, torch, call))


def _never(call: ast.Call) -> bool:
    return False


def _device_call_exempt(paths: Paths, torch: TorchName, call: ast.Call) -> bool:
    path = paths.to(call)
    return path is not None and (only_on_cuda(paths, call, path) or _guarded_device_call(path, torch, call))


def _guarded_device_call(path: list[ast.AST], torch: TorchName, call: ast.Call) -> bool:
    func = call.func
    if not (type(func) is ast.Attribute and func.attr == "device" and type(func.value) is ast.Name and func.value.id == "torch"):
        return False
    if not torch.certain_above(call.lineno):
        return False
    child: ast.AST = call
    for parent in reversed(path):
        if type(parent) is ast.IfExp:
            test = parent.test
            return child is parent.body and (cuda_query(test, "is_available") or cuda_query(test, "device_count"))
        if type(parent) not in _DEVICE_CONTAINERS:
            return False
        child = parent
    return False


def _reports_in_call(facts: Facts, call: ast.Call) -> bool:
    """DEV103 may report ``call``, or a CUDA literal given to it."""
    # Every case below needs a CUDA literal among the arguments: most calls have none.
    if not any(is_cuda_literal(value) for value in [*call.args, *(given.value for given in call.keywords)]):
        return False
    if not from_torch(facts, call.func):
        return True
    plain = positional(call)
    if plain and is_cuda_literal(plain[0]):
        func = call.func
        if (type(func) is ast.Attribute and func.attr == "to") or any(
            may_be(facts, func, name) for name in POSITIONAL_DEVICE_FUNCTIONS
        ):
            return True
    kind = keyword(call, "type")
    if kind is not None and is_cuda_literal(kind) and may_be(facts, call.func, "torch.device"):
        return True
    for name in DEVICE_KEYWORDS:
        value = keyword(call, name)
        if value is not None and is_cuda_literal(value) and (
            (type(call.func) is ast.Attribute and call.func.attr in DEVICE_METHODS) or from_torch(facts, call.func)
        ):
            return True
    return False


# What `_in_guarded_choice` climbs through (LibCST's `Element`s and `DictElement`s are no nodes here).
_DEVICE_CONTAINERS = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Starred)


def _hardcoded_device_string(facts: Facts, exempt: Callable[[ast.Call], bool]) -> bool:
    # Every DEV103 finding is a CUDA literal (`cuda_literal`) standing
    # - as the first positional of `torch.device`, `torch.set_default_device`,
    #   `torch.Generator` or `x.to`, or as `type=` of `torch.device` (`_device_call`,
    #   `_string_argument`);
    # - as `device=` / `map_location=` of a call that is a torch call or a device method;
    # - as the default of a parameter named like a device or annotated `torch.device`
    #   (`visit_Param`);
    # - as the value of an assignment to a name (or `self.x`) the file uses as a device (`finish`):
    #   the first positional of a call, or the value of `device=`, `map_location=` or `type=`
    #   (`_note_use`);
    # - as the default of any parameter of the file's own functions, or an argument of a call
    #   that is not torch's, whose parameter reaches a device sink (devlint.analysis.device_params):
    #   here any parameter default, and any argument of a callee not imported from torch.
    if not any(value == "cuda" or value.startswith("cuda:") for value in facts.strings):
        return False
    if any(is_cuda_literal(default) for _, default in facts.defaults):
        return True
    calls = facts.all_calls()
    for call in calls:
        if _reports_in_call(facts, call) and not exempt(call):
            return True
    for call in method_calls(facts, "add_argument"):
        # `parser.add_argument("--device", default="cuda")` (`_device_option`)
        default = keyword(call, "default")
        if default is not None and is_cuda_literal(default):
            return True
    variables = {
        _variable_name(targets[0])
        for targets, value in facts.assignments
        if len(targets) == 1 and _variable_name(targets[0]) is not None and is_cuda_literal(value)
    }
    return bool(variables) and any(name in variables for name in _device_uses(calls))


def _variable_name(node: ast.expr) -> str | None:
    """``device`` or ``self.device``: what `_variable` reports."""
    if type(node) is ast.Name:
        return node.id
    if type(node) is ast.Attribute and type(node.value) is ast.Name and node.value.id == "self":
        return f"self.{node.attr}"
    return None


def _device_uses(calls: list[ast.Call]) -> Iterator[str]:
    for call in calls:
        plain = positional(call)
        used = [plain[0]] if plain else []
        used += [k.value for k in call.keywords if k.arg in (*DEVICE_KEYWORDS, "type")]
        yield from filter(None, map(_variable_name, used))


def legacy_cuda_tensor_type(facts: Facts) -> bool:
    # DEV104 reports names and calls whose qualified name (through imports and value aliases) is
    # `torch.cuda.<Type>Tensor`, and `.type("torch.cuda.<Type>Tensor")`. Such a name is an import
    # of the type itself, or an attribute `<Type>Tensor` of something that may be `torch.cuda`: an
    # attribute `cuda`, a name imported as `torch.cuda` or a value alias, or a
    # conditional expression (whose both sides count).
    types = {f"torch.cuda.{name}" for name in LEGACY_TENSOR_TYPES}
    if types & facts.strings or any(types & bound for bound in facts.imports.values()):
        return True
    if "torch" not in facts.import_roots() or not mentions(facts, "cuda"):
        return False
    aliases = _value_aliases(facts)
    for name in LEGACY_TENSOR_TYPES:
        for attribute in facts.attributes.get(name, ()):
            base = attribute.value
            if type(base) is ast.Attribute and base.attr == "cuda" or type(base) is ast.IfExp:
                return True
            if type(base) is ast.Name and (base.id in aliases or "torch.cuda" in facts.imports.get(base.id, ())):
                return True
    return False


def _value_aliases(facts: Facts) -> set[str]:
    """Names that may be value aliases (``SemanticModel.record_assignment``): names assigned a
    name, an attribute or a conditional expression, the only values with qualified names."""
    return {
        target.id
        for targets, value in facts.assignments
        if type(value) in (ast.Name, ast.Attribute, ast.IfExp)
        for target in targets
        if type(target) is ast.Name
    }


def set_default_tensor_type(facts: Facts) -> bool:
    # DEV105 reports calls whose callee's qualified name is `torch.set_default_tensor_type`.
    return next(calls_to(facts, "torch.set_default_tensor_type"), None) is not None


def visible_devices_in_code(facts: Facts) -> bool:
    # DEV201 reports an assignment (`=` or augmented) to a subscript by the string literal
    # CUDA_VISIBLE_DEVICES, `os.putenv` given it first, and `x.update(...)` given it as a keyword
    # or as a key of a dict literal.
    if VISIBLE_DEVICES not in facts.strings and VISIBLE_DEVICES not in facts.keywords:
        return False
    for targets, _ in facts.assignments:
        if any(type(target) is ast.Subscript and _is_visible_devices(target.slice) for target in targets):
            return True
    for call in calls_to(facts, "os.putenv"):
        plain = positional(call)
        if plain and _is_visible_devices(plain[0]):
            return True
    for call in method_calls(facts, "update"):
        if keyword(call, VISIBLE_DEVICES) is not None:
            return True
        for value in positional(call):
            if type(value) is ast.Dict and any(key is not None and _is_visible_devices(key) for key in value.keys):
                return True
    return False


def _is_visible_devices(node: ast.AST) -> bool:
    return type(node) is ast.Constant and node.value == VISIBLE_DEVICES


def hardcoded_device_selection(facts: Facts) -> bool:
    # DEV202 reports calls of `torch.cuda.set_device` and `with` items calling `torch.cuda.device`
    # (both resolved through imports only).
    if next(calls_to(facts, "torch.cuda.set_device"), None) is not None:
        return True
    return any(may_be(facts, call.func, "torch.cuda.device") for call in facts.with_calls)


def _batches(facts: Facts) -> bool:
    """Some value may be a DataLoader batch moved to the device (devlint.rulekit.value_flow): a batch comes
    from a loop or `next(iter(...))` over a loader (`Flow._loop_items`, `Flow._call_value`),
    and a move is `.to`/`.cuda`."""
    if not moves(facts):
        return False
    named = _loader_names(facts)
    sources = list(facts.iterables)
    for call in facts.calls.get("next", ()):
        if type(call.func) is ast.Name:
            inner = [arg for arg in _arguments(call) if type(arg) is ast.Call and _last_name(arg.func) == "iter"]
            sources += [arg for call in inner for arg in _arguments(call)]
    return any(_may_be_loader(source, named) for source in sources)


def _arguments(call: ast.Call) -> list[ast.expr]:
    """Every argument's value (LibCST's first argument may be a keyword: all of them count)."""
    return [arg.value if type(arg) is ast.Starred else arg for arg in call.args] + [k.value for k in call.keywords]


def _may_be_loader(expr: ast.expr, named: set[str]) -> bool:
    """``Flow.loader`` may take ``expr``, past the wrappers a loop looks through, for a loader: a
    `DataLoader(...)` call, a name or attribute ending in `loader`/`Loader`, or a name that may
    hold a loader fact (``named``)."""
    pending = [expr]
    while pending:
        expr = pending.pop()
        if type(expr) is ast.Call:
            last = _last_name(expr.func)
            if last in LOOP_WRAPPERS and _arguments(expr):
                pending += _arguments(expr)
            elif last == "DataLoader":
                return True
            continue
        last = _last_name(expr)
        if last is not None and (last.endswith(("loader", "Loader")) or (type(expr) is ast.Name and last in named)):
            return True
    return False


def _loader_names(facts: Facts) -> set[str]:
    """Names that may be bound to a loader: targets of an assignment whose value is (or unpacks
    to) a `DataLoader(...)` call or another name (`Flow.bind` passes facts on through both)."""
    named: set[str] = set()
    for targets, value in facts.assignments:
        if any(
            type(node) is ast.Name or (type(node) is ast.Call and _last_name(node.func) == "DataLoader")
            for node in _elements(value)
        ):
            named.update(node.id for target in targets for node in ast.walk(target) if type(node) is ast.Name)
    return named


def _elements(value: ast.expr) -> list[ast.expr]:
    """``value`` and, for a tuple or list display, its elements at any depth."""
    found = [value]
    for node in found:
        if type(node) in (ast.Tuple, ast.List):
            found += node.elts
    return found


def _last_name(expr: ast.expr) -> str | None:
    """The last part of a dotted name, None for anything else (``devlint.rulekit.value_flow.last_name``)."""
    if type(expr) is ast.Name:
        return expr.id
    if type(expr) is not ast.Attribute:
        return None
    root = expr.value
    while type(root) is ast.Attribute:
        root = root.value
    return expr.attr if type(root) is ast.Name else None


def blocking_host_to_device_copy(facts: Facts) -> bool:
    # DEV301 reports moves of batches (`Flow.batch_move`).
    return _batches(facts)


def loader_without_pin_memory(facts: Facts) -> bool:
    # DEV302 reports DataLoader calls (resolved through imports) without `pin_memory`, nothing
    # unpacked and at most seven positionals, whose batches are moved; and, beside such a loader or
    # one pinning by a check (`pin_memory=torch.cuda.is_available()`), those given `pin_memory=True`.
    loaders = list(calls_to_any(facts, DATALOADERS))
    unpinned = _batches(facts) and any(
        keyword(call, "pin_memory") is None and not unpacks(call) and len(positional(call)) <= PIN_MEMORY_POSITION
        for call in loaders
    )
    return unpinned or (any(_pins_always(call) for call in loaders) and any(_pins_by_check(call) for call in loaders))


def _pin_memory(call: ast.Call) -> ast.expr | None:
    given = keyword(call, "pin_memory")
    plain = positional(call)
    return given if given is not None else plain[PIN_MEMORY_POSITION] if len(plain) > PIN_MEMORY_POSITION else None


def _pins_always(call: ast.Call) -> bool:
    given = _pin_memory(call)
    return type(given) is ast.Constant and given.value is True


def _pins_by_check(call: ast.Call) -> bool:
    given = _pin_memory(call)
    return type(given) is ast.Call and type(given.func) is ast.Attribute and given.func.attr == "is_available"


def non_blocking_device_to_host(facts: Facts) -> bool:
    # DEV303 reports host reads of a pending copy; a value is pending only as the result of
    # `x.cpu(...)`, or of `x.to(...)` whose target may be the host (`Flow.move_target`),
    # given `non_blocking=True` (`Flow._call_value`).
    assigned: set[str] | None = None
    for name in ("to", "cpu"):
        for call in method_calls(facts, name):
            flag = keyword(call, "non_blocking")
            if not (type(flag) is ast.Constant and flag.value is True):
                continue
            if name == "cpu":
                return True
            if assigned is None:
                assigned = {target.id for targets, _ in facts.assignments for target in targets if type(target) is ast.Name}
            if not _never_the_host(call, assigned):
                return True
    return False


def _never_the_host(call: ast.Call, assigned: set[str]) -> bool:
    """``x.to(target, ...)`` whose target `Flow.device_kind` never reads as the host: a string
    naming no host device, a `.device`, a name never assigned a value (read by its name, its
    annotation or as a dtype, none of them the host); a cast (`dtype=` alone) or nothing."""
    target = keyword(call, "device")
    if target is None:
        plain = positional(call)
        if unpacks(call):
            return False
        if not plain:
            return True
        target = plain[0]
    if type(target) is ast.Constant:
        return type(target.value) is str and not target.value.startswith(("cpu", "meta"))
    if type(target) is ast.Attribute:
        return target.attr == "device"
    return type(target) is ast.Name and target.id not in assigned


def numpy_on_device_tensor(facts: Facts) -> bool:
    # DEV304 reports `x.numpy()` without `force=`, and calls that may be one of NUMPY_HOST_COPIES,
    # on a value on the device; a value is on the device only through a `.to`/`.cuda` move or a
    # call given `device=` (devlint.rulekit.value_flow).
    if not (moves(facts) or "device" in facts.keywords):
        return False
    calls = (call for call in method_calls(facts, "numpy") if keyword(call, "force") is None)
    if next(calls, None) is not None:
        return True
    return next(calls_to_any(facts, NUMPY_HOST_COPIES), None) is not None


def numpy_on_device_tensor_in_tree(facts: Facts, tree: ast.Module) -> bool:
    # DEV304 reports only where its flow finds the value on the device: `.numpy()`'s receiver,
    # or the name or call a numpy copy is given first (`_numpy_copy` reads no other shape).
    # Values that flow can never place there (devlint.gate.host_values) are left out; a name
    # a function binds before the read (a parameter, an assignment above it in its own body) is
    # read from that function's code alone, where the flow looks it up. (`numpy_on_device_tensor`
    # with the exemption: asked instead of it where the tree is read.)
    if not (moves(facts) or "device" in facts.keywords):
        return False
    host, paths = HostValues(facts), Paths(tree)
    functions: dict[int, _LocalNames] = {}
    for call in method_calls(facts, "numpy"):
        if keyword(call, "force") is None and not _on_host(host, functions, paths, call, call.func.value):  # type: ignore[attr-defined]
            return True
    for call in calls_to_any(facts, NUMPY_HOST_COPIES):
        plain = positional(call)
        if unpacks(call) or (plain and type(plain[0]) in (ast.Name, ast.Call) and not _on_host(host, functions, paths, call, plain[0])):
            return True
    return False


def _on_host(host: HostValues, functions: dict[int, _LocalNames], paths: Paths, call: ast.Call, value: ast.expr) -> bool:
    if host.on_host(value):
        return True
    if type(value) is not ast.Name:
        return False
    function = _running_in(paths.to(call), call)
    if function is None:
        return False
    if id(function) not in functions:
        functions[id(function)] = _LocalNames(function)
    local = functions[id(function)]
    return local.bound_above(value.id, call.lineno) and host.name_on_host(value.id, local.bindings)


def _running_in(path: list[ast.AST] | None, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | None:
    """The innermost function (or lambda) whose body holds ``node``, found on its ``path``; None
    where that is none, or where ``node`` stands in a decorator, default or annotation of it
    (run around the function, not in it)."""
    below = node
    for parent in reversed(path or ()):
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return parent if any(statement is below for statement in parent.body) else None
        if isinstance(parent, ast.Lambda):
            return parent if parent.body is below else None
        below = parent
    return None


class _LocalNames:
    """Where one function (or lambda) binds names itself, read once: its parameters, the last
    line of the first assignment of each name among its own statements (not a nested
    function's or class's), the names it declares global or nonlocal, and what its code may
    bind each name to (devlint.gate.host_values.Bindings)."""

    def __init__(self, function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        arguments = function.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
        self.params = {arg.arg for arg in every if arg is not None}
        self.first: dict[str, int] = {}
        self.elsewhere: set[str] = set()
        self.bindings = Bindings(collect(function))
        pending: list[ast.AST] = [] if isinstance(function, ast.Lambda) else list(function.body)
        while pending:
            statement = pending.pop()
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(statement, (ast.Global, ast.Nonlocal)):
                self.elsewhere.update(statement.names)
            for name, end in _assigned_names(statement):
                self.first[name] = min(end, self.first.get(name, end))
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                pending += [child for child in getattr(statement, field, ()) if isinstance(child, (ast.stmt, ast.ExceptHandler, ast.match_case))]

    def bound_above(self, name: str, line: int) -> bool:
        """The flow finds ``name`` bound in this function when it reads it on ``line``: a
        parameter, or assigned on a line above (a name declared global or nonlocal is bound in
        another scope, where the flow may find it)."""
        if name in self.elsewhere:
            return False
        return name in self.params or self.first.get(name, line) < line


def _assigned_names(statement: ast.AST) -> list[tuple[str, int]]:
    """The names ``name = ...`` (or ``name: T = ...``) binds, with the statement's last line."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets = [statement.target]
    else:
        return []
    end = statement.end_lineno or statement.lineno
    return [(target.id, end) for target in targets if type(target) is ast.Name]


def loss_not_on_device(facts: Facts) -> bool:
    # DEV401 reports, only in a file with a `.to`/`.cuda` move, a call given some argument whose
    # qualified name (value aliases included) is `torch.nn.<a loss with tensor arguments>` and
    # which is the value of an assignment (`_bound_name`). Its callee is an attribute named after
    # the loss, or a name: imported as the loss or a value alias.
    if not ("torch" in facts.import_roots() and mentions(facts, "nn") and moves(facts)):
        return False
    if not any(mentions(facts, name) for name in LOSS_TENSOR_ARGUMENTS):
        return False
    aliases = _value_aliases(facts)
    for _, value in facts.assignments:
        if type(value) is not ast.Call or not (value.args or value.keywords):
            continue
        func = value.func
        if type(func) is ast.Attribute and func.attr in LOSS_TENSOR_ARGUMENTS:
            return True
        if type(func) is ast.Name and (
            func.id in aliases or any(bound.rsplit(".", 1)[-1] in LOSS_TENSOR_ARGUMENTS for bound in facts.imports.get(func.id, ()))
        ):
            return True
    return False


def load_without_map_location(facts: Facts) -> bool:
    # DEV402 reports calls of `torch.load` (resolved through imports) without `map_location=`,
    # with fewer than two positionals and nothing unpacked.
    return any(
        keyword(call, "map_location") is None and len(positional(call)) < 2 and not unpacks(call)
        for call in calls_to(facts, "torch.load")
    )


def data_parallel(facts: Facts) -> bool:
    # DEV403 reports calls of DataParallel (resolved through imports) and imports of it from
    # torch.nn, torch.nn.parallel or torch.nn.parallel.data_parallel.
    if any(name in bound for bound in facts.imports.values() for name in DATA_PARALLEL):
        return True
    return next(calls_to_any(facts, DATA_PARALLEL), None) is not None


def deprecated_cuda_amp(facts: Facts) -> bool:
    # DEV501 reports calls (decorators and `with` items included) of torch.cuda.amp's autocast
    # and GradScaler, resolved through imports.
    return next(calls_to_any(facts, DEPRECATED_AMP), None) is not None


def _cuda_functions(facts: Facts, names: frozenset[str]) -> bool:
    """Some call of `torch.cuda.X` (through any import) for X in ``names``, calls in `with` items
    included (devlint.rulekit.accelerator.cuda_function resolves through imports only)."""
    return next(_cuda_function_calls(facts, names), None) is not None


def _cuda_function_calls(facts: Facts, names: frozenset[str]) -> Iterator[tuple[str, ast.Call]]:
    """The calls ``_cuda_functions`` looks for, each with the X it may call."""
    holders: set[str] | None = None
    for name in names:
        for prefix in CUDA_SUBMODULES:
            for call in calls_to(facts, prefix + name):
                yield name, call
        # `torch.get_device_module("cuda").X(...)`, `torch.get_device_module(torch.device("cuda")).X(...)`,
        # and `m.X(...)` where some assignment binds `m` to torch.cuda or that module
        for call in method_calls(facts, name):
            owner = call.func.value  # type: ignore[attr-defined]
            if type(owner) is ast.Call and _cuda_device_module(facts, owner):
                yield name, call
            elif type(owner) is ast.Name:
                holders = _cuda_module_holders(facts) if holders is None else holders
                if owner.id in holders:
                    yield name, call


def _cuda_module_holders(facts: Facts) -> set[str]:
    """Names some assignment binds to ``torch.cuda`` (or a submodule) or to the module
    ``torch.get_device_module("cuda")`` returns (devlint.rulekit.accelerator.holds_cuda_module)."""
    return {
        target.id
        for targets, value in facts.assignments
        if (type(value) is ast.Call and _cuda_device_module(facts, value))
        or any(may_be(facts, value, prefix[:-1]) for prefix in CUDA_SUBMODULES)
        for target in targets
        if type(target) is ast.Name
    }


def _cuda_device_module(facts: Facts, call: ast.Call) -> bool:
    """What devlint.analysis.devices.cuda_device_module accepts (and more)."""
    if not may_be(facts, call.func, DEVICE_MODULE) or len(call.args) + len(call.keywords) != 1:
        return False
    given = call.args[0] if call.args else call.keywords[0].value
    if type(given) is ast.Call and given.args:
        given = given.args[0]
    return is_cuda_literal(given)


def cuda_runtime_api(facts: Facts) -> bool:
    # DEV601 reports calls of torch.cuda's runtime functions (CUDA_RUNTIME_API), and `with` items
    # calling `torch.cuda.device` (which `calls_to` finds among all calls, with items included);
    # and (issue 22 item 7) calls of its seeding functions, device queries and `ipc_collect`.
    return _cuda_functions(facts, _RUNTIME_API)


_RUNTIME_API = CUDA_RUNTIME_API | CUDA_SEED_API | CUDA_ONLY_CALLS | {"device"}


def cuda_runtime_api_unguarded(facts: Facts, tree: ast.Module, torch_version: TorchVersion) -> bool:
    # DEV601 where the project's torch-version is known (rules/cuda_runtime_api.py). Below
    # torch.accelerator's first release (devlint.rulekit.accelerator.ACCELERATOR) it reports no
    # call under a GPU check (`runs_without_cuda_before_accelerator`), and never `device_count`,
    # `set_device` or `with torch.cuda.device` (unguarded, the last two are DEV202's); from that
    # release on, every call guarded or not, but a device query or `ipc_collect` (`_device_query`). Guards count
    # only where their shape says so (devlint.gate.guards).
    before = torch_version < SINCE["torch.accelerator.is_available"]
    torch, paths = TorchName(tree, facts), Paths(tree)
    for name, call in _cuda_function_calls(facts, _RUNTIME_API):
        if before and name in _NEVER_BEFORE_ACCELERATOR:
            continue
        if not before and name not in CUDA_ONLY_CALLS:
            return True
        if not certainly_guarded(paths, call, torch):
            return True
    return False


_NEVER_BEFORE_ACCELERATOR = CUDA_RUNS_WITHOUT_CUDA | {"set_device", "device"}


def cuda_memory_api(facts: Facts) -> bool:
    # DEV602 reports calls of torch.cuda's memory functions (CUDA_MEMORY_API), and a name that
    # resolves (through imports) to torch.cuda.OutOfMemoryError, whose last part is then an
    # attribute or a part of an import.
    if _cuda_functions(facts, CUDA_MEMORY_API):
        return True
    last = CUDA_OUT_OF_MEMORY.rpartition(".")[2]
    return "torch" in facts.import_roots() and mentions(facts, last)


def _backend_through_name(call: ast.Call) -> bool:
    """A name or ``module.NAME`` among the arguments: the backend may be a constant that another
    module of the project binds to "nccl" (which the text of this file need not hold)."""
    values = [*call.args, *(keyword.value for keyword in call.keywords)]
    return any(type(value) is ast.Name or type(value) is ast.Attribute for value in values)


def cuda_device_type(facts: Facts) -> bool:
    # DEV603 reports calls of autocast/GradScaler (resolved through imports) given "cuda" or, for
    # GradScaler, no device; and `device_type="cuda"` given to a call under torch's AMP modules.
    if next(calls_to_any(facts, AMP_DEVICE_TYPE), None) is not None:
        return True
    # ... a mesh of "cuda" devices or the "nccl" backend given to torch.distributed's calls
    # (resolved through imports) ...
    if "cuda" in facts.strings and next(calls_to_any(facts, MESH_DEVICE_TYPE), None) is not None:
        return True
    if any(CUDA_BACKEND in facts.strings or _backend_through_name(call) for call in calls_to_any(facts, PROCESS_GROUP_BACKEND)):
        return True
    # ... a `.device` compared with `torch.device("cuda")` (resolved through imports) ...
    if "device" in facts.attributes and any(
        len(call.args) == 1 and not call.keywords and type(call.args[0]) is ast.Constant and call.args[0].value == "cuda"
        for call in calls_to(facts, "torch.device")
    ):
        return True
    # ... "cuda" given to a name that may hold autocast or GradScaler through a value alias
    # (`scope = autocast if amp else nullcontext`; `scope("cuda")`) ...
    if "cuda" in facts.strings and (mentions(facts, "autocast") or mentions(facts, "GradScaler")):
        if any(name in facts.calls for name in _value_aliases(facts)):
            return True
    return any(
        (kind := keyword(call, "device_type")) is not None
        and type(kind) is ast.Constant
        and kind.value == "cuda"
        and any(name.startswith(AMP_MODULES) for name in _qualified(facts, call.func))
        for call in facts.all_calls()
    )


def _qualified(facts: Facts, func: ast.expr) -> set[str]:
    """What a callee may resolve to through imports (``SemanticModel.qualname``)."""
    suffix = ""
    while type(func) is ast.Attribute:
        suffix = f".{func.attr}{suffix}"
        func = func.value
    if type(func) is not ast.Name:
        return set()
    return {bound + suffix for bound in facts.imports.get(func.id, ())}


def cuda_availability_check(facts: Facts) -> bool:
    # DEV604 reports calls of `torch.cuda.is_available` (resolved through imports).
    return next(calls_to(facts, "torch.cuda.is_available"), None) is not None


def unknown_device_api(facts: Facts) -> bool:
    # DEV605 reports an attribute of a call to `get_device_module`; and an attribute, or a name
    # imported from torch.accelerator or torch.amp, whose qualified name (through imports) is
    # torch.accelerator.X, torch.amp.X, torch.Stream.X or torch.Event.X, X public, and X unknown
    # to that namespace or known only from some release on (`_check`: a name every release has
    # is never reported).
    if "get_device_module" in facts.calls:
        return True
    if "torch" not in facts.import_roots():
        return False
    if any(_unknown_device_api(name) for bound in facts.imports.values() for name in bound):
        return True
    return any(
        _unknown_device_api(f"{owner}.{attribute.attr}")
        for accesses in facts.attributes.values()
        for attribute in accesses
        for owner in _qualified(facts, attribute.value)
    )


def _unknown_device_api(qualified: str) -> bool:
    """``qualified`` is a public name of torch's device APIs that DEV605 may report."""
    namespace, _, name = qualified.rpartition(".")
    if not name or name.startswith("_"):
        return False
    if namespace in DEVICE_API_CLASSES:
        return name not in DEVICE_API_CLASSES[namespace]
    table = DEVICE_API_MODULES.get(namespace)
    return table is not None and (name not in table or table[name] is not None)


CONDITIONS: dict[str, Condition] = {
    "DEV101": cuda_call,
    "DEV102": cuda_call_with_index,
    "DEV103": hardcoded_device_string,
    "DEV104": legacy_cuda_tensor_type,
    "DEV105": set_default_tensor_type,
    "DEV201": visible_devices_in_code,
    "DEV202": hardcoded_device_selection,
    "DEV301": blocking_host_to_device_copy,
    "DEV302": loader_without_pin_memory,
    "DEV303": non_blocking_device_to_host,
    "DEV304": numpy_on_device_tensor,
    "DEV401": loss_not_on_device,
    "DEV402": load_without_map_location,
    "DEV403": data_parallel,
    "DEV501": deprecated_cuda_amp,
    "DEV601": cuda_runtime_api,
    "DEV602": cuda_memory_api,
    "DEV603": cuda_device_type,
    "DEV604": cuda_availability_check,
    "DEV605": unknown_device_api,
}

# A rule's condition with an exemption the tree makes certain, asked instead of the rule's
# condition where CPython's tree is read (each holds only where that condition holds).
TreeCondition = Callable[[Facts, ast.Module], bool]
WITH_THE_TREE: dict[str, TreeCondition] = {
    "DEV101": cuda_call_in_tree,
    "DEV102": cuda_call_with_index_in_tree,
    "DEV103": hardcoded_device_string_in_tree,
    "DEV304": numpy_on_device_tensor_in_tree,
}

# Conditions asked last, only where the project's torch-version is known: what a rule leaves
# alone depends on it (DEV601 reports no guarded call below torch.accelerator).
VersionedCondition = Callable[[Facts, ast.Module, TorchVersion], bool]
KNOWING_THE_VERSION: dict[str, VersionedCondition] = {
    "DEV601": cuda_runtime_api_unguarded,
}
