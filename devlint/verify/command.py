"""`devlint verify`: fix each program in memory, run original and fixed code, compare, report.

This process never imports torch: finding torch, fixing and judging are static work. Everything
that runs user code or torch happens in child processes (see session.py and child/harness.py).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import TextIO

from devlint.findings import FileError
from devlint.run.config import ConfigError, Overrides, Resolver
from devlint.verify.environment import base_environment, run_environment, torch_root
from devlint.verify.noise import Noise, learn
from devlint.verify.report import Report, write_full, write_json
from devlint.verify.runners import SubprocessRunner, hidden_gpu_runner
from devlint.verify.session import AGAIN, HOST_TWINS, Probe, ProbeError, RunRecord, Session, again, plan
from devlint.verify.targets import DEFAULT_TARGET, Program, discover, prepare
from devlint.verify.textcompare import lines
from devlint.verify.verdict import RANDOM_NOTE, Judge, Row, Tolerance, pairs

EXIT_OK, EXIT_FAIL, EXIT_ERROR = 0, 1, 2
# Seconds a program may run (--timeout).
DEFAULT_TIMEOUT = 120.0


class UsageError(Exception):
    pass


def run_verify(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        jobs, timeout = _check_options(args)
        torch_at = torch_root()
        if torch_at is None:
            raise UsageError(
                "verify runs the programs with PyTorch, which is not installed here: pip install devlint[verify]"
            )
        resolver = Resolver(Overrides(torch_version=getattr(args, "torch_version", None)))
        programs, errors, twins = _programs(args.paths, args.unsafe_fixes, resolver)
        for message in errors:
            err.write(f"devlint verify: error: {message}\n")
        if not programs:
            return EXIT_ERROR if errors else _usage(err, "no Python programs to verify")
        probe, rows = verify_programs(programs, torch_at, Tolerance(args.rtol, args.atol), timeout, jobs)
    except (UsageError, ProbeError) as error:
        return _usage(err, str(error))
    exit_code = EXIT_ERROR if errors else EXIT_FAIL if any(row.failed for row in rows) else EXIT_OK
    report = Report(rows, probe, errors, exit_code, [str(path) for path in twins])
    (write_json if args.output_format == "json" else write_full)(report, out)
    return exit_code


def _usage(err: TextIO, message: str) -> int:
    err.write(f"devlint verify: error: {message}\n")
    return EXIT_ERROR


def _check_options(args: argparse.Namespace) -> tuple[int, float]:
    """The number of runs at a time and the seconds each may take; a UsageError for options
    that cannot work."""
    timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    if (args.rtol is None) != (args.atol is None):
        raise UsageError("give --rtol and --atol together (as torch.testing.assert_close takes them)")
    if timeout <= 0:
        raise UsageError("--timeout must be positive")
    jobs = args.jobs if args.jobs is not None else os.cpu_count() or 1
    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    return jobs, timeout


def _programs(paths: list[str], unsafe: bool, resolver: Resolver) -> tuple[list[Program], list[str], list[Path]]:
    if not paths:
        if not DEFAULT_TARGET.is_dir():
            raise UsageError(
                f"no PATH given and there is no {DEFAULT_TARGET}/ in the current directory; name the programs to verify"
            )
        paths = [str(DEFAULT_TARGET)]
    files, errors, twins = discover(paths)
    programs: list[Program] = []
    for path in files:
        try:
            prepared = prepare(path, unsafe, resolver.settings_for(path))
        except ConfigError as error:
            errors.append(str(error))
            continue
        if isinstance(prepared, FileError):
            errors.append(str(prepared))
        else:
            programs.append(prepared)
    return programs, errors, twins


def _add_host_random_twins(session: Session, programs: list[Program], runs: list[dict[str, RunRecord]], jobs: int) -> None:
    """Each emulated run that drew random numbers on the device, again drawing them from the CPU
    generator: the cpu run's counterpart in a comparison (see verdict.twin)."""
    wanted: dict[str, list[int]] = {}
    for index, found in enumerate(runs):
        for name, record in found.items():
            drew = record.emulated and any(note.startswith(RANDOM_NOTE) for note in record.notes)
            if drew and name in HOST_TWINS:
                wanted.setdefault(name, []).append(index)
    for name, indices in wanted.items():
        extra = session.run_programs([programs[i] for i in indices], [HOST_TWINS[name]], jobs)
        for index, found in zip(indices, extra):
            runs[index].update(found)


def _learn_noise(
    session: Session,
    programs: list[Program],
    runs: list[dict[str, RunRecord]],
    wanted: dict[int, set[str]],
    gpu: bool,
    tolerance: Tolerance,
    jobs: int,
) -> dict[int, dict[str, Noise]]:
    """Each reference in ``wanted`` (by program index) run once more, exactly as before, and what
    its two runs printed differently (noise.py). Only references some comparison found differing
    are run again: a program whose output agrees costs no extra run."""
    work = [(index, programs[index], again(name, gpu)) for index, names in wanted.items() for name in sorted(names)]
    found: dict[int, dict[str, Noise]] = {index: {} for index in wanted}
    for (index, _, run), record in zip(work, session.run_each(work, jobs)):
        name = run.name.removesuffix(AGAIN)
        first = runs[index][name]
        if record.ok:
            found[index][name] = learn(lines(first.stdout), lines(record.stdout), tolerance.rtol, tolerance.atol)
        else:
            found[index][name] = Noise(unmatched=f"the reference's second run did not finish ({record.outcome})")
    return found


def verify_programs(
    programs: list[Program], torch_at: Path, tolerance: Tolerance, timeout: float, jobs: int
) -> tuple[Probe, list[Row]]:
    """Probe the machine, run every program in every run of the plan, compare, judge; where
    printed output differs, run its reference again to learn what varies by itself, and judge
    once more with that set aside."""
    with tempfile.TemporaryDirectory(prefix="devlint-verify-") as temp:
        root = Path(temp)
        env = base_environment(torch_at=torch_at)
        server = root / "server"
        server.mkdir()
        hidden = hidden_gpu_runner(run_environment(env, "hidden", server), server, root / "server.log")
        try:
            session = Session(root, hidden, SubprocessRunner(), env, timeout)
            probe = session.probe()
            runs = session.run_programs(programs, plan(probe.cuda), jobs)
            _add_host_random_twins(session, programs, runs, jobs)
            wanted = [pair for index, found in enumerate(runs) for pair in pairs(index, found, probe.cuda, tolerance)]
            answers = session.compare(wanted)
            judges = [Judge(i, program, runs[i], answers, probe, tolerance) for i, program in enumerate(programs)]
            rows = [judge.row() for judge in judges]
            unsteady = {i: judge.unsteady for i, judge in enumerate(judges) if judge.unsteady}
            if unsteady:
                noise = _learn_noise(session, programs, runs, unsteady, probe.cuda, tolerance, jobs)
                for i, learned in noise.items():
                    rows[i] = Judge(i, programs[i], runs[i], answers, probe, tolerance, learned).row()
        finally:
            hidden.close()
    return probe, rows
