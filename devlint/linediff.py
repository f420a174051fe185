"""How one list of lines becomes another, in time that grows with their length.

difflib's SequenceMatcher takes the longest block of lines both lists share, then matches what
lies on either side of it the same way. When the blocks are all as short as one another (a fix
that rewrote one line in each of N small functions leaves N short blocks), each step splits one
block off and scans the whole rest again: the diff of a 32,000-line file took 15 s, 16x what a
quarter of it took. Here the lines that occur exactly once in each list anchor the match first,
in the longest order both lists share (patience diffing); between two anchors the same is done
again, and where no line is unique any more SequenceMatcher matches the few lines left. A long
stretch without any unique line (the same lines repeated) is matched line by line when both
sides have as many lines, and replaced whole otherwise: the diff stays correct, if longer.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections.abc import Iterator, Sequence

Opcode = tuple[str, int, int, int, int]  # as difflib's: tag, a[i1:i2], b[j1:j2]

# Lines x lines of a stretch without unique lines that SequenceMatcher may match (it takes time
# that grows with the product there).
_MATCHER_CELLS = 1_000_000


def opcodes(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """What turns ``a`` into ``b``, as difflib's ``get_opcodes`` says it."""
    codes: list[Opcode] = []
    i = j = 0
    for ai, bj, size in _matching_blocks(a, b):
        if i < ai and j < bj:
            codes.append(("replace", i, ai, j, bj))
        elif i < ai:
            codes.append(("delete", i, ai, j, bj))
        elif j < bj:
            codes.append(("insert", i, ai, j, bj))
        if size:
            codes.append(("equal", ai, ai + size, bj, bj + size))
        i, j = ai + size, bj + size
    return codes


def hunks(codes: list[Opcode], context: int = 3) -> Iterator[list[Opcode]]:
    """The opcodes in groups of changes with up to ``context`` equal lines around each, as a
    unified diff shows them (changes closer than twice that share a group)."""
    if not codes or all(code[0] == "equal" for code in codes):
        return
    codes = list(codes)
    tag, i1, i2, j1, j2 = codes[0]
    if tag == "equal":
        codes[0] = (tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    tag, i1, i2, j1, j2 = codes[-1]
    if tag == "equal":
        codes[-1] = (tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context and group:
            group.append((tag, i1, i1 + context, j1, j1 + context))
            yield group
            group = []
            i1, j1 = i2 - context, j2 - context
        group.append((tag, i1, i2, j1, j2))
    if any(code[0] != "equal" for code in group):
        yield group


def unified(a: Sequence[str], b: Sequence[str], old: str, new: str, context: int = 3) -> Iterator[str]:
    """The lines of a unified diff from ``a`` (named ``old``) to ``b`` (``new``); each line of
    ``a`` and ``b`` keeps its own line ending."""
    started = False
    for group in hunks(opcodes(a, b), context):
        if not started:
            yield f"--- {old}\n"
            yield f"+++ {new}\n"
            started = True
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            yield from ("-" + line for line in a[i1:i2])
            yield from ("+" + line for line in b[j1:j2])


def _range(start: int, stop: int) -> str:
    """A hunk's range as unified diffs write it: ``first,count``, the count left out when it is
    1, and an empty range named by the line before it."""
    count = stop - start
    if count == 1:
        return str(start + 1)
    return f"{start + 1 if count else start},{count}"


def _matching_blocks(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int, int]]:
    """(i, j, n): ``a[i:i+n] == b[j:j+n]``, ascending in both, ending with (len(a), len(b), 0)."""
    pairs: list[tuple[int, int]] = []
    pending = [(0, len(a), 0, len(b))]
    while pending:
        alo, ahi, blo, bhi = pending.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            pairs.append((alo, blo))
            alo, blo = alo + 1, blo + 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
            pairs.append((ahi, bhi))
        if alo == ahi or blo == bhi:
            continue
        anchors = _anchors(a, alo, ahi, b, blo, bhi)
        if anchors:
            i, j = alo, blo
            for ai, bj in anchors:
                pending.append((i, ai, j, bj))
                pairs.append((ai, bj))
                i, j = ai + 1, bj + 1
            pending.append((i, ahi, j, bhi))
        else:
            pairs += _without_anchors(a, alo, ahi, b, blo, bhi)
    pairs.sort()
    blocks: list[tuple[int, int, int]] = []
    for i, j in pairs:
        if blocks and blocks[-1][0] + blocks[-1][2] == i and blocks[-1][1] + blocks[-1][2] == j:
            blocks[-1] = (blocks[-1][0], blocks[-1][1], blocks[-1][2] + 1)
        else:
            blocks.append((i, j, 1))
    blocks.append((len(a), len(b), 0))
    return blocks


def _anchors(a: Sequence[str], alo: int, ahi: int, b: Sequence[str], blo: int, bhi: int) -> list[tuple[int, int]]:
    """Lines found exactly once in ``a[alo:ahi]`` and once in ``b[blo:bhi]``: the longest run of
    them that stands in the same order in both."""
    seen: dict[str, int] = {}
    for i in range(alo, ahi):
        line = a[i]
        seen[line] = -1 if line in seen else i
    found: dict[str, int] = {}
    for j in range(blo, bhi):
        line = b[j]
        if seen.get(line, -1) >= 0:
            found[line] = -1 if line in found else j
    common = sorted((seen[line], j) for line, j in found.items() if j >= 0)
    return _increasing(common)


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (sorted by their first item) whose second items increase."""
    tails: list[int] = []  # the smallest last j of a run of each length
    ends: list[int] = []  # which pair ends that run
    before: list[int] = []  # the pair before each pair in its run
    for index, (_, j) in enumerate(pairs):
        length = bisect_left(tails, j)
        if length == len(tails):
            tails.append(j)
            ends.append(index)
        else:
            tails[length] = j
            ends[length] = index
        before.append(ends[length - 1] if length else -1)
    run: list[tuple[int, int]] = []
    index = ends[-1] if ends else -1
    while index >= 0:
        run.append(pairs[index])
        index = before[index]
    run.reverse()
    return run


def _without_anchors(a: Sequence[str], alo: int, ahi: int, b: Sequence[str], blo: int, bhi: int) -> list[tuple[int, int]]:
    """The matching lines of a stretch no line of which is unique to both sides."""
    if (ahi - alo) * (bhi - blo) <= _MATCHER_CELLS:
        matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi])
        return [(alo + i + k, blo + j + k) for i, j, n in matcher.get_matching_blocks() for k in range(n)]
    if ahi - alo == bhi - blo:
        return [(alo + k, blo + k) for k in range(ahi - alo) if a[alo + k] == b[blo + k]]
    return []
