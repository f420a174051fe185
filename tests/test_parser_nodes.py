"""LibCST's node checks are skipped while devlint parses (devlint.engine.interning): the tree is
the one a checked parse gives, and a node built outside a parse is still checked."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from devlint.engine.interning import parser_nodes_unchecked
from devlint.engine.lint import ParseError, parse

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "fixtures").rglob("*.py"))[:120]


def test_the_unchecked_parse_gives_the_checked_tree() -> None:
    assert FILES
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        try:
            checked = cst.parse_module(text)
        except cst.ParserSyntaxError:
            with pytest.raises(ParseError):
                parse(text)
            continue
        assert parse(text).deep_equals(checked), path


def test_nodes_built_outside_a_parse_are_checked() -> None:
    parse("x = torch.ones(1).cuda()\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
    with parser_nodes_unchecked():
        cst.Name("not a name")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")


def test_the_checks_come_back_when_the_parse_fails() -> None:
    with pytest.raises(ParseError):
        parse("def f(:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
