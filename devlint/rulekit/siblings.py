"""Where a statement stands among the statements of its block, for the checks and fixes that look
at its neighbours: each block's statements are indexed once per file, however many of them ask
(a module of N statements asked at each one costs N, not N squared)."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from devlint.rule import RuleContext


def siblings(
    ctx: RuleContext, block: cst.IndentedBlock | cst.Module, statement: cst.CSTNode
) -> tuple[Sequence[cst.BaseStatement], int]:
    """The statements of ``block`` and the position of ``statement``, one of them."""
    body, positions = ctx.indexed(("block statements", id(block)), lambda: (block.body, _positions(block.body)))
    return body, positions[id(statement)]


def _positions(body: Sequence[cst.BaseStatement]) -> dict[int, int]:
    return {id(statement): position for position, statement in enumerate(body)}
