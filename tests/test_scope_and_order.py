"""What a rule learns about a name or a guard does not depend on where else in the file the same
name is bound, or on which site asked first: the walk answers from the scope and the position
the question is about.

Each case comes in a pair that differs only in what the answer must not depend on (another
function's import, a function that asks first, a literal written below its use).
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from devlint.analysis.semantic import Scope
from devlint.engine.context import FileContext
from devlint.engine.lint import lint_text
from devlint.engine.walk import walk
from devlint.registry import all_rules, rule_by_code, select_rules
from devlint.rule import Rule
from devlint.settings import FixSettings


def rows(code: str, text: str) -> list[int]:
    return [finding.location.row for finding in lint_text(text, "t.py", [rule_by_code(code)])]


def row_of(text: str, needle: str) -> int:
    """The row of the last line holding ``needle``."""
    return max(row for row, line in enumerate(text.splitlines(), 1) if needle in line)


def every_rule(text: str) -> list[tuple[int, str]]:
    return [(finding.location.row, finding.code) for finding in lint_text(text, "t.py", select_rules(None))]


# -- an import binds its own scope only ----------------------------------------------------------

LOCAL_IMPORT = """\
def f():
    from torch.cuda import FloatTensor
    return FloatTensor(3)


def g(FloatTensor):
    return FloatTensor(4)


def h():
    def FloatTensor(size):
        return [0.0] * size
    return FloatTensor(5)
"""


def test_a_function_import_does_not_name_another_functions_parameter() -> None:
    # rows 2 and 3 are f's own import and call; g's parameter and h's function are other values
    assert rows("DEV104", LOCAL_IMPORT) == [2, 3]


def test_a_module_import_of_another_library_keeps_its_own_meaning_after_a_function_imports_torchs() -> None:
    text = "from mylib import HalfTensor\n\n\ndef f():\n    from torch.cuda import HalfTensor\n    return HalfTensor(3)\n\n\nx = HalfTensor(2)\n"
    assert rows("DEV104", text) == [5, 6]


@pytest.mark.parametrize(
    "text",
    [
        # a module import seen from a function that does not rebind the name
        "from torch.cuda import FloatTensor\n\n\ndef f():\n    return FloatTensor(3)\n",
        # a function's own import, used in a nested function
        "def f():\n    from torch.cuda import FloatTensor\n\n    def g():\n        return FloatTensor(3)\n    return g\n",
        # `try` / `except ImportError` keeps the import's meaning
        "try:\n    from torch.cuda import FloatTensor\nexcept ImportError:\n    FloatTensor = None\nx = FloatTensor(2)\n",
    ],
)
def test_an_import_still_reaches_the_code_that_sees_it(text: str) -> None:
    assert rows("DEV104", text)[-1] == row_of(text, "FloatTensor(")


MIXED_IMPORTS = """\
import torch

if USE_OTHER_BACKEND:
    from other_backend.amp import autocast
else:
    from torch.cuda.amp import autocast

with autocast(enabled=True):
    y = model(x)
"""


def test_a_name_imported_from_two_places_is_taken_for_neither() -> None:
    # Which import a use holds is decided when the program runs (mmcv's tests import a vendor's
    # `autocast`, `torch.musa.amp`'s or torch.cuda's): rewriting the call as `torch.amp.autocast`
    # was offered as safe, and the other backend's import then went as unused.
    assert rows("DEV501", MIXED_IMPORTS) == []
    assert rows("DEV501", MIXED_IMPORTS.replace("other_backend.amp", "torch.musa.amp")) == []
    again = MIXED_IMPORTS.replace("other_backend.amp", "torch.cuda.amp")
    assert rows("DEV501", again) == [row_of(again, "with autocast")]
    only_torch = MIXED_IMPORTS.replace("    from other_backend.amp import autocast", "    pass")
    assert rows("DEV501", only_torch) == [row_of(only_torch, "with autocast")]


# -- a block's GPU check is read in the block's own scope -----------------------------------------

EXIT_WITHOUT_GPU = """\
import sys

