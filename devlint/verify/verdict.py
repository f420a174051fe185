"""From what the runs left behind to one cell per program and run: pass, FAIL, skipped or n/a.

The columns:

- ``original``: the program as written, on CUDA when torch sees a GPU, else on the CPU. It is
  the reference the fixed code is compared with. Without a GPU, a program that fails because
  CUDA is unavailable is ``skipped (needs CUDA)``; any other failure is ``skipped (original
  fails: ...)``: no reference, and the fixed runs are judged on their own.
- ``cpu``: the fixed program with every GPU hidden, compared with the original.
- ``cuda``: the fixed program on the GPU, compared with the original (or, when the original did
  not run, with the fixed program on the CPU); ``skipped (torch sees no GPU)`` without one.
- ``meta``: the fixed program with its device set to meta, under the device-mixing guard; its
  result must have the structure, dtypes and shapes of the CPU run's.

A pass is never silent: a run with nothing to compare with says so in its cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from devlint.verify.session import Pair, Probe, RunRecord
from devlint.verify.targets import Program
from devlint.verify.textcompare import compare_text

MODES = ("original", "cpu", "cuda", "meta")
PASS, FAIL, SKIPPED, NA = "pass", "FAIL", "skipped", "n/a"

_VALUE_READS = {
    "item": "`.item()`",
    "tolist": "`.tolist()`",
    "numpy": "`.numpy()`",
    "__array__": "a NumPy conversion",
    "__bool__": "`bool()` of a tensor",
    "__float__": "`float()` of a tensor",
    "__int__": "`int()` of a tensor",
    "__index__": "a tensor used as an index",
    "__complex__": "`complex()` of a tensor",
    "__repr__": "printing a tensor",
    "__format__": "formatting a tensor",
    "equal": "`torch.equal`",
    "allclose": "`torch.allclose`",
    "is_nonzero": "`is_nonzero()`",
    "cpu": "`.cpu()`",
    "to": "`.to()` a real device",
    "copy_": "`copy_` from meta",
}


@dataclass(frozen=True)
class Cell:
    status: str
    reason: str = ""
    detail: str = ""
    compared_with: str | None = None

    def text(self) -> str:
        return f"{self.status} ({self.reason})" if self.reason else self.status


@dataclass
class Row:
    program: Program
    cells: dict[str, Cell] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return any(cell.status == FAIL for cell in self.cells.values())


@dataclass(frozen=True)
class Tolerance:
    rtol: float | None = None
    atol: float | None = None


def reference(mode: str, runs: dict[str, RunRecord]) -> str | None:
    """The run that ``mode``'s run is compared with, if any ran."""
    if mode not in ("cpu", "cuda") or mode not in runs or not runs[mode].ok:
        return None
    if runs["original"].ok:
        return "original"
    if mode == "cuda" and runs["cpu"].ok:
        return "cpu"
    return None


def pairs(index: int, runs: dict[str, RunRecord]) -> list[Pair]:
    """The saved results to compare (what main() returned, on both sides)."""
    found = []
    for mode in ("cpu", "cuda"):
        ref = reference(mode, runs)
        if ref is not None and runs[mode].has_result and runs[ref].has_result:
            found.append(Pair(pair_id(index, mode), runs[mode].result, runs[ref].result))
    return found


def pair_id(index: int, mode: str) -> str:
    return f"{index}:{mode}"


def judge(
    index: int,
    program: Program,
    runs: dict[str, RunRecord],
    answers: dict[str, dict[str, Any]],
    probe: Probe,
    tolerance: Tolerance,
) -> Row:
    labels = {
        "original": f"original on {'cuda' if probe.cuda else 'cpu'}",
        "cpu": "fixed on cpu",
        "cuda": "fixed on cuda",
    }
    row = Row(program)
    row.cells["original"] = _original(runs["original"], probe, program)
    for mode in ("cpu", "cuda"):
        if mode not in runs:
            row.cells[mode] = Cell(SKIPPED, "torch sees no GPU")
            continue
        row.cells[mode] = _fixed(mode, runs, answers.get(pair_id(index, mode)), labels, program, tolerance)
    row.cells["meta"] = _meta(runs["meta"], runs["cpu"], program)
    return row


def _original(run: RunRecord, probe: Probe, program: Program) -> Cell:
    if run.ok:
        return Cell(PASS, f"on {'cuda' if probe.cuda else 'cpu'}")
    if run.outcome == "needs_cuda" and not probe.cuda:
        return Cell(SKIPPED, "needs CUDA", _message(run, program))
    # An original that crashes (often with the very bug the fix repairs, e.g. loss weights left
    # on the CPU) is no reference to compare with; the fixed runs say so in their own cells.
    failed = _failed(run, program)
    return Cell(SKIPPED, f"original fails: {failed.reason}", failed.detail)


