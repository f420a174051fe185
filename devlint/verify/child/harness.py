"""The child side of `devlint verify`: runs one program (or a probe, or a comparison).

This file runs in child processes started with ``sys.executable`` and a clean environment. It
needs the standard library and torch, nothing of devlint: its helpers beside it (``compare.py``
and the ``emulation`` package) are loaded by path, and its own folder is taken off ``sys.path``
before any user code runs.

    python harness.py job JOB.json   run one job in this process (stdout/stderr already redirected)
    python harness.py serve          a fork server: import torch once, then fork one child per job

The fork server reads one request a line on stdin, ``{"id": N, "job": PATH, "timeout": S}``,
forks a child for it (its own process group, so a timeout kills whatever it started), and answers
``{"id": N, "rc": CODE, "timed_out": BOOL}`` on stdout once the child has ended. Each child is a
separate process: nothing a program does reaches another run.

A job is a JSON file. Every job names ``status`` (where the answer goes, as JSON), ``workdir``,
``stdout``, ``stderr`` and ``env`` (the whole environment of the run). Kinds:

- ``run``: ``program`` (the file to run), ``mode`` (the run's name in the report), ``emulate``
  (run it under emulated CUDA, see ``emulation/``; ``visible``: false for no CUDA at all, and
  ``random_stream``: ``host`` to draw device numbers from the CPU generator), ``protocol`` (``main``: import the program as
  module ``module`` and call ``main()``; ``script``: run it as ``__main__``) and ``result`` (where
  ``main()``'s value is saved with ``torch.save``, moved to the CPU); its status says which
  reduced-precision autocast it entered (``autocast``: ``["cuda:float16"]``, see ``precision.py``);
- ``probe``: what torch this is and whether it sees a GPU;
- ``compare``: ``pairs`` of saved results to compare, each with its ``rtol``/``atol`` and
  ``reduced`` (a float16 or bfloat16 tensor is compared as float32, with a float32 one).
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
import json
import os
import random
import re
import select
import signal
import sys
import tempfile
import time
import traceback
import types
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))

# CUDA is not there (a CPU build, no GPU, none visible); under emulation that shows a GPU, such
# an error means the program reached a part of torch that emulation does not model.
_CUDA_MISSING = re.compile(
    r"not compiled with CUDA|no NVIDIA driver|No CUDA GPUs are available|CUDA-capable device"
    r"|torch\.cuda\.is_available\(\) is False|CUDA (?:is )?not available|CUDA driver initialization failed"
    r"|type torch\.cuda\.\w+ not available|without CUDA support|not linked with support for cuda"
    r"|Cannot get CUDA generator|Cannot access accelerator device when none is available"
    # a torch.cuda function whose binding a CPU build of torch lacks (`torch._C._cuda_setDevice`)
    r"|module 'torch\._C' has no attribute '_cuda_"
    # A GPU build whose CUDA a forked child cannot start: that run needed CUDA.
    r"|Cannot re-initialize CUDA in forked subprocess",
    re.IGNORECASE,
)
_NEEDS_CUDA = re.compile(_CUDA_MISSING.pattern + r"|Invalid device, must be cuda device", re.IGNORECASE)
_MIXED_DEVICES = re.compile(
    r"Expected all tensors to be on the same device|is not on the expected device"
    r"|on different devices|must be on the same device|should be the same or input should be"
    r"|tensors are not at the same device",
    re.IGNORECASE,
)
_MESSAGE_LIMIT = 400


def _sibling(name: str) -> types.ModuleType:
    """compare.py or the emulation package, loaded by path under a private name."""
    qualified = f"_devlint_verify_{name}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    path = os.path.join(HERE, name)
    if os.path.isdir(path):
        spec = importlib.util.spec_from_file_location(
            qualified, os.path.join(path, "__init__.py"), submodule_search_locations=[path]
        )
    else:
        spec = importlib.util.spec_from_file_location(qualified, f"{path}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    spec.loader.exec_module(module)
    return module


def _leave_sys_path() -> None:
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != HERE]


# -- one job ---------------------------------------------------------------------------------


def run_job(path: str, redirect: bool) -> int:
    with open(path, encoding="utf-8") as handle:
        job = json.load(handle)
    if redirect:
        _redirect(job["stdout"], job["stderr"])
    os.environ.clear()
    os.environ.update(job["env"])
    tempfile.tempdir = None
    os.chdir(job["workdir"])
    kind = job["kind"]
    if kind == "run":
        status = run_program(job)
    elif kind == "probe":
        status = probe()
    elif kind == "compare":
        status = compare_pairs(job)
    else:
        raise ValueError(f"unknown job kind {kind!r}")
    status.setdefault("outcome", "ok")
    _flush()
    with open(job["status"], "w", encoding="utf-8") as handle:
        json.dump(status, handle)
    return 0


def _flush() -> None:
    """The program may have closed or replaced the streams: flush what can be flushed."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            stream.flush()


