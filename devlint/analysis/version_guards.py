"""Code written for an older torch: branches that only run where torch is older than some version.

Projects that support several torch versions keep the old spelling in a fallback branch::

    if torch_version >= (2, 4):
        scaler = torch.amp.GradScaler("cuda")
    else:
        scaler = torch.cuda.amp.GradScaler()      # only runs on torch < 2.4

Rewriting the fallback to the new API breaks the very versions it exists for, and flagging it
is noise. A finding in such a branch is dropped when the branch cannot run on any torch the
project supports (`torch-version`), or when it runs only on versions older than the one the
rule's advice needs (``Rule.advice_since``: DEV501's `torch.amp` spelling is only the
recommended one from 2.4).

Recognised guards (``not``, ``and`` and ``or`` combine them):

- comparisons of something named like a version (``torch.__version__``, ``TORCH_VERSION``,
  ``version.parse(torch.__version__)``, ``tuple(map(int, torch.__version__.split(".")[:2]))``)
  with a version literal (``(2, 4)``, ``"2.4.0"``, ``version.parse("2.4")``, ``1.6``);
- flags and helpers that name a torch version in their identifier: ``_TORCH_GREATER_EQUAL_2_4``,
  ``is_torch_greater_or_equal("2.4")``, ``TORCH_LT_2_0``; a module-level name assigned once to
  one of these tests (``NEW_TORCH = TORCH_VERSION >= (2, 4)``);
- ``hasattr(torch..., "name")``: the other branch is for a torch without that API;
- ``except ImportError`` / ``AttributeError`` / ``ModuleNotFoundError`` handlers of a ``try``
  whose body uses torch: the fallback for a torch without what the ``try`` reaches for.

An unknown bound (the last two) counts as "older than every version": such a branch exists only
for a torch that lacks something.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import libcst as cst

from devlint.analysis.constants import ValueReader
from devlint.analysis.reader import FileReader
from devlint.analysis.semantic import dotted_name, string_value
from devlint.analysis.tree import climbed
from devlint.torchfacts.version import TorchVersion

_LITERAL_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)")
_VERSION_CALLS = ("parse", "Version", "LooseVersion", "StrictVersion", "parse_version", "version")
_FLAG = re.compile(
    r"torch\w*?(?P<op>greater_or_equal|greater_equal|greater_than|greater|at_?least|newer|ge|gte|gt"
    r"|less_than|less|lower|older|before|lt|le)_?(?:than_?)?v?(?P<major>\d+)(?:_(?P<minor>\d+))?$",
    re.IGNORECASE,
)
_FALLBACK_ERRORS = ("ImportError", "ModuleNotFoundError", "AttributeError")
_NEWER_OPS = {">=": "ge", ">": "gt"}
_OLDER_OPS = {"<": "lt", "<=": "le"}
_FLIPPED = {"ge": "le", "gt": "lt", "lt": "gt", "le": "ge"}


@dataclass(frozen=True)
class Older:
    """A branch that runs only where torch is older than ``bound`` (None: older than some unknown
    version, e.g. one without the API a ``hasattr`` asks for)."""

    bound: TorchVersion | None


# Tested against every ancestor of every finding: `type(...) in` (LibCST's classes are ABCs, a
# slow isinstance; these have no subclasses, tests/test_flow.py).
_BRANCHING = frozenset((cst.If, cst.IfExp))
# What a test says about each of its two branches (body, else): None means no constraint.
Branches = tuple[Older | None, Older | None]
_NONE: Branches = (None, None)


class OlderBranches:
    """The "older torch only" constraints on the branches enclosing nodes of one file."""

    def __init__(self, reader: FileReader) -> None:
        self.reader = reader
        # The constraints above each node asked about and above the nodes over it
        # (devlint.analysis.tree.climbed): one test is read once, however many findings it holds.
        self._known: dict[int, tuple[Older, ...]] = {}

    def of(self, node: cst.CSTNode) -> tuple[Older, ...]:
        """Every constraint on the branches enclosing ``node``, nearest first."""
        return climbed(node, self.reader.parent, self._known, self._step, ())

    def _step(self, ancestor: cst.CSTNode, child: cst.CSTNode, above: tuple[Older, ...]) -> tuple[Older, ...]:
        constraint = _branch_constraint(ancestor, child, self.reader)
        return above if constraint is None else (constraint, *above)


def runs_only_below(constraints: Iterable[Older], version: TorchVersion) -> bool:
    """True when one of ``constraints`` means the code never runs on torch ``version`` or newer."""
    return any(c.bound is None or c.bound <= version for c in constraints)


def _branch_constraint(ancestor: cst.CSTNode, child: cst.CSTNode, reader: FileReader) -> Older | None:
    if type(ancestor) in _BRANCHING:
        if child is ancestor.test:
            return None
        body, orelse = branches(ancestor.test, reader)
        return body if child is ancestor.body else orelse
    if isinstance(ancestor, cst.ExceptHandler) and child is ancestor.body and _catches_fallback(ancestor.type):
        attempt = reader.parent(ancestor)
        # Only the fallback of a `try` that reaches for torch: `except ImportError` around
        # `import apex` says nothing about torch's version.
        if isinstance(attempt, cst.Try) and "torch" in reader.code(attempt.body):
            return Older(None)
    return None


def _catches_fallback(kind: cst.BaseExpression | None) -> bool:
    if kind is None:
        return False
    if isinstance(kind, cst.Tuple):
        return any(_catches_fallback(element.value) for element in kind.elements)
    name = dotted_name(kind)
    return name is not None and name.split(".")[-1] in _FALLBACK_ERRORS


def branches(test: cst.BaseExpression, reader: ValueReader, depth: int = 2) -> Branches:
    """The constraints a test puts on its body and on its else branch."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        body, orelse = branches(test.expression, reader, depth)
        return orelse, body
    if isinstance(test, cst.BooleanOperation):
        left, right = branches(test.left, reader, depth), branches(test.right, reader, depth)
        if isinstance(test.operator, cst.And):
            # Both hold in the body; the else branch runs when either fails.
            return _tightest(left[0], right[0]), _loosest(left[1], right[1])
        return _loosest(left[0], right[0]), _tightest(left[1], right[1])
    if isinstance(test, cst.Comparison):
        return _comparison(test, reader)
    if isinstance(test, cst.Call):
        if _is_torch_hasattr(test, reader):
            return None, Older(None)
        return _named_flag(test, dotted_name(test.func), _first_string(test))
    if isinstance(test, (cst.Name, cst.Attribute)):
        named = _named_flag(test, dotted_name(test), None)
        if named != _NONE or depth <= 0:
            return named
        # `NEW_TORCH = TORCH_VERSION >= (2, 4)` ... `if NEW_TORCH:`, here or in a module the
        # file imports it from (read in that module: its own names are its own)
        found = reader.definition(test)
        return branches(found[1], found[0], depth - 1) if found is not None else _NONE
    return _NONE


