"""From what the runs left behind to one cell per program and column: pass, FAIL, skipped, n/a.

The columns (docs/verify.md, "The runs"):

- ``original``: the program as written, on the GPU, else under emulated CUDA. It is the
  reference. When it fails (often with the very bug the fix repairs, such as loss weights left on
  the CPU) it is ``skipped (original fails: ...)``, and the fixed runs are compared with each
  other instead.
- ``cpu``: the fixed program with every GPU hidden, compared with the original under emulation
  (on both sides random numbers come from the CPU generator). Output that names the device
  (``cuda`` vs ``cpu``) or that the fixed program itself prints differently on each device
  while its CUDA run agrees with the original, is the program's own design: the cell says so.
- ``cuda``: the fixed program on the GPU, else under emulation, compared with the original.
- ``emulation`` (only on a machine with a GPU): whether the original under emulation agreed
  with the original on the GPU.

A pass is never silent: a run with nothing to compare with says so in its cell, and so does a
run that emulation cannot carry out (``n/a (not emulated: ...)``). A comparison made at a reduced
precision says so (``compared at float16 tolerance``, see precision.py), and so does one that set
aside printed lines that vary from run to run (``2 varying lines set aside``, see noise.py). Every
cell whose printed output differs keeps the first differing lines (``Cell.differing_lines``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from devlint.torchfacts.api_versions import names_in, newest

from devlint.verify.noise import Noise
from devlint.verify.precision import precision
from devlint.verify.session import Pair, Probe, RunRecord
from devlint.verify.targets import Program
from devlint.verify.textcompare import compare_text

MODES = ("original", "cpu", "cuda")
# What a run's notes say when the program drew random numbers on the emulated device (the child
# side's emulation/rng.py writes it; this side matches its start).
RANDOM_NOTE = "random numbers drawn on the device"
# An emulated run's twin whose device draws come from the CPU generator (session.HOST_TWINS): it
# stands in for that run in a comparison with the cpu run, which draws those numbers on the CPU.
HOST_TWINS = {
    "original": "host_random_original",
    "emulated_original": "host_random_original",
    "cuda": "host_random_cuda",
    "emulated_cuda": "host_random_cuda",
}
AGREEMENT = "emulation"
PASS, FAIL, SKIPPED, NA, DIFFERS = "pass", "FAIL", "skipped", "n/a", "differs"

# A reference as a cell names it; the JSON's compared_with names the exact run.
_SHORT = {
    "original": "original",
    "cpu": "cpu",
    "cuda": "cuda",
    "emulated_original": "original",
    "emulated_cuda": "cuda",
    "host_random_original": "original",
    "host_random_cuda": "cuda",
}
_LABELS = {
    "original": "original",
    "cpu": "fixed on cpu",
    "cuda": "fixed on cuda",
    "emulated_original": "original under emulation",
    "emulated_cuda": "fixed under emulation",
    "host_random_original": "original under emulation (device numbers from the CPU generator)",
    "host_random_cuda": "fixed under emulation (device numbers from the CPU generator)",
}


@dataclass(frozen=True)
class Cell:
    status: str
    reason: str = ""
    detail: str = ""
    # The run this one was compared with; None when there was none.
    compared_with: str | None = None
    # The run ran under emulated CUDA.
    emulated: bool = False
    # Printed output that differs from the reference's: the first lines, as a unified diff.
    differing_lines: tuple[str, ...] = ()

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


@dataclass(frozen=True)
class Roles:
    """Which run plays which part on this machine (see session.plan)."""

    gpu: bool

    @property
    def emulated_original(self) -> str:
        return "emulated_original" if self.gpu else "original"

    @property
    def emulated_cuda(self) -> str:
        return "emulated_cuda" if self.gpu else "cuda"

    def references(self, mode: str) -> tuple[str, ...]:
        """The runs ``mode`` is compared with, best first."""
        if mode == "cpu":
            return (self.emulated_original, self.emulated_cuda)
        if mode == "cuda":
            return ("original", "cpu")
        return ("original",)

    def label(self, name: str) -> str:
        if name == "original":
            return f"original on {'cuda' if self.gpu else 'emulated cuda'}"
        if name == "cuda" and not self.gpu:
            return "fixed on emulated cuda"
        return _LABELS[name]


def twin(name: str, runs: dict[str, RunRecord]) -> str:
    """The run that stands for ``name`` in a comparison with the cpu run."""
    found = HOST_TWINS.get(name)
    return found if found in runs and runs[found].ok else name


def pairs(index: int, runs: dict[str, RunRecord], gpu: bool, tolerance: Tolerance) -> list[Pair]:
    """The saved results a verdict may compare (what main() returned, on both sides), each at
    the precision the two runs computed in."""
    roles = Roles(gpu)
    wanted = {(mode, ref) for mode in ("cpu", "cuda") for ref in roles.references(mode)}
    wanted |= {(twin(a, runs), twin(b, runs)) for a, b in list(wanted) if "cpu" in (a, b)}
    wanted.add((roles.emulated_cuda, roles.emulated_original))
    if gpu:
        wanted.add((roles.emulated_original, "original"))
    found = []
    for a, b in sorted(wanted):
        if a in runs and b in runs and runs[a].has_result and runs[b].has_result:
            at = precision(runs[a], runs[b], tolerance.rtol, tolerance.atol)
            found.append(Pair(pair_id(index, a, b), runs[a].result, runs[b].result, at.rtol, at.atol, at.dtype is not None))
    return found


def pair_id(index: int, actual: str, expected: str) -> str:
    return f"{index}:{actual}:{expected}"


@dataclass(frozen=True)
class Comparison:
    agree: bool
    reason: str = ""
    detail: str = ""
    # Agreement only once device names (cuda, cpu) were set aside.
    device_names: bool = False
    # Neither run returned or printed anything.
    empty: bool = False
    # What the comparison allowed, for the cell's reason: `compared at float16 tolerance`,
    # `2 varying lines set aside`.
    allowances: tuple[str, ...] = ()
    differing_lines: tuple[str, ...] = ()


class Judge:
    """The cells of one program's row: ``Judge(...).row()``."""

    def __init__(
        self,
        index: int,
        program: Program,
        runs: dict[str, RunRecord],
        answers: dict[str, dict[str, Any]],
        probe: Probe,
        tolerance: Tolerance,
        noise: dict[str, Noise] | None = None,
    ) -> None:
        """``noise``: by run name, what that run prints differently each time (learned from it and
        its run once more; see noise.py), set aside where it is the reference."""
        self.index = index
        self.program = program
        self.runs = runs
        self.answers = answers
        self.roles = Roles(probe.cuda)
        self.tolerance = tolerance
        self.torch = probe.torch
        self.noise = noise or {}
        # The references whose printed output some comparison found different, with no noise
        # known for them: running them once more tells what of it varies by itself.
        self.unsteady: set[str] = set()

    def row(self) -> Row:
        row = Row(self.program)
        row.cells["original"] = self.original()
        row.cells["cpu"] = self.fixed("cpu")
        row.cells["cuda"] = self.fixed("cuda")
        if self.roles.gpu:
            row.cells[AGREEMENT] = self.agreement()
        return row

    # -- the columns ---------------------------------------------------------------------------

    def original(self) -> Cell:
        run = self.runs["original"]
        emulated = not self.roles.gpu
        if run.ok:
            where = "on cuda" if self.roles.gpu else "emulated cuda"
            return Cell(PASS, "; ".join([where, *run.notes]), emulated=emulated)
        failed = self.failed(run)
        if run.outcome == "not_emulated":
            return Cell(SKIPPED, failed.reason, failed.detail, emulated=emulated)
        return Cell(SKIPPED, f"original fails: {failed.reason}", failed.detail, emulated=emulated)

    def fixed(self, mode: str) -> Cell:
        run = self.runs[mode]
        emulated = self.emulated(mode)
        older = self.older_torch()
        if older is not None:
            return Cell(SKIPPED, older, emulated=emulated)
        if not run.ok:
            cell = self.failed(run)
            if run.outcome == "not_emulated":
                return Cell(NA, cell.reason, cell.detail, emulated=emulated)
            too_new = self.too_new()
            if too_new is not None:
                return Cell(SKIPPED, too_new, cell.detail, emulated=emulated)
            if run.outcome in ("needs_cuda", "unhid_gpu") and self.program.remaining:
                hint = (
                    f"unfixed findings: {', '.join(self.program.remaining)} (`devlint check` says which fix each "
                    "needs: a newer `--torch-version`, or --unsafe-fixes)"
                )
                cell = Cell(cell.status, cell.reason, f"{cell.detail}\n{hint}")
            return Cell(cell.status, cell.reason, cell.detail, emulated=emulated)
        original = self.runs["original"]
        if mode == "cuda" and original.ok and original.cuda_used and not run.cuda_used:
            detail = "the original used CUDA; the fixed program ran without initialising it"
            return Cell(FAIL, "never used the GPU", detail, "original", emulated)
        ref = next((name for name in self.roles.references(mode) if name in self.runs and self.runs[name].ok), None)
        if ref is None:
            return Cell(PASS, "no reference", self.why_no_reference(), emulated=emulated)
        across = mode == "cpu" or ref == "cpu"
        if across:
            ref = "cpu" if ref == "cpu" else twin(ref, self.runs)
        found = self.compare(twin(mode, self.runs) if across and mode != "cpu" else mode, ref, across)
        notes = [*run.notes]
        if found.agree:
            if found.empty:
                return Cell(PASS, "nothing to compare", found.detail, emulated=emulated)
            reason = f"= {_SHORT[ref]}"
            reason += "; stdout" if not (run.has_result or self.runs[ref].has_result) else ""
            reason += "; prints its device" if found.device_names else ""
            return Cell(PASS, "; ".join([reason, *found.allowances, *notes]), found.detail, ref, emulated)
        if mode == "cpu" and ref in (self.roles.emulated_original, twin(self.roles.emulated_original, self.runs)) and self.depends_on_device():
            detail = (
                f"{found.detail}\nthe fixed program's own CUDA run agrees with the original, so the fix keeps what "
                "CUDA does; on the CPU the fixed program prints otherwise. That is by design where the output "
                "depends on the device (`use_amp = device.type == \"cuda\"`, a line printed only on a GPU); it "
                "is a difference to look at where code relies on `.cuda()` copying: on the CPU `.to(device)` "
                "and `.cpu()` return the same tensor, so an in-place change reaches the original"
            )
            reason = "; ".join(["= original on cuda; cpu output differs", *found.allowances])
            return Cell(PASS, reason, detail.strip(), ref, emulated, found.differing_lines)
        return Cell(FAIL, found.reason, found.detail, ref, emulated, found.differing_lines)

    def agreement(self) -> Cell:
        """Emulation against the GPU, for the original (only with a GPU)."""
        emulated, real = self.runs[self.roles.emulated_original], self.runs["original"]
        if not emulated.ok:
            failed = self.failed(emulated)
            status = NA if emulated.outcome == "not_emulated" else DIFFERS
            reason = failed.reason if status == NA else f"fails under emulation: {failed.reason}"
            return Cell(status, reason, failed.detail, emulated=True)
        if not real.ok:
            return Cell(NA, "the original fails on the GPU", emulated=True)
        # Its differences are the GPU's own (random numbers drawn there): no reason to run the
        # original on the GPU again; where the cuda column found noise, it is set aside here too.
        found = self.compare(self.roles.emulated_original, "original", across=False, ask_again=False)
        if found.agree:
            reason = "; ".join(["agrees with the GPU", *found.allowances])
            return Cell(PASS, reason, compared_with="original", emulated=True)
        return Cell(DIFFERS, found.reason, found.detail, "original", True, found.differing_lines)

    # -- helpers -------------------------------------------------------------------------------

    def older_torch(self) -> str | None:
        """Why this torch proves nothing about the fixes: it is older than the `torch-version` they
        were written for (they may call what it lacks, or choose otherwise than they would on it)."""
        running = re.match(r"(\d+)\.(\d+)", self.torch)
        target = self.program.torch_version
        if running is None or target is None or target <= (int(running[1]), int(running[2])):
            return None
        return f"the fixes target torch {target[0]}.{target[1]} (torch-version); this is torch {self.torch}"

    def too_new(self) -> str | None:
        """Why the fixed program cannot run on this torch: it calls an API of a newer release (its
        own, or one its fixes wrote where the program's `torch-version` allowed it), None when it
        does not. Its failure then says nothing about the fixes."""
        running = re.match(r"(\d+)\.(\d+)", self.torch)
        needed = newest(names_in(self.program.fixed.decode("utf-8", "replace")))
        if running is None or needed is None or needed.since <= (int(running[1]), int(running[2])):
            return None
        return f"the fixed program calls {needed.name} (torch {needed.since[0]}.{needed.since[1]}); this is torch {self.torch}"

    def emulated(self, mode: str) -> bool:
        """The run was given an emulated GPU (the CPU run has emulation too, with no GPU to show)."""
        return mode != "cpu" and not self.roles.gpu

    def depends_on_device(self) -> bool:
        cuda, original = self.roles.emulated_cuda, self.roles.emulated_original
        if not (cuda in self.runs and self.runs[cuda].ok):
            return False
        return self.compare(cuda, original, across=False).agree

    def compare(self, actual: str, expected: str, across: bool, ask_again: bool = True) -> Comparison:
        """``across``: the two runs were on different devices, so device names may differ.
        ``ask_again``: printed output that differs puts ``expected`` in ``unsteady``."""
        run, against = self.runs[actual], self.runs[expected]
        names = f"{self.roles.label(actual)} vs {self.roles.label(expected)}"
        at = precision(run, against, self.tolerance.rtol, self.tolerance.atol)
        allowances = (at.said(),) if at.dtype else ()
        if run.has_result and against.has_result:
            answer = self.answers.get(pair_id(self.index, actual, expected))
            if answer is None:
                return Comparison(False, "not compared", "the comparison of the results did not run")
            if answer.get("error"):
                return Comparison(False, "could not compare", f"{names}: {answer['error']}")
            mismatches = answer.get("mismatches") or []
            if mismatches:
                lines = [f"{m['path']}: {names}: {_difference(m)}" for m in mismatches]
                return Comparison(False, f"differs at {mismatches[0]['path']}", _joined(*lines, at.describe()))
            return Comparison(True, detail=at.describe(), allowances=allowances)
        if run.has_result != against.has_result:
            which = self.roles.label(actual if run.has_result else expected)
            return Comparison(False, "results differ", f"{names}: only the {which} run returned a value from main()")
        if not run.stdout.strip() and not against.stdout.strip():
            return Comparison(True, detail="both runs returned nothing from main() and printed nothing", empty=True)
        noise = self.noise.get(expected)
        if noise is not None and noise.lines:
            allowances += (noise.set_aside(),)
        mismatch = compare_text(run.stdout, against.stdout, at.rtol, at.atol, mask=noise)
        reference = self.roles.label(expected)
        set_aside = noise.describe(reference) if noise is not None else ""
        if mismatch is None:
            said = set_aside if noise is not None and noise.lines else ""
            return Comparison(True, detail=_joined(at.describe(), said), allowances=allowances)
        if across and compare_text(run.stdout, against.stdout, at.rtol, at.atol, ignore_devices=True, mask=noise) is None:
            detail = f"{names}: {mismatch.describe()}: only the device named differs"
            return Comparison(True, detail=detail, device_names=True, allowances=allowances)
        if noise is None and ask_again:
            self.unsteady.add(expected)
        detail = _joined(f"{names}: {mismatch.describe()}", at.describe(), set_aside)
        excerpt = tuple(mismatch.excerpt(self.roles.label(actual), reference))
        reason = f"stdout differs at line {mismatch.line}"
        return Comparison(False, reason, detail, allowances=allowances, differing_lines=excerpt)

    def why_no_reference(self) -> str:
        original = self.runs["original"]
        return f"ran; the original did not ({original.outcome}), and neither did another run to compare with"

    def failed(self, run: RunRecord) -> Cell:
        outcome = run.outcome
        if outcome == "harness":
            return Cell(FAIL, "not run", run.problem or "")
        if outcome == "timeout":
            return Cell(FAIL, f"timed out after {run.limit:g} s", run.stderr_tail())
        if outcome == "died":
            return Cell(FAIL, f"died (exit status {run.rc})", run.stderr_tail())
        if outcome == "needs_cuda":
            return Cell(FAIL, f"needs CUDA{self.at(run)}", self.message(run))
        if outcome == "mixed_devices":
            return Cell(FAIL, f"mixes devices{self.at(run)}", self.message(run))
        if outcome == "not_emulated":
            return Cell(NA, f"not emulated{self.at(run)}", self.message(run) or run.stderr_tail())
        if outcome == "unhid_gpu":
            if "DEV201" in self.program.remaining:
                # The program picks its own GPU, and the fix that would stop it is unsafe (the
                # launcher's choice then wins): no CPU run can be had, which is no wrong fix.
                return Cell(
                    SKIPPED,
                    "sets CUDA_VISIBLE_DEVICES itself: DEV201, fixed with --unsafe-fixes",
                    self.message(run),
                )
            return Cell(FAIL, "uses a GPU it was not given", self.message(run))
        kind = str((run.status or {}).get("message", "error")).split(":", 1)[0]
        return Cell(FAIL, f"{kind}{self.at(run)}", self.message(run))

    def at(self, run: RunRecord) -> str:
        """Where in the user's file: the original's line, else the line of the code the run ran."""
        line = (run.status or {}).get("line")
        if not line:
            return ""
        original = self.program.original_line(run.mode in ("original", "emulated_original", "host_random_original"), line)
        return f" at line {original}" if original is not None else f" at line {line} of the fixed code"

    def message(self, run: RunRecord) -> str:
        status = run.status or {}
        message = str(status.get("message", ""))
        if status.get("source"):
            ran = "as written" if run.mode in ("original", "emulated_original", "host_random_original") else "as run"
            message += f"\n  {self.program.display}{self.at(run)} ({ran}): {status['source']}"
        return message


def _joined(*parts: str) -> str:
    return "\n".join(part for part in parts if part)


def _difference(mismatch: dict[str, Any]) -> str:
    diff = mismatch.get("max_abs_diff")
    prefix = "" if diff is None else f"largest absolute difference {diff:.3g}; "
    return prefix + str(mismatch.get("message", ""))
