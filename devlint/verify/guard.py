"""The device-mixing guard of the meta run (child side: imports torch).

A program whose device was set to ``meta`` computes shapes without data. Most torch ops raise
when they see tensors on two devices, but some do not check on ``meta``: ``mm``, ``matmul``,
``linear``, ``bmm``, ``conv2d`` and ``einsum`` happily combine a CPU tensor with a meta one and
return a tensor on either device. ``DeviceGuard`` is a ``TorchFunctionMode`` that looks at every
torch call the program makes and raises ``MixedDevicesError`` when one call receives tensors on
more than one device, so those mixes are caught too.

A tensor counts when it has at least one dimension, or lives off the CPU: torch itself lets a
0-dim CPU tensor (a "CPU scalar") join a computation on any device, so that is no mix.

Calls that move data between devices on purpose are let through:

- ``to``, ``copy_``, ``cpu``, ``cuda``, ``type``, ``type_as``, ``new_tensor``: moving or
  copying data from one device to another is what they are for;
- ``__set__`` (assigning ``tensor.data``) and ``_has_compatible_shallow_copy_type``: how
  ``Module.to`` puts a parameter's moved data in place;
- indexing (``__getitem__``, ``__setitem__``, ``index_put_``, ``index_put``) when every tensor
  on another device is on the CPU: CUDA accepts CPU index tensors and CPU values there.

The guard also stops a program that needs real values, which a meta tensor does not have
(``.item()``, ``bool()``, printing or formatting a tensor, ``.tolist()``, ``.numpy()``,
``torch.equal``, copying a meta tensor to a real device with ``.cpu()``, ``.to(...)`` or
``copy_``): it raises ``NeedsRealValuesError`` so that the run is reported as "not applicable"
rather than passing on values that were never computed.
"""

from __future__ import annotations

import traceback
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

CROSS_DEVICE = frozenset(
    {"to", "copy_", "cpu", "cuda", "type", "type_as", "new_tensor", "__set__", "_has_compatible_shallow_copy_type"}
)
INDEXING = frozenset({"__getitem__", "__setitem__", "index_put_", "index_put"})
VALUE_READERS = frozenset(
    {
        "item",
        "tolist",
        "numpy",
        "__array__",
        "__bool__",
        "__float__",
        "__int__",
        "__index__",
        "__complex__",
        "__repr__",
        "__format__",
        "equal",
        "allclose",
        "is_nonzero",
    }
)


class MixedDevicesError(RuntimeError):
    """One torch call received tensors on more than one device."""

    def __init__(self, op: str, devices: list[str]) -> None:
        super().__init__(f"`{op}` received tensors on {' and '.join(devices)}")
        self.op = op
        self.devices = devices
        self.stack: list[traceback.FrameSummary] = []


class NeedsRealValuesError(RuntimeError):
    """The program reads the values of a meta tensor, which has none."""

    def __init__(self, op: str) -> None:
        super().__init__(f"`{op}` reads the values of a tensor")
        self.op = op
        self.stack: list[traceback.FrameSummary] = []


def op_name(func: Any) -> str:
    name = getattr(func, "__name__", None) or repr(func)
    return "__repr__" if name == "__str__" else name


def _counts(tensor: torch.Tensor) -> bool:
    return tensor.dim() > 0 or tensor.device.type != "cpu"


class DeviceGuard(TorchFunctionMode):
    """Raises on device mixes and on reads of meta values; records whether meta was ever used.

    The first error raised is also kept in ``violation``: a program that catches it (``except
    RuntimeError: ...``) must not turn the run into a pass.
    """

    def __init__(self) -> None:
        super().__init__()
        self.saw_meta = False
        self.violation: MixedDevicesError | NeedsRealValuesError | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        kwargs = kwargs or {}
        tensors = [leaf for leaf in tree_leaves((args, kwargs)) if isinstance(leaf, torch.Tensor)]
        if tensors:
            try:
                self.check(op_name(func), tensors, args, kwargs)
            except (MixedDevicesError, NeedsRealValuesError) as error:
                if self.violation is None:
                    # Where the program was: the error may be caught and wrapped far from here.
                    error.stack = traceback.extract_stack()
                    self.violation = error
                raise
        return func(*args, **kwargs)

    def check(self, op: str, tensors: list[torch.Tensor], args: tuple = (), kwargs: dict | None = None) -> None:
        meta = any(t.device.type == "meta" for t in tensors)
        self.saw_meta = self.saw_meta or meta
        if meta and (op in VALUE_READERS or _copies_meta_out(op, args, kwargs or {})):
            raise NeedsRealValuesError(op)
        if op in CROSS_DEVICE:
            return
        counted = [t for t in tensors if _counts(t)]
        devices = sorted({str(t.device) for t in counted})
        if len(devices) < 2:
            return
        if op in INDEXING:
            own = counted[0].device if counted else None
            if all(t.device == own or t.device.type == "cpu" for t in counted):
                return
        raise MixedDevicesError(op, devices)


def _is_meta(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "meta"


def _copies_meta_out(op: str, args: tuple, kwargs: dict) -> bool:
    """``meta.cpu()``, ``meta.to(<not meta>)``, ``real.copy_(meta)``: values that do not exist."""
    if not args:
        return False
    if op == "cpu":
        return _is_meta(args[0])
    if op == "copy_":
        return len(args) > 1 and _is_meta(args[1]) and not _is_meta(args[0])
    if op != "to" or not _is_meta(args[0]):
        return False
    destination = kwargs.get("device")
    for value in args[1:]:
        if destination is not None:
            break
        if isinstance(value, (str, int, torch.device)) and not isinstance(value, bool):
            destination = value
        elif isinstance(value, torch.Tensor):
            destination = value.device
    if destination is None:
        return False
    try:
        return torch.device(destination).type != "meta"
    except (RuntimeError, TypeError):
        return False
