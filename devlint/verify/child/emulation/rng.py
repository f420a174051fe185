"""Random numbers of the emulated GPU.

On a GPU, CUDA has its own default generator: ``torch.cuda.manual_seed`` seeds it,
``torch.manual_seed`` seeds it and the CPU's, a draw on the CPU does not move it, and
``torch.cuda.get_rng_state``/``initial_seed`` answer for it. Emulation gives the emulated device a
generator of its own (``stream="device"``): a draw made on the device (a factory with
``device="cuda"``, ``normal_`` of an emulated tensor, dropout on the device...) runs the CPU kernel
with the CPU default generator's state swapped for the device generator's, so it consumes the
device's stream and leaves the CPU's alone. The numbers are not the ones a GPU draws (CUDA's
Philox is not the CPU's Mersenne Twister), but which stream each draw consumes is as on a GPU: a
rewrite that moves a draw between devices changes the numbers under emulation too.

``stream="host"`` draws device numbers from the CPU generator (seeding the device's changes
nothing): verify's reference for the ``cpu`` run, where the fixed program draws on the CPU what
the original drew on the device.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from .machine import CUDA0, cuda_index

NOTE = "random numbers drawn on the device (a GPU's values differ)"

# Calls that draw from the default generator of the device they run on.
RANDOM_CALLS = frozenset(
    {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "bernoulli"}
    | {"multinomial", "poisson", "binomial", "_standard_gamma", "_sample_dirichlet", "_dirichlet_grad"}
    | {"normal_", "uniform_", "random_", "exponential_", "geometric_", "cauchy_", "log_normal_", "bernoulli_"}
    | {"dropout", "dropout_", "feature_dropout", "feature_dropout_", "alpha_dropout", "alpha_dropout_"}
    | {"feature_alpha_dropout", "feature_alpha_dropout_", "native_dropout", "dropout1d", "dropout2d", "dropout3d"}
    | {"rrelu", "rrelu_", "rrelu_with_noise", "fractional_max_pool2d", "fractional_max_pool3d"}
    | {"scaled_dot_product_attention", "trunc_normal_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_"}
    | {"kaiming_normal_", "orthogonal_", "sparse_", "gumbel_softmax"}
)


# Dropout-like calls, and whether they train when the call does not say (F.alpha_dropout's
# `training` defaults to False, F.dropout's to True).
_TRAINING_DEFAULT = {
    "dropout": True, "dropout_": True, "dropout1d": True, "dropout2d": True, "dropout3d": True,
    "feature_dropout": True, "feature_dropout_": True, "native_dropout": True,
    "alpha_dropout": False, "alpha_dropout_": False, "feature_alpha_dropout": False, "feature_alpha_dropout_": False,
}  # fmt: skip


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 1.0  # a tensor or anything else: assume it draws


class DeviceRandom:
    """The emulated device's default generator and what draws from it."""

    def __init__(self, stream: str, generator: torch.Generator) -> None:
        if stream not in ("device", "host"):
            raise ValueError(f"stream must be 'device' or 'host', not {stream!r}")
        self.own_stream = stream == "device"
        # CUDA seeds its default generator from a nondeterministic source when it is created.
        self.generator = generator
        self.generator.seed()
        self.drawn = False

    def draws(self, name: str, args: tuple, kwargs: dict) -> bool:
        """Whether the call draws: dropout only while training with p > 0, attention only with
        dropout (which then draws as dropout does), ``rrelu`` only while training."""
        if name not in RANDOM_CALLS:
            return False
        if name in _TRAINING_DEFAULT:
            training = kwargs.get("training", kwargs.get("train", args[2] if len(args) > 2 else _TRAINING_DEFAULT[name]))
            return bool(training) and _number(kwargs.get("p", args[1] if len(args) > 1 else 0.5)) > 0
        if name == "rrelu":
            return bool(kwargs.get("training", args[3] if len(args) > 3 else False))
        if name == "scaled_dot_product_attention":
            return _number(kwargs.get("dropout_p", args[4] if len(args) > 4 else 0.0)) > 0
        return True

    @contextlib.contextmanager
    def drawing(self) -> Iterator[None]:
        """Run a draw made on the device (with true devices, inside the dispatcher)."""
        self.drawn = True
        if not self.own_stream:
            yield
            return
        host = torch.default_generator
        saved = host.get_state()
        host.set_state(self.generator.get_state())
        try:
            yield
        finally:
            self.generator.set_state(host.get_state())
            host.set_state(saved)

    # -- torch.cuda's seeding and state functions ----------------------------------------------

    def manual_seed(self, seed: Any) -> None:
        if self.own_stream:
            self.generator.manual_seed(int(seed))

    def seed(self) -> None:
        if self.own_stream:
            self.generator.seed()

    def initial_seed(self) -> int:
        return self.generator.initial_seed() if self.own_stream else torch.initial_seed()

    def get_state(self) -> torch.Tensor:
        return self.generator.get_state() if self.own_stream else torch.get_rng_state()

    def set_state(self, state: torch.Tensor) -> None:
        if self.own_stream:
            self.generator.set_state(state)
        else:
            torch.set_rng_state(state)


def generator_class(machine: Any) -> type:
    """``torch.Generator`` under emulation: ``torch.Generator(device="cuda")`` makes a generator of
    the emulated device (a CPU generator inside, so the CPU kernels can draw from it, that says
    ``cuda``, or ``cuda:N`` when made with an index, as CUDA's does; the default generator says
    ``cuda:0``); every other generator is torch's own. ``isinstance(g, torch.Generator)`` holds
    for both."""
    original = torch.Generator

    class GeneratorType(type(original)):  # type: ignore[misc]
        def __instancecheck__(cls, value: Any) -> bool:
            return isinstance(value, original)

    class Generator(original, metaclass=GeneratorType):  # type: ignore[misc, valid-type]
        def __new__(cls, device: Any = "cpu") -> Any:
            index = cuda_index(device)
            if index is False or not machine.emulates_build:
                return original(device)
            machine.use(index if isinstance(index, int) else None)
            made = original.__new__(cls, "cpu")
            # CUDA's generator keeps the index it was given: `cuda` when none, as on a GPU
            made._devlint_device = torch.device("cuda") if index is None else torch.device("cuda", index)
            return made

        @classmethod
        def device_default(cls) -> Any:
            """The emulated device's default generator (made without looking for the device)."""
            return original.__new__(cls, "cpu")

        @property
        def device(self) -> torch.device:  # type: ignore[override]
            return getattr(self, "_devlint_device", CUDA0)

    Generator.__module__ = "torch"
    return Generator
