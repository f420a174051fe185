"""DEV604's rewrite of an `if torch.cuda.is_available():` block next to an identical
`if torch.accelerator.is_available():` block joins the two (issue 22 item 10 b) where one check
for two is exact, whatever the order in which an editor applies the fixes, and keeps both checks
where the first block could change the answer."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from devlint.engine.lint import fix_text, lint_text
from devlint.findings import Fix
from devlint.fixes import LineIndex, apply_fixes
from devlint.registry import all_rules
from devlint.settings import FixSettings

RULES = list(all_rules())
DEV604 = [rule for rule in RULES if rule.code == "DEV604"]
AT_2_6 = FixSettings(torch_version=(2, 6))
GUARD = "if torch.accelerator.is_available():"
CUDA = "if torch.cuda.is_available():"


def program(*blocks: str) -> str:
    """``import torch``, then a function whose body is one guard block per entry, in a row."""
    body = "".join(f"    {CUDA}\n        {statement}\n" for statement in blocks)
    return f"import os\nimport torch\n\n\ndef step(x):\n{body}    return x\n"


def quick_fix(text: str, row: int) -> str:
    """The text after the quick fix of the finding on line ``row`` alone, as an editor applies it."""
    (finding,) = [f for f in lint_text(text, "run.py", DEV604, AT_2_6) if f.location.row == row]
    assert finding.fix is not None
    fixed, applied = apply_fixes(text, [finding.fix])
    assert applied == 1
    return fixed


def joined(statements: tuple[str, ...]) -> str:
    body = "".join(f"        {statement}\n" for statement in statements)
    return f"import os\nimport torch\n\n\ndef step(x):\n    {GUARD}\n{body}    return x\n"


STATEMENTS = ("x = x * 2", "print(x)", "x = x + 1")


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_quick_fixes_in_any_order_leave_one_block(order: tuple[int, ...]) -> None:
    text = program(*STATEMENTS)
    for index in order:
        # only a block's own fix removes its CUDA check's line: it is right above its statement
        row = text.splitlines().index(f"        {STATEMENTS[index]}")
        text = quick_fix(text, row)
    assert text == joined(STATEMENTS)
    assert fix_text(text, "run.py", DEV604, AT_2_6).applied == 0


def test_fix_all_joins_a_run_of_blocks_and_is_idempotent() -> None:
    result = fix_text(program(*STATEMENTS), "run.py", RULES, AT_2_6)
    assert result.text == joined(STATEMENTS)
    again = fix_text(result.text, "run.py", RULES, AT_2_6)
    assert (again.text, again.applied) == (result.text, 0)


KEEPS = [
    "torch.backends.cudnn.benchmark = True",
    "y = torch.zeros(2, device=torch.accelerator.current_accelerator())",
    "print(len([i * 2 for i in range(3)]))",
    "torch.accelerator.synchronize()",
]
CHANGES = [
    'os.environ["CUDA_VISIBLE_DEVICES"] = ""',
    'os.putenv("PYTORCH_NVML_BASED_CUDA_CHECK", "1")',
    "import torch_npu",
    'torch.utils.rename_privateuse1_backend("npu")',
    "torch.load(path)",
    "torch = reload(torch)",
    "torch.accelerator.is_available = lambda: False",
    "del torch.accelerator",
    'setattr(torch, "accelerator", None)',
    "for torch in modules: pass",
    'exec(code)',
    "setup(x)",
    "x.configure()",
    "yield x",
    "global torch",
    "with lock: pass",
    "torch._C._set_backend(x)",
]


@pytest.mark.parametrize("statement", KEEPS + CHANGES)
def test_the_first_block_joins_only_where_it_keeps_the_answer(statement: str) -> None:
    text = program("x = x * 2").replace(
        f"    {CUDA}\n        x = x * 2\n", f"    {GUARD}\n        {statement}\n    {CUDA}\n        x = x * 2\n"
    )
    result = fix_text(text, "run.py", DEV604, AT_2_6)
    assert result.applied == 1
    assert result.text.count(GUARD) == (1 if statement in KEEPS else 2)


def test_a_builtin_the_program_binds_is_its_own_code() -> None:
    text = "def print(*a):\n    os.environ.clear()\n\n\n" + program("x = x * 2").replace(
        f"    {CUDA}\n        x = x * 2\n", f"    {GUARD}\n        print(x)\n    {CUDA}\n        x = x * 2\n"
    )
    assert fix_text(text, "run.py", DEV604, AT_2_6).text.count(GUARD) == 2


def test_awaiting_lets_other_code_run_between_the_checks() -> None:
    text = program("x = x * 2").replace("def step", "async def step").replace(
        f"    {CUDA}\n        x = x * 2\n", f"    {GUARD}\n        await done\n    {CUDA}\n        x = x * 2\n"
    )
    assert fix_text(text, "run.py", DEV604, AT_2_6).text.count(GUARD) == 2


def test_statements_dev601_guards_join_the_joined_block() -> None:
    text = program("x = x * 2", "print(x)").replace("    return x\n", "    torch.cuda.synchronize()\n    return x\n")
    result = fix_text(text, "run.py", RULES, FixSettings(torch_version=(2, 9)))
    assert result.text.count(GUARD) == 1
    assert "        print(x)\n        torch.accelerator.synchronize()\n    return x\n" in result.text


def test_edits_apply_in_the_order_of_the_text_they_replace() -> None:
    # a fix's later edit may hold a span that starts before its earlier one (Replace.holds)
    text = "a = 1\nb = 2\nc = 3\n"
    lines = LineIndex(text)
    first = lines.edit(6, 7, "y")
    second = dataclasses.replace(lines.edit(12, 13, "z"), held=(0, 18))
    fixed, applied = apply_fixes(text, [Fix("safe", "two edits", (first, second))])
    assert (fixed, applied) == ("a = 1\ny = 2\nz = 3\n", 1)


def test_the_quick_fix_says_when_it_joins_a_block() -> None:
    text = program("x = x * 2", "print(x)").replace(f"    {CUDA}\n        x = x * 2\n", f"    {GUARD}\n        x = x * 2\n")
    messages = [f.fix.message for f in lint_text(text, "run.py", DEV604, AT_2_6) if f.fix is not None]
    assert messages == ["Use `torch.accelerator.is_available()`, in one block with the identical check next to it"]
    alone = program("x = x * 2").replace("def step", "x = 0\n\n\ndef step")
    assert [f.fix.message for f in lint_text(alone, "run.py", DEV604, AT_2_6) if f.fix] == ["Use `torch.accelerator.is_available()`"]
