"""Which rules must walk LibCST's tree of a text, decided without LibCST.

First the textual prefilter (devlint.gate.prefilter): the rules whose triggers the text holds. Then
CPython's parser, which every file pays anyway (a file the prefilter skips is still checked for
syntax errors), and the gate's conditions over its tree (devlint.gate). Neither imports LibCST.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol

from devlint.gate.decision import R, gated, passing
from devlint.gate.facts import Facts, collect
from devlint.gate.nesting import NestingProblem, nesting_problem, tree_within_default_depth
from devlint.gate.prefilter import matching_rules
from devlint.gate.syntax import cpython_tree
from devlint.torchfacts.version import TorchVersion


class Reading(Protocol):
    """How a text is read before LibCST parses it: CPython's tree, the gate's facts of that
    tree, and the nesting check. A caller that checks a document again and again may answer
    each from what it read of the last version (devlint.gate.incremental)."""

    def tree(self, text: str) -> ast.Module | None: ...

    def facts(self, tree: ast.Module) -> Facts: ...

    def nesting(self, text: str, tree: ast.Module | None) -> NestingProblem | None: ...


class FreshReading:
    """Reads every text from scratch."""

    def tree(self, text: str) -> ast.Module | None:
        return cpython_tree(text)

    def facts(self, tree: ast.Module) -> Facts:
        return collect(tree)

    def nesting(self, text: str, tree: ast.Module | None) -> NestingProblem | None:
        return nesting_problem(text)


FRESH = FreshReading()


class OneFileReading(FreshReading):
    """``FreshReading`` for the checks of one file: CPython reads each text within its default
    depth first (``tree_within_default_depth``), and a text it read so needs no second compile
    for the nesting check's verdict on long lines (torch's 1.3 MiB
    ``common_methods_invocations.py``: 0.4 s)."""

    def __init__(self) -> None:
        self._within: str | None = None

    def tree(self, text: str) -> ast.Module | None:
        tree, within = tree_within_default_depth(text)
        self._within = text if within else None
        return tree

    def nesting(self, text: str, tree: ast.Module | None) -> NestingProblem | None:
        return nesting_problem(text, within_default_depth=tree is not None and text is self._within)


@dataclass(frozen=True)
class Screened(Generic[R]):
    """``rules``: what ``screen`` answers; ``tree``: CPython's tree of the text, when it was read
    (the engine cuts a large file into sections along it instead of compiling it again);
    ``chained``: the gate's count of operations whose left operand is an operation (``Facts``),
    None when the gate did not read the tree (the engine looks for long chains only where it
    may find one)."""

    rules: list[R] | None
    tree: ast.Module | None = None
    chained: int | None = None


def screen(text: str, rules: Sequence[R], gate: bool = True, torch_version: TorchVersion | None = None) -> list[R] | None:
    """The rules of ``rules`` that may report on ``text``, in their order: empty when LibCST need
    not parse the file at all; None when CPython cannot read it, so that LibCST must decide
    (its syntax may be newer than this interpreter's, or the error is to be reported)."""
    return screened(text, rules, gate, torch_version=torch_version).rules


def screened(
    text: str, rules: Sequence[R], gate: bool = True, reading: Reading = FRESH, torch_version: TorchVersion | None = None
) -> Screened[R]:
    """``screen``'s answer, with the CPython tree it read to give it; ``torch_version``: the
    project's, where the caller knows it (the gate then asks what depends on it)."""
    candidates = matching_rules(text, rules)
    if candidates and not (gate and gated(candidates)):
        return Screened(candidates)
    tree = reading.tree(text)
    if tree is None:
        return Screened(None)
    if not candidates:
        return Screened([], tree)
    facts = reading.facts(tree)
    return Screened(passing(tree, candidates, facts, torch_version), tree, facts.chained)
