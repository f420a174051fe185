"""Storages of emulated tensors, so that checkpoints behave as on a GPU.

``torch.save`` records where each storage lives (``cuda:0`` on a GPU) and ``torch.load`` puts it
back there unless ``map_location`` says otherwise. A storage of an emulated tensor carries a mark
(set when the tensor is pickled or its storage is asked for, see tensor.py), and
``UntypedStorage.device`` reports ``cuda:0`` for marked storages: torch's own location taggers then
write ``cuda:0``. On loading, torch restores a ``cuda`` location with ``storage.to(device=...)``
(after checking ``torch.cuda.is_available()`` and the device count, which emulation answers), so
``UntypedStorage.to`` and ``.cuda`` make a marked copy, and torch's rebuild functions make a tensor
on ``storage.device``, an emulated one. What ``map_location`` maps to the CPU, and a checkpoint of
CPU tensors loaded without it, stays on the CPU, as on a GPU machine.
"""

from __future__ import annotations

from typing import Any

import torch

from .machine import CUDA0, Machine, cuda_index
from .patches import Patches
from .tensor import STORAGE_MARK


def install(patches: Patches, machine: Machine) -> None:
    storage = torch.UntypedStorage
    true_device = storage.device
    original_to = storage.to
    original_cuda = storage.cuda

    def device(self: torch.UntypedStorage) -> torch.device:
        return CUDA0 if getattr(self, STORAGE_MARK, False) else true_device.__get__(self)

    def to(self: torch.UntypedStorage, *, device: Any, non_blocking: bool = False) -> torch.UntypedStorage:
        index = cuda_index(device)
        marked = getattr(self, STORAGE_MARK, False)
        if index is False:
            return _copy(self, mark=False) if marked else original_to(self, device=device, non_blocking=non_blocking)
        if not machine.emulates_build:
            return original_to(self, device=device, non_blocking=non_blocking)
        machine.use(index if isinstance(index, int) else None)
        return self if marked else _copy(self, mark=True)

    def cuda(self: torch.UntypedStorage, device: Any = None, non_blocking: bool = False) -> torch.UntypedStorage:
        if not machine.emulates_build:
            return original_cuda(self, device, non_blocking)
        return to(self, device=torch.device("cuda", device) if device else torch.device("cuda"))

    patches.set(storage, "device", property(device))
    patches.set(storage, "to", to)
    patches.set(storage, "cuda", cuda)


def _copy(source: torch.UntypedStorage, mark: bool) -> torch.UntypedStorage:
    with torch._C.DisableTorchFunction():
        duplicate = torch.UntypedStorage(source.nbytes()).copy_(source)
    if mark:
        setattr(duplicate, STORAGE_MARK, True)
    return duplicate
