"""One verify run's processes: the probe, every program in every mode, and the comparisons.

Each run gets a folder under the session's temporary root::

    NN-name/MODE/job.json     what the harness is asked to do
    NN-name/MODE/work/NAME    the program (original or fixed); the working directory
    NN-name/MODE/tmp/         TMPDIR of the run
    NN-name/MODE/stdout.txt, stderr.txt, status.json, result.pt
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from devlint.verify.environment import gpus_seen, run_environment
from devlint.verify.runners import HarnessError, Job, Runner
from devlint.verify.targets import Program

# How much of a run's stderr a report quotes.
STDERR_TAIL = 1500
# What torch's C++ says before it aborts on a CUDA device it has no support for.
_CUDA_ABORT = "not linked with support for cuda devices"
# The probe and the comparisons run no user code: --timeout is not theirs, but they too must end.
SERVICE_TIMEOUT = 600.0


@dataclass
class RunRecord:
    """What one run left behind."""

    mode: str
    status: dict[str, Any] | None
    stdout: str
    stderr: str
    rc: int | None
    timed_out: bool
    result: Path
    limit: float = 0.0
    problem: str | None = None
    # It ran under emulated CUDA.
    emulated: bool = False

    @property
    def outcome(self) -> str:
        if self.problem is not None:
            return "harness"
        if self.timed_out:
            return "timeout"
        if self.status is None:
            # Torch's C++ aborts a process that takes an emulated tensor for a real CUDA one.
            return "not_emulated" if self.emulated and _CUDA_ABORT in self.stderr else "died"
        return str(self.status["outcome"])

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def has_result(self) -> bool:
        return self.ok and bool(self.status and self.status.get("result"))

    @property
    def cuda_used(self) -> bool:
        return bool(self.status and self.status.get("cuda_used"))

    @property
    def notes(self) -> list[str]:
        return list((self.status or {}).get("notes") or [])

    @property
    def autocast(self) -> frozenset[str]:
        """The reduced-precision autocast it entered: ``cuda:float16``, ``cpu:bfloat16``."""
        return frozenset((self.status or {}).get("autocast") or ())

    def stderr_tail(self) -> str:
        return self.stderr[-STDERR_TAIL:].strip()


@dataclass(frozen=True)
class Probe:
    torch: str
    cuda: bool
    gpu: str | None


@dataclass(frozen=True)
class Run:
    """One way a program is run (see ``plan``)."""

    name: str
    # The fixed program, else the original.
    fixed: bool
    # Under emulated CUDA (emulation/), else on this machine's own torch and GPU.
    emulated: bool
    # Every GPU hidden (CUDA_VISIBLE_DEVICES=""), the emulated one included.
    hidden: bool = False
    # Emulation's device: None, as CUDA_VISIBLE_DEVICES says; False, no CUDA at all.
    visible: bool | None = None
    # Where the emulated device draws random numbers: its own generator, or the CPU's ("host").
    random_stream: str = "device"


# An emulated run again with the device drawing from the CPU generator: what the cpu run is
# compared with for a program that draws random numbers on the device (the fixed program draws
# them on the CPU there). Run only for the runs that drew on the device.
HOST_TWINS = {
    "original": Run("host_random_original", fixed=False, emulated=True, random_stream="host"),
    "emulated_original": Run("host_random_original", fixed=False, emulated=True, random_stream="host"),
    "cuda": Run("host_random_cuda", fixed=True, emulated=True, random_stream="host"),
    "emulated_cuda": Run("host_random_cuda", fixed=True, emulated=True, random_stream="host"),
}


def plan(gpu: bool) -> list[Run]:
    """The runs of each program (docs/verify.md, "The runs"). Without a GPU, the original and the CUDA run
    are emulated; with one they run on it, and the emulated pair runs too, and the report says
    whether emulation agreed with the GPU. Without a GPU the CPU run has no CUDA at all, as on a
    machine without one (a program that sets CUDA_VISIBLE_DEVICES itself finds nothing to unhide);
    with one, every GPU is hidden from it."""
    cpu = Run("cpu", fixed=True, emulated=True, hidden=True, visible=None if gpu else False)
    if not gpu:
        return [Run("original", fixed=False, emulated=True), cpu, Run("cuda", fixed=True, emulated=True)]
    return [
        Run("original", fixed=False, emulated=False),
        cpu,
        Run("cuda", fixed=True, emulated=False),
        Run("emulated_original", fixed=False, emulated=True),
        Run("emulated_cuda", fixed=True, emulated=True),
    ]


# A run once more, exactly as before: what differs between the two is noise (noise.py).
AGAIN = "_again"


def again(name: str, gpu: bool) -> Run:
    """The run called ``name`` in this plan (or a host twin), once more under another name."""
    known = {run.name: run for run in (*plan(gpu), *HOST_TWINS.values())}
    return replace(known[name], name=name + AGAIN)


@dataclass(frozen=True)
class Pair:
    """Compare the saved result of ``actual`` with that of ``expected``, within ``rtol``/``atol``
    (None: the dtype's defaults); ``reduced``: float16 and bfloat16 tensors compared as float32."""

    id: str
    actual: Path
    expected: Path
    rtol: float | None = None
    atol: float | None = None
    reduced: bool = False


class ProbeError(RuntimeError):
    pass


class Session:
    """``hidden`` starts the runs that must not touch this machine's GPU (forked from the server),
    ``visible`` those that run on it (see runners.py)."""

    def __init__(self, root: Path, hidden: Runner, visible: Runner, base_env: dict[str, str], timeout: float) -> None:
        self.root = root
        self.hidden = hidden
        self.visible = visible
        self.base_env = base_env
        self.timeout = timeout

    def probe(self) -> Probe:
        record = self._start(self.root / "probe", {"kind": "probe"}, "real", limit=SERVICE_TIMEOUT)
        if not record.ok or record.status is None:
            lines = record.stderr_tail().splitlines()
            why = record.problem or (lines[-1] if lines else f"exit status {record.rc}")
            raise ProbeError(f"cannot run torch in a child process: {why}")
        if record.status.get("emulation_refused"):
            raise ProbeError(record.status["emulation_refused"])
        return Probe(record.status["torch"], record.status["cuda"], record.status["gpu"])

    def run_programs(self, programs: list[Program], runs: list[Run], jobs: int) -> list[dict[str, RunRecord]]:
        """Every program in every run."""
        work = [(index, program, run) for index, program in enumerate(programs) for run in runs]
        found: list[dict[str, RunRecord]] = [{} for _ in programs]
        for (index, _, run), record in zip(work, self.run_each(work, jobs)):
            found[index][run.name] = record
        return found

    def run_each(self, work: list[tuple[int, Program, Run]], jobs: int) -> list[RunRecord]:
        """Each (index, program, run), ``jobs`` at a time."""
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            return list(pool.map(lambda item: self._run_program(*item), work))

    def compare(self, pairs: list[Pair]) -> dict[str, dict[str, Any]]:
        """Answers by pair id: ``{"mismatches": [...], "error": str | None}``."""
        if not pairs:
            return {}
        job = {
            "kind": "compare",
            "pairs": [
                {
                    "id": p.id, "actual": str(p.actual), "expected": str(p.expected),
                    "rtol": p.rtol, "atol": p.atol, "reduced": p.reduced,
                }  # fmt: skip
                for p in pairs
            ],
        }
        record = self._start(self.root / "compare", job, "hidden", limit=SERVICE_TIMEOUT)
        if record.ok and record.status is not None:
            return {answer["id"]: answer for answer in record.status["answers"]}
        why = record.problem or f"the comparison did not finish ({record.outcome}): {record.stderr_tail()[-300:]}"
        return {p.id: {"mismatches": [], "error": why} for p in pairs}

    def _run_program(self, index: int, program: Program, run: Run) -> RunRecord:
        folder = self.root / f"{index:03d}-{program.path.stem}" / run.name
        work = folder / "work"
        work.mkdir(parents=True)
        target = work / program.path.name
        target.write_bytes(program.fixed if run.fixed else program.original)
        job = {
            "kind": "run",
            "program": str(target),
            "mode": run.name,
            "emulate": run.emulated,
            "visible": run.visible,
            "random_stream": run.random_stream,
            "protocol": program.protocol,
            "module": program.module,
            # The program's own folder: the modules of its project it imports are found there,
            # as when it runs in place (only the program itself is copied and fixed).
            "home": str(program.path.resolve().parent),
        }
        return self._start(folder, job, gpus_seen(run.emulated, run.hidden), mode=run.name)

    def _start(
        self, folder: Path, job: dict[str, Any], gpus: str, mode: str = "", limit: float | None = None
    ) -> RunRecord:
        """Run ``job``; ``gpus`` as for run_environment. Only runs on the real GPU start a fresh
        interpreter: the others are forked from the server, which never touches CUDA."""
        limit = self.timeout if limit is None else limit
        work, tmp = folder / "work", folder / "tmp"
        work.mkdir(parents=True, exist_ok=True)
        tmp.mkdir(exist_ok=True)
        env = run_environment(self.base_env, gpus, tmp)
        paths = {name: folder / name for name in ("stdout.txt", "stderr.txt", "status.json", "result.pt")}
        job = {
            **job,
            "workdir": str(work),
            "stdout": str(paths["stdout.txt"]),
            "stderr": str(paths["stderr.txt"]),
            "status": str(paths["status.json"]),
            "result": str(paths["result.pt"]),
            "env": env,
        }
        job_file = folder / "job.json"
        job_file.write_text(json.dumps(job), encoding="utf-8")
        problem = None
        rc, timed_out = None, False
        try:
            runner = self.visible if gpus == "real" else self.hidden
            ended = runner.run(Job(job_file, work, env, paths["stdout.txt"], paths["stderr.txt"], limit))
            rc, timed_out = ended.rc, ended.timed_out
        except HarnessError as error:
            problem = str(error)
        return RunRecord(
            mode=mode,
            status=_read_json(paths["status.json"]),
            stdout=_read_text(paths["stdout.txt"]),
            stderr=_read_text(paths["stderr.txt"]),
            rc=rc,
            timed_out=timed_out,
            result=paths["result.pt"],
            limit=limit,
            problem=problem,
            emulated=bool(job.get("emulate")),
        )


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