def _tightest(a: Older | None, b: Older | None) -> Older | None:
    if a is None or b is None:
        return a or b
    if a.bound is None or b.bound is None:
        return Older(None)
    return Older(min(a.bound, b.bound))


def _loosest(a: Older | None, b: Older | None) -> Older | None:
    if a is None or b is None:
        return None
    if a.bound is None:
        return b
    if b.bound is None:
        return a
    return Older(max(a.bound, b.bound))


def _comparison(test: cst.Comparison, reader: ValueReader) -> Branches:
    if len(test.comparisons) != 1:
        return _NONE
    target = test.comparisons[0]
    operator = _operator(target.operator)
    if operator is None:
        return _NONE
    left, right = test.left, target.comparator
    literal = version_literal(right)
    subject = left
    if literal is None:
        literal, subject, operator = version_literal(left), right, _FLIPPED[operator]
    if literal is None or not _names_a_version(subject, reader):
        return _NONE
    return _constraints(operator, literal)


def _operator(node: cst.BaseCompOp) -> str | None:
    if isinstance(node, cst.GreaterThanEqual):
        return "ge"
    if isinstance(node, cst.GreaterThan):
        return "gt"
    if isinstance(node, cst.LessThan):
        return "lt"
    if isinstance(node, cst.LessThanEqual):
        return "le"
    return None


