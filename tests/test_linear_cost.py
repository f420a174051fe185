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

import json
import sys
import textwrap
import threading
from collections.abc import Callable, Sequence

import pytest

from devlint.engine.lint import fix_text, lint_text
from devlint.engine.positions import StatementPrints
from devlint.engine.reuse import EarlierChecks
from devlint.registry import all_rules
from devlint.rule import Rule
from devlint.run.diff_base import added_rows
from devlint.run.job import unified_diff
from devlint.run.notebook import read_notebook
from devlint.verify.project_copy import _edited
from devlint.verify.targets import line_map
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


# Shapes whose parts reach each other however far apart they stand: a chain of branches, one
# long expression, an attribute set and read in every class, names read across the file. Each
# finding there once climbed every branch above it, or re-read every value, the text or the
# line index (all found by timing such files at N and 4N: 4.5x to 16x the time).
HEAD = "import os\nimport torch\nimport torch.distributed as dist\n"
SHAPES: dict[str, Callable[[int], str]] = {
    "elif chain": lambda n: HEAD
    + "def pick(k, x):\n    use_cuda = torch.cuda.is_available()\n    if k == -1:\n        pass\n"
    + "".join(
        f"    elif k == {i}:\n        if hasattr(x, 'cuda') and torch.__version__ >= '2.{i}':\n"
        f"            x = x.cuda()\n            torch.cuda.synchronize()\n"
        f"        if use_cuda:\n            torch.cuda.empty_cache()\n        return x.cuda(), torch.ones(1).cuda()\n"
        for i in range(n)
    ),
    "one long expression": lambda n: HEAD + "total = " + " + ".join(f"x{i}.cuda()" for i in range(n)) + "\n",
    "an attribute set and read in every class": lambda n: HEAD
    + "".join(
        f"class Worker{i}:\n    def __init__(self):\n        self.backend = 'nccl'\n\n"
        f"    def start(self):\n        dist.init_process_group(backend=self.backend)\n\n\n"
        for i in range(n)
    ),
    "device values read across the file": lambda n: HEAD
    + "".join(f"device_{i} = 'cuda:{i % 8}'\nx_{i} = torch.ones(1).to(device_{i})\nprint(device_{i})\n" for i in range(n)),
    "legacy types imported one by one": lambda n: HEAD
    + "".join(f"from torch.cuda import FloatTensor as F{i}\nx{i} = F{i}(3)\n" for i in range(n)),
    "loads": lambda n: HEAD + "".join(f"model_{i} = torch.load('w{i}.pt')\n" for i in range(n)),
    # Asked after the walk, each `x.cuda()` stepped over every later binding of `x` on its way
    # to the one before it (7x the time at 4x the lines).
    "a name rebound at every line": lambda n: HEAD + "x = torch.ones(1)\n" + "x = x.cuda()\n" * n,
    "a name rebound in every branch": lambda n: HEAD
    + "".join(f"if flag_{i}:\n    x = x.cuda()\nelse:\n    x = x.cpu()\n" for i in range(n)),
    # Shapes timed at N and 4N when this table was last extended (all 3.8x to 4.3x): what a
    # finding asks of the calls into its function, of one class' attribute, of `# noqa` and of
    # imports that may fail.
    "a function calling the one before it": lambda n: HEAD
    + "".join(f"def f{i}(x, device):\n    return f{i - 1}(x.cuda(), device) if {i} else x\n\n\n" for i in range(n)),
    "a device attribute read in every method": lambda n: HEAD
    + "class Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.device = 'cuda'\n"
    + "".join(f"\n    def m{i}(self, x):\n        return x.to(self.device).cuda() + torch.zeros(2, device='cuda')\n" for i in range(n)),
    "suppressed lines": lambda n: HEAD
    + "".join(f"x{i} = torch.ones(1).cuda()  # noqa: DEV101\ny{i} = torch.ones(1).cuda()\n" for i in range(n)),
    "imports that may fail": lambda n: HEAD
    + "".join(f"try:\n    from torch.cuda import FloatTensor as F{i}\nexcept ImportError:\n    F{i} = None\nz{i} = F{i}(2)\n" for i in range(n)),
    # The gate finds where each call stands by descending CPython's tree: every element of one
    # long display was once compared with its siblings (15x the time at 4x the elements).
    "calls under a device check in one long display": lambda n: HEAD
    + "def f(x, t, d):\n    return [\n"
    + "".join(f"        t[{i}].cuda({i % 2}) if x.is_cuda else {{**d, {i}: t[{i}].cpu().numpy()}},\n" for i in range(n))
    + "    ]\n",
    # ... and where each stands in one long chain: a path per call through every `+` above it
    # (past MAX_DEPTH the gate leaves the call to the rule).
    "calls under a device check in one long chain": lambda n: HEAD
    + "def f(x):\n    if x.is_cuda:\n        return " + " + ".join(f"t{i}.cuda()" for i in range(n)) + "\n",
    # A fix asks what the device name holds at its site: each site once stepped over every
    # statement before it in its loop (7x to 8x the work at 4N), and every device name of a scope
    # was asked at every site, each stepping over the whole scope (9x to 11x).
    "calls in one long loop that a device reaches": lambda n: HEAD
    + "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\nfor epoch in range(3):\n"
    + "".join(f"    x{i} = torch.ones(1).cuda()\n" for i in range(n)),
    "calls in one long try in a function": lambda n: HEAD
    + "def main(device):\n    try:\n" + "".join(f"        x{i} = torch.ones(1).cuda()\n" for i in range(n))
    + "    except RuntimeError:\n        x0 = torch.ones(1).cuda()\n",
    "a device name bound in every block": lambda n: HEAD
    + "".join(
        f"if torch.cuda.is_available():\n    d{i} = 'cuda'\nelse:\n    d{i} = 'cpu'\nx{i} = torch.ones(1).to(d{i}).cuda()\n"
        for i in range(n)
    ),
    # The inserted definition must follow the file's GPU settings before the first use: each
    # statement above it once searched the whole text for them (C work the calls do not show).
    "a use of torch after many imports that may fail": lambda n: "".join(
        f"try:\n    import torch as t{i}\nexcept ImportError:\n    t{i} = None\n" for i in range(n)
    )
    + "x = t0.ones(1).cuda()\n",
    # Each fix that guards a statement, removes a seed or asks whether CUDA is named after a guard
    # looked its statement up among the whole block's (C work the calls do not show: 5.5x the
    # time at 4N, at 500 blocks; bench/scaling.py times it).
    "seeds and synchronizations on every line of the module": lambda n: HEAD
    + "".join(f"torch.manual_seed({i})\ntorch.cuda.manual_seed({i})\ntorch.cuda.synchronize()\nx{i} = {i}\n" for i in range(n)),
    # DEV201 followed every binding of the name seen so far, and every binding of the names in
    # their values, at each report: 6.5x at 4N when rebound, N**4 when each value reads the last.
    "a visible-devices value rebound before every assignment": lambda n: "import os\n"
    + "".join(f"gpus = '{i}'\nos.environ['CUDA_VISIBLE_DEVICES'] = gpus\n" for i in range(n)),
    "a visible-devices value grown before every assignment": lambda n: "import os\ngpus = ''\n"
    + "".join(f"gpus = gpus + ',{i}'\nos.environ['CUDA_VISIBLE_DEVICES'] = gpus\n" for i in range(n)),
    # Each name set from a `.device` asked whether its scope moves that tensor to CUDA by a walk
    # of the whole scope (9.5x at 4N).
    "a device read before every move": lambda n: HEAD
    + "".join(f"d{i} = t{i}.device\nt{i} = t{i}.cuda()\nz{i} = torch.ones(1).cuda()\n" for i in range(n)),
    # Each `run` asked every call of `run` in the file whether it gives its parameter the CPU
    # (5.4x at 4N).
    "a method of one name in every class": lambda n: HEAD
    + "".join(f"class W{i}:\n    def run(self, x, dev):\n        return x.cuda()\n\nw{i} = W{i}()\nw{i}.run(t, dev='cuda')\n" for i in range(n)),
    # Each parameter's reaching definitions scanned every parameter (5.8x the time at 4N).
    "a function of many parameters, each moved": lambda n: HEAD
    + "def f(" + ", ".join(f"a{i}" for i in range(n)) + ", device='cuda'):\n"
    + "".join(f"    a{i} = a{i}.cuda()\n" for i in range(n)),
    # Each finding cut its source line from the text again (5.0x the time at 4N).
    "calls on one long line": lambda n: HEAD + "x = [" + ", ".join(f"t{i}.cuda()" for i in range(n)) + "]\n",
    "a GPU index name bound in every block": lambda n: HEAD
    + "".join(f"def f{i}():\n    dev{i} = 'cuda:{i % 3}'\n    return torch.ones(1).cuda()\nd{i} = 'cuda:{i % 3}'\n" for i in range(n)),
}
# Shapes whose extra work shows only past a few dozen blocks (at 100 and 400: 4.8x to 5.5x before).
SIZES = {
    "a name rebound at every line": 100, "a name rebound in every branch": 100,
    # (4.7x to 4.9x when each block's first device check climbed to its function through the chain)
    "elif chain": 100,
    # (at 200 and 800: 9.5x when the gate compared every element with its siblings)
    "calls under a device check in one long display": 200,
    # (at 200 and 800: 14x when every call's path was found through the whole chain)
    "calls under a device check in one long chain": 200,
    # (N**4 before: 200x at 10 and 40, a minute; a few blocks show it)
    "a visible-devices value grown before every assignment": 6,
    # (5.1x the calls at 300 and 1,200 parameters)
    "a function of many parameters, each moved": 300,
}


