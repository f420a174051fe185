"""The pytest option ``--emulate-cuda``: run the session under emulated CUDA, as
``devlint emulate -- pytest`` does. Registered through the ``pytest11`` entry point, so every
pytest run in an environment with devlint loads this module: without the option it only adds the
option (no torch, nothing of devlint beyond this file)."""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

_BOOTSTRAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap")
_HOOK = "_devlint_cuda_hook"
_FLAG = "DEVLINT_EMULATE_CUDA"


def pytest_addoption(parser: Any) -> None:
    parser.getgroup("devlint").addoption(
        "--emulate-cuda",
        action="store_true",
        default=False,
        help="run the tests under emulated CUDA (devlint): torch sees one CUDA device whose tensors "
        "compute on the CPU, in this process and every Python process it starts",
    )


def pytest_load_initial_conftests(early_config: Any, parser: Any, args: list[str]) -> None:
    """Before any conftest.py is imported: one may import torch and ask for CUDA at once."""
    if not early_config.known_args_namespace.emulate_cuda:
        return
    _refuse_unsupported_torch()
    # Processes the tests start (pytest-xdist workers, subprocesses, spawned DataLoader workers)
    # find our sitecustomize first on PYTHONPATH and install emulation themselves.
    os.environ[_FLAG] = "1"
    given = os.environ.get("PYTHONPATH", "")
    if _BOOTSTRAP not in given.split(os.pathsep):
        os.environ["PYTHONPATH"] = _BOOTSTRAP + (os.pathsep + given if given else "")
    _hook().arm()


def _refuse_unsupported_torch() -> None:
    """A torch that emulation does not support: one line and exit status 2, before any test runs
    (the hook would stop the process at the first ``import torch``, a conftest's or a test's,
    which pytest would report as a collection error with a traceback). torch is not imported to
    ask: its version.py says."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return
    releases = _hook().releases()
    version = sys.modules["torch"].__version__ if "torch" in sys.modules else releases.installed_version(os.path.dirname(spec.origin))
    refused = None if version is None else releases.refusal(version)
    if refused is not None:
        sys.stderr.write(f"pytest --emulate-cuda: {refused}\n")
        sys.stderr.flush()
        raise SystemExit(_hook().EXIT_UNSUPPORTED)


def _hook() -> Any:
    """The bootstrap's hook under its own top-level name, as sitecustomize imports it: one
    installation per process, whichever way it came."""
    if _HOOK in sys.modules:
        return sys.modules[_HOOK]
    spec = importlib.util.spec_from_file_location(_HOOK, os.path.join(_BOOTSTRAP, f"{_HOOK}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[_HOOK] = module
    spec.loader.exec_module(module)
    return module
