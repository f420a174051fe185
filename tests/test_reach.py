"""What a CUDA device reaches beyond the line that names it (issue 31, "reach"), end to end: the
program is fixed by `devlint fix` and the fixed program runs on this CPU (or under emulated CUDA,
where the original fails only on a GPU).

- DEV103: a CUDA string given to the program's own function whose parameter reaches
  `torch.load(map_location=...)`, in the file and from another module of the project (ControlNet's
  `load_state_dict(path, location="cuda")` from `cldm/model.py`, a folder without `__init__.py`);
- DEV304: numpy's copy (`np.concatenate`) of a list that device results were appended to;
- DEV603: a backend held in an attribute (`args.dist_backend = "nccl"`, mae's misc.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from devlint.cli import main
from devlint.run.project_imports import imported_constants

ROOT = Path(__file__).resolve().parent.parent

MODEL = """\
import os
import torch


def get_state_dict(d):
    return d.get("state_dict", d)


def load_state_dict(ckpt_path, location="cpu"):
    _, extension = os.path.splitext(ckpt_path)
    if extension.lower() == ".safetensors":
        import safetensors.torch
        state_dict = safetensors.torch.load_file(ckpt_path, device=location)
    else:
        state_dict = get_state_dict(torch.load(ckpt_path, map_location=torch.device(location)))
    return state_dict
"""
# Saves a checkpoint whose tensors say "cuda" (as one saved on a GPU does) without a GPU: a
# CUDA build and a CPU build both restore the location tag through map_location alone.
SCRIPT = """\
import torch
from cldm.model import load_state_dict

torch.save({"w": torch.arange(4.0)}, "ckpt.pth")
state = load_state_dict("ckpt.pth", location="cuda")
print("loaded", state["w"].tolist(), state["w"].device.type in ("cuda", "cpu"))
"""
SAME_FILE = """\
import torch


def restore(path, where="cuda"):
    return torch.load(path, map_location=where)


class Loader:
    def __init__(self, path):
        self.path = path

    def load(self, location):
        return restore(self.path, location)

    def reload(self):
        return self.load("cuda:0")


torch.save({"w": torch.ones(2)}, "same.pth")
print("default", restore("same.pth")["w"].sum().item())
print("method", Loader("same.pth").reload()["w"].sum().item())
"""
GATHERED = """\
import numpy as np
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = torch.nn.Linear(3, 4).to(device)
preds, losses, kept = [], [], []
for step in range(3):
    out = model(torch.randn(5, 3).to(device))
    preds.append(out.argmax(1))
    losses.append(out.sum().item())
    kept.append(out.detach().cpu())
print("preds", np.concatenate(preds).tolist())
print("losses", np.array(losses).shape, np.stack(kept).shape)
"""
BACKEND = """\
import argparse
import os
import torch


def init_distributed_mode(args):
    args.dist_backend = "nccl"
    torch.distributed.init_process_group(
        backend=args.dist_backend, init_method=args.dist_url, world_size=1, rank=0
    )


parser = argparse.ArgumentParser()
parser.add_argument("--dist_url", default="file://" + os.path.abspath("store"))
args = parser.parse_args()
init_distributed_mode(args)
print("backend", torch.distributed.get_backend() in ("nccl", "gloo"))
torch.distributed.destroy_process_group()
"""


def _env() -> dict[str, str]:
    """This process's environment without the outer pytest's, this checkout's devlint first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DEVLINT_"))}
    env.update(PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    return env


def _python(script: Path, *prefix: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*prefix, sys.executable, script.name], cwd=script.parent, env=_env(),
        capture_output=True, text=True, timeout=300, check=False,
    )


def _emulated(script: Path) -> subprocess.CompletedProcess:
    return _python(script, sys.executable, "-m", "devlint", "emulate", "--force", "--")


def _fix(path: Path, *options: str) -> str:
    assert main(["fix", "--no-cache", *options, str(path)]) in (0, 1)
    return path.read_text()


def _project(tmp_path: Path) -> Path:
    (tmp_path / "cldm").mkdir()
    (tmp_path / "cldm" / "model.py").write_text(MODEL)
    script = tmp_path / "gradio_canny2image.py"
    script.write_text(SCRIPT)
    (tmp_path / "devlint.toml").write_text("")
    return script


def test_imported_function_is_read_from_a_namespace_package(tmp_path: Path) -> None:
    script = _project(tmp_path)
    imported, dependencies = imported_constants(SCRIPT, str(script), str(tmp_path))
    function = imported.function("load_state_dict")
    assert function is not None and function.name == "load_state_dict"
    assert "import torch" in function.source and "map_location=torch.device(location)" in function.source
    # a cached result holds only while the other module is unchanged
    assert dependencies is not None and str(tmp_path / "cldm" / "model.py") in dict(dependencies.files)
    # a call without a CUDA string reads nothing
    quiet = SCRIPT.replace('location="cuda"', 'location="cpu"')
    assert imported_constants(quiet, str(script), str(tmp_path))[0].functions == ()


def test_device_passed_to_an_imported_function_is_fixed_and_runs_on_the_cpu(tmp_path: Path) -> None:
    script = _project(tmp_path)
    if not _has_cuda():
        assert "Attempting to deserialize object on a CUDA device" in _python(script).stderr
    fixed = _fix(script)
    assert 'location="cuda" if torch.cuda.is_available() else "cpu"' in fixed
    assert (tmp_path / "cldm" / "model.py").read_text() == MODEL
    run = _python(script)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "loaded [0.0, 1.0, 2.0, 3.0] True\n"
    assert _fix(script) == fixed


def test_device_parameter_in_the_same_file_is_fixed_and_runs_on_the_cpu(tmp_path: Path) -> None:
    script = tmp_path / "same.py"
    script.write_text(SAME_FILE)
    if not _has_cuda():
        assert "Attempting to deserialize object on a CUDA device" in _python(script).stderr
    fixed = _fix(script)
    assert 'def restore(path, where="cuda" if torch.cuda.is_available() else "cpu"):' in fixed
    assert 'self.load("cuda:0" if torch.cuda.is_available() else "cpu")' in fixed
    run = _python(script)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "default 2.0\nmethod 2.0\n"


def test_numpy_copy_of_gathered_device_results_runs_under_emulated_cuda(tmp_path: Path) -> None:
    script = tmp_path / "gathered.py"
    script.write_text(GATHERED)
    reference = _python(script)
    assert reference.returncode == 0, reference.stderr
    original = _emulated(script)
    assert original.returncode != 0 and "can't convert cuda" in original.stderr
    fixed = _fix(script)
    assert "np.concatenate([t.cpu() for t in preds])" in fixed
    assert "np.array(losses)" in fixed and "np.stack(kept)" in fixed
    emulated = _emulated(script)
    assert emulated.returncode == 0, emulated.stderr
    assert emulated.stdout == reference.stdout


def test_backend_attribute_is_guarded_and_runs_on_the_cpu(tmp_path: Path) -> None:
    script = tmp_path / "misc.py"
    script.write_text(BACKEND)
    if not _has_cuda():
        assert _python(script).returncode != 0
    fixed = _fix(script)
    assert 'args.dist_backend = "nccl" if torch.cuda.is_available() else "gloo"' in fixed
    run = _python(script)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "backend True\n"


def _has_cuda() -> bool:
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    return probe.stdout.strip() == "True"