@pytest.mark.parametrize("mode", ["check", "fix", "server"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_shapes_that_reach_across_the_file_cost_linear_work(shape: str, mode: str) -> None:
    settings = FixSettings(torch_version=(2, 4))

    def work(n: int) -> Callable[[], object]:
        text = SHAPES[shape](n)
        if mode == "fix":
            return lambda: fix_text(text, "generated.py", all_rules(), settings, unsafe=True)
        if mode == "server":
            # The language server's check: statement prints kept, the check kept for the next.
            return lambda: lint_text(text, "generated.py", all_rules(), settings, prints=StatementPrints(), earlier=EarlierChecks())
        return lambda: lint_text(text, "generated.py", all_rules(), settings)

    size = SIZES.get(shape, 30)
    small, large = _calls(work(size)), _calls(work(4 * size))
    assert large <= LIMIT * small, f"{large} calls at 4N against {small} at N: {large / small:.2f}x"


class _Searched(str):
    """A file's text that counts the searches made of all of it: a search per statement or per
    finding is work that grows with their number times the file, which no Python call shows."""

    searches = 0

    def __contains__(self, part: object) -> bool:
        _Searched.searches += 1
        return str.__contains__(self, part)  # type: ignore[operator]

    def find(self, *args: object) -> int:  # type: ignore[override]
        _Searched.searches += 1
        return str.find(self, *args)  # type: ignore[arg-type]

    def count(self, *args: object) -> int:  # type: ignore[override]
        _Searched.searches += 1
        return str.count(self, *args)  # type: ignore[arg-type]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_whole_text_is_searched_a_fixed_number_of_times(shape: str) -> None:
    settings = FixSettings(torch_version=(2, 4))
    searches = []
    for n in (SIZES.get(shape, 30), 4 * SIZES.get(shape, 30)):
        _Searched.searches = 0
        lint_text(_Searched(SHAPES[shape](n)), "generated.py", all_rules(), settings)
        searches.append(_Searched.searches)
    assert searches[1] <= searches[0] + 5, f"{searches[1]} searches of the whole text at 4N against {searches[0]} at N"


def test_the_diff_of_a_fix_in_every_function_costs_linear_work() -> None:
    # `--diff` of a fix that rewrote one line in each of N small functions: difflib's matcher
    # split one short block off at a time and rescanned the rest (15 s for 32,000 lines).
    def work(n: int) -> Callable[[], object]:
        before = "import torch\n" + "".join(f"def f{i}(x):\n    d = 'cuda'\n    return x.to(d)\n" for i in range(n))
        after = before.replace("d = 'cuda'\n", "d = 'cuda' if torch.cuda.is_available() else 'cpu'\n")
        return lambda: unified_diff("generated.py", before, after)

    # The matcher's loops run inside a few calls: count the lines run instead.
    small, large = _lines(work(300)), _lines(work(1200))
    assert large <= LIMIT * small, f"{large} lines run at 4N against {small} at N: {large / small:.2f}x"


def test_the_rows_a_change_touched_cost_linear_work() -> None:
    # `--diff-base` keeps the findings on the rows a change added or edited: with difflib's
    # matcher a change in every one of 4,000 small functions took 4.7 s.
    def work(n: int) -> Callable[[], object]:
        before = "".join(f"def f{i}(x):\n    return x.cuda()\n\n\n" for i in range(n))
        return lambda: added_rows(before, before.replace("x.cuda()", "x.to(device)"))

    small, large = _lines(work(300)), _lines(work(1200))
    assert large <= LIMIT * small, f"{large} lines run at 4N against {small} at N: {large / small:.2f}x"


def test_a_notebook_cell_fixed_on_every_line_costs_linear_work() -> None:
    # the new source of a fixed cell keeps the JSON text of its unchanged lines: matched with
    # difflib's matcher, a long cell edited in every function took time that grew with its square
    def work(n: int) -> Callable[[], object]:
        source = "".join(f"def f{i}(x):\n    return x.cuda()\n\n\n" for i in range(n))
        cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source.splitlines(keepends=True)}
        notebook = read_notebook(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode())
        return lambda: notebook.with_sources({1: source.replace("x.cuda()", "x.to(device)")})

    small, large = _lines(work(100)), _lines(work(400))
    assert large <= LIMIT * small, f"{large} lines run at 4N against {small} at N: {large / small:.2f}x"


def _lines(work: Callable[[], object]) -> int:
    """Lines of Python run by ``work``."""
    count = 0

    def trace(frame: object, event: str, arg: object) -> Callable[..., object]:
        nonlocal count
        if event == "line":
            count += 1
        return trace

    sys.settrace(trace)
    try:
        work()
    finally:
        sys.settrace(None)
    return count


def test_a_function_of_many_parameters_costs_linear_work() -> None:
    # Each parameter's reaching definitions found it by a scan of every parameter, and binding
    # the parameters compared each with every one (LibCST's nodes compare in Python): N squared
    # for N parameters each read (5.8x at 4N). The scan makes no call: lines run count it, the
    # comparisons calls.
    def work(n: int) -> Callable[[], object]:
        text = SHAPES["a function of many parameters, each moved"](n)
        return lambda: lint_text(text, "generated.py", all_rules(), FixSettings(torch_version=(2, 4)))

    small, large = _lines(work(300)), _lines(work(1200))
    assert large <= LIMIT * small, f"{large} lines run at 4N against {small} at N: {large / small:.2f}x"
    small, large = _calls(work(300)), _calls(work(1200))
    assert large <= LIMIT * small, f"{large} calls at 4N against {small} at N: {large / small:.2f}x"


def test_findings_on_one_long_line_share_its_text() -> None:
    # Each finding carries its source line: cut from the text once per finding, N findings on
    # one line held N copies of it (a list of 10,000 `.cuda()` calls: 3 GB, most of the time).
    text = SHAPES["calls on one long line"](200)
    found = lint_text(text, "generated.py", all_rules(), FixSettings(torch_version=(2, 4)))
    lines = [finding.source_line for finding in found if finding.location.row == text.count("\n")]
    assert len(lines) >= 200
    assert len({id(line) for line in lines}) == 1


def test_a_large_text_with_lone_carriage_returns_is_walked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A tree stitched from sections must print back to its text, which no tree of a text with a
    # lone `\r` does: such a text was parsed in sections, then again whole, and walked twice.
    import devlint.engine.lint as engine

    walks = []
    real = engine.walk
    monkeypatch.setattr(engine, "walk", lambda *args: (walks.append(1), real(*args))[1])
    body = "".join(f"def f{i}(x):\n    return x.cuda()\n" for i in range(2000))
    assert len(body) > 4 * 16 * 1024
    found = lint_text((HEAD + body).replace("\n", "\r"), "generated.py", all_rules(), FixSettings(torch_version=(2, 4)))
    assert len(walks) == 1
    assert len(found) >= 2000


def test_verifys_map_of_changed_lines_costs_linear_work() -> None:
    # `devlint verify` maps each line of the fixed program to the original's (line_map, and the
    # rows a project copy changed): with difflib's matcher a 6,000-line file took minutes.
    def work(n: int) -> Callable[[], object]:
        before = "import torch\n" + "".join(f"def f{i}(x):\n    d = 'cuda'\n    return x.to(d)\n" for i in range(n))
        after = before.replace("d = 'cuda'\n", "d = 'cuda' if torch.cuda.is_available() else 'cpu'\n")
        return lambda: (line_map(after, before), _edited("generated.py", before.encode(), after.encode()))

    small, large = _lines(work(100)), _lines(work(400))
    assert large <= LIMIT * small, f"{large} lines run at 4N against {small} at N: {large / small:.2f}x"
