"""A long operator chain parsed in batches (devlint.engine.chains) gives the tree one parse gives,
and no parse sees more than a batch of it: LibCST's own parse of a chain takes time that grows
with the square of its links."""

from __future__ import annotations

import ast
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devlint.engine.chains import BATCH, long_chains, parse_with_chains
from devlint.engine.lint import _parse, lint_text
from devlint.gate.facts import collect
from devlint.gate.syntax import cpython_tree
from devlint.registry import all_rules

OPERANDS = st.sampled_from(
    ["x", "f(x)", "a.b", "(a * b)", "-a", "1", "'s'", "a[1]", "(a + b)", "(\n    a)", "x.cuda()", "not_a", "'é'", "ñame"]
)
OPERATORS = st.sampled_from([" + ", " - ", "+", " * ", " | ", " @ ", " // ", " << "])
# Between an operator and the next operand, or an operand and the next operator: only inside
# parentheses may a line end there.
GAPS = st.sampled_from(["", "  ", "\n    ", "  # why\n        ", " \\\n    "])
T = TypeVar("T")
CONTEXTS = [
    "total = {}\n",
    "def f():\n    total = ({})\n    return total\n",
    "class A:\n    def m(self):\n        print({}, end='')\n",
    "x = [1, ({}), 2]\n",
    "def g(a={}):\n    pass\n",
    "if c:\n\tv = lambda: ({})\n",
]


def _chain(operands: list[str], operators: list[str], gaps: list[str], inside_parens: bool) -> str:
    parts = [operands[0]]
    for operand, operator, gap in zip(operands[1:], operators, gaps):
        # A line may end inside the chain only within parentheses (a backslash aside).
        if not inside_parens and "\n" in gap and "\\" not in gap:
            gap = " "
        parts.append(f"{gap}{operator.strip() if gap else operator}{' ' if gap else ''}{operand}")
    return "".join(parts)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(OPERANDS, min_size=4, max_size=14),
    st.lists(OPERATORS, min_size=13, max_size=13),
    st.lists(GAPS, min_size=13, max_size=13),
    st.sampled_from(range(len(CONTEXTS))),
    st.integers(min_value=1, max_value=4),
)
def test_a_chain_parsed_in_batches_is_the_one_parse(
    operands: list[str], operators: list[str], gaps: list[str], context: int, batch: int
) -> None:
    shape = CONTEXTS[context]
    inside = "({})" in shape or "[1, ({})" in shape or "print(" in shape
    text = shape.format(_chain(operands, operators, gaps, inside))
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    chains = long_chains(text, tree, links=3)
    expected = cst.parse_module(text)
    if not chains:
        return
    stitched = parse_with_chains(text, chains, cst.parse_module, cst.parse_module, batch=batch)
    assert stitched.deep_equals(expected)


def test_two_chains_in_one_statement_and_one_in_an_fstring() -> None:
    links = " + ".join(f"x{i}" for i in range(6))
    text = f"y = ({links}) * 2 - ({links})\nz = f'{{{links}}}'\n"
    chains = long_chains(text, ast.parse(text), links=5)
    assert len(chains) == 2  # the f-string's is left to LibCST
    stitched = parse_with_chains(text, chains, cst.parse_module, cst.parse_module, batch=2)
    assert stitched.deep_equals(cst.parse_module(text))


def test_no_parse_sees_more_than_a_batch_of_a_long_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    # LibCST's time grows with the square of the links one parse sees (0.6 s for 1,000, 18 s for
    # 4,000): through the engine's parse (CPython's tree handed over, as a check hands it) no
    # parse sees more than a batch, however long the chain.
    seen: list[int] = []
    parse_module = cst.parse_module

    def counting(source: str) -> cst.Module:
        seen.append(source.count(" + "))
        return parse_module(source)

    monkeypatch.setattr(cst, "parse_module", counting)
    text = "import torch\ntotal = " + " + ".join(f"x{i}.cuda()" for i in range(1000)) + "\n"
    findings = _call_deep(lambda: lint_text(text, "generated.py", all_rules()))
    assert seen and max(seen) <= BATCH, seen
    assert [f.code for f in findings] == ["DEV101"] * 1000
    tree = cpython_tree(text)
    assert tree is not None
    module, _ = _call_deep(lambda: _parse(text, 16 * 1024, held=[tree], chained=collect(tree).chained))
    assert _call_deep(lambda: module.deep_equals(parse_module(text)))


def _call_deep(work: Callable[[], T]) -> T:
    """``work()`` on a thread with room for a deep tree, as a run gives a file."""
    found: list[T] = []
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    threading.stack_size(512 * 1024 * 1024)
    try:
        thread = threading.Thread(target=lambda: found.append(work()))
        thread.start()
        thread.join()
    finally:
        threading.stack_size(0)
        sys.setrecursionlimit(limit)
    return found[0]


def test_a_chain_too_deep_to_stitch_here_is_parsed_whole() -> None:
    # The stitched chain is as deep as it is long: where Python's stack cannot print it back, the
    # file is parsed whole as without batches, not refused.
    text = "total = " + " + ".join(f"x{i}" for i in range(600)) + "\n"
    tree = cpython_tree(text)
    assert tree is not None
    chained = collect(tree).chained
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)
    try:
        module, _ = _parse(text, 16 * 1024, held=[tree], chained=chained)
    finally:
        sys.setrecursionlimit(limit)
    assert isinstance(module, cst.Module)
