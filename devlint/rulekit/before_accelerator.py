"""The DEV6 rules below torch-version 2.6, where torch.accelerator does not exist yet.

Rules follow torch-version as ruff's rules follow target-version. From 2.6 the goal is
accelerator-generic code. Below, a project must keep `torch.cuda`: a call that already runs on a
machine without CUDA (under a GPU check, or one that answers there, such as `device_count()`) has
nothing generic to move to and is not reported, while a call that fails without CUDA still is,
and a statement that returns nothing (`torch.cuda.synchronize()`) is fixed with the CUDA check
around it: on a CUDA machine it runs as before, elsewhere it is skipped, as the CUDA runtime's
own no-ops do.
"""

from __future__ import annotations

import libcst as cst

from devlint.fixes import FixPlan
from devlint.rule import RuleContext
from devlint.rulekit.accelerator import ACCELERATOR, sole_statement
from devlint.rulekit.device_checks import under_device_check
from devlint.rulekit.guards import guarded
from devlint.torchfacts.names import CUDA_RUNS_WITHOUT_CUDA

CUDA_AVAILABLE = "torch.cuda.is_available()"


def runs_without_cuda_before_accelerator(ctx: RuleContext, node: cst.CSTNode, name: str | None) -> bool:
    """Below torch-version 2.6: ``node`` (a call of ``torch.cuda.<name>``, or a `with` item)
    already runs without CUDA, under a GPU check or by what it is; not reported there."""
    if ctx.settings.torch_version >= ACCELERATOR:
        return False
    return name in CUDA_RUNS_WITHOUT_CUDA or under_device_check(ctx, node)


def cuda_guard_fix(ctx: RuleContext, node: cst.Call, what: str) -> FixPlan | None:
    """``if torch.cuda.is_available():`` around the statement ``node`` is, keeping the call as
    written; None where the call is no statement of its own (its value is used)."""
    statement = sole_statement(ctx, node)
    if statement is None:
        return None
    return FixPlan(
        f"Run `{what}` only where CUDA is available",
        [guarded(ctx, statement, CUDA_AVAILABLE, ctx.code(statement))],
        needs_torch=True,
    )
