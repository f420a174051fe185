"""Which reduced precisions a run computed in: the autocast regions it entered (child side).

A run that enters ``torch.autocast`` (or ``torch.cuda.amp.autocast``, ``torch.cpu.amp.autocast``,
which enter it through ``super().__enter__()``; the decorator forms enter it too) enabled,
computes its matrix products and convolutions in the autocast dtype: float16 or bfloat16. The
parent compares such a run with a float32 one at that dtype's tolerance (verify/precision.py), so
the run reports what it entered, as ``DEVICE:DTYPE`` (``cuda:float16``).

The recorder wraps ``torch.autocast.__enter__`` (public: ``torch.autocast`` is the class every
autocast context derives from) and reads back, with the public ``torch.is_autocast_enabled`` and
``torch.get_autocast_dtype``, what the context set: it observes and changes nothing. Autocast
switched on with ``torch.set_autocast_enabled`` alone, outside any context, is not seen.
"""

from __future__ import annotations

from typing import Any

_REDUCED = ("float16", "bfloat16")


class AutocastRecord:
    def __init__(self) -> None:
        self.entered: set[str] = set()

    def install(self, torch: Any) -> AutocastRecord:
        cls = torch.autocast
        enter = cls.__enter__
        entered = self.entered

        def recording_enter(context: Any) -> Any:
            result = enter(context)
            device = getattr(context, "device", None)
            if isinstance(device, str) and torch.is_autocast_enabled(device):
                dtype = str(torch.get_autocast_dtype(device)).replace("torch.", "")
                if dtype in _REDUCED:
                    entered.add(f"{device}:{dtype}")
            return result

        cls.__enter__ = recording_enter
        return self

    def found(self) -> list[str]:
        return sorted(self.entered)