def _constraints(operator: str, version: TorchVersion) -> Branches:
    """``torch OP version``: which branch is for older torch. ``<= 2.3`` and the else of ``> 2.3``
    run on 2.3.x and older: below 2.4."""
    following = (version[0], version[1] + 1)
    if operator == "ge":
        return None, Older(version)
    if operator == "gt":
        return None, Older(following)
    if operator == "lt":
        return Older(version), None
    return Older(following), None


def version_literal(node: cst.BaseExpression) -> TorchVersion | None:
    """``(2, 4)``, ``"2.4.0"``, ``1.6``, ``version.parse("2.4")``, ``LooseVersion("1.6")``."""
    if isinstance(node, cst.Tuple) and node.elements:
        numbers = [element.value for element in node.elements]
        if all(isinstance(n, cst.Integer) for n in numbers):
            values = [int(n.value) for n in numbers]  # type: ignore[union-attr]
            return values[0], values[1] if len(values) > 1 else 0
        return None
    if isinstance(node, cst.Float):
        return _from_text(node.value)
    text = string_value(node)
    if text is not None:
        return _from_text(text)
    if isinstance(node, cst.Call) and len(node.args) == 1:
        name = dotted_name(node.func)
        if name is not None and name.split(".")[-1] in _VERSION_CALLS:
            inner = string_value(node.args[0].value)
            return _from_text(inner) if inner is not None else None
    return None


def _from_text(text: str) -> TorchVersion | None:
    match = _LITERAL_VERSION.match(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _names_a_version(node: cst.BaseExpression, reader: ValueReader, depth: int = 2) -> bool:
    """Something about torch's version: ``sys.version_info`` or ``args.version`` are not. A
    module constant derived from it counts too: ``TORCH = tuple(int(p) for p in
    torch.__version__.split("+")[0].split(".")[:2])``, ``V = version.parse(torch.__version__)``."""
    text = reader.code(node).lower()
    if "torch" in text and "ver" in text:
        return True
    if isinstance(node, (cst.Name, cst.Attribute)) and depth > 0:
        found = reader.definition(node)
        return found is not None and _names_a_version(found[1], found[0], depth - 1)
    if isinstance(node, cst.Call) and depth > 0:
        # `version.parse(TORCH_STR)`, `Version(TORCH)`
        return any(_names_a_version(argument.value, reader, depth) for argument in node.args)
    return False


def _named_flag(node: cst.CSTNode, name: str | None, argument: str | None) -> Branches:
    """``_TORCH_GREATER_EQUAL_2_4`` or ``is_torch_greater_or_equal("2.4")``: the name says which
    side of a torch version the body is on."""
    if name is None:
        return _NONE
    last = name.split(".")[-1]
    match = _FLAG.search(last + (f"_{argument.replace('.', '_')}" if argument else ""))
    if match is None:
        return _NONE
    version = (int(match.group("major")), int(match.group("minor") or 0))
    op = match.group("op").lower()
    if op.startswith(("greater", "at", "newer", "ge", "gt")):
        return _constraints("gt" if op in ("greater_than", "gt") else "ge", version)
    return _constraints("le" if op == "le" else "lt", version)


def _first_string(call: cst.Call) -> str | None:
    for argument in call.args:
        text = string_value(argument.value)
        if text is not None and _LITERAL_VERSION.match(text):
            return text
    return None


def _is_torch_hasattr(call: cst.Call, reader: ValueReader) -> bool:
    """``hasattr(torch, "accelerator")``, ``hasattr(torch.amp, "GradScaler")``."""
    if not (isinstance(call.func, cst.Name) and call.func.value == "hasattr" and len(call.args) == 2):
        return False
    owner = reader.qualname(call.args[0].value)
    return owner is not None and owner.split(".")[0] == "torch" and string_value(call.args[1].value) is not None
