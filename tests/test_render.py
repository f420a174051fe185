"""Rendering a replacement where it stands: the shortcut for code on one line gives what the
re-indenting transform gives, and code over several lines is still re-indented."""

from __future__ import annotations

import libcst as cst
import pytest

from devlint.engine.render import _BlockIndent, code_at_indent

MODULE = cst.parse_module("x = 1\n")


@pytest.mark.parametrize(
    "expression",
    [
        "model.to(device)",
        "f(a,\n  b)",
        "f(\n    a,  # first\n\n    b,\n)",
        "'''one\nthree'''",
        "[x for x in y if x]",
        "f(a,\r\n  b)",
    ],
)
@pytest.mark.parametrize("indent", ["", "    ", "\t\t"])
def test_code_at_indent_is_the_transforms_code(expression: str, indent: str) -> None:
    new = cst.parse_expression(expression)
    expected = MODULE.code_for_node(new.visit(_BlockIndent(indent)) if indent else new)
    assert code_at_indent(MODULE, new, indent) == expected


def test_continuation_lines_take_the_blocks_indent() -> None:
    new = cst.parse_expression("f(a,\n  b)")
    assert code_at_indent(MODULE, new, "    ") == "f(a,\n      b)"
