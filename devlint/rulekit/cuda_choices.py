"""A fix must not leave the line it touches for a second migration: a call chosen by a CUDA check
in the same expression (`torch.cuda.Stream() if torch.cuda.is_available() else None`,
`torch.cuda.is_available() and torch.cuda.synchronize()`) is rewritten together with the check,
or not at all.

From torch-version 2.6 a check that is `torch.cuda.is_available()` (alone, negated, or `and`-ed
with tests that name no CUDA) becomes `torch.accelerator.is_available()`: on a CUDA machine both
are True and the accelerator is CUDA, so the rewritten call does what it did; without an
accelerator both are False and the call does not run, as before. A test that asks more of CUDA
(`device_count() > 0`, its capability, its version), or a choice whose other side still names
CUDA, has no fix: the finding is reported and says why.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import libcst as cst

from devlint.fixes import FixPlan, Replace
from devlint.rule import FixFactory, Rule, RuleContext, Site
from devlint.rulekit.accelerator import ACCELERATOR, AVAILABLE

_CHECK = "torch.cuda.is_available"
_NOTE = "; the test that chooses it asks CUDA as well"


@dataclass(frozen=True)
class _Choice:
    """The tests around a call, within its statement, that name CUDA."""

    owners: tuple[cst.CSTNode, ...]
    tests: tuple[cst.BaseExpression, ...]


def whole_choice(ctx: RuleContext, node: cst.CSTNode, fix: FixFactory | None) -> tuple[FixFactory | None, str]:
    """``fix`` for ``node``, with the CUDA checks of the expression that chooses it rewritten too;
    None and a note for the message where that cannot be exact. Unchanged where no such test is."""
    if fix is None:
        return None, ""
    choice = _choice(ctx, node)
    if choice is None:
        return fix, ""
    checks = [check for test in choice.tests for check in _checks(ctx, test)]
    exact = (
        ctx.settings.torch_version >= ACCELERATOR
        and checks
        and not any(_names_cuda(owner, [node, *checks]) for owner in choice.owners)
    )
    if not exact:
        return None, _NOTE

    def whole(site: Site) -> FixPlan | None:
        plan = fix(site)
        if plan is None:
            return None
        return replace(
            plan,
            message=plan.message + ", and the check that chooses it: `torch.accelerator.is_available()`",
            replacements=[*plan.replacements, *(Replace(check, AVAILABLE) for check in checks)],
            needs_torch=True,
            requires=max(plan.requires, ACCELERATOR),
        )

    return whole, ""


def _choice(ctx: RuleContext, node: cst.CSTNode) -> _Choice | None:
    """The conditional expressions and ``and``/``or`` around ``node`` whose test decides whether
    it runs and asks torch about CUDA, up to its statement."""
    owners: list[cst.CSTNode] = []
    tests: list[cst.BaseExpression] = []
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.Lambda)):
            break
        test: cst.BaseExpression | None = None
        if isinstance(ancestor, cst.IfExp) and child is not ancestor.test:
            test = ancestor.test
        elif isinstance(ancestor, cst.BooleanOperation) and child is ancestor.right:
            test = ancestor.left
        if test is not None and _asks_cuda(ctx, test):
            owners.append(ancestor)
            tests.append(test)
        child = ancestor
    return _Choice(tuple(owners), tuple(tests)) if tests else None


def _asks_cuda(ctx: RuleContext, test: cst.BaseExpression) -> bool:
    """``test`` asks torch about CUDA (``torch.cuda.is_available()``, ``torch.version.cuda``); a
    test of the program's own device (``device.type == "cuda"``) chooses a path, not a backend."""
    finder = _TorchCuda(ctx)
    test.visit(finder)
    return finder.found


class _TorchCuda(cst.CSTVisitor):
    def __init__(self, ctx: RuleContext) -> None:
        self.ctx = ctx
        self.found = False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        qual = self.ctx.model.qualname(node) or ""
        self.found = self.found or (qual.startswith("torch.") and "cuda" in qual.split("."))
        return not self.found

    def visit_Name(self, node: cst.Name) -> None:
        qual = self.ctx.model.qualname(node) or ""
        self.found = self.found or (qual.startswith("torch.") and "cuda" in qual.split("."))


def _checks(ctx: RuleContext, test: cst.BaseExpression) -> list[cst.Call]:
    """The ``torch.cuda.is_available()`` calls of ``test`` when nothing else in it names CUDA
    (alone, under ``not``, or ``and``/``or``-ed with other tests); else none."""
    calls = [part for part in _parts(test) if isinstance(part, cst.Call) and ctx.model.qualname(part.func) == _CHECK]
    if any(call.args for call in calls) or _names_cuda(test, calls):
        return []
    return calls


def _parts(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The operands of ``test``'s ``not``/``and``/``or``, ``test`` itself for anything else."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from _parts(test.expression)
    elif isinstance(test, cst.BooleanOperation):
        yield from _parts(test.left)
        yield from _parts(test.right)
    else:
        yield test


def _names_cuda(node: cst.CSTNode, leaving: list[cst.CSTNode]) -> bool:
    """Some part of ``node`` outside ``leaving`` names CUDA (a name, an attribute, a string)."""
    finder = _CudaNames(leaving)
    node.visit(finder)
    return finder.found


class _CudaNames(cst.CSTVisitor):
    def __init__(self, leaving: list[cst.CSTNode]) -> None:
        self.leaving = {id(node) for node in leaving}
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found or id(node) in self.leaving:
            return False
        if isinstance(node, cst.Name | cst.SimpleString | cst.FormattedStringText) and "cuda" in node.value.lower():
            self.found = True
        return True


class WholeChoiceRule(Rule):
    """A rule whose reports on a call chosen by a CUDA check in its own expression are fixed
    together with the check, or not at all (``whole_choice``)."""

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        fix: FixFactory | None = None,
        start: cst.CSTNode | None = None,
        lead: int = 0,
        site: Site | None = None,
    ) -> None:
        fix, note = whole_choice(self.ctx, node, fix)
        super().report(node, message + note, fix, start, lead, site)
