"""The legacy CUDA tensor types (``torch.cuda.FloatTensor`` and the like) and
``torch.set_default_tensor_type`` with one of them.

A type constructs an emulated tensor (``torch.cuda.LongTensor([1, 2])``, ``FloatTensor(2, 3)``),
answers ``isinstance`` for emulated tensors of its dtype, and is accepted wherever torch takes a
tensor type (``x.type(torch.cuda.FloatTensor)``, ``set_default_tensor_type``). Without a visible
device they behave as torch's own (which cannot construct anything).
"""

from __future__ import annotations

from typing import Any

import torch

from .machine import Machine
from .patches import Patches
from .tensor import LEGACY_NAMES, Dispatcher


class LegacyDefault:
    """Whether the default tensor type is a CUDA type (factories then make emulated tensors)."""

    def __init__(self) -> None:
        self.cuda = False

    def __call__(self) -> bool:
        return self.cuda


def install(patches: Patches, machine: Machine, dispatcher: Dispatcher, default: LegacyDefault) -> None:
    # torch's own types, for torch's own functions (a name would find the replacements below)
    hosts = {dtype: getattr(torch, name) for dtype, name in LEGACY_NAMES.items()}
    devices = {dtype: getattr(torch.cuda, name) for dtype, name in LEGACY_NAMES.items()}
    for dtype, name in LEGACY_NAMES.items():
        patches.set(torch.cuda, name, _legacy_type(name, dtype, devices[dtype], machine, dispatcher))
        patches.set(torch, name, _host_type(name, dtype, hosts[dtype], dispatcher))
    original_set_default = torch.set_default_tensor_type

    def set_default_tensor_type(kind: Any) -> None:
        cuda, dtype = dispatcher.legacy_type(kind)
        if not cuda or not machine.emulates_build:
            # torch's own function takes torch's own types, or their names
            original_set_default(kind if dtype is None else (devices if cuda else hosts)[dtype])
            default.cuda = False
            return
        machine.use()
        original_set_default(hosts[dtype])
        default.cuda = True

    patches.set(torch, "set_default_tensor_type", set_default_tensor_type)


def _legacy_type(name: str, dtype: torch.dtype, original: Any, machine: Machine, dispatcher: Dispatcher) -> type:
    host = getattr(torch, name)

    class LegacyCudaType(type):
        def __instancecheck__(cls, value: Any) -> bool:
            if dispatcher.is_emulated(value):
                return value.dtype == dtype
            return isinstance(value, original)

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            if not machine.emulates_build:
                return original(*args, **kwargs)
            machine.use()
            with dispatcher.raw():
                made = host(*args, **kwargs)
            return dispatcher.wrap(made)

    return LegacyCudaType(name, (), {"__module__": "torch.cuda", "dtype": dtype, "is_cuda": True, "is_sparse": False})


def _host_type(name: str, dtype: torch.dtype, original: Any, dispatcher: Dispatcher) -> type:
    """``torch.FloatTensor`` and kin: a CUDA tensor is not one (its data is on the CPU here)."""

    class LegacyHostType(type):
        def __instancecheck__(cls, value: Any) -> bool:
            return not dispatcher.is_emulated(value) and isinstance(value, original)

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            return original(*args, **kwargs)

    return LegacyHostType(name, (), {"__module__": "torch", "dtype": dtype, "is_cuda": False, "is_sparse": False})
