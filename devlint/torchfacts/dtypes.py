"""The last names of torch's dtypes, as ``x.to(torch.float32)`` writes them: a cast, no move.
DEV304's flow (devlint.rulekit.value_flow) and its gate condition read them. (A module of its own:
names.py's tables are what no other module may list again, and verify's tables keyed by dtype,
each name with its own epsilon, are no copy of this one.)"""

from __future__ import annotations

DTYPE_NAMES = frozenset(
    {
        "float32", "float", "float16", "half", "bfloat16", "float64", "double", "complex64", "cfloat",
        "complex128", "cdouble", "int64", "long", "int32", "int", "int16", "short", "int8", "uint8", "bool",
    }
)
