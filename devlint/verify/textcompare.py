"""Comparing what two runs printed (programs without a ``main()`` returning a value).

Text must match exactly, with allowances that only exist because the runs happen on different
devices: ``, device='cuda:0'`` in a printed tensor is ignored, and numbers compare with
``torch.testing.assert_close``'s rule ``|a - b| <= atol + rtol * |b|`` (float32 defaults unless
``--rtol``/``--atol`` are given), or when two decimals differ by at most one unit of the last
digit printed, since a program that rounds for printing can round a hair's difference either way.
An integer never equals a decimal (``1`` vs ``1.``): that is a change of type, not of precision.
Asked to (``ignore_devices``), device names are set aside too: ``cuda``, ``cuda:0``, ``cpu``,
``device(type='cuda', index=0)``, ``torch.cuda.FloatTensor``: what a program prints about its
own device differs between a CPU and a GPU run by design.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

FLOAT32_RTOL = 1.3e-6
FLOAT32_ATOL = 1e-5
_DEVICE = re.compile(r",\s*device='[^']*'")
_DEVICE_NAMES = (
    (re.compile(r"device\(type='(?:cuda|cpu)'(?:, index=\d+)?\)"), "<device>"),
    (re.compile(r"\btorch\.cuda\.(\w*Tensor)\b"), r"torch.\1"),
    (re.compile(r"\b(?:cuda(?::\d+)?|cpu)\b"), "<device>"),
)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\b(?:nan|inf)\b")


@dataclass(frozen=True)
class TextMismatch:
    line: int
    actual: str
    expected: str
    max_abs_diff: float | None

    def describe(self) -> str:
        diff = "" if self.max_abs_diff is None else f" (largest absolute difference {self.max_abs_diff:.3g})"
        return f"stdout line {self.line}: {self.actual!r} vs {self.expected!r}{diff}"


def compare_text(
    actual: str, expected: str, rtol: float | None = None, atol: float | None = None, ignore_devices: bool = False
) -> TextMismatch | None:
    """The first line where ``actual`` differs from ``expected``, or None when they agree."""
    rtol = FLOAT32_RTOL if rtol is None else rtol
    atol = FLOAT32_ATOL if atol is None else atol
    ours, theirs = _lines(actual), _lines(expected)
    if ignore_devices:
        ours, theirs = [_without_devices(line) for line in ours], [_without_devices(line) for line in theirs]
    for row in range(max(len(ours), len(theirs))):
        a = ours[row] if row < len(ours) else "<no line>"
        e = theirs[row] if row < len(theirs) else "<no line>"
        agree, diff = _same_line(a, e, rtol, atol)
        if not agree:
            return TextMismatch(row + 1, a, e, diff)
    return None


def _lines(text: str) -> list[str]:
    return _DEVICE.sub("", text.replace("\r\n", "\n")).rstrip("\n").split("\n") if text.strip() else []


def _without_devices(line: str) -> str:
    for pattern, replacement in _DEVICE_NAMES:
        line = pattern.sub(replacement, line)
    return line


def _same_line(actual: str, expected: str, rtol: float, atol: float) -> tuple[bool, float | None]:
    a_numbers, e_numbers = _NUMBER.findall(actual), _NUMBER.findall(expected)
    if _NUMBER.sub("#", actual) != _NUMBER.sub("#", expected) or len(a_numbers) != len(e_numbers):
        return False, None
    largest = 0.0
    agree = True
    for a_text, e_text in zip(a_numbers, e_numbers):
        if _is_integer(a_text) != _is_integer(e_text):
            # `tensor(1)` vs `tensor(1.)`, `3` vs `3.0`: the same value of another type (an
            # integer buffer a fix left uncast); only the number's kind shows it in printed text
            agree = False
            continue
        a, e = float(a_text), float(e_text)
        if math.isnan(a) and math.isnan(e) or a == e:
            continue
        diff = abs(a - e)
        largest = max(largest, diff) if not math.isnan(diff) else math.inf
        if not (diff <= atol + rtol * abs(e) or diff <= max(_last_digit(a_text), _last_digit(e_text)) * (1 + 1e-9)):
            agree = False
    return agree, (largest if not agree and largest else None)


def _is_integer(number: str) -> bool:
    return number.lstrip("+-").isdigit()


def _last_digit(number: str) -> float:
    """One unit of the last digit written: 0.01 for "1.23", 1e-5 for "1.2e-4"; 0 for an integer,
    which is a count or an index and must match exactly."""
    mantissa, _, exponent = number.lower().partition("e")
    if "." not in mantissa and not exponent:
        return 0.0
    decimals = len(mantissa.split(".", 1)[1]) if "." in mantissa else 0
    return 10.0 ** (int(exponent or 0) - decimals)
