"""What a program prints differently each time it runs: learned from two runs, set aside in comparisons.

A script that prints its own run time (``epoch 1 (1.27s)``), a date, a process id or a temporary
path never prints the same twice, on any device, fixed or not. Such output proves nothing about a
fix, so verify runs the reference of a comparison that found printed output differing once more,
the same way (same program, same device, same seeds), and what differs between those two runs is
noise. The rest must still agree: a value printed the same in both reference runs is compared as
before, so a fix that changes it still fails.

Noise is learned line by line, at the finest grain the two runs allow. A line is split into tokens
(numbers, words, single other characters); when both runs split it into as many tokens, only the
tokens that differ are set aside (``loss 0.51 (1.27s)`` keeps comparing its loss), except numbers
that agree within the comparison's tolerance, which are the same value printed. When they do not
(a temporary folder's random name), the whole line is set aside. Two runs that print different
numbers of lines cannot be matched line for line: then nothing is set aside, and the verdict says
why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from devlint.verify.textcompare import is_number, numbers_agree

# Numbers first (a sign and exponent included), then words (which may hold digits: `tmpab3x9`),
# runs of spaces, and any other single character.
_TOKEN = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[A-Za-z_]\w*|\s+|.")
# What stands in for a token or a line that varies, on both sides of a comparison.
VARIES = "<varies>"
# How many of the varying lines a verdict quotes.
_QUOTED = 3


def tokens(line: str) -> list[str]:
    return _TOKEN.findall(line)


@dataclass(frozen=True)
class VaryingLine:
    """Line ``row`` (0-based) of the reference varies: ``positions``, the indices of its tokens
    that do; None, the whole line."""

    row: int
    first: str
    second: str
    positions: frozenset[int] | None
    token_count: int


@dataclass(frozen=True)
class Noise:
    """What two runs of the same program printed differently; ``unmatched`` says why nothing could
    be learned (None when the two runs could be compared line by line)."""

    lines: tuple[VaryingLine, ...] = ()
    unmatched: str | None = None

    @cached_property
    def _by_row(self) -> dict[int, VaryingLine]:
        # a long output masks every line: found by row, not by a scan of the varying ones each
        return {varying.row: varying for varying in self.lines}

    def mask(self, row: int, line: str) -> str:
        varying = self._by_row.get(row)
        if varying is None:
            return line
        if varying.positions is None:
            return VARIES
        found = tokens(line)
        if len(found) != varying.token_count:
            # Not the line the reference printed there: compared as it is.
            return line
        return "".join(VARIES if index in varying.positions else token for index, token in enumerate(found))

    def set_aside(self) -> str:
        """``2 varying lines set aside`` (empty when nothing was)."""
        count = len(self.lines)
        return f"{count} varying line{'s' if count > 1 else ''} set aside" if count else ""

    def describe(self, reference: str) -> str:
        """Which lines were set aside and why, for a verdict's detail."""
        if self.unmatched is not None:
            return f"nothing set aside as varying: {self.unmatched}"
        if not self.lines:
            return ""
        quoted = []
        for varying in self.lines[:_QUOTED]:
            what = "the whole line" if varying.positions is None else _values(len(varying.positions))
            quoted.append(f"line {varying.row + 1} ({what}): {varying.first!r} / {varying.second!r}")
        more = len(self.lines) - _QUOTED
        tail = f"; and {more} more" if more > 0 else ""
        return f"set aside, as they vary between two runs of the {reference}: " + "; ".join(quoted) + tail


def _values(count: int) -> str:
    return f"{count} value{'s' if count > 1 else ''}"


def learn(first: list[str], second: list[str], rtol: float | None = None, atol: float | None = None) -> Noise:
    """The noise between two runs' lines (textcompare.lines). Numbers that agree within
    ``rtol``/``atol`` (float32's defaults when None) do not vary."""
    if len(first) != len(second):
        return Noise(unmatched=f"two runs of the reference printed {len(first)} and {len(second)} lines")
    found = []
    for row, (one, other) in enumerate(zip(first, second)):
        if one == other:
            continue
        a, b = tokens(one), tokens(other)
        positions: frozenset[int] | None = None
        if len(a) == len(b):
            positions = frozenset(i for i, (x, y) in enumerate(zip(a, b)) if not _same_token(x, y, rtol, atol))
            if not positions:
                continue  # the same numbers, printed within tolerance
        found.append(VaryingLine(row, one, other, positions, len(a)))
    return Noise(tuple(found))


def _same_token(one: str, other: str, rtol: float | None, atol: float | None) -> bool:
    if one == other:
        return True
    if not (is_number(one) and is_number(other)):
        return False
    if rtol is None or atol is None:
        return numbers_agree(one, other)
    return numbers_agree(one, other, rtol, atol)
