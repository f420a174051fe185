"""The screen (devlint.gate.screen), keeping the CPython tree it read for the parse that follows.

A large file is parsed in sections, and cutting it reads CPython's tree of the whole text
(devlint.engine.sections); the screen has just compiled that very tree. This composes the
screen from the gate's own parts so that the tree is compiled once per check, not twice;
tests/test_sections.py holds its answer equal to ``screen``'s.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic

from devlint.gate import R, gated, passing
from devlint.gate.prefilter import matching_rules
from devlint.gate.syntax import cpython_tree


@dataclass(frozen=True)
class Screened(Generic[R]):
    """``rules``: what ``screen`` answers; ``tree``: CPython's tree of the text, when read."""

    rules: list[R] | None
    tree: ast.Module | None = None


def screened(text: str, rules: Sequence[R], gate: bool = True) -> Screened[R]:
    candidates = matching_rules(text, rules)
    if candidates and not (gate and gated(candidates)):
        return Screened(candidates)
    tree = cpython_tree(text)
    if tree is None:
        return Screened(None)
    return Screened(passing(tree, candidates) if candidates else [], tree)
