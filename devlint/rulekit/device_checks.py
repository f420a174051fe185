"""Whether code runs only where torch has a GPU: the guards around it (`if torch.cuda.is_available():`,
`if device.type == "cuda":`, `if device == "cuda":`, an early return when there is none, ...).

DEV202 leaves a GPU selection alone under such a guard; the DEV6 rules need no second guard there.
"""

from __future__ import annotations

import libcst as cst

from devlint.analysis.devices import is_cuda_string
from devlint.analysis.semantic import Scope, dotted_name, string_value
from devlint.analysis.tree import climbed
from devlint.rule import RuleContext
from devlint.rulekit.calls import keyword, positional

_EXITS = (cst.Return, cst.Raise, cst.Continue, cst.Break)
_EXIT_CALLS = ("sys.exit", "exit", "quit", "os._exit")


def _availability_call(ctx: RuleContext, node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.Call):
        return False
    qual = ctx.model.qualname(node.func) or ""
    return qual.startswith("torch.") and qual.endswith(".is_available")


def device_present_if(
    ctx: RuleContext, test: cst.BaseExpression, depth: int = 0, scope: Scope | None = None
) -> bool | None:
    """True: ``test`` holds only where torch has a GPU (``torch.cuda.is_available()``,
    ``torch.cuda.device_count() > 0``, ``device.type == "cuda"``, ``device == "cuda"``,
    ``x.is_cuda``, a name bound to one of those, an ``and`` with one); False: it fails wherever there is one
    (``not torch.cuda.is_available()``, ``device.type == "cpu"``); None: it tells nothing.
    A name is looked up from ``scope``, the test's own (default: the scope the walk is in)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = device_present_if(ctx, test.expression, depth, scope)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        sides = [device_present_if(ctx, test.left, depth, scope), device_present_if(ctx, test.right, depth, scope)]
        if isinstance(test.operator, cst.And):
            return True if True in sides else None
        return False if False in sides else (True if sides == [True, True] else None)
    if _availability_call(ctx, test):
        return True
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        return True
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        return _comparison(ctx, test.left, test.comparisons[0])
    if isinstance(test, cst.Name) and depth == 0:
        # `use_cuda = torch.cuda.is_available()` ... `if use_cuda:`
        for _, binding in ctx.model.lookup(test.value, scope or ctx.model.scope):
            if binding.order < ctx.tracker.order and binding.kind == "assign" and binding.value is not None:
                return device_present_if(ctx, binding.value, depth + 1, scope)
            return None
    return None


def _comparison(ctx: RuleContext, left: cst.BaseExpression, target: cst.ComparisonTarget) -> bool | None:
    operator, right = target.operator, target.comparator
    if isinstance(left, cst.Call) and (ctx.model.qualname(left.func) or "").endswith(".device_count"):
        bound = right.value if isinstance(right, cst.Integer) else None
        if isinstance(operator, cst.GreaterThan) and bound is not None:
            return True
        if isinstance(operator, cst.GreaterThanEqual) and bound not in (None, "0"):
            return True
        return None
    if not isinstance(operator, (cst.Equal, cst.NotEqual)):
        return None
    equal = isinstance(operator, cst.Equal)
    if not (isinstance(left, cst.Attribute) and left.attr.value == "type"):
        return _names_cuda(left, right, equal)
    kind = string_value(right)
    if kind is None:
        return None
    if kind == "cuda":
        return equal
    if kind == "cpu":
        return not equal
    return None


def _names_cuda(left: cst.BaseExpression, right: cst.BaseExpression, equal: bool) -> bool | None:
    """``device == "cuda"`` (or ``"cuda:N"``, either side): the program's own device string says
    CUDA, as ``device.type == "cuda"`` does for a ``torch.device``. A ``torch.device`` never
    equals a string, so the block then never runs: no call in it runs without a GPU either way.
    Nothing is read from ``!= "cpu"`` here: for a ``torch.device`` it always holds."""
    sides = (string_value(left), string_value(right))
    if (sides[0] is None) == (sides[1] is None):
        return None
    return equal if is_cuda_string(sides[0] or sides[1]) else None


def exits(block: cst.BaseSuite) -> bool:
    """The block always leaves: it ends in return/raise/continue/break or ``sys.exit()``."""
    if isinstance(block, cst.SimpleStatementSuite):
        last = block.body[-1] if block.body else None
    else:
        statement = block.body[-1] if block.body else None
        last = statement.body[-1] if isinstance(statement, cst.SimpleStatementLine) and statement.body else None
    if isinstance(last, _EXITS):
        return True
    return isinstance(last, cst.Expr) and isinstance(last.value, cst.Call) and dotted_name(last.value.func) in _EXIT_CALLS


def under_device_check(ctx: RuleContext, node: cst.CSTNode) -> bool:
    """``node`` runs only where torch has a GPU: in the body of ``if <check>:``, the ``else`` of
    ``if <no GPU>:``, either side of the matching conditional expression, right of ``<check> and``
    or ``<no GPU> or``, or after an
    ``assert <check>`` / ``if <no GPU>: return`` (raise, ``sys.exit()``) earlier in the same block.

    The guards above a node are found by one climb for the whole file (devlint.analysis.tree.
    climbed): a test is read once, however many findings lie under it (an ``elif`` chain). A test
    that is a name (``if use_cuda:``) is read at each question, as the name's binding before the
    walk's position says."""
    if ctx.parent(node) is None and node is not ctx.module:
        # Not reached by the walk yet: nothing is known above it, and nothing is kept, so that
        # asking again once the walk has passed it finds its guards.
        return False
    known: dict[int, _Guards] = ctx.indexed("device checks above", dict)
    found, named = climbed(node, ctx.parent, known, lambda ancestor, child, above: _guards(ctx, ancestor, child, above), (False, ()))
    return found or any(device_present_if(ctx, test) == holds for test, holds in named)


