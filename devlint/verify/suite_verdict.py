"""Test by test: did the fixes change the outcome, and why (`devlint verify --tests`).

Each run of the fixed tree (``cuda``, ``cpu``) is compared with the reference (the original under
emulation). A test's verdict in a run is one of:

- ``same``: the same outcome (failures: the same message, device names and the copies' paths set
  aside);
- ``gpu-gated`` (``cpu``): it ran in the reference and skips on the CPU by a skip that names CUDA,
  a GPU or a device, or is not collected there while its id names one: the test's own GPU gate;
- ``needs-cuda`` (``cpu``): it fails on the CPU because the code still calls CUDA where no fix
  reached, as the original would;
- ``now-passes``: it failed on the original and passes after the fix;
- ``changed``: anything else: the fix changed what the test sees. Only this counts as a change.

The cause of a failure is named where devlint can tell: a line a fix wrote in its traceback, a
call emulation does not model, or a test that compares device names.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from devlint.verify.harness import _NEEDS_CUDA as NEEDS_CUDA
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


def judge(reference: RunResult, fixed_runs: list[RunResult], fixes: list[FixedFile]) -> list[TestRow]:
    edited = {file.path: file for file in fixes}
    ids = list(reference.outcomes)
    for run in fixed_runs:
        ids += [nodeid for nodeid in run.outcomes if nodeid not in reference.outcomes and nodeid not in ids]
    rows = []
    for nodeid in ids:
        ref = reference.outcomes.get(nodeid)
        verdicts = {
            run.run.name: _verdict(nodeid, ref, run, reference, edited) for run in fixed_runs
        }
        rows.append(TestRow(nodeid, ref, verdicts))
    return rows


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
