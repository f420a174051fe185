"""``SemanticModel.lookup(..., before=)``: the bindings a site asked about after the walk may
hold, found without stepping over every later binding (``Scope.before``)."""

from __future__ import annotations

import libcst as cst
from hypothesis import given, settings
from hypothesis import strategies as st

from devlint.analysis.semantic import Binding, Scope

KINDS = st.sampled_from(["assign", "param", "import", "loop"])
BINDINGS = st.lists(st.tuples(st.integers(min_value=0, max_value=30), KINDS), max_size=25)


@settings(max_examples=500, deadline=None)
@given(BINDINGS, st.integers(min_value=-1, max_value=32), st.booleans())
def test_before_is_the_filtered_reversed_list(bindings: list[tuple[int, str]], order: int, in_order: bool) -> None:
    # The walk binds in textual order; an out-of-order list must still give the same answer.
    if in_order:
        bindings = sorted(bindings, key=lambda pair: pair[0])
    scope = Scope("function", cst.Module(body=[]), None)
    for at, kind in bindings:
        scope.bind(Binding("x", at, kind))
    expected = [b for b in reversed(scope.bindings.get("x", [])) if b.order < order or b.kind == "param"]
    assert list(scope.before("x", order)) == expected
