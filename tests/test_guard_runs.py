"""Consecutive statements that each get a guard end under one guard (issue 22 item 10 a), while
each finding keeps a fix of its own that touches its own statement only: applied one at a time
in any order, any subset of them, or all at once, the text parses, statements whose fixes are
not applied stay where they were, and fixing again changes nothing."""

from __future__ import annotations

import ast
import itertools

import pytest

from devlint.engine.lint import fix_text, lint_text
from devlint.fixes import apply_fixes
from devlint.registry import all_rules
from devlint.run.suppressions import apply_noqa
from devlint.settings import FixSettings

RULES = list(all_rules())
AT_2_9 = FixSettings(torch_version=(2, 9))
# Older than torch.get_device_module (first observed in 2.4): the CUDA check guards the calls.
BEFORE_DEVICE_MODULE = FixSettings(torch_version=(2, 3))
GUARD = "if torch.accelerator.is_available():"
CALLS = ("synchronize", "empty_cache", "reset_peak_memory_stats", "reset_accumulated_memory_stats")


def program(calls: tuple[str, ...], newline: str = "\n", comment: str = "") -> str:
    lines = ["import torch", "", "", "def step(model, x):", "    y = model(x)"]
    lines += [f"    torch.cuda.{call}(){comment}" for call in calls]
    lines += ["    return y", ""]
    return newline.join(lines)


def fix_one(text: str, call: str) -> str:
    """The text after the quick fix of the finding on ``torch.cuda.<call>()`` alone, as an
    editor applies it."""
    (finding,) = [f for f in lint_text(text, "run.py", RULES, AT_2_9) if f"torch.cuda.{call}()" in f.source_line]
    assert finding.fix is not None
    fixed, applied = apply_fixes(text, [finding.fix])
    assert applied == 1
    return fixed


def guarded_calls(text: str) -> list[list[str]]:
    """The calls under each `if` of ``step``, block by block."""
    function = ast.parse(text).body[1]
    assert isinstance(function, ast.FunctionDef)
    return [
        [ast.unparse(s.value.func).rsplit(".", 1)[-1] for s in node.body if isinstance(s, ast.Expr)]
        for node in function.body
        if isinstance(node, ast.If)
    ]


@pytest.mark.parametrize("comment", ["", "  # why"])
@pytest.mark.parametrize("order", list(itertools.permutations(CALLS[:3])))
def test_quick_fixes_in_any_order_leave_one_guard(order: tuple[str, ...], comment: str) -> None:
    text = program(CALLS[:3], comment=comment)
    for call in order:
        text = fix_one(text, call)
        ast.parse(text)
    assert guarded_calls(text) == [list(CALLS[:3])]
    assert not comment or text.count(comment) == 3
    assert text == fix_text(program(CALLS[:3], comment=comment), "run.py", RULES, AT_2_9).text


@pytest.mark.parametrize("chosen", [c for n in range(1, 4) for c in itertools.combinations(CALLS[:3], n)])
def test_a_subset_of_fixes_moves_only_its_own_statements(chosen: tuple[str, ...]) -> None:
    text = program(CALLS[:3])
    for call in chosen:
        text = fix_one(text, call)
    lines = text.splitlines()
    for call in CALLS[:3]:
        if call not in chosen:
            assert f"    torch.cuda.{call}()" in lines
    # the fixed ones: guarded, one block per run of neighbours fixed together
    runs = [list(group) for fixed, group in itertools.groupby(CALLS[:3], key=chosen.__contains__) if fixed]
    assert guarded_calls(text) == runs


@pytest.mark.parametrize("size", [2, 4, 6])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_fix_all_leaves_one_guard_and_is_idempotent(size: int, newline: str) -> None:
    calls = tuple(CALLS[i % len(CALLS)] for i in range(size))
    result = fix_text(program(calls, newline), "run.py", RULES, AT_2_9)
    assert result.applied == size
    assert guarded_calls(result.text) == [list(calls)]
    assert result.text.count(GUARD) == 1
    assert "\r\n" not in result.text if newline == "\n" else "\n" not in result.text.replace("\r\n", "")
    again = fix_text(result.text, "run.py", RULES, AT_2_9)
    assert (again.text, again.applied) == (result.text, 0)


def test_a_statement_whose_finding_is_suppressed_stays_out_of_the_guard() -> None:
    text = program(CALLS[:3]).replace("torch.cuda.empty_cache()", "torch.cuda.empty_cache()  # noqa: DEV602")
    result = fix_text(text, "run.py", RULES, AT_2_9, keep=apply_noqa)
    assert "    torch.cuda.empty_cache()  # noqa: DEV602" in result.text.splitlines()
    assert guarded_calls(result.text) == [["synchronize"], ["reset_peak_memory_stats"]]


def test_a_rule_left_out_leaves_its_statements_alone() -> None:
    dev601 = [rule for rule in RULES if rule.code == "DEV601"]
    text = program(("synchronize", "empty_cache", "synchronize", "synchronize"))
    result = fix_text(text, "run.py", dev601, AT_2_9)
    assert "    torch.cuda.empty_cache()" in result.text.splitlines()
    assert guarded_calls(result.text) == [["synchronize"], ["synchronize", "synchronize"]]


def test_below_2_6_the_cuda_check_is_shared_the_same_way() -> None:
    text = program(("synchronize", "reset_peak_memory_stats", "synchronize"))
    result = fix_text(text, "run.py", RULES, BEFORE_DEVICE_MODULE)
    assert result.text.count("if torch.cuda.is_available():") == 1
    assert guarded_calls(result.text) == [["synchronize", "reset_peak_memory_stats", "synchronize"]]
    assert fix_text(result.text, "run.py", RULES, BEFORE_DEVICE_MODULE).applied == 0


def test_a_statement_waits_for_the_check_beside_it_to_become_its_own_guard() -> None:
    # DEV604 turns the block's CUDA check into the accelerator's in the same `devlint fix`
    text = program(("synchronize", "empty_cache")).replace(
        "    y = model(x)\n", "    y = model(x)\n    if torch.cuda.is_available():\n        y = y.half()\n"
    )
    result = fix_text(text, "run.py", RULES, AT_2_9)
    assert result.text.count(GUARD) == 1
    assert "        y = y.half()\n        torch.accelerator.synchronize()\n" in result.text
