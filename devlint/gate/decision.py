"""Which rules pass the gate: each rule's condition over the facts of CPython's tree, then its
exemptions read from the tree, then what depends on the torch-version (devlint.gate says how a
condition is written)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

from devlint.gate.conditions import CONDITIONS, KNOWING_THE_VERSION, WITH_THE_TREE
from devlint.gate.facts import Facts, collect
from devlint.torchfacts.version import TorchVersion

if TYPE_CHECKING:
    from devlint.gate.catalog import Triggered

R = TypeVar("R", bound="Triggered")


def gated(rules: Sequence[R]) -> bool:
    """Some rule of ``rules`` has a condition: reading CPython's tree may rule it out."""
    return any(rule.code in CONDITIONS for rule in rules)


def passing(
    tree: ast.AST, rules: Sequence[R], facts: Facts | None = None, torch_version: TorchVersion | None = None
) -> list[R]:
    """The rules of ``rules`` that may report in the file of ``tree`` (in their order);
    ``facts``: the tree's, where the caller has them; ``torch_version``: the project's, where
    the caller knows it (then a condition of ``KNOWING_THE_VERSION`` is asked too)."""
    facts = collect(tree) if facts is None else facts
    return [rule for rule in rules if _passes(rule.code, tree, facts, torch_version)]


def _passes(code: str, tree: ast.AST, facts: Facts, torch_version: TorchVersion | None) -> bool:
    condition = CONDITIONS.get(code)
    if condition is None:
        return True
    with_the_tree = WITH_THE_TREE.get(code) if isinstance(tree, ast.Module) else None
    if not (condition(facts) if with_the_tree is None else with_the_tree(facts, tree)):
        return False
    versioned = KNOWING_THE_VERSION.get(code)
    return versioned is None or torch_version is None or not isinstance(tree, ast.Module) or versioned(facts, tree, torch_version)