def _fixed(
    mode: str,
    runs: dict[str, RunRecord],
    answer: dict[str, Any] | None,
    labels: dict[str, str],
    program: Program,
    tolerance: Tolerance,
) -> Cell:
    run = runs[mode]
    if not run.ok:
        cell = _failed(run, program)
        if run.outcome == "needs_cuda" and program.remaining:
            hint = f"unfixed findings: {', '.join(program.remaining)} (some need --unsafe-fixes)"
            cell = Cell(cell.status, cell.reason, f"{cell.detail}\n{hint}", cell.compared_with)
        return cell
    original = runs["original"]
    if mode == "cuda" and original.ok and original.cuda_used and not run.cuda_used:
        return Cell(FAIL, "never used the GPU", "the original used CUDA; the fixed program ran without initialising it")
    ref = reference(mode, runs)
    if ref is None:
        return Cell(PASS, "no reference", _why_no_reference(original))
    against = runs[ref]
    names = f"{labels[mode]} vs {labels[ref]}"
    if run.has_result and against.has_result:
        if answer is None:
            return Cell(FAIL, "not compared", "the comparison of the results did not run", ref)
        if answer.get("error"):
            return Cell(FAIL, "could not compare", f"{names}: {answer['error']}", ref)
        mismatches = answer.get("mismatches") or []
        if mismatches:
            lines = [f"{m['path']}: {names}: {_difference(m)}" for m in mismatches]
            return Cell(FAIL, f"differs at {mismatches[0]['path']}", "\n".join(lines), ref)
        return Cell(PASS, _versus(ref), compared_with=ref)
    if run.has_result != against.has_result:
        which = labels[mode] if run.has_result else labels[ref]
        return Cell(FAIL, "results differ", f"{names}: only the {which} run returned a value from main()", ref)
    mismatch = compare_text(run.stdout, against.stdout, tolerance.rtol, tolerance.atol)
    if mismatch is not None:
        return Cell(FAIL, f"stdout differs at line {mismatch.line}", f"{names}: {mismatch.describe()}", ref)
    if not run.stdout.strip() and not against.stdout.strip():
        return Cell(PASS, "nothing to compare", "both runs returned nothing from main() and printed nothing")
    return Cell(PASS, _versus(ref) + "; stdout", compared_with=ref)


def _versus(ref: str) -> str:
    return "= original" if ref == "original" else f"= {ref}"


def _why_no_reference(original: RunRecord) -> str:
    if original.outcome == "needs_cuda":
        return "ran; the original needs CUDA, so there was nothing to compare with"
    return f"ran; the original did not ({original.outcome}), so there was nothing to compare with"


def _difference(mismatch: dict[str, Any]) -> str:
    diff = mismatch.get("max_abs_diff")
    prefix = "" if diff is None else f"largest absolute difference {diff:.3g}; "
    return prefix + str(mismatch.get("message", ""))


def _meta(run: RunRecord, cpu: RunRecord, program: Program) -> Cell:
    outcome = run.outcome
    if outcome == "needs_values":
        op = str(run.status.get("message", "")) if run.status else ""
        return Cell(NA, f"needs real values: {_VALUE_READS.get(op, op)}{_at(run, program)}", _message(run, program))
    if outcome == "meta_unsupported":
        return Cell(NA, f"not supported on meta{_at(run, program)}", _message(run, program))
    if outcome == "no_meta":
        return Cell(
            NA,
            "no tensor reached the meta device",
            "the fixed program chooses its device in a way verify cannot set to meta, or uses no device",
        )
    if not run.ok:
        return _failed(run, program)
    if not cpu.ok:
        return Cell(PASS, "ran; not compared with the cpu run", "the cpu run failed")
    mismatch = _structure_mismatch(run.status or {}, cpu.status or {})
    if mismatch is not None:
        return Cell(FAIL, "result differs from cpu run", mismatch)
    return Cell(PASS)


def _structure_mismatch(meta: dict[str, Any], cpu: dict[str, Any]) -> str | None:
    ours, theirs = meta.get("leaves") or [], cpu.get("leaves") or []
    if [leaf["path"] for leaf in ours] != [leaf["path"] for leaf in theirs]:
        paths = [leaf["path"] for leaf in ours], [leaf["path"] for leaf in theirs]
        return f"the result has other parts on meta: {paths[0]} vs {paths[1]}"
    for a, b in zip(ours, theirs):
        for key in ("kind", "dtype", "shape"):
            if a.get(key) != b.get(key):
                return f"{a['path']}: {key} {a.get(key)} on meta vs {b.get(key)} on cpu"
    return None


def _failed(run: RunRecord, program: Program) -> Cell:
    outcome = run.outcome
    if outcome == "harness":
        return Cell(FAIL, "not run", run.problem or "")
    if outcome == "timeout":
        return Cell(FAIL, f"timed out after {run.limit:g} s", run.stderr_tail())
    if outcome == "died":
        return Cell(FAIL, f"died (exit status {run.rc})", run.stderr_tail())
    if outcome == "needs_cuda":
        return Cell(FAIL, f"needs CUDA{_at(run, program)}", _message(run, program))
    if outcome == "mixed_devices":
        return Cell(FAIL, f"mixes devices{_at(run, program)}", _message(run, program))
    kind = str((run.status or {}).get("message", "error")).split(":", 1)[0]
    return Cell(FAIL, f"{kind}{_at(run, program)}", _message(run, program))


def _at(run: RunRecord, program: Program) -> str:
    """Where in the user's file: the original's line, else the line of the code the run ran."""
    line = (run.status or {}).get("line")
    if not line:
        return ""
    original = program.original_line(run.mode, line)
    return f" at line {original}" if original is not None else f" at line {line} of the fixed code"


def _message(run: RunRecord, program: Program) -> str:
    status = run.status or {}
    message = str(status.get("message", ""))
    if status.get("source"):
        ran = "as written" if run.mode == "original" else "as run"
        message += f"\n  {program.display}{_at(run, program)} ({ran}): {status['source']}"
    return message
