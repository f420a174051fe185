"""The work of checking and fixing a file grows with the file, never with findings x file.

Whatever a rule asks about the module (globals, bindings, reaching definitions, imports, guards) is
computed once per file or scope and indexed (``RuleContext.indexed``, ``SemanticModel.name_nodes``,
``Flows``); a rule that walks the tree again at every finding makes a file with four times the
findings cost sixteen times the work. Time is no measure here (the machine is shared): the tests
count the Python function calls made while checking and fixing a generated file of N blocks and
of 4N blocks, each block built from the rules' own INVALID examples, so a rule added later is
covered as soon as it has examples.
"""

from __future__ import annotations

import sys
import textwrap
import threading
from collections.abc import Callable, Sequence

import pytest

from devlint.engine.lint import fix_text, lint_text
from devlint.registry import all_rules
from devlint.rule import Rule
from devlint.settings import FixSettings

# 4x the blocks may cost at most this much more work: linear, with room for set-iteration order.
LIMIT = 4.5


def _block(rules: Sequence[type[Rule]], shape: str) -> str:
    examples = [case.code for rule in rules for case in rule.INVALID]
    if shape == "function":
        # Inside functions: the scope-level questions (reaching definitions, guards) per function.
        return "\n".join(f"def block_{i}():\n{textwrap.indent(code, '    ')}\n" for i, code in enumerate(examples))
    return "\n".join(examples)


def _calls(work: Callable[[], object]) -> int:
    """Python function calls made by ``work``, on a deep stack as the run gives a file."""
    count = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal count
        if event == "call":
            count += 1

    failure: list[BaseException] = []

    def run() -> None:
        sys.setprofile(profile)
        try:
            work()
        except BaseException as error:  # noqa: BLE001 - re-raised in the test's thread
            failure.append(error)
        finally:
            sys.setprofile(None)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return count


def _ratio(rules: Sequence[type[Rule]], shape: str, mode: str, blocks: int, version: tuple[int, int] = (2, 4)) -> tuple[int, int]:
    block = _block(rules, shape)
    settings = FixSettings(torch_version=version)

    def work(n: int) -> Callable[[], object]:
        text = "\n".join([block] * n)
        if mode == "fix":
            return lambda: fix_text(text, "generated.py", rules, settings, unsafe=True)
        return lambda: lint_text(text, "generated.py", rules, settings)

    return _calls(work(blocks)), _calls(work(4 * blocks))


# Every rule at once shares the engine's per-file work (positions, placement, applying fixes);
# each rule alone, below, is checked in both scopes' shapes through its fix.
@pytest.mark.parametrize(("shape", "mode"), [("module", "check"), ("function", "fix")])
def test_every_rule_together_costs_linear_work(shape: str, mode: str) -> None:
    small, large = _ratio(all_rules(), shape, mode, blocks=1)
    assert large <= LIMIT * small, f"{large} calls at 4N against {small} at N: {large / small:.2f}x"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda rule: rule.code)
def test_each_rule_alone_costs_linear_work(rule: type[Rule]) -> None:
    # Alone, a rule's own superlinear walk is not hidden behind the other rules' linear work; a
    # newer torch-version turns on the accelerator fixes.
    for version in ((2, 4), (2, 9)):
        small, large = _ratio([rule], "function", "fix", blocks=3, version=version)
        assert large <= LIMIT * small, f"{rule.code} at {version}: {large} calls at 4N against {small} at N: {large / small:.2f}x"


def test_one_name_imported_in_every_function_costs_linear_work() -> None:
    # Every fix removes a use of `autocast`, which every function imports: the imports a fix may
    # leave unused are worked out once per name, not once per fix (devlint.engine.unused_imports).
    def work(n: int) -> Callable[[], object]:
        block = "\n\ndef step_{i}(model, x):\n    from torch.cuda.amp import autocast\n    with autocast():\n        return model(x)\n"
        text = "import torch\n" + "".join(block.format(i=i) for i in range(n))
        return lambda: fix_text(text, "generated.py", all_rules(), FixSettings(torch_version=(2, 9)))

    small, large = _calls(work(20)), _calls(work(80))
    assert large <= LIMIT * small, f"{large} calls at 4N against {small} at N: {large / small:.2f}x"