import torch

use_cuda = torch.cuda.is_available()
{function}
if not use_cuda:
    sys.exit("needs a GPU")
print(torch.cuda.get_device_properties(0))
"""

ASKS_FIRST = """

def worker(use_cuda):
    print(torch.cuda.get_device_properties(0))

"""


def test_a_module_exit_without_a_gpu_guards_what_follows_whoever_asks_first() -> None:
    alone = EXIT_WITHOUT_GPU.format(function="")
    assert rows("DEV601", alone) == []
    # the worker's call is asked about first, from a scope where `use_cuda` is a parameter; its
    # own finding stands (nothing guards it), the module's call below the exit stays guarded
    assert rows("DEV601", EXIT_WITHOUT_GPU.format(function=ASKS_FIRST)) == [9]


# -- a value written below its use ----------------------------------------------------------------

BACKEND = """\
import torch
import torch.distributed as dist


class Config:
    pass


args = Config()
{above}

def setup():
    dist.init_process_group(backend=args.dist_backend)

{below}
"""

GUARDED = 'if torch.cuda.is_available():\n    args.dist_backend = "nccl"\n'
PLAIN = 'args.dist_backend = "nccl"\n'


@pytest.mark.parametrize("where", ["above", "below"])
def test_an_attribute_set_to_nccl_only_under_a_gpu_check_is_not_reported_above_or_below(where: str) -> None:
    text = BACKEND.format(**{"above": "", "below": "", where: GUARDED})
    assert rows("DEV603", text) == []


@pytest.mark.parametrize("where", ["above", "below"])
def test_an_attribute_set_to_nccl_unguarded_is_reported_above_or_below(where: str) -> None:
    text = BACKEND.format(**{"above": "", "below": "", where: PLAIN})
    assert rows("DEV603", text) == [row_of(text, "init_process_group")]


def test_a_guarded_and_an_unguarded_setting_below_the_use_are_not_reported() -> None:
    # one literal under a check: the program already picks per device (as above the use)
    text = BACKEND.format(above="", below=GUARDED + PLAIN)
    assert rows("DEV603", text) == rows("DEV603", BACKEND.format(above=GUARDED + PLAIN, below="")) == []


def test_every_rule_agrees_with_the_pairs() -> None:
    # no other rule reads these names differently either
    assert [row for row, code in every_rule(LOCAL_IMPORT) if code == "DEV104"] == [2, 3]


# -- a report stands where the walk met its node ---------------------------------------------------


def _enclosing_function(parents: dict, node: object) -> object | None:
    current = parents.get(node)
    while current is not None and not isinstance(current, cst.FunctionDef):
        current = parents.get(current)
    return current


def _scope_function(scope: Scope) -> object | None:
    current: Scope | None = scope
    while current is not None and current.kind not in ("function", "module"):
        current = current.parent
    return current.node if current is not None and current.kind == "function" else None


@pytest.mark.parametrize("rule", all_rules(), ids=lambda rule: rule.code)
def test_every_report_carries_the_scope_of_its_node(rule: type[Rule]) -> None:
    # Rules that report after the walk (`finish`) pass the site they kept: the engine reads its
    # scope (is `torch` the function's own name?), and the end of the walk is the module's.
    reports = 0
    for i, case in enumerate(rule.INVALID):
        text = f"def block_{i}():\n{textwrap.indent(case.code, '    ')}\n"
        version = case.torch_version or FixSettings().torch_version
        ctx = FileContext("t.py", text, cst.parse_module(text), FixSettings(torch_version=version))
        walk(ctx, [rule(ctx)])
        reports += len(ctx.reports)  # (an example that needs the module's level reports nothing here)
        for report in ctx.reports:
            expected = _enclosing_function(ctx.parents, report.node)
            assert _scope_function(report.site.scope) is expected, (rule.code, i, ctx.module.code_for_node(report.node))
    assert reports, rule.code