def _redirect(stdout: str, stderr: str) -> None:
    _flush()
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    opened = (os.open(os.devnull, os.O_RDONLY), os.open(stdout, flags, 0o644), os.open(stderr, flags, 0o644))
    for fd, target in enumerate(opened):
        if target != fd:
            os.dup2(target, fd)
            os.close(target)
    sys.stdin = sys.__stdin__ = open(0, encoding="utf-8", closefd=False)
    sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)


def probe() -> dict[str, Any]:
    import torch

    # Every plan emulates some runs: verify stops at once where emulation cannot, before asking
    # more of a torch it does not know.
    refused = _emulation_refusal(torch.__version__)
    if refused is not None:
        return {"torch": torch.__version__, "cuda": False, "gpu": None, "emulation_refused": refused}
    cuda = bool(torch.cuda.is_available() and torch.cuda.device_count() > 0)
    return {
        "torch": torch.__version__,
        "cuda": cuda,
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
    }


def _emulation_refusal(version: str) -> str | None:
    """Why emulation refuses this torch (releases.py, read alone: the emulation package's own
    modules may not import on an unsupported torch), or None."""
    path = os.path.join(HERE, "emulation", "releases.py")
    spec = importlib.util.spec_from_file_location("_devlint_verify_emulation_releases", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.refusal(version)


def compare_pairs(job: dict[str, Any]) -> dict[str, Any]:
    import torch

    compare = _sibling("compare")
    answers = []
    for pair in job["pairs"]:
        try:
            actual = torch.load(pair["actual"], weights_only=False)
            expected = torch.load(pair["expected"], weights_only=False)
            found = compare.compare(actual, expected, pair["rtol"], pair["atol"], pair.get("reduced", False))
            mismatches = [m.as_dict() for m in found]
            answers.append({"id": pair["id"], "mismatches": mismatches, "error": None})
        except Exception as error:  # noqa: BLE001 - one bad pair must not hide the others
            answers.append({"id": pair["id"], "mismatches": [], "error": _describe_error(error)})
    return {"answers": answers}


# -- running a program -------------------------------------------------------------------------


def run_program(job: dict[str, Any]) -> dict[str, Any]:
    import torch

    compare = _sibling("compare")
    program, mode = job["program"], job["mode"]
    sys.argv = [program]
    sys.path.insert(0, os.path.dirname(program))
    if job.get("home"):
        sys.path.insert(1, job["home"])
    status: dict[str, Any] = {"outcome": "ok", "result": False}
    emulation, value = None, None
    # The autocast dtypes it computed in: the parent compares at their tolerance (precision.py).
    autocast = _sibling("precision").AutocastRecord().install(torch)
    try:
        if job["emulate"]:
            options = {"visible": job.get("visible"), "random_stream": job.get("random_stream", "device")}
            emulation = _sibling("emulation").Emulation(**options).install()
        # After installing: torch.manual_seed seeds the emulated device's generator too, as on a GPU.
        _make_deterministic(torch)
        value = _execute(program, job["protocol"], job["module"])
    except BaseException as error:  # noqa: BLE001 - whatever the program raises is the answer
        exit_code = _exit_status(error)
        if exit_code != 0:
            status.update(_failure(error, program, emulation, exit_code))
    _flush()
    status["autocast"] = autocast.found()
    if emulation is not None:
        status["cuda_used"] = emulation.machine.initialized
        status["notes"] = emulation.notes
    else:
        status["cuda_used"] = bool(torch.cuda.is_initialized())
    if status["outcome"] != "ok":
        return status
    if mode == "cpu" and status["cuda_used"]:
        message = (
            'the program initialised CUDA although verify hid every GPU (CUDA_VISIBLE_DEVICES=""); '
            "does it set CUDA_VISIBLE_DEVICES itself?"
        )
        return {**status, "outcome": "unhid_gpu", "message": message}
    if value is None:
        return status
    try:
        torch.save(compare.normalize(value), job["result"])
        status["result"] = True
    except compare.UnsupportedResultError as error:
        return {**status, "outcome": "error", "message": str(error)}
    return status


def _make_deterministic(torch: Any) -> None:
    random.seed(0)
    torch.manual_seed(0)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(0)
    # Results are compared across devices: no TF32 shortcuts on CUDA matmuls and convolutions.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True


def _execute(program: str, protocol: str, module_name: str) -> Any:
    with open(program, "rb") as handle:
        code = compile(handle.read(), program, "exec")
    name = "__main__" if protocol == "script" else module_name
    if protocol != "script" and name in sys.modules:
        # A program named like a module already imported (json.py) must not replace it.
        name = f"_devlint_program_{name}"
    module = types.ModuleType(name)
    module.__file__ = program
    module.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules[name] = module
    exec(code, module.__dict__)
    if protocol == "script":
        return None
    main = module.__dict__.get("main")
    if not callable(main):
        raise TypeError("the program defines no callable main()")
    return main()


def _exit_status(error: BaseException) -> int:
    if isinstance(error, SystemExit):
        code = error.code
        if code is None or code == 0:
            return 0
        return code if isinstance(code, int) else 1
    return 1


def _failure(error: BaseException, program: str, emulation: Any, exit_code: int) -> dict[str, Any]:
    """The outcome of a run that raised ``error``. Under emulation that shows a GPU, an error that
    says CUDA is missing means emulation did not model what the program used: not emulated."""
    line, source = _program_line(error, program)
    message = _describe_error(error)
    emulated_gpu = emulation is not None and emulation.machine.visible
    if isinstance(error, SystemExit):
        kind, message = "error", f"exited with status {exit_code}"
    elif type(error).__name__ == "EmulationUnsupportedError":
        kind = "not_emulated"
    elif _MIXED_DEVICES.search(message):
        kind = "mixed_devices"
    elif emulated_gpu and _CUDA_MISSING.search(message):
        kind = "not_emulated"
    elif not emulated_gpu and _NEEDS_CUDA.search(message):
        kind = "needs_cuda"
    else:
        kind = "error"
    return {"outcome": kind, "message": message, "line": line, "source": source}


def _describe_error(error: BaseException) -> str:
    text = " ".join(str(error).split())
    message = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return message if len(message) <= _MESSAGE_LIMIT else message[: _MESSAGE_LIMIT - 3] + "..."


def _program_line(error: BaseException, program: str) -> tuple[int | None, str | None]:
    """The innermost line of the program on the way to ``error``."""
    stack = traceback.extract_tb(error.__traceback__)
    frames = [frame for frame in stack if frame.filename == program]
    if not frames:
        return None, None
    return frames[-1].lineno, (frames[-1].line or "").strip() or None


# -- the fork server -----------------------------------------------------------------------------


def serve() -> int:
    """Import torch once, then fork one child per request until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _warm_up()
    children: dict[int, tuple[int, float, list[bool]]] = {}
    pending = b""
    stdin = sys.stdin.fileno()
    open_input = True
    while open_input or children:
        ready, _, _ = select.select([stdin] if open_input else [], [], [], 0.02 if children else None)
        if ready:
            data = os.read(stdin, 65536)
            if not data:
                open_input = False
                for pid in children:
                    _kill_group(pid)
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                pid = _fork(request["job"])
                children[pid] = (request["id"], _now() + request["timeout"], [False])
        _reap(children, open_input)
        _enforce_timeouts(children)
    return 0


def _warm_up() -> None:
    """What every run would otherwise load on its own: torch, the helpers, and the modules torch
    imports on first use (an optimizer step pulls in torch._dynamo, printing a tensor its
    formatter; seconds each), once on the CPU and once under emulation. The server runs with every
    GPU hidden and the emulated device forced visible, so none of this can initialise CUDA, which
    a forked child could not use afterwards; runs that need a GPU start fresh processes instead."""
    import torch

    _sibling("compare")
    _sibling("precision")
    emulation = _sibling("emulation")
    with emulation.Emulation(visible=True):
        for device in ("cpu", "cuda"):
            layer = torch.nn.Linear(2, 2).to(device)
            sgd = torch.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
            for optimizer in (sgd, torch.optim.Adam(layer.parameters())):
                layer(torch.ones(1, 2, device=device)).sum().backward()
                optimizer.step()
            repr(layer.weight)
    torch.testing.assert_close(torch.ones(2), torch.ones(2))


def _fork(job: str) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setpgid(0, 0)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            code = run_job(job, redirect=True)
        except BaseException:  # noqa: BLE001 - a child reports on its stderr and ends, whatever happened
            with contextlib.suppress(Exception):
                traceback.print_exc()
                sys.stderr.flush()
        finally:
            os._exit(code)
    return pid


def _reap(children: dict[int, tuple[int, float, list[bool]]], answer: bool) -> None:
    while children:
        pid, wait_status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        if pid not in children:
            continue
        request_id, _, timed_out = children.pop(pid)
        # Whatever the child started in its process group goes with it.
        _kill_group(pid)
        if answer:
            reply = {"id": request_id, "rc": os.waitstatus_to_exitcode(wait_status), "timed_out": timed_out[0]}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


def _enforce_timeouts(children: dict[int, tuple[int, float, list[bool]]]) -> None:
    now = _now()
    for pid, (_, deadline, timed_out) in children.items():
        if now > deadline and not timed_out[0]:
            timed_out[0] = True
            _kill_group(pid)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def _now() -> float:
    return time.monotonic()


def main(argv: list[str]) -> int:
    _leave_sys_path()
    if argv[:1] == ["serve"] and len(argv) == 1:
        return serve()
    if argv[:1] == ["job"] and len(argv) == 2:
        code = run_job(argv[1], redirect=False)
        _flush()
        # Threads the program left running must not keep the run alive past its answer.
        os._exit(code)
    sys.stderr.write("usage: harness.py job JOB.json | harness.py serve\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
