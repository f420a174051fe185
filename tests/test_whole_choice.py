"""A fix never leaves its line half migrated (issue 22 item 4): a CUDA call chosen by a CUDA check
in its own expression is fixed together with the check, or gets no fix at all."""

from __future__ import annotations

import ast

import pytest

from devlint.engine.lint import fix_text, lint_text
from devlint.fixes import apply_fixes
from devlint.registry import all_rules
from devlint.settings import FixSettings

RULES = list(all_rules())
AT_2_9 = FixSettings(torch_version=(2, 9))
HEAD = "import torch\n\n\ndef run(device: torch.device, x):\n"

MOVED = [
    "    s = torch.cuda.Stream() if torch.cuda.is_available() else None\n",
    "    s = torch.cuda.current_stream() if torch.cuda.is_available() and x else None\n",
    "    e = None if not torch.cuda.is_available() else torch.cuda.Event()\n",
    "    used = torch.cuda.memory_allocated() if torch.cuda.is_available() else 0\n",
    "    peak = (torch.cuda.max_memory_allocated() if torch.cuda.is_available() else 0) / 2**20\n",
    "    torch.cuda.is_available() and torch.cuda.synchronize()\n",
]
LEFT = [
    "    s = torch.cuda.Stream() if torch.cuda.device_count() > 1 else None\n",
    "    s = torch.cuda.Stream() if torch.cuda.is_available() else torch.cuda.default_stream()\n",
    "    s = torch.cuda.Stream() if torch.cuda.is_available() and torch.version.cuda else None\n",
    '    d = torch.cuda.current_device() if torch.cuda.is_available() else "cpu"\n',
]


@pytest.mark.parametrize("line", MOVED)
def test_the_check_moves_with_the_call(line: str) -> None:
    result = fix_text(HEAD + line, "choice.py", RULES, AT_2_9)
    fixed = result.text.splitlines()[-1]
    assert "cuda" not in fixed and "torch.accelerator.is_available()" in fixed
    ast.parse(result.text)
    assert not lint_text(result.text, "choice.py", RULES, AT_2_9)
    assert fix_text(result.text, "choice.py", RULES, AT_2_9).applied == 0


@pytest.mark.parametrize("line", MOVED)
def test_each_fix_alone_moves_its_whole_choice(line: str) -> None:
    for finding in lint_text(HEAD + line, "choice.py", RULES, AT_2_9):
        assert finding.fix is not None
        fixed, _ = apply_fixes(HEAD + line, [finding.fix])
        assert "torch.cuda.is_available()" not in fixed
        ast.parse(fixed)


@pytest.mark.parametrize("line", LEFT)
def test_a_check_that_cannot_move_leaves_the_line_unfixed(line: str) -> None:
    findings = [f for f in lint_text(HEAD + line, "choice.py", RULES, AT_2_9) if f.code in ("DEV601", "DEV602")]
    assert findings and all(f.fix is None for f in findings)
    assert any("asks CUDA as well" in f.message for f in findings)
    assert fix_text(HEAD + line, "choice.py", RULES, AT_2_9, unsafe=True).text == HEAD + line


def test_a_choice_by_the_programs_own_device_is_no_cuda_check() -> None:
    line = "    s = torch.cuda.Stream() if x.is_cuda else None\n"
    (finding,) = lint_text(HEAD + line, "choice.py", RULES, AT_2_9)
    assert finding.fix is not None and "asks CUDA" not in finding.message


def test_below_2_6_a_call_its_check_guards_is_not_reported() -> None:
    for line in MOVED:
        found = lint_text(HEAD + line, "choice.py", RULES, FixSettings(torch_version=(2, 5)))
        assert not [f for f in found if f.code in ("DEV601", "DEV602")]