# Whether some guard between a node and its function is a GPU check, and the tests that are
# names (with the answer that makes them one), read when asked.
_Guards = tuple[bool, tuple[tuple[cst.BaseExpression, bool], ...]]


def _guards(ctx: RuleContext, ancestor: cst.CSTNode, child: cst.CSTNode, above: _Guards) -> _Guards:
    if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        return False, ()
    test: cst.BaseExpression | None = None
    if isinstance(ancestor, (cst.If, cst.IfExp)) and child is not ancestor.test:
        # the body runs where the test holds; `else`/`elif` where it fails
        test, holds = ancestor.test, child is ancestor.body
    elif isinstance(ancestor, cst.BooleanOperation) and child is ancestor.right:
        # `<check> and x` evaluates x only where the check holds; `<no GPU> or x` where it fails
        test, holds = ancestor.left, isinstance(ancestor.operator, cst.And)
    found, named = above
    if test is not None:
        if _reads_a_name(test):
            named = ((test, holds), *named)
        elif device_present_if(ctx, test) == holds:
            found = True
    if isinstance(ancestor, (cst.IndentedBlock, cst.Module)) and _checked_earlier(ctx, ancestor, child):
        found = True
    return found, named


def _reads_a_name(test: cst.BaseExpression) -> bool:
    """``device_present_if`` looks ``test`` (or a side of its ``not``/``and``/``or``) up as a name."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _reads_a_name(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return _reads_a_name(test.left) or _reads_a_name(test.right)
    return isinstance(test, cst.Name)


def _checked_earlier(ctx: RuleContext, block: cst.IndentedBlock | cst.Module, statement: cst.CSTNode) -> bool:
    first, places = ctx.indexed(("first device check", id(block)), lambda: _first_check(ctx, block))
    return first < places.get(id(statement), -1)


def _first_check(ctx: RuleContext, block: cst.IndentedBlock | cst.Module) -> tuple[int, dict[int, int]]:
    """Where in ``block`` the first statement stands after which a GPU is certain (``assert
    <check>``, ``if <no GPU>: return``), and where each statement stands: one pass over the
    block, however many of its statements ask. The first to ask may stand in a function inside
    the block: a name in a test is looked up from the block's own scope, not from the asker's."""
    places = {id(statement): i for i, statement in enumerate(block.body)}
    scope = _scope_of(ctx, block)
    for i, earlier in enumerate(block.body):
        if isinstance(earlier, cst.If) and device_present_if(ctx, earlier.test, scope=scope) is False and exits(earlier.body):
            return i, places
        if isinstance(earlier, cst.SimpleStatementLine):
            for small in earlier.body:
                if isinstance(small, cst.Assert) and device_present_if(ctx, small.test, scope=scope) is True:
                    return i, places
    return len(block.body), places


def _scope_of(ctx: RuleContext, block: cst.IndentedBlock | cst.Module) -> Scope:
    """The scope whose code ``block`` is: that of its function or class, or the module's, found
    among the scopes the walk is in."""
    owner = block if isinstance(block, cst.Module) else climbed(block, ctx.parent, ctx.indexed(("code owners",), dict), _owning, None)
    scope: Scope | None = ctx.model.scope
    while scope is not None:
        if scope.node is owner:
            return scope
        scope = scope.parent
    return ctx.model.scope


def _owning(parent: cst.CSTNode, child: cst.CSTNode, above: cst.CSTNode | None) -> cst.CSTNode | None:
    """The function, class or module whose code ``child`` is, from its parent's: one climb kept
    for the file, so a block deep in an ``elif`` chain costs no climb through every branch."""
    return parent if isinstance(parent, (cst.Module, cst.FunctionDef, cst.ClassDef)) else above


def hardcoded_gpu_index(ctx: RuleContext, node: cst.Call) -> bool:
    """The GPU is written into the code: an integer, a ``"cuda:N"`` string, ``torch.device("cuda", N)``."""
    given = keyword(node, "device")
    args = positional(node)
    value = given.value if given is not None else args[0].value if args else None
    if isinstance(value, cst.Integer):
        return True
    if isinstance(value, cst.UnaryOperation) and isinstance(value.expression, cst.Integer):
        return True
    text = string_value(value) if value is not None else None
    if text is not None:
        return text.startswith("cuda")
    if isinstance(value, cst.Call) and ctx.model.qualname(value.func) == "torch.device":
        return any(_literal(a.value) for a in value.args)
    return False


def _literal(value: cst.BaseExpression) -> bool:
    return isinstance(value, (cst.Integer, cst.SimpleString)) and (
        not isinstance(value, cst.SimpleString) or ":" in (string_value(value) or "")
    )
