"""Test by test: did the fixes change the outcome, and why (`devlint verify --tests`).

Each run of the fixed tree (``cuda``, ``cpu``) is compared with the reference (the original on the
GPU, else under emulation). The runs prove something only where tests ran (``unproven`` says why
they do not: a run that died, collected nothing or ran no test, a module that imports in one run
and not in another). A test's verdict in a run is one of:

- ``same``: the same outcome (failures: the same message, device names and the copies' paths set
  aside);
- ``gpu-gated`` (``cpu``): the test's own GPU gate: it runs in the fixed tree with (emulated) CUDA
  and is skipped or not collected without it (or, without the cuda run, skips by a reason that names
  CUDA, a GPU or a device, or is not collected while its id names one); also every test of a module
  that collects other tests without CUDA (its ids may name other cases there);
- ``needs-cuda`` (``cpu``): it fails on the CPU because the code still calls CUDA where no fix
  reached, as the original would;
- ``now-passes``: it failed on the original and passes after the fix (a test failing before and
  after, whatever the message, is listed as failing on the original, not as a change);
- ``changed``: anything else: the fix changed what the test sees. Only this counts as a change.

The cause of a failure is named where devlint can tell: a line a fix wrote in its traceback, a
call emulation does not model, a test that compares device names, or, for a change on the CPU
alone, the fixed ``.to(...)`` lines (on the CPU they return the tensor itself, not a copy).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from devlint.verify.child.harness import _NEEDS_CUDA as NEEDS_CUDA
from devlint.verify.project_copy import FixedFile
from devlint.verify.suite_runs import Outcome, RunResult
from devlint.verify.textcompare import compare_text

SAME, GATED, NEEDS, NOW_PASSES, CHANGED = "same", "gpu-gated", "needs-cuda", "now-passes", "changed"
RAN = ("passed", "failed", "error", "xfailed", "xpassed")
FAILING = ("failed", "error")
_GPU_WORDS = re.compile(r"cuda|gpu|accelerator|device|nvidia|rocm", re.IGNORECASE)
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
_CUDA_NAME = re.compile(r"\bcuda(?::\d+)?\b")
_CPU_NAME = re.compile(r"\bcpu\b")
# A fixed line that moves a value to the device a fix chose.
_MOVE = re.compile(r"\.to\(")
_SHOWN = 3


@dataclass(frozen=True)
class Verdict:
    verdict: str
    outcome: Outcome | None
    causes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TestRow:
    nodeid: str
    reference: Outcome | None
    verdicts: dict[str, Verdict]

    @property
    def changed(self) -> bool:
        return any(v.verdict == CHANGED for v in self.verdicts.values())

    @property
    def fails_on_original(self) -> bool:
        return self.reference is not None and self.reference.outcome in FAILING and not self.changed

    @property
    def emulation_only(self) -> bool:
        return any(v.verdict == GATED for v in self.verdicts.values())


def ran(outcome: Outcome | None) -> bool:
    """The test itself ran: only then does its outcome prove anything (an error while collecting
    its module or in its setup ran none of it)."""
    return outcome is not None and outcome.outcome in RAN and outcome.when in ("call", "teardown")


def unproven(reference: RunResult, fixed_runs: list[RunResult]) -> list[str]:
    """Why the runs cannot verify the fixes (empty when they can). A run whose command did not
    start or timed out is the caller's to report, and is left out here."""
    runs = [result for result in (reference, *fixed_runs) if result.problem is None and not result.timed_out]
    problems = [f"the {result.run.name} run {why}" for result in runs if (why := _died(result)) is not None]
    if reference in runs and not problems and not any(ran(o) for o in reference.outcomes.values()):
        problems.append(
            f"the reference run ran no test ({len(reference.outcomes)} recorded, none ran): there is nothing to compare with"
        )
    # A module that imports in one run and not in another: under emulation or on the GPU that is
    # emulation or the run breaking, not a test's outcome (a module that fails to import only on
    # the CPU is the suite's own GPU gate or code that still needs CUDA: judged test by test).
    for result in (run for run in runs if not run.run.hidden):
        for nodeid, outcome in result.outcomes.items():
            if outcome.when != "collect":
                continue
            module = nodeid.split("::", 1)[0]
            other = next((run for run in runs if run is not result and _module_ran(run, module)), None)
            if other is not None:
                problems.append(
                    f"the {result.run.name} run could not collect {nodeid}, which ran in the {other.run.name} run: "
                    f"{outcome.message}"
                )
    return problems


