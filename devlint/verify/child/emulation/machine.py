"""The emulated machine: one CUDA device, index 0, unless ``CUDA_VISIBLE_DEVICES`` hides it.

CUDA reads ``CUDA_VISIBLE_DEVICES`` once, when the driver starts: at the first query
(``torch.cuda.is_available()``, ``device_count()``) or the first CUDA tensor. Changing the
variable afterwards has no effect. ``Machine.visible`` does the same: it reads the variable the
first time it is asked, and keeps the answer.
"""

from __future__ import annotations

import os
import sys

import torch

CUDA0 = torch.device("cuda", 0)
NAME = "Emulated CUDA device (devlint verify)"
# What the emulated device says about itself (an H100's numbers, so that capability checks pass).
CAPABILITY = (9, 0)
TOTAL_MEMORY = 80 * 1024**3
MULTIPROCESSORS = 132


_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_EMULATION_DIR = os.path.dirname(os.path.abspath(__file__))


class EmulationUnsupportedError(RuntimeError):
    """The program used a CUDA feature that emulation does not model: the run stops here rather
    than go on with a difference from a GPU. The message starts ``not emulated:`` and names the
    feature and the program's line that reached it (the innermost frame outside torch and
    emulation), so a user reading a test's failure knows where to look."""

    def __init__(self, feature: str) -> None:
        self.feature = feature
        self.where = _caller()
        where = f" (at {self.where})" if self.where else ""
        super().__init__(f"not emulated: {feature}{where}")


def _caller() -> str | None:
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not (path.startswith(_TORCH_DIR + os.sep) or path.startswith(_EMULATION_DIR + os.sep)):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


# A CUDA error is a torch.AcceleratorError (a RuntimeError) where torch has that class (2.8+).
_CUDA_ERROR = getattr(torch, "AcceleratorError", RuntimeError)
# torch is built with CUDA: a hidden GPU then behaves as torch's own code says, exactly.
CUDA_BUILD = bool(getattr(torch._C, "_has_cuda", False))


def invalid_ordinal() -> RuntimeError:
    return _CUDA_ERROR(
        "CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some other API "
        "call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1"
    )


def invalid_device_id() -> AssertionError:
    """What torch.cuda.get_device_properties (and so get_device_name, get_device_capability)
    raises for an index past the last GPU."""
    return AssertionError("Invalid device id")


def no_gpus() -> RuntimeError:
    """What a CUDA build raises on first use when CUDA_VISIBLE_DEVICES hides every GPU."""
    return RuntimeError("No CUDA GPUs are available")


def not_a_cuda_device() -> RuntimeError:
    return RuntimeError("Invalid device, must be cuda device")


def zero_is_visible(value: str | None) -> bool:
    """Whether device 0 of a one-GPU machine is visible under ``CUDA_VISIBLE_DEVICES=value``:
    CUDA takes the comma-separated indices up to the first one that is not a device."""
    if value is None:
        return True
    first = value.split(",", 1)[0].strip()
    try:
        return int(first) == 0
    except ValueError:
        return False


class Machine:
    """``visible``: None, decided by ``CUDA_VISIBLE_DEVICES`` when first asked (a hidden GPU then
    behaves as on a CUDA build whose GPUs are all hidden); True, there regardless; False, no CUDA
    at all: torch's own behaviour on this machine (verify's CPU run on a machine without a GPU,
    where there is nothing for a program to unhide)."""

    def __init__(self, visible: bool | None = None) -> None:
        self._visible = visible
        self._absent = visible is False
        # CUDA was initialised (a tensor, a stream, a device query past is_available/device_count).
        self.initialized = False
        # What emulation did differently from a GPU, for the report.
        self.notes: set[str] = set()

    @property
    def visible(self) -> bool:
        if self._visible is None:
            self._visible = zero_is_visible(os.environ.get("CUDA_VISIBLE_DEVICES"))
        return self._visible

    @property
    def absent(self) -> bool:
        """No CUDA at all: torch's own behaviour on this machine (known without asking)."""
        return self._absent

    @property
    def hidden(self) -> bool:
        """CUDA_VISIBLE_DEVICES hides the GPU, and emulation plays the CUDA build that sees none
        (on a real CUDA build torch's own code does that)."""
        return not self.visible and not self._absent and not CUDA_BUILD

    @property
    def emulates_build(self) -> bool:
        """Emulation plays a CUDA build of torch (with or without a visible GPU)."""
        return self.visible or self.hidden

    def use(self, index: int | None = None) -> None:
        """Initialise the device for ``index`` (None: the current one); raise as CUDA does."""
        if self.hidden:
            raise no_gpus()
        if index is not None and index != 0:
            raise invalid_ordinal()
        self.initialized = True


def cuda_index(device: object) -> int | None | bool:
    """``False`` when ``device`` is not a CUDA device; else its index (None when not given).

    ``device`` is what torch accepts: a string, a ``torch.device`` or an int (a CUDA index)."""
    if isinstance(device, bool) or device is None:
        return False
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        try:
            device = torch.device(device)
        except RuntimeError:
            return False
    if isinstance(device, torch.device) and device.type == "cuda":
        return device.index
    return False
