"""What a CUDA build of torch says about itself, where emulation plays one on a CPU build.

Code gated on the build takes the GPU path on a GPU machine: ``torch.version.cuda`` is a version
string, ``torch.backends.cuda.is_built()`` and ``torch.backends.cudnn.is_available()`` are true and
``torch.backends.cudnn.version()`` is a number, whether or not ``CUDA_VISIBLE_DEVICES`` hides the
GPU (they describe the build, not the machine). cuDNN itself is never used: the CPU kernels compute,
so ``torch.backends.cudnn.is_acceptable`` says no, which only skips a cuDNN weight layout (on a
CUDA build too).

An int given as a device (``torch.device(0)``, ``x.to(0)``) is an index of the current
accelerator: on a CUDA build, CUDA.

On a real CUDA build nothing else changes; without CUDA at all (``Machine(visible=False)``), nothing.
"""

from __future__ import annotations

from typing import Any

import torch

from .machine import CUDA_BUILD, Machine
from .patches import Patches

# The CUDA and cuDNN of the GPU builds of torch 2.8-2.11 on PyPI.
CUDA_VERSION = "12.8"
CUDNN_VERSION = 91002


def install(patches: Patches, machine: Machine) -> None:
    if machine.absent:
        return
    # A CUDA build's own answer would be yes for an emulated tensor, and an RNN would then run
    # cuDNN's weight layout, which has no CPU kernel.
    patches.set(torch.backends.cudnn, "is_acceptable", lambda tensor: False)
    if CUDA_BUILD:
        return
    patches.set(torch.version, "cuda", CUDA_VERSION)
    patches.set(torch.backends.cuda, "is_built", lambda: True)
    patches.set(torch.backends.cudnn, "is_available", lambda: True)
    patches.set(torch.backends.cudnn, "version", lambda: CUDNN_VERSION)
    patches.set(torch, "device", _device_class(torch.device))


def _device_class(original: type) -> type:
    """``torch.device`` that reads a lone int as a CUDA index; ``isinstance`` holds for every
    device, and what it makes is torch's own ``torch.device``."""

    class DeviceType(type):
        def __instancecheck__(cls, value: Any) -> bool:
            return isinstance(value, original)

        def __subclasscheck__(cls, other: type) -> bool:
            return issubclass(other, original)

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            if len(args) == 1 and not kwargs and isinstance(args[0], int) and not isinstance(args[0], bool):
                return original("cuda", args[0])
            return original(*args, **kwargs)

    return DeviceType("device", (), {"__module__": "torch", "__doc__": original.__doc__})