def _died(result: RunResult) -> str | None:
    """Why a run proves nothing at all, None when it may."""
    status = result.exit_status
    if status is not None and status < 0:
        return f"was killed by signal {-status}{_stderr(result)}"
    # pytest's exit statuses 3 and 4: an internal error, a usage error.
    if status in (3, 4):
        return f"ended with pytest's {'internal' if status == 3 else 'usage'} error (exit status {status}){_stderr(result)}"
    if not result.outcomes:
        return (
            f"recorded no test (exit status {status}){_stderr(result)}; "
            "verify --tests reads pytest's outcomes: is the command a pytest run?"
        )
    if all(outcome.when == "collect" for outcome in result.outcomes.values()):
        nodeid, first = next(iter(result.outcomes.items()))
        return f"could not collect any test (exit status {status}): {nodeid}: {first.message}"
    return None


def _stderr(result: RunResult) -> str:
    tail = result.stderr_tail.splitlines()[-3:]
    return f": {' | '.join(tail)}" if tail else ""


def _module_ran(run: RunResult, module: str) -> bool:
    return any(ran(o) and nodeid.split("::", 1)[0] == module for nodeid, o in run.outcomes.items())


def judge(reference: RunResult, fixed_runs: list[RunResult], fixes: list[FixedFile]) -> list[TestRow]:
    edited = {file.path: file for file in fixes}
    ids = list(reference.outcomes)
    for run in fixed_runs:
        ids += [nodeid for nodeid in run.outcomes if nodeid not in reference.outcomes and nodeid not in ids]
    # The cpu and cuda runs run the same fixed tree; only CUDA differs between them.
    with_cuda = next((run for run in fixed_runs if not run.run.hidden), None)
    rows = []
    for nodeid in ids:
        ref = reference.outcomes.get(nodeid)
        verdicts = {
            run.run.name: _gated(nodeid, run, with_cuda) or _verdict(nodeid, ref, run, reference, edited)
            for run in fixed_runs
        }
        rows.append(TestRow(nodeid, ref, _cpu_only(verdicts, fixes)))
    return rows


def _gated(nodeid: str, run: RunResult, with_cuda: RunResult | None) -> Verdict | None:
    """The suite's own GPU gate, told apart from a change by the fixed tree's run with CUDA: a
    test that runs there but is skipped or not collected without CUDA, whatever its name or skip
    reason says (a suite may define its CUDA tests only where a GPU is found); and the tests of a
    module that collects other tests without CUDA (parameters that depend on it renumber the ids,
    so the same id may name another case)."""
    if not run.run.hidden or with_cuda is None:
        return None
    there, here = with_cuda.outcomes.get(nodeid), run.outcomes.get(nodeid)
    if there is not None and there.outcome in RAN and (here is None or here.outcome == "skipped"):
        return Verdict(GATED, here, ("runs with CUDA, skipped or not collected without it: the suite's own GPU gate",))
    module = nodeid.split("::", 1)[0]
    if _module_ids(with_cuda, module) != _module_ids(run, module) and (here is None or there is None or here.outcome != there.outcome):
        return Verdict(GATED, here, ("its module collects other tests without CUDA: not compared",))
    return None


def _module_ids(run: RunResult, module: str) -> list[str]:
    return [nodeid for nodeid in run.outcomes if nodeid.split("::", 1)[0] == module]


