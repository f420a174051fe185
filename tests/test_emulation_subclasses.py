"""A program's own tensor subclasses under `devlint emulate`, compared with the same program on the CPU.

One program makes a subclass of each kind (a plain ``class T(torch.Tensor)`` made with
``as_subclass``, one made with ``_make_subclass``, one with ``Tensor.__new__``, one whose
``__torch_function__`` carries a set of sources through every call as pyro's ProvenanceTensor
does), puts it on DEVICE, computes with it and brings results back with ``.cpu()``. It prints what a
program can see: classes, ``isinstance``, values, the carried metadata, devices. Run plainly with
DEVICE=cpu and under ``devlint emulate`` with DEVICE=cuda, everything but the devices must agree
(torch converts results to the subclass the same way on every device: ``Tensor.__torch_function__``
and ``_convert`` in torch/_tensor.py), and every device must be where CUDA puts it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = r'''
import json, os
import torch

DEVICE = os.environ["DEVICE"]


class Tagged(torch.Tensor):
    pass


class Made(torch.Tensor):
    @staticmethod
    def __new__(cls, data, note):
        made = torch.Tensor._make_subclass(cls, data, data.requires_grad)
        made.note = note
        return made


class Aliased(torch.Tensor):
    def __new__(cls, data):
        return super().__new__(cls, data)


def leaves(value):
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in leaves(item)]
    if isinstance(value, dict):
        return leaves(list(value.values()))
    return [value]


def unwrap(value):
    if isinstance(value, (list, tuple)):
        return type(value)(unwrap(item) for item in value)
    if isinstance(value, dict):
        return {key: unwrap(item) for key, item in value.items()}
    return value.plain if isinstance(value, Traced) else value


class Traced(torch.Tensor):
    @staticmethod
    def __new__(cls, data, sources):
        if not sources:
            return data
        made = data.as_subclass(cls)
        made.plain, made.sources = data, sources
        return made

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        sources = frozenset().union(*(t.sources for t in leaves([args, kwargs or {}]) if isinstance(t, Traced)))
        result = func(*unwrap(args), **unwrap(kwargs or {}))
        if isinstance(result, (tuple, list)):
            return type(result)(Traced(r, sources) if isinstance(r, torch.Tensor) else r for r in result)
        return Traced(result, sources) if isinstance(result, torch.Tensor) else result


def seen(name, tensor):
    return {
        "name": name,
        "class": type(tensor).__name__,
        "isinstance": [isinstance(tensor, kind) for kind in (Tagged, Made, Aliased, Traced)],
        "values": tensor.detach().cpu().tolist(),
        "dtype": str(tensor.dtype),
        "device": str(tensor.device),
        "sources": sorted(getattr(tensor, "sources", ())),
        "note": getattr(tensor, "note", None),
        "requires_grad": tensor.requires_grad,
    }


out = []
t = torch.arange(4.0).as_subclass(Tagged)
on = t.to(DEVICE)
other = torch.linspace(0, 1, 4, device=DEVICE)
for name, value in [
    ("moved", on), ("add", on + other), ("matmul", on @ other), ("where", torch.where(on > 1, on, other)),
    ("float64", on.to(torch.float64)), ("view", on.view(2, 2)), ("back", (on * 3).cpu()),
]:
    out.append(seen(name, value))

data = torch.arange(3.0, device=DEVICE, requires_grad=True)
made = Made(data.detach(), "kept")
aliased = Aliased(data.detach())
out += [seen("made", made), seen("made*2", made * 2), seen("aliased", aliased), seen("made.cpu", made.cpu())]

x = Traced(torch.arange(3.0), frozenset({"x"}))
y = Traced(torch.ones(3), frozenset({"y"}))
xs = x.to(DEVICE)
mixed = xs * y.to(DEVICE) + torch.ones(3, device=DEVICE)
top = torch.stack([xs, mixed]).max(dim=0)
loss = (mixed * data).sum()
loss.backward()
out += [seen(n, v) for n, v in [("traced", xs), ("mixed", mixed), ("max", top.values), ("argmax", top.indices), ("loss", loss)]]
out += [seen("traced.cpu", mixed.cpu()), seen("as_tensor", torch.as_tensor(x, device=DEVICE, dtype=torch.float64))]
out.append({"name": "grad", "values": data.grad.cpu().tolist(), "device": str(data.grad.device)})
try:
    xs + torch.ones(3)
    out.append({"name": "meets cpu", "raised": None})
except RuntimeError as error:
    out.append({"name": "meets cpu", "raised": str(error).split(",")[0]})
print(json.dumps(out))
'''


def _run(device: str, emulated: bool, folder: Path) -> list[dict]:
    script = folder / "subclasses.py"
    script.write_text(PROGRAM, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DEVLINT_", "CUDA_VISIBLE"))}
    env.update(DEVICE=device, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "devlint", "emulate", "--force", "--", sys.executable, str(script)]
    run = subprocess.run(
        command if emulated else [sys.executable, str(script)],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], list[dict]]:
    folder = tmp_path_factory.mktemp("subclasses")
    return _run("cpu", False, folder), _run("cuda", True, folder)


# Where CUDA leaves each result: on the device, but for what .cpu() brought back.
BACK_ON_THE_CPU = {"back", "made.cpu", "traced.cpu", "meets cpu"}


def test_subclasses_keep_class_values_and_metadata_as_on_the_cpu(runs: tuple[list[dict], list[dict]]) -> None:
    host, emulated = runs
    assert [r["name"] for r in emulated] == [r["name"] for r in host]
    for on_cpu, on_cuda in zip(host, emulated):
        if on_cpu["name"] == "meets cpu":
            continue  # on one device the program mixes nothing
        if on_cpu["name"] == "made.cpu":
            # .cpu() of a CPU tensor is the tensor itself, with its attributes; from a GPU it is a
            # new object (_convert's as_subclass), which carries none
            assert (on_cpu.pop("note"), on_cuda.pop("note")) == ("kept", None)
        same = {key: value for key, value in on_cuda.items() if key != "device"}
        assert same == {key: value for key, value in on_cpu.items() if key != "device"}, on_cpu["name"]


def test_subclasses_on_cuda_say_cuda_and_come_back_to_the_cpu(runs: tuple[list[dict], list[dict]]) -> None:
    _, emulated = runs
    devices = {r["name"]: r["device"] for r in emulated if "device" in r}
    assert {name for name, device in devices.items() if device == "cpu"} == BACK_ON_THE_CPU - {"meets cpu"}
    assert {device for name, device in devices.items() if name not in BACK_ON_THE_CPU} == {"cuda:0"}
    classes = {r["name"]: r["class"] for r in emulated if "class" in r}
    assert classes["moved"] == classes["back"] == "Tagged" and classes["made.cpu"] == "Made"
    assert classes["traced.cpu"] == "Traced" and classes["as_tensor"] == "Tensor"


def test_a_subclass_meeting_a_cpu_tensor_raises_cudas_error(runs: tuple[list[dict], list[dict]]) -> None:
    host, emulated = runs
    assert host[-1] == {"name": "meets cpu", "raised": None}
    assert emulated[-1] == {"name": "meets cpu", "raised": "Expected all tensors to be on the same device"}
