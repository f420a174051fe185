"""devlint.linediff: the opcodes turn one list of lines into the other, the unified diff applies,
and where a fix changed a few lines among unique ones it is the diff difflib gives."""

from __future__ import annotations

import difflib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from devlint import linediff

# Few distinct lines: repeats, moves and stretches without unique lines are common.
LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "e\n", "x = 1\n", "\n"]), max_size=40)
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n")


def _replayed(a: list[str], codes: list[linediff.Opcode], b: list[str]) -> list[str]:
    out: list[str] = []
    i = j = 0
    for tag, i1, i2, j1, j2 in codes:
        assert (i1, j1) == (i, j), "opcodes must be contiguous"
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
            out += a[i1:i2]
        else:
            assert tag in ("replace", "delete", "insert") and (i1 < i2 or j1 < j2)
            out += b[j1:j2]
        i, j = i2, j2
    assert (i, j) == (len(a), len(b))
    return out


def _applied(a: list[str], diff: list[str]) -> list[str]:
    """``a`` with a unified diff applied, each hunk checked against the lines it names."""
    hunks: list[tuple[re.Match[str], list[str]]] = []
    for line in diff[2:]:
        match = _HUNK.fullmatch(line)
        if match:
            hunks.append((match, []))
        else:
            hunks[-1][1].append(line)
    out: list[str] = []
    at = 0
    for match, body in hunks:
        start, count = int(match.group(1)), int(match.group(2) or 1)
        first = start - 1 if count else start
        assert first >= at
        out += a[at:first]
        at = first
        for line in body:
            if line[0] in " -":
                assert a[at] == line[1:]
                at += 1
            if line[0] in " +":
                out.append(line[1:])
        assert at == first + count
    return out + a[at:]


@settings(max_examples=400, deadline=None)
@given(LINES, LINES)
def test_the_opcodes_turn_one_list_into_the_other(a: list[str], b: list[str]) -> None:
    assert _replayed(a, linediff.opcodes(a, b), b) == b


@settings(max_examples=400, deadline=None)
@given(LINES, LINES)
def test_the_unified_diff_applies(a: list[str], b: list[str]) -> None:
    diff = list(linediff.unified(a, b, "a/x.py", "b/x.py"))
    if a == b:
        assert diff == []
        return
    assert diff[:2] == ["--- a/x.py\n", "+++ b/x.py\n"]
    assert _applied(a, diff) == b


@settings(max_examples=400, deadline=None)
@given(LINES, LINES, st.integers(min_value=0, max_value=4))
def test_hunks_group_opcodes_as_unified_diffs_do(a: list[str], b: list[str], context: int) -> None:
    # The same opcodes grouped here and by difflib.
    matcher = difflib.SequenceMatcher(None, a, b)
    codes = matcher.get_opcodes()
    ours = list(linediff.hunks(codes, context))
    theirs = [group for group in matcher.get_grouped_opcodes(context) if any(code[0] != "equal" for code in group)]
    assert [[tuple(code) for code in group] for group in ours] == [[tuple(code) for code in group] for group in theirs]


def test_a_fix_among_unique_lines_gives_difflibs_diff() -> None:
    before = [f"line {i}\n" for i in range(60)]
    after = list(before)
    after[10] = "changed\n"
    after[30:32] = ["one\n", "two\n", "three\n"]
    del after[50]
    ours = list(linediff.unified(before, after, "a/x.py", "b/x.py"))
    assert ours == list(difflib.unified_diff(before, after, "a/x.py", "b/x.py"))


def test_a_long_stretch_of_repeated_lines_is_matched_line_by_line() -> None:
    # No line is unique: past the matcher's limit, lines pair up in place.
    before = ["    x.cuda()\n", "    y = 1\n"] * 1500
    after = ["    x.to(device)\n", "    y = 1\n"] * 1500
    codes = linediff.opcodes(before, after)
    assert _replayed(before, codes, after) == after
    assert sum(i2 - i1 for tag, i1, i2, _, _ in codes if tag == "equal") == 1500
