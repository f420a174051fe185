"""Starting the child processes of a verify run.

Every run is its own process, started from ``sys.executable`` with a clean environment, a
temporary working directory and a time limit; never through a shell. Two ways:

- ``ForkServer`` (Linux), for the runs that do not use this machine's GPU (the CPU run, every
  emulated run, the comparisons): one child, itself started with every GPU hidden, imports and
  warms up torch once (seconds) and forks a fresh process for each run, so a run costs what the
  program costs rather than another torch import. It never starts CUDA (torch is asked through
  NVML, see environment.py), so a child that calls CUDA gets CUDA's own error, not a broken fork;
- ``SubprocessRunner``: one ``sys.executable harness.py job ...`` process per run, for the runs
  that see the GPU (CUDA cannot be used in a process forked after its parent touched it), and for
  every run where there is no fork.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

HARNESS = Path(__file__).parent / "child" / "harness.py"


@dataclass(frozen=True)
class Job:
    """A job file (see harness.py) and how to start it."""

    path: Path
    workdir: Path
    env: dict[str, str]
    stdout: Path
    stderr: Path
    timeout: float


@dataclass(frozen=True)
class Ended:
    rc: int | None
    timed_out: bool


class HarnessError(RuntimeError):
    """The process that starts runs is gone; no run can be trusted to have happened."""


class Runner(Protocol):
    def run(self, job: Job) -> Ended: ...

    def close(self) -> None: ...


class SubprocessRunner:
    def run(self, job: Job) -> Ended:
        with open(job.stdout, "wb") as out, open(job.stderr, "wb") as err:
            process = subprocess.Popen(
                [sys.executable, str(HARNESS), "job", str(job.path)],
                cwd=job.workdir,
                env=job.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            try:
                return Ended(process.wait(timeout=job.timeout), False)
            except subprocess.TimeoutExpired:
                _kill(process)
                process.wait()
                return Ended(process.returncode, True)
            finally:
                _kill(process)

    def close(self) -> None:
        pass


def _kill(process: subprocess.Popen) -> None:
    """The process and whatever it started (it leads its own session)."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        elif process.poll() is None:
            process.kill()
    except OSError:
        pass


class ForkServer:
    def __init__(self, env: dict[str, str], workdir: Path, log: Path) -> None:
        self._log = log
        with open(log, "wb") as stderr:
            self._process = subprocess.Popen(
                [sys.executable, str(HARNESS), "serve"],
                cwd=workdir,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        self._lock = threading.Lock()
        self._pending: dict[int, Future] = {}
        self._ids = itertools.count()
        self._gone = False
        self._reader = threading.Thread(target=self._read, name="devlint-verify-replies", daemon=True)
        self._reader.start()

    def run(self, job: Job) -> Ended:
        future: Future = Future()
        request = {"id": 0, "job": str(job.path), "timeout": job.timeout}
        stdin = self._stdin()
        with self._lock:
            if self._gone:
                raise HarnessError(self._why())
            request["id"] = next(self._ids)
            self._pending[request["id"]] = future
            try:
                stdin.write((json.dumps(request) + "\n").encode())
                stdin.flush()
            except OSError:
                self._pending.pop(request["id"], None)
                raise HarnessError(self._why()) from None
        reply = future.result()
        return Ended(reply["rc"], reply["timed_out"])

    def _stdin(self) -> IO[bytes]:
        assert self._process.stdin is not None
        return self._process.stdin

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            try:
                reply = json.loads(line)
            except ValueError:
                continue  # not a reply: nothing a run waits for
            with self._lock:
                future = self._pending.pop(reply["id"], None)
            if future is not None:
                future.set_result(reply)
        self._process.wait()
        with self._lock:
            self._gone = True
            pending, self._pending = list(self._pending.values()), {}
        for future in pending:
            future.set_exception(HarnessError(self._why()))

    def _why(self) -> str:
        try:
            tail = self._log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:]
        except OSError:
            tail = []
        detail = f": {tail[0]}" if tail else ""
        return f"the verify fork server ended (exit status {self._process.poll()}){detail}"

    def close(self) -> None:
        try:
            self._stdin().close()
        except OSError:
            pass
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._reader.join(timeout=5)


def hidden_gpu_runner(env: dict[str, str], workdir: Path, log: Path) -> Runner:
    """The runner for runs with every GPU hidden; ``env`` must hide them (see environment.py)."""
    if sys.platform.startswith("linux") and hasattr(os, "fork"):
        return ForkServer(env, workdir, log)
    return SubprocessRunner()
