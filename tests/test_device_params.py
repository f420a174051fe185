"""devlint.analysis.device_params: which parameters of a module's own functions reach a device
sink, directly, through another of its functions, or not at all."""

from __future__ import annotations

import libcst as cst
import pytest

from devlint.analysis.device_params import DeviceParams, signature_of

MODULE = """\
import torch
from safetensors import safe_open
from torch import load as restore


def direct(path, location="cpu", *, dev=None, label=None):
    state = torch.load(path, map_location=torch.device(location))
    print(label)
    return state, torch.zeros(2).to(dev)


def opened(path, where):
    with safe_open(path, framework="pt", device=where) as f:
        return f


def aliased(path, spot):
    return restore(path, spot)


def handed(a, b, c):
    return direct(a, c), opened(a, where=b)


def rebound(path, location):
    location = location.lower()
    return torch.load(path, map_location=location)


def looked_at(location):
    return location == "cuda"


def starred(*args, location="cpu"):
    return torch.device(*args)


class Runner:
    def __init__(self, net, target="cuda"):
        self.net = self.place(net, target)

    def place(self, net, to):
        return net.to(to)

    @staticmethod
    def build(n, device):
        return torch.ones(n, device=device)


def twice(x):
    return x.to(x)


def twice(x):
    return x
"""


@pytest.fixture(scope="module")
def index() -> DeviceParams:
    return DeviceParams.of(cst.parse_module(MODULE))


@pytest.mark.parametrize(
    ("function", "reaching"),
    [
        ("direct", {"location", "dev"}),
        ("opened", {"where"}),
        ("aliased", {"spot"}),
        ("handed", {"b", "c"}),
        ("Runner.__init__", {"target"}),
        ("Runner.place", {"to"}),
        ("Runner.build", {"device"}),
    ],
)
def test_parameters_that_reach_a_sink(index: DeviceParams, function: str, reaching: set[str]) -> None:
    signature = index.get(function)
    assert signature is not None and signature.reaching == reaching


@pytest.mark.parametrize("function", ["rebound", "looked_at", "starred", "twice"])
def test_parameters_that_reach_nothing_known(index: DeviceParams, function: str) -> None:
    assert index.get(function) is None


def test_arguments_bind_parameters_as_python_binds_them(index: DeviceParams) -> None:
    direct = index.get("direct")
    assert direct is not None
    assert direct.parameter(1, None) == "location"
    assert direct.parameter(None, "dev") == "dev"
    assert direct.parameter(None, "nothing") is None
    assert direct.parameter(5, None) is None
    # a method's positions start after self; a static method's do not
    place, build = index.get("Runner.place"), index.get("Runner.build")
    assert place is not None and place.parameter(1, None) == "to"
    assert build is not None and build.parameter(1, None) == "device"


def test_another_modules_function_is_read_from_its_source() -> None:
    source = "import torch as t\ndef load_state_dict(p, location='cpu'):\n    return t.load(p, map_location=location)\n"
    signature = signature_of(source, "load_state_dict")
    assert signature is not None and signature.reaching == {"location"}
    assert signature_of("def broken(:\n", "broken") is None
    assert signature_of(source, "missing") is None
