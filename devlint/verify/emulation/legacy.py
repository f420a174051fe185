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
    for dtype, name in LEGACY_NAMES.items():
        original = getattr(torch.cuda, name)
        patches.set(torch.cuda, name, _legacy_type(name, dtype, original, machine, dispatcher))
    original_set_default = torch.set_default_tensor_type

    def set_default_tensor_type(kind: Any) -> None:
        cuda, dtype = dispatcher.legacy_type(kind)
        if not cuda or not machine.visible:
            original_set_default(kind)
            default.cuda = False
            return
        machine.use()
        original_set_default(f"torch.{LEGACY_NAMES[dtype]}")
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
            if not machine.visible:
                return original(*args, **kwargs)
            machine.use()
            with dispatcher.raw():
                made = host(*args, **kwargs)
            return dispatcher.wrap(made)

    return LegacyCudaType(name, (), {"__module__": "torch.cuda", "dtype": dtype, "is_cuda": True, "is_sparse": False})
