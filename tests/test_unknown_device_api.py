"""DEV605 unknown-device-api (issue 22, item 8): names of the device-generic namespaces that do not
exist or not yet in `torch-version`; its table is the one tools/device_api_table.py generates; the
gate keeps files that name none of the namespaces away from LibCST."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from devlint.engine.lint import fix_text, lint_text
from devlint.gate.decision import passing
from devlint.registry import all_rules, rule_by_code
from devlint.settings import FixSettings

ROOT = Path(__file__).resolve().parent.parent
RULE = rule_by_code("DEV605")


def found(source: str, version: tuple[int, int] = (2, 9)) -> list[tuple[int, str]]:
    text = textwrap.dedent(source)
    return [(f.location.row, f.message) for f in lint_text(text, "t.py", [RULE], FixSettings(torch_version=version))]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the table is generated from an installed torch")
def test_the_committed_table_is_what_the_generator_writes_from_torchs_sources() -> None:
    run = subprocess.run([sys.executable, "tools/device_api_table.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, "devlint/torchfacts/device_api_table.py is out of date: run tools/device_api_table.py"


def test_names_resolve_through_imports_and_aliases() -> None:
    assert [row for row, _ in found("from torch import accelerator as acc\nacc.manual_seed_all(0)\n")] == [2]
    assert [row for row, _ in found("import torch as t\nt.accelerator.get_device_name(0)\n")] == [2]
    assert [row for row, _ in found("from torch.accelerator import current_device, synchronize\n")] == [1]


@pytest.mark.parametrize(
    "source",
    [
        # another library's accelerator object
        "from accelerate import Accelerator\naccelerator = Accelerator()\naccelerator.get_device_name()\n",
        # probing for the name
        "import torch\ntry:\n    n = torch.accelerator.get_device_name(0)\nexcept AttributeError:\n    n = None\n",
        'import torch\nif hasattr(torch.accelerator, "get_memory_info"):\n    torch.accelerator.get_memory_info()\n',
        # a version check through a derived constant
        "import torch\nTORCH = tuple(int(p) for p in torch.__version__.split('+')[0].split('.')[:2])\n"
        "if TORCH >= (2, 10):\n    torch.accelerator.get_memory_info()\n",
        # what exists, and instances (whose type DEV605 does not track)
        "import torch\ns = torch.Stream()\ns.anything()\ntorch.get_device_module(device).empty_cache()\n",
    ],
)
def test_near_misses_are_silent(source: str) -> None:
    assert found(source) == []


def test_a_name_newer_than_torch_version_says_which_torch_it_needs() -> None:
    ((row, message),) = found("import torch\ntorch.accelerator.empty_cache()\n", (2, 8))
    assert row == 2 and "exists from torch 2.9; `torch-version` is 2.8" in message
    assert found("import torch\ntorch.accelerator.empty_cache()\n", (2, 9)) == []


@pytest.mark.parametrize("version", [(2, 6), (2, 9), (2, 13)])
def test_fixed_code_is_not_flagged_again(version: tuple[int, int]) -> None:
    rules = list(all_rules())
    settings = FixSettings(torch_version=version)
    for case in RULE.INVALID:
        fixed = fix_text(case.code, "t.py", rules, settings, unsafe=True).text
        left = [f for f in lint_text(fixed, "t.py", rules, settings) if f.code == "DEV605" and f.fix is not None]
        assert left == [], fixed


def test_the_gate_skips_files_that_name_none_of_the_namespaces() -> None:
    plain = ast.parse("import torch\nx = torch.ones(2).cuda()\nexample = 'amp'\n")
    assert RULE.code not in [r.code for r in passing(plain, [RULE])]
    for source in ("import torch\ntorch.accelerator.foo()\n", "from torch.amp import foo\n", "import torch as t\nt.get_device_module(d).foo\n"):
        assert [r.code for r in passing(ast.parse(source), [RULE])] == ["DEV605"], source
