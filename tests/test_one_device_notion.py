"""One device notion per fixed program (issue 31 items 1 and 3): CUDA-first training scripts are
fixed as a user would fix them, at torch-version 2.4 (the CUDA check) and 2.9 (the accelerator),
and must then ask one availability check, pin every DataLoader one way, follow forward's input,
compile, be left alone by a second `devlint fix`, and run on this CPU-only machine."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# A model placed with `.cuda(args.gpu)`, batches with `.cuda()` and `.cuda(args.gpu)`, two
# DataLoaders (one without pin_memory, one with pin_memory=True), and a forward that reassigns its
# input before building a mask on "cuda".
TRAIN = '''\
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv = nn.Conv1d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4 * width, 3)

    def forward(self, x):
        x = self.conv(x)
        mask = torch.ones(x.shape, device="cuda")
        x = x * mask
        x = x.flatten(1)
        return self.fc(x)


def evaluate(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.cuda(), target.cuda()
            correct += (model(data).argmax(1) == target).sum().item()
    return correct


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(0)
    xs, ys = torch.randn(32, 1, 8), torch.randint(0, 3, (32,))
    train_loader = DataLoader(TensorDataset(xs, ys), batch_size=8, shuffle=True)
    test_loader = DataLoader(TensorDataset(xs, ys), batch_size=8, pin_memory=True)
    model = Net(8).cuda(args.gpu)
    criterion = nn.CrossEntropyLoss().cuda(args.gpu)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        model.train()
        for data, target in train_loader:
            data = data.cuda(args.gpu, non_blocking=True)
            target = target.cuda(args.gpu, non_blocking=True)
            loss = criterion(model(data), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        torch.cuda.synchronize()
        print("epoch", epoch, "correct", evaluate(model, test_loader))


if __name__ == "__main__":
    main()
'''

# A launcher-style script: the GPU comes from LOCAL_RANK, as torch.device("cuda", rank), an
# f-string and `.cuda(local_rank)`; an attention block masks with a tensor made on "cuda".
RANKED = '''\
import os

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(6, 6)

    def forward(self, x):
        x = F.relu(self.proj(x))
        causal = torch.tril(torch.ones(x.shape[1], x.shape[1])).cuda()
        return (x @ x.transpose(1, 2)) * causal


def run(local_rank: int):
    torch.manual_seed(1)
    target = torch.device("cuda", local_rank)
    block = Block().cuda(local_rank)
    data = [torch.randn(4, 6) for _ in range(6)]
    loader = DataLoader(data, batch_size=3)
    probe = DataLoader(data[:3], batch_size=3, pin_memory=True)
    total = 0.0
    for batch in loader:
        total += block(batch.to(target)).sum().item()
    for batch in probe:
        total += block(batch.to(f"cuda:{local_rank}")).mean().item()
    print("total", round(total, 3))


if __name__ == "__main__":
    run(int(os.environ.get("LOCAL_RANK", 0)))
'''

PROGRAMS = {"train": TRAIN, "ranked": RANKED}


def _devlint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "devlint", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("version", ["2.4", "2.9"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_fixed_program_holds_one_device_notion_and_runs_on_a_cpu(tmp_path: Path, name: str, version: str) -> None:
    path = tmp_path / f"{name}.py"
    path.write_text(PROGRAMS[name])
    original = subprocess.run([sys.executable, path.name], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert original.returncode != 0  # CUDA-only as written: the fix is what makes it run here

    first = _devlint("fix", "--torch-version", version, path.name, cwd=tmp_path)
    # What may remain is DEV301's advice on a loader's whole batch (`for batch in loader:
    # batch.to(...)`), whose fix is unsafe: the batch's `to()` is whatever the collate made.
    remaining = [line for line in first.stdout.splitlines() if re.match(r"\S+:\d+:\d+: DEV\d+ ", line)]
    assert all(" DEV301 " in line for line in remaining), first.stdout + first.stderr
    assert first.returncode == (1 if remaining else 0), first.stdout + first.stderr
    fixed = path.read_text()
    compile(fixed, path.name, "exec")

    # one availability check and one accelerator for every device expression the fixes wrote
    if version == "2.9":
        assert "torch.accelerator.is_available()" in fixed
        assert "cuda" not in fixed, fixed  # no CUDA check, string or module beside the accelerator
    else:
        assert "torch.accelerator" not in fixed
        checks = set(re.findall(r"torch\.\w+\.is_available\(\)", fixed))
        assert checks == {"torch.cuda.is_available()"}, checks
    # forward follows its input, reassigned from itself, not the global device
    assert "x.device" in fixed and "device=device" not in fixed
    # every DataLoader pins one way
    assert "pin_memory=True" not in fixed

    second = _devlint("fix", "--torch-version", version, path.name, cwd=tmp_path)
    assert second.returncode == first.returncode and path.read_text() == fixed, second.stdout

    run = subprocess.run([sys.executable, "-W", "always", path.name], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert ("correct" if name == "train" else "total") in run.stdout
    assert "pin_memory" not in run.stderr  # no loader left warning that it cannot pin


LIGHTNING = """\
import lightning
import torch
from torch.cuda.amp import autocast


class Speech({base}):
    def validation_step(self, batch, batch_idx):
        with autocast(enabled=self.precision == 16):
            return self.model({batch})
"""


@pytest.mark.parametrize("version", ["2.4", "2.9"])
def test_amp_in_a_lightning_module_follows_the_modules_own_device(tmp_path: Path, version: str) -> None:
    """A LightningModule knows its device: no module-level definition beside `self.device`. A
    plain nn.Module has no `.device` of its own: it gets the file's definition, unless the method
    moves its data to `self.device`, which then exists where the method runs (a string or a
    torch.device, read through `torch.device(...)`)."""
    cases = (
        ("lightning.LightningModule", "batch.to(self.device)", "self.device.type"),
        ("torch.nn.Module", "batch.to(self.device)", "torch.device(self.device).type"),
        ("torch.nn.Module", "batch", None),
    )
    for base, batch, own in cases:
        script = tmp_path / "speech.py"
        script.write_text(LIGHTNING.format(base=base, batch=batch))
        done = _devlint("fix", "--no-cache", "--torch-version", version, script.name, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        fixed = script.read_text()
        if own is not None:
            assert own in fixed, fixed
        assert ("\ndevice = " in fixed) is (own is None), fixed
        assert "from torch.cuda.amp import" not in fixed
        compile(fixed, "speech.py", "exec")