def _cpu_only(verdicts: dict[str, Verdict], fixes: list[FixedFile]) -> dict[str, Verdict]:
    """A change seen only on the CPU, with nothing else to name: the fixed code passes on (emulated)
    CUDA, so what differs is the CPU, where ``.to(device)`` returns the tensor itself while the
    ``.cuda()`` it replaced made a copy; name the fixed lines that do that."""
    cpu, cuda = verdicts.get("cpu"), verdicts.get("cuda")
    if cpu is None or cuda is None or cpu.verdict != CHANGED or cpu.causes or cuda.verdict != SAME:
        return verdicts
    moves = [f"{file.path}:{row}" for file in fixes for row, text in file.text.items() if _MOVE.search(text)]
    if not moves:
        return verdicts
    shown = ", ".join(moves[:_SHOWN]) + (f" and {len(moves) - _SHOWN} more" if len(moves) > _SHOWN else "")
    cause = (
        "only the CPU run changed: there `.to(device)` returns the tensor itself where `.cuda()` "
        f"copied it, so code that changes the copy changes the original (fixed lines: {shown})"
    )
    return {**verdicts, "cpu": Verdict(CHANGED, cpu.outcome, (cause,))}


def _verdict(
    nodeid: str, ref: Outcome | None, run: RunResult, reference: RunResult, edited: dict[str, FixedFile]
) -> Verdict:
    got = run.outcomes.get(nodeid)
    cpu = run.run.hidden
    if ref is None:
        # Only in the fixed tree: nothing to compare with; not a change of an existing test.
        return Verdict(SAME, got)
    if got is None:
        if cpu and ref.outcome in RAN and _GPU_WORDS.search(nodeid.split("::")[-1]):
            return Verdict(GATED, None)
        return Verdict(CHANGED, None, ("not run: the test was not collected in this run",))
    if _same(ref, got, reference.tree, run.tree):
        return Verdict(SAME, got)
    if cpu and ref.outcome in RAN and got.outcome == "skipped" and _GPU_WORDS.search(got.message):
        return Verdict(GATED, got)
    causes = _causes(got, run.tree, edited)
    if cpu and got.outcome in FAILING and NEEDS_CUDA.search(got.message) and ref.outcome not in FAILING:
        return Verdict(NEEDS, got, causes)
    if ref.outcome in FAILING and got.outcome in ("passed", "xpassed"):
        return Verdict(NOW_PASSES, got)
    if ref.outcome in FAILING and got.outcome in FAILING:
        # It failed on the original and fails after the fix, with another message: listed with
        # the tests that fail on the original, not as a change the fix made.
        return Verdict(SAME, got, (f"fails on the original too; now: {got.message}",))
    return Verdict(CHANGED, got, causes)


def _same(ref: Outcome, got: Outcome, ref_tree: Path, tree: Path) -> bool:
    if ref.outcome != got.outcome:
        return False
    if ref.outcome not in FAILING:
        return True
    return compare_text(_plain(got.message, tree), _plain(ref.message, ref_tree), ignore_devices=True) is None


def _plain(message: str, tree: Path) -> str:
    return _ADDRESS.sub("0x?", message.replace(str(tree), "<project>"))


def _causes(got: Outcome, tree: Path, edited: dict[str, FixedFile]) -> tuple[str, ...]:
    causes = []
    for file, row in reversed(got.frames):
        try:
            relative = Path(os.path.abspath(file)).relative_to(tree).as_posix()
        except ValueError:
            continue
        fixed = edited.get(relative)
        if fixed is not None and row in fixed.edited:
            causes.append(f"a fixed line is in its traceback: {relative}:{row}: {fixed.text[row]}")
    if "not emulated:" in got.message:
        causes.append("emulation does not model a call it made: " + got.message[got.message.index("not emulated:"):])
    elif got.outcome in FAILING and NEEDS_CUDA.search(got.message):
        causes.append("the code still needs CUDA where no fix reached (the original would fail the same way)")
    if got.message.startswith(("assert", "AssertionError")) and _CUDA_NAME.search(got.message) and _CPU_NAME.search(got.message):
        causes.append("the test compares device names: the fixed code picks the device it finds (cpu here)")
    return tuple(causes)
