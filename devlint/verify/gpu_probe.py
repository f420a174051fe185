"""Whether torch sees a real GPU here, asked without importing torch in this process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from devlint.verify.environment import torch_root

# A CPU build of torch says so in torch/version.py (`cuda: Optional[str] = None`).
_NO_BACKEND = re.compile(r"^(cuda|hip)\s*(?::[^=]*)?=\s*None\s*$", re.MULTILINE)
_PROBE = (
    "import json, torch\n"
    "cuda = bool(torch.cuda.is_available() and torch.cuda.device_count() > 0)\n"
    "print(json.dumps({'torch': torch.__version__, 'gpu': torch.cuda.get_device_name(0) if cuda else None}))\n"
)


@dataclass(frozen=True)
class Machine:
    # None: torch is not installed for this interpreter.
    torch: str | None
    # The name of the GPU torch sees, None without one.
    gpu: str | None


def cpu_only_build(torch_at: Path) -> bool:
    """True when the installed torch can use neither CUDA nor ROCm (no probe needed)."""
    try:
        text = (torch_at / "torch" / "version.py").read_text(encoding="utf-8")
    except OSError:
        return False
    return {match.group(1) for match in _NO_BACKEND.finditer(text)} == {"cuda", "hip"}


def probe(timeout: float = 120.0, need_version: bool = True) -> Machine:
    """What torch this interpreter has and whether it sees a GPU. A CPU build answers without a
    child process unless ``need_version`` asks for torch's version (which costs a torch import)."""
    torch_at = torch_root()
    if torch_at is None:
        return Machine(None, None)
    if not need_version and cpu_only_build(torch_at):
        return Machine("", None)
    # NVML answers is_available() without starting CUDA (quicker, and nothing to clean up).
    env = {**os.environ, "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return Machine("", None)
    return Machine(str(answer["torch"]), answer["gpu"])
