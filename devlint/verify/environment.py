"""The clean environment of the child processes, where torch lives (found without importing it),
and which torch releases emulation supports."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path

# What a run keeps of the caller's environment: enough to find programs, libraries and GPUs.
KEPT = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "SYSTEMROOT",
    "LD_LIBRARY_PATH",
    "DYLD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
)
FIXED = {
    # torch.cuda.is_available() asks NVML instead of starting CUDA: a process that asked can still
    # fork children that use CUDA, or be forked from the fork server (runners.py).
    "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
    "PYTHONHASHSEED": "0",
    "PYTHONIOENCODING": "utf-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    # Runs go in parallel: one CPU thread each, instead of every run claiming every core.
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
HIDE_GPUS = {"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "", "ROCR_VISIBLE_DEVICES": ""}
# Emulation's supported releases: its releases.py, read by path (the emulation package imports torch).
RELEASES = Path(__file__).resolve().parent / "child" / "emulation" / "releases.py"


def supported_torch() -> str:
    """The torch releases emulation supports, as ``2.4 to 2.14``."""
    spec = importlib.util.spec_from_file_location("_devlint_emulation_releases", RELEASES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    oldest, newest = module.SUPPORTED
    return f"{oldest[0]}.{oldest[1]} to {newest[0]}.{newest[1]}"


def torch_root() -> Path | None:
    """The folder that holds the ``torch`` package this interpreter would import; None: no torch."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve().parent


def base_environment(parent: Mapping[str, str] | None = None, torch_at: Path | None = None) -> dict[str, str]:
    """The caller's environment reduced to ``KEPT``, plus ``FIXED``; ``PYTHONPATH`` only when the
    caller's ``PYTHONPATH`` is how torch is found, and then only that one folder."""
    parent = os.environ if parent is None else parent
    env = {name: parent[name] for name in KEPT if name in parent}
    env.update(FIXED)
    if torch_at is not None:
        entries = [Path(entry).resolve() for entry in parent.get("PYTHONPATH", "").split(os.pathsep) if entry]
        if torch_at in entries:
            env["PYTHONPATH"] = str(torch_at)
    return env


def gpus_seen(emulated: bool, hidden: bool) -> str:
    """What a run sees of the GPUs, as ``run_environment`` takes it: hiding every GPU wins over
    emulating one; a run that does neither sees the caller's."""
    return "hidden" if hidden else "emulated" if emulated else "real"


def run_environment(base: Mapping[str, str], gpus: str, tmp: Path) -> dict[str, str]:
    """One run's environment, with its own temporary folder. ``gpus``: ``hidden`` (every GPU
    hidden: the CPU runs, the fork server), ``emulated`` (the emulated machine's one GPU, whatever
    this machine has: the caller's ``CUDA_VISIBLE_DEVICES`` is about this machine's GPUs) or
    ``real`` (the caller's GPUs)."""
    env = dict(base)
    env.update({"TMPDIR": str(tmp), "TEMP": str(tmp), "TMP": str(tmp)})
    if gpus == "hidden":
        env.update(HIDE_GPUS)
    elif gpus == "emulated":
        env.pop("CUDA_VISIBLE_DEVICES", None)
    return env
