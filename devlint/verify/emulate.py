"""`devlint emulate [--force] [--] COMMAND [ARGS ...]`: run a command with emulated CUDA in every
Python process it starts.

The command inherits this process's standard streams and exits with its own status. Emulation
reaches its processes through the environment: the bootstrap folder (see ``child/bootstrap/``) leads
``PYTHONPATH``, so each Python process runs our ``sitecustomize`` at start-up, which installs
emulation once that process imports torch. This process never imports torch.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from devlint.verify.gpu_probe import probe

BOOTSTRAP = Path(__file__).resolve().parent / "child" / "bootstrap"
FLAG = "DEVLINT_EMULATE_CUDA"
EXIT_ERROR = 2
# Signals that end a command, passed on to it: a launcher that dies alone leaves its command running.
FORWARDED = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def emulated_environment(parent: Mapping[str, str]) -> dict[str, str]:
    """``parent`` with emulation turned on for every Python process started with it: the
    bootstrap folder first on ``PYTHONPATH``, the caller's entries kept after it."""
    env = dict(parent)
    env[FLAG] = "1"
    given = parent.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(BOOTSTRAP) + (os.pathsep + given if given else "")
    return env


def run_emulate(command: Sequence[str], force: bool, err: TextIO) -> int:
    command = list(command[1:] if command[:1] == ["--"] else command)
    if not command:
        err.write("devlint emulate: error: name a command to run, e.g. `devlint emulate -- pytest tests/`\n")
        return EXIT_ERROR
    machine = probe(need_version=False)
    env: Mapping[str, str] = os.environ
    if machine.gpu is not None and not force:
        err.write(
            f"devlint emulate: torch sees a real GPU ({machine.gpu}): running the command on it, "
            "without emulation (--force emulates CUDA anyway)\n"
        )
    else:
        env = emulated_environment(os.environ)
    err.flush()
    return run_command(command, env, err, "devlint emulate")


def run_command(command: list[str], env: Mapping[str, str], err: TextIO, who: str) -> int:
    """Run ``command`` in the foreground with inherited streams; its exit status (128 + N when
    signal N ended it, as a shell says), or 2 with one line on ``err`` when it cannot start."""
    try:
        process = subprocess.Popen(command, env=dict(env))
    except FileNotFoundError:
        err.write(f"{who}: error: command not found: {command[0]}\n")
        return EXIT_ERROR
    except PermissionError:
        err.write(f"{who}: error: cannot run {command[0]}: permission denied\n")
        return EXIT_ERROR
    except OSError as error:
        err.write(f"{who}: error: cannot run {command[0]}: {error.strerror}\n")
        return EXIT_ERROR
    with _forwarding(process):
        code = process.wait()
    return 128 - code if code < 0 else code


@contextlib.contextmanager
def _forwarding(process: subprocess.Popen) -> Iterator[None]:
    """While ``process`` runs, signals meant to end this process go to it instead, and this
    process waits for its status. Ctrl-C on a terminal reaches the whole foreground process group,
    the command included, so SIGINT is passed on only when this process is not in the foreground."""

    def forward(signum: int, _frame: object) -> None:
        if signum == signal.SIGINT and _in_terminal_foreground():
            return
        with contextlib.suppress(OSError):
            process.send_signal(signum)

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _in_terminal_foreground() -> bool:
    try:
        fd = os.open("/dev/tty", os.O_RDONLY)
    except OSError:
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)
