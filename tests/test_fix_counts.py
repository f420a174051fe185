"""`check` and `fix` count the same fixes: the fixable count `check` prints (in its summary and as
safe fixes in its JSON) is what the first round of `fix` offers, and `fix` says how many of the
findings it fixed came in later rounds (a finding an earlier fix revealed, or a fix held back by
an overlapping one), so the two numbers add up (issue 31)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from devlint.cli import main

# Fixing the `.cuda()` calls in the `if` makes the check itself fixable (DEV604 offers a fix once
# nothing in the branch needs CUDA): a finding the first round reveals.
REVEALING = (
    "import torch\n\n\ndef test_forward(net, img):\n"
    "    if torch.cuda.is_available():\n        net.cuda()\n        return net(img.cuda())\n"
)
# The outer `.cuda()` holds the inner one: they overlap, so the outer waits for a second round.
NESTED = "import torch\nx = torch.ones(2).cuda().cuda()\n"
AT_2_9 = ["--torch-version", "2.9", "--no-cache"]


def _check(path: Path, capsys) -> tuple[int, int]:
    """The summary's fixable count and the JSON's safe fixes, for ``path``."""
    main(["check", "--output-format", "concise", *AT_2_9, str(path)])
    summary = capsys.readouterr().out.splitlines()[-1]
    if summary == "All checks passed!":
        return 0, 0
    found = re.fullmatch(r"Found \d+ findings? \((\d+) fixable, \d+ with --unsafe-fixes\)\.", summary)
    assert found is not None, summary
    main(["check", "--output-format", "json", *AT_2_9, str(path)])
    findings = json.loads(capsys.readouterr().out)
    return int(found.group(1)), sum(1 for f in findings if f["fix"] is not None and f["fix"]["applicability"] == "safe")


def _fixed(path: Path, capsys) -> tuple[int, int]:
    """How many findings `fix` says it fixed, and how many of them in later rounds."""
    main(["fix", "--output-format", "concise", *AT_2_9, str(path)])
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Fixed "))
    found = re.fullmatch(r"Fixed (\d+) findings?(?: \((\d+) in (?:a second round|later rounds)\))?\.", line)
    assert found is not None, line
    return int(found.group(1)), int(found.group(2) or 0)


def test_a_finding_a_fix_reveals_is_counted_apart(tmp_path, capsys) -> None:
    path = tmp_path / "test_arch.py"
    path.write_text(REVEALING)
    fixable, safe = _check(path, capsys)
    assert fixable == safe
    total, later = _fixed(path, capsys)
    assert later >= 1
    assert total - later == fixable
    # and the fixed file is done: nothing fixable is left
    assert _check(path, capsys) == (0, 0)


def test_overlapping_fixes_add_up_and_share_one_device(tmp_path, capsys) -> None:
    path = tmp_path / "nested.py"
    path.write_text(NESTED)
    fixable, safe = _check(path, capsys)
    total, later = _fixed(path, capsys)
    assert (fixable, safe) == (total, total) and later == 1
    fixed = path.read_text()
    # the second round reuses the definition the first inserted, not a second one
    assert fixed.count("torch.accelerator.current_accelerator() if") == 1
    assert fixed.endswith("x = torch.ones(2).to(device).to(device)\n")


def test_one_round_says_nothing_more(tmp_path, capsys) -> None:
    path = tmp_path / "flat.py"
    path.write_text("import torch\nx = torch.ones(2).cuda()\ny = torch.ones(2).cuda()\n")
    fixable, _ = _check(path, capsys)
    assert _fixed(path, capsys) == (fixable, 0)


def test_diff_says_the_later_rounds_too(tmp_path, capsys) -> None:
    path = tmp_path / "nested.py"
    path.write_text(NESTED)
    main(["check", "--diff", *AT_2_9, str(path)])
    assert "Would fix 2 findings (1 in a second round) in 1 file." in capsys.readouterr().err
    assert path.read_text() == NESTED
