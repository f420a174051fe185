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

Lines are compared by position, every one of them: a mismatch keeps the first few differing lines
for the report (``excerpt``), not only the first. What varies between two runs of the same
program (a timing, a date; see noise.py) is masked on both sides before the comparison, by a
``Mask`` the caller gives.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Protocol

FLOAT32_RTOL = 1.3e-6
FLOAT32_ATOL = 1e-5
_DEVICE = re.compile(r",\s*device='[^']*'")
_DEVICE_NAMES = (
    (re.compile(r"device\(type='(?:cuda|cpu)'(?:, index=\d+)?\)"), "<device>"),
    (re.compile(r"\btorch\.cuda\.(\w*Tensor)\b"), r"torch.\1"),
    (re.compile(r"\b(?:cuda(?::\d+)?|cpu)\b"), "<device>"),
)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\b(?:nan|inf)\b")
# What a mismatch keeps for the report: this many differing lines, each cut to this many characters.
SHOWN_LINES = 5
_SHOWN_WIDTH = 200
NO_LINE = "<no line>"


class Mask(Protocol):
    def mask(self, row: int, line: str) -> str:
        """``line``, printed at ``row`` (0-based), with what varies from run to run replaced."""
        ...


@dataclass(frozen=True)
class LineDifference:
    line: int
    actual: str
    expected: str


@dataclass(frozen=True)
class TextMismatch:
    line: int
    actual: str
    expected: str
    max_abs_diff: float | None
    # The first SHOWN_LINES differing lines (the first is the one above), and how many differ in all.
    shown: tuple[LineDifference, ...] = ()
    total: int = 1

    def describe(self) -> str:
        diff = "" if self.max_abs_diff is None else f" (largest absolute difference {self.max_abs_diff:.3g})"
        return f"stdout line {self.line}: {self.actual!r} vs {self.expected!r}{diff}"

    def excerpt(self, actual_name: str, expected_name: str) -> list[str]:
        """The differing lines as a unified diff shows them: ``-`` the reference, ``+`` the run."""
        lines = [f"--- {expected_name}", f"+++ {actual_name}"]
        for difference in self.shown or (LineDifference(self.line, self.actual, self.expected),):
            lines.append(f"@@ line {difference.line} @@")
            if difference.expected != NO_LINE:
                lines.append(f"-{_cut(difference.expected)}")
            if difference.actual != NO_LINE:
                lines.append(f"+{_cut(difference.actual)}")
        more = self.total - max(len(self.shown), 1)
        if more > 0:
            lines.append(f"({more} more differing line{'s' if more > 1 else ''})")
        return lines


def compare_text(
    actual: str,
    expected: str,
    rtol: float | None = None,
    atol: float | None = None,
    ignore_devices: bool = False,
    mask: Mask | None = None,
) -> TextMismatch | None:
    """Where ``actual`` differs from ``expected`` (the first lines that do), or None when they agree."""
    rtol = FLOAT32_RTOL if rtol is None else rtol
    atol = FLOAT32_ATOL if atol is None else atol
    ours, theirs = lines(actual), lines(expected)
    shown: list[LineDifference] = []
    first: tuple[int, float | None] | None = None
    total = 0
    for row in range(max(len(ours), len(theirs))):
        a = ours[row] if row < len(ours) else NO_LINE
        e = theirs[row] if row < len(theirs) else NO_LINE
        agree, diff = _same_line(_prepared(row, a, mask, ignore_devices), _prepared(row, e, mask, ignore_devices), rtol, atol)
        if agree:
            continue
        total += 1
        first = first or (row, diff)
        if len(shown) < SHOWN_LINES:
            shown.append(LineDifference(row + 1, a, e))
    if first is None:
        return None
    row, diff = first
    return TextMismatch(row + 1, shown[0].actual, shown[0].expected, diff, tuple(shown), total)


def lines(text: str) -> list[str]:
    """The lines of printed output as they are compared (a tensor's ``, device=...`` left out)."""
    return _DEVICE.sub("", text.replace("\r\n", "\n")).rstrip("\n").split("\n") if text.strip() else []


def _prepared(row: int, line: str, mask: Mask | None, ignore_devices: bool) -> str:
    if line == NO_LINE:
        return line
    if mask is not None:
        line = mask.mask(row, line)
    return _without_devices(line) if ignore_devices else line


def _cut(line: str) -> str:
    return line if len(line) <= _SHOWN_WIDTH else line[: _SHOWN_WIDTH - 3] + "..."


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
        if not numbers_agree(a_text, e_text, rtol, atol):
            agree = False
    return agree, (largest if not agree and largest else None)


def numbers_agree(actual: str, expected: str, rtol: float = FLOAT32_RTOL, atol: float = FLOAT32_ATOL) -> bool:
    """Two printed numbers of the same kind within ``|a - e| <= atol + rtol * |e|``, or one unit of
    the last digit written apart."""
    if _is_integer(actual) != _is_integer(expected):
        return False
    a, e = float(actual), float(expected)
    if math.isnan(a) and math.isnan(e) or a == e:
        return True
    diff = abs(a - e)
    return diff <= atol + rtol * abs(e) or diff <= max(_last_digit(actual), _last_digit(expected)) * (1 + 1e-9)


def is_number(token: str) -> bool:
    return _NUMBER.fullmatch(token) is not None


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
