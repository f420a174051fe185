"""The precision two runs are compared at: float32's, or a reduced one where autocast made them differ.

Under ``torch.autocast`` a GPU computes matrix products and convolutions in float16 (or bfloat16);
the same program on the CPU, where a fixed program typically turns autocast off
(``enabled=device.type == "cuda"``) or the CPU autocasts to bfloat16, computes them otherwise.
Their outputs then differ by what the reduced type cannot hold, not by anything a fix did: a loss
of 100.3 is 100.25 or 100.375 in float16. So a comparison where the runs computed in different
precisions is made at the coarser one's tolerance, and the verdict says so (``compared at float16
tolerance``). So is one between a real GPU and emulation computing in the same reduced type: their
kernels round differently.

The tolerance is relative, counted in units of the reduced type's precision (its machine epsilon:
2^-10 for float16's 11 significant bits, 2^-7 for bfloat16's 8): ``|a - e| <= atol + rtol * |e|``
with ``rtol`` = 8 units and ``atol`` = 1 unit (float16: 0.78% and 0.00098). One rounding is half
a unit; a value that went through a chain of reduced-precision products (a forward pass, a few
optimizer steps feeding the next) gathers several: the training script of issue 31 printed a loss
near 100 that emulated float16 and the CPU's float32 put 0.51 apart, 5 units. 8 units leaves room
for that while a fix that moves a value by 1% still fails. Integers and text still compare
exactly. A wider ``--rtol``/``--atol`` given on the command line wins.
"""

from __future__ import annotations

from dataclasses import dataclass

from devlint.verify.session import RunRecord

# Machine epsilon: the distance from 1.0 to the next number the type holds.
EPSILON = {"float16": 2.0**-10, "bfloat16": 2.0**-7}
# Relative tolerance, in units of EPSILON.
UNITS = 8


@dataclass(frozen=True)
class Precision:
    """``dtype``: the reduced type a comparison is made at, None for float32's own tolerance."""

    dtype: str | None
    rtol: float | None
    atol: float | None
    # Why, for the detail: how the two runs computed.
    why: str = ""

    def said(self) -> str:
        return f"compared at {self.dtype} tolerance" if self.dtype else ""

    def describe(self) -> str:
        """The tolerance spelled out, for a verdict's detail."""
        if self.dtype is None:
            return ""
        return f"compared at {self.dtype} tolerance ({self.why}): |a - e| <= {self.atol:.3g} + {self.rtol:.3g} * |e|"


def precision(actual: RunRecord, expected: RunRecord, rtol: float | None, atol: float | None) -> Precision:
    """The precision ``actual`` is compared with ``expected`` at; ``rtol``/``atol`` as given
    (None: float32's)."""
    used = actual.autocast | expected.autocast
    same = actual.autocast == expected.autocast and actual.emulated == expected.emulated
    if not used or same:
        return Precision(None, rtol, atol)
    dtypes = {entry.partition(":")[2] for entry in used}
    dtype = "bfloat16" if "bfloat16" in dtypes else "float16"
    unit = EPSILON[dtype]
    if actual.autocast == expected.autocast:
        why = f"both under {_named(actual.autocast)}, one on the GPU and one emulated: their kernels round otherwise"
    else:
        why = f"{_named(actual.autocast)} against {_named(expected.autocast)}"
    return Precision(dtype, max(UNITS * unit, rtol or 0.0), max(unit, atol or 0.0), why)


def _named(autocast: frozenset[str]) -> str:
    """``cuda:float16`` -> ``float16 autocast on cuda``; nothing -> ``float32``."""
    if not autocast:
        return "float32"
    return " and ".join(f"{dtype} autocast on {device}" for device, _, dtype in (e.partition(":") for e in sorted(autocast)))
