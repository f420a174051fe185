"""The three runs of a project's test command for `devlint verify --tests`, and what each recorded.

Each run is the command itself (never through a shell) in one of the two copies of the project,
in its own session (a timeout ends everything it started), with the caller's environment plus:
the bootstrap folder first on ``PYTHONPATH`` (our ``sitecustomize`` installs emulated CUDA where
the run is emulated; ``_devlint_outcomes`` records each test's outcome), the copy's import roots
next (an editable install of the project would otherwise import the user's own files), a
temporary folder of its own, and the GPUs hidden in the ``cpu`` run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from devlint.verify.emulate import BOOTSTRAP, FLAG
from devlint.verify.environment import gpus_seen
from devlint.verify.environment import run_environment as with_tmp_and_gpus

OUTCOMES = "DEVLINT_TEST_OUTCOMES"
PLUGIN = "_devlint_outcomes"
STDERR_TAIL = 2000


@dataclass(frozen=True)
class SuiteRun:
    name: str
    # The fixed copy, else the original.
    fixed: bool
    emulated: bool
    # Every GPU hidden (CUDA_VISIBLE_DEVICES="").
    hidden: bool = False


def plan(gpu: bool) -> list[SuiteRun]:
    """Where torch sees a GPU the original runs on it and is the reference, and the fixed tree runs
    on it too: a GPU is what emulation only stands in for, so nothing there is emulated. Without
    one both run under emulation. The fixed tree runs on the CPU too, every GPU hidden."""
    return [
        SuiteRun("reference", fixed=False, emulated=not gpu),
        SuiteRun("cuda", fixed=True, emulated=not gpu),
        SuiteRun("cpu", fixed=True, emulated=False, hidden=True),
    ]


@dataclass(frozen=True)
class Outcome:
    outcome: str
    message: str
    when: str
    # (file, line) of the traceback within the project, innermost last.
    frames: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class RunResult:
    run: SuiteRun
    tree: Path
    exit_status: int | None
    timed_out: bool
    seconds: float
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    stderr_tail: str = ""
    # Why the command did not start, None when it did.
    problem: str | None = None


def run_environment(
    parent: Mapping[str, str], run: SuiteRun, tree: Path, folder: Path, threads: int
) -> dict[str, str]:
    env = {name: value for name, value in parent.items() if name != FLAG}
    roots = [str(BOOTSTRAP)]
    if (tree / "src").is_dir():
        roots.append(str(tree / "src"))
    roots.append(str(tree))
    given = parent.get("PYTHONPATH", "")
    env["PYTHONPATH"] = os.pathsep.join(roots) + (os.pathsep + given if given else "")
    plugins = parent.get("PYTEST_PLUGINS", "")
    env["PYTEST_PLUGINS"] = PLUGIN + ("," + plugins if plugins else "")
    env[OUTCOMES] = str(folder / "outcomes")
    # The same hash seed in every run: an outcome that depends on set order must not look changed.
    env.setdefault("PYTHONHASHSEED", "0")
    # Runs go in parallel: each gets its share of the cores instead of all of them.
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(name, str(threads))
    if run.emulated:
        env[FLAG] = "1"
    # Its own temporary folder, and the GPUs as a program run of `devlint verify` sees them.
    return with_tmp_and_gpus(env, gpus_seen(run.emulated, run.hidden), folder / "tmp")


class Runs:
    """Starts the runs, and can end them all (Ctrl-C, a timeout)."""

    def __init__(self, command: list[str], timeout: float) -> None:
        self.command = command
        self.timeout = timeout
        self._processes: list[subprocess.Popen] = []
        self._lock = threading.Lock()
        self._stopped = False

    def run(self, run: SuiteRun, tree: Path, folder: Path, env: dict[str, str]) -> RunResult:
        for name in ("outcomes", "tmp"):
            (folder / name).mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        stderr_path = folder / "stderr.txt"
        with open(folder / "stdout.txt", "wb") as out, open(stderr_path, "wb") as err:
            try:
                process = subprocess.Popen(
                    self.command, cwd=tree, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                    start_new_session=True,
                )
            except OSError as error:
                why = "command not found" if isinstance(error, FileNotFoundError) else error.strerror
                return RunResult(run, tree, None, False, 0.0, problem=f"{why}: {self.command[0]}")
            with self._lock:
                self._processes.append(process)
                if self._stopped:
                    _kill_group(process)
            timed_out = False
            try:
                code = process.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(process)
                code = process.wait()
            finally:
                # Whatever the tests started and left behind goes with the run.
                _kill_group(process)
        return RunResult(
            run, tree, code, timed_out, time.monotonic() - started,
            outcomes=read_outcomes(folder / "outcomes", tree), stderr_tail=_tail(stderr_path),
        )

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            for process in self._processes:
                _kill_group(process)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass


def _tail(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-STDERR_TAIL:].strip()
    except OSError:
        return ""


def read_outcomes(folder: Path, tree: Path) -> dict[str, Outcome]:
    """Every test recorded by the sessions whose root is in ``tree`` (a test that runs pytest on
    a folder of its own records its inner tests elsewhere), by node id."""
    found: dict[str, Outcome] = {}
    inside = os.path.join(os.path.realpath(tree), "")
    for path in sorted(folder.glob("outcomes-*.jsonl")):
        ours = False
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut short by a killed process
            if record.get("kind") == "session":
                ours = os.path.join(os.path.realpath(record["rootdir"]), "").startswith(inside)
            elif ours and record.get("kind") == "test" and record["nodeid"] not in found:
                frames = tuple((str(file), int(row)) for file, row in record.get("frames") or [])
                found[record["nodeid"]] = Outcome(record["outcome"], record["message"], record["when"], frames)
    return found


def count_recorded(folder: Path) -> int:
    """Tests recorded so far (for the progress bar)."""
    total = 0
    for path in folder.glob("outcomes/outcomes-*.jsonl"):
        try:
            total += path.read_bytes().count(b'"kind": "test"')
        except OSError:
            pass
    return total


def run_all(
    runs: Runs, work: list[tuple[SuiteRun, Path, Path, dict[str, str]]], jobs: int, on_tick: Callable[[], None]
) -> list[RunResult]:
    """The runs, ``jobs`` at a time, each in a thread; ``on_tick`` is called while they go (progress)."""
    results: list[RunResult | None] = [None] * len(work)
    failures: list[BaseException] = []
    slots = threading.Semaphore(max(1, jobs))

    def one(index: int) -> None:
        try:
            with slots:
                results[index] = runs.run(*work[index])
        except BaseException as error:  # noqa: BLE001 - raised again in the caller's thread
            failures.append(error)
            runs.stop()

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(work))]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
                on_tick()
    except BaseException:
        runs.stop()
        raise
    if failures:
        raise failures[0]
    return [result for result in results if result is not None]
