"""`devlint verify --tests "COMMAND"`: prove the fixes with the project's own tests.

The project (the current directory) is copied twice into a temporary folder; `devlint fix` fixes
one copy; the test command then runs three times at once (suite_runs.plan): the original (the
reference) and the fixed copy, both on the GPU where torch sees one and under emulated CUDA where
it does not, and the fixed copy with CUDA hidden. Outcomes are compared test by test
(suite_verdict); runs that prove nothing (suite_verdict.unproven) exit 2 uncompared. The user's
files are only read, and this process never imports torch.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TextIO

from devlint.verify.environment import torch_root
from devlint.verify.gpu_probe import probe
from devlint.verify.project_copy import copy_project, fixed_files
from devlint.verify.suite_report import SuiteReport, write_full, write_json
from devlint.verify.suite_runs import RunResult, Runs, count_recorded, plan, run_all, run_environment
from devlint.verify.suite_verdict import judge, unproven

EXIT_OK, EXIT_CHANGED, EXIT_ERROR = 0, 1, 2
DEFAULT_TIMEOUT = 3600.0


class SuiteError(Exception):
    """The command cannot run at all: exit 2 with this message."""


def run_verify_tests(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        command = _command(args.tests)
        timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout
        if timeout <= 0:
            raise SuiteError("--timeout must be positive")
        if args.jobs is not None and args.jobs < 1:
            raise SuiteError("--jobs must be at least 1")
        if torch_root() is None:
            raise SuiteError("verify runs the tests with PyTorch, which is not installed here: pip install devlint[verify]")
        project = Path.cwd().resolve()
        paths = _paths(args.paths, project)
        report = _verify(args, command, project, paths, timeout, err)
    except SuiteError as error:
        err.write(f"devlint verify: error: {error}\n")
        return EXIT_ERROR
    (write_json if args.output_format == "json" else write_full)(report, out)
    return report.exit_code


def _command(text: str) -> list[str]:
    try:
        command = shlex.split(text)
    except ValueError as error:
        raise SuiteError(f"cannot read the --tests command {text!r}: {error}") from None
    if not command:
        raise SuiteError('--tests needs the command that runs the tests, e.g. --tests "pytest -q tests/"')
    program = command[0]
    if os.sep in program:
        # Relative to where the user is, not to the copy (which has no virtual environment); a
        # virtual environment's python is a link that must not be resolved.
        command[0] = os.path.abspath(program)
    elif shutil.which(program) is None:
        raise SuiteError(f"command not found: {program}")
    return command


def _paths(given: list[str], project: Path) -> list[str]:
    """The PATHs to fix, relative to the project (default: all of it)."""
    relative = []
    for raw in given or ["."]:
        path = Path(raw).resolve()
        if not path.exists():
            raise SuiteError(f"{raw}: no such file or folder")
        try:
            relative.append(path.relative_to(project).as_posix() or ".")
        except ValueError:
            raise SuiteError(f"{raw}: outside the project ({project}); run verify --tests from the project's folder") from None
    return relative


def _verify(
    args: argparse.Namespace, command: list[str], project: Path, paths: list[str], timeout: float, err: TextIO
) -> SuiteReport:
    with tempfile.TemporaryDirectory(prefix="devlint-verify-tests-") as temp, ThreadPoolExecutor(2) as pool:
        root = Path(temp)
        original, fixed = root / "original", root / "fixed"
        machine = pool.submit(probe)
        copy_project(project, [original, fixed])
        gpu = machine.result().gpu
        runs = plan(gpu is not None)
        jobs = len(runs) if args.jobs is None else args.jobs
        threads = str(max(1, (os.cpu_count() or 1) // min(jobs, len(runs))))
        work = []
        for run in runs:
            tree = fixed if run.fixed else original
            folder = root / "runs" / run.name
            work.append((run, tree, folder, run_environment(os.environ, run, tree, folder, threads)))
        runner = Runs(command, timeout)
        # The reference runs the original tree: it starts while devlint fixes the other copy.
        reference = [item for item in work if not item[0].fixed]
        started = pool.submit(run_all, runner, reference, jobs, lambda: None)
        try:
            warnings = fix_copy(fixed, paths, args)
            fixes = fixed_files(original, fixed)
            if jobs <= len(reference):
                started.result()
            rest = _run_with_progress(runner, [item for item in work if item[0].fixed], jobs - len(reference) or 1, err)
            results = [*started.result(), *rest]
        except BaseException:
            runner.stop()
            raise
        errors = [*_run_errors(results, timeout), *unproven(results[0], results[1:])]
        # Runs that prove nothing are not compared: no test may read as changed or unchanged.
        rows = [] if errors else judge(results[0], results[1:], fixes)
        changed = any(row.changed for row in rows)
        exit_code = EXIT_ERROR if errors else EXIT_CHANGED if changed else EXIT_OK
        torch = machine.result().torch or "?"
        return SuiteReport(shlex.join(command), torch, gpu, fixes, results, rows, errors, warnings, exit_code)


def fix_copy(tree: Path, paths: list[str], args: argparse.Namespace) -> list[str]:
    """`devlint fix` on the fixed copy, with the configuration the copy carries; what it could not
    fix (a file that does not parse), which the runs still go on without."""
    command = [sys.executable, "-m", "devlint", "fix", "--no-cache", "--exit-zero", "--quiet", "--output-format", "concise"]
    if args.unsafe_fixes:
        command.append("--unsafe-fixes")
    if args.torch_version is not None:
        command += ["--torch-version", "{}.{}".format(*args.torch_version)]
    done = subprocess.run([*command, "--", *paths], cwd=tree, capture_output=True, text=True, check=False)
    if done.returncode == 0:
        return []
    lines = [line for line in done.stderr.splitlines() if "error" in line.lower()] or done.stderr.splitlines()[-1:]
    return [f"devlint fix: {line.removeprefix('devlint: ')}" for line in lines]


def _run_errors(results: list[RunResult], timeout: float) -> list[str]:
    errors = []
    for result in results:
        name = result.run.name
        if result.problem is not None:
            errors.append(f"the {name} run could not start: {result.problem}")
        elif result.timed_out:
            errors.append(f"the {name} run took longer than --timeout ({timeout:g}s) and was stopped")
    return errors


def _run_with_progress(runs: Runs, work: list[Any], jobs: int, err: TextIO) -> list[RunResult]:
    """The runs, with a bar per run on a terminal (tests done so far)."""
    if not (getattr(err, "isatty", lambda: False)() and os.environ.get("CI", "").lower() in ("", "0", "false")):
        return run_all(runs, work, jobs, lambda: None)
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TextColumn("{task.completed} tests"), TimeElapsedColumn())
    with Progress(*columns, console=Console(file=err), transient=True) as bar:
        tasks = [bar.add_task(f"{run.name} run", total=None) for run, *_ in work]

        def tick() -> None:
            for task, (_, _, folder, _) in zip(tasks, work):
                bar.update(task, completed=count_recorded(folder))

        return run_all(runs, work, jobs, tick)
