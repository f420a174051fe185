"""Comparing two results of ``main()`` (child side: imports torch).

A result is a tensor, a number, a string, ``None``, or a dict/list/tuple nesting them. The two
results are walked together; every leaf pair is compared with ``torch.testing.assert_close``
(devices are not compared: a CPU result is compared with a CUDA one; NaN equals NaN). A mismatch
names the leaf by its key path (``result['metrics'][0]``) and gives the largest absolute
difference, so a report can say what differs and by how much.

Compared at a reduced precision (``reduced``: one run computed under float16 or bfloat16 autocast,
the other did not), a float16 or bfloat16 tensor is compared as float32: autocast's output dtype
follows the device's autocast, not the fix, and the tolerance the parent gives is that dtype's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

# At most this many differing leaves are reported per comparison.
MAX_MISMATCHES = 5


@dataclass
class Mismatch:
    path: str
    message: str
    max_abs_diff: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "message": self.message, "max_abs_diff": self.max_abs_diff}


class UnsupportedResultError(TypeError):
    def __init__(self, path: str, value: object) -> None:
        super().__init__(
            f"main() returned a {type(value).__name__} at {path}; return tensors, numbers, strings, "
            "None, or dicts/lists/tuples of them"
        )


def normalize(value: Any, path: str = "result") -> Any:
    """The result as plain containers and detached CPU tensors."""
    if isinstance(value, torch.Tensor):
        value = value.detach()
        if value.layout != torch.strided:
            value = value.to_dense()
        return value.cpu()
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return value
    if isinstance(value, dict):
        return {key: normalize(item, f"{path}[{key!r}]") for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        items = [normalize(item, f"{path}[{i}]") for i, item in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    numpy_value = _from_numpy(value)
    if numpy_value is not None:
        return numpy_value
    raise UnsupportedResultError(path, value)


def _from_numpy(value: Any) -> Any:
    module = type(value).__module__ or ""
    if not module.startswith("numpy"):
        return None
    if hasattr(value, "shape") and value.shape != ():
        return torch.from_numpy(value.copy())
    return value.item() if hasattr(value, "item") else None


def compare(
    actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None, reduced: bool = False
) -> list[Mismatch]:
    """Every way ``actual`` differs from ``expected`` (at most MAX_MISMATCHES of them)."""
    found: list[Mismatch] = []
    if reduced:
        actual, expected = _widened(actual), _widened(expected)
    _walk(actual, expected, "result", rtol, atol, found)
    return found[:MAX_MISMATCHES]


def _widened(value: Any) -> Any:
    """``value`` with its float16 and bfloat16 tensors as float32."""
    if isinstance(value, torch.Tensor):
        return value.float() if value.dtype in (torch.float16, torch.bfloat16) else value
    if isinstance(value, dict):
        return {key: _widened(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_widened(item) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def _walk(actual: Any, expected: Any, path: str, rtol, atol, found: list[Mismatch]) -> None:
    if len(found) >= MAX_MISMATCHES:
        return
    if isinstance(expected, dict) or isinstance(actual, dict):
        if not (isinstance(expected, dict) and isinstance(actual, dict)):
            found.append(Mismatch(path, f"{_kind(actual)} vs {_kind(expected)}"))
            return
        if list(actual) != list(expected):
            found.append(Mismatch(path, f"keys {list(actual)} vs {list(expected)}"))
            return
        for key in expected:
            _walk(actual[key], expected[key], f"{path}[{key!r}]", rtol, atol, found)
        return
    if isinstance(expected, (list, tuple)) or isinstance(actual, (list, tuple)):
        if type(actual) is not type(expected):
            found.append(Mismatch(path, f"{_kind(actual)} vs {_kind(expected)}"))
            return
        if len(actual) != len(expected):
            found.append(Mismatch(path, f"length {len(actual)} vs {len(expected)}"))
            return
        for i, (a, e) in enumerate(zip(actual, expected)):
            _walk(a, e, f"{path}[{i}]", rtol, atol, found)
        return
    mismatch = compare_leaf(actual, expected, path, rtol, atol)
    if mismatch is not None:
        found.append(mismatch)


def compare_leaf(actual: Any, expected: Any, path: str, rtol=None, atol=None) -> Mismatch | None:
    if isinstance(expected, str) or isinstance(actual, str) or expected is None or actual is None:
        same = actual == expected and type(actual) is type(expected)
        return None if same else Mismatch(path, f"{actual!r} vs {expected!r}")
    try:
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, check_device=False, equal_nan=True)
    except AssertionError as error:
        return Mismatch(path, _one_line(str(error)), _max_abs_diff(actual, expected))
    except (TypeError, ValueError) as error:
        return Mismatch(path, _one_line(str(error)))
    return None


def _max_abs_diff(actual: Any, expected: Any) -> float | None:
    try:
        a = torch.as_tensor(actual).detach().cpu()
        e = torch.as_tensor(expected).detach().cpu()
        if a.shape != e.shape:
            return None
        if a.is_complex() or e.is_complex():
            a, e = a.to(torch.complex128), e.to(torch.complex128)
        else:
            a, e = a.to(torch.float64), e.to(torch.float64)
        diff = (a - e).abs()
        both_nan = torch.isnan(a.abs()) & torch.isnan(e.abs())
        diff = torch.where(both_nan, torch.zeros_like(diff), diff)
        diff = torch.nan_to_num(diff, nan=math.inf)
        return float(diff.max()) if diff.numel() else 0.0
    except (RuntimeError, TypeError):
        return None


def _kind(value: Any) -> str:
    return type(value).__name__


def _one_line(message: str) -> str:
    return " ".join(message.split())
