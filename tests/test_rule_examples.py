"""Every rule's own VALID/INVALID examples, collected from the rule modules (Fixit-style)."""

from __future__ import annotations


import libcst as cst
import pytest

from devlint.engine.lint import fix_text, lint_text
from devlint.project import Constant, Function, ImportedConstants
from devlint.registry import all_rules
from devlint.settings import FixSettings

VALID = [(rule, i, code) for rule in all_rules() for i, code in enumerate(rule.VALID)]
INVALID = [(rule, i, case) for rule in all_rules() for i, case in enumerate(rule.INVALID)]


def _id(case) -> str:
    return f"{case[0].code}-{case[1]}"


def test_every_rule_has_examples_and_docs() -> None:
    for rule in all_rules():
        assert rule.VALID and rule.INVALID, rule.code
        for attr in ("what", "why", "example", "use_instead"):
            assert getattr(rule, attr).strip(), (rule.code, attr)
        has_fix = any(case.fixed is not None for case in rule.INVALID)
        assert has_fix == (rule.fix_availability != "none"), rule.code


@pytest.mark.parametrize("case", VALID, ids=_id)
def test_valid_example_is_silent(case) -> None:
    rule, _, code = case
    assert lint_text(code, "example.py", [rule]) == []


@pytest.mark.parametrize("case", INVALID, ids=_id)
def test_invalid_example_is_flagged_and_fixed_exactly(case) -> None:
    rule, _, example = case
    settings = FixSettings() if example.torch_version is None else FixSettings(torch_version=example.torch_version)
    imported = ImportedConstants(
        tuple((reference, Constant(source)) for reference, source in example.imported),
        tuple((reference, Function(reference.rsplit(".", 1)[-1], source)) for reference, source in example.imported_functions),
    )
    findings = lint_text(example.code, "example.py", [rule], settings, imported=imported)
    assert [f.code for f in findings] == [rule.code] * example.count
    result = fix_text(example.code, "example.py", [rule], settings, unsafe=example.unsafe, imported=imported)
    if example.fixed is None:
        assert all(f.fix is None for f in findings)
        assert result.text == example.code
        return
    assert result.text == example.fixed
    cst.parse_module(result.text)
    assert fix_text(result.text, "example.py", [rule], settings, unsafe=example.unsafe, imported=imported).text == result.text
    if example.unsafe:
        # without --unsafe-fixes the unsafe rewrite must not happen
        assert fix_text(example.code, "example.py", [rule], settings, unsafe=False, imported=imported).text != example.fixed


@pytest.mark.parametrize("case", [c for c in INVALID if c[2].fixed is not None], ids=_id)
def test_fixed_example_compiles(case) -> None:
    _, _, example = case
    compile(example.fixed, "fixed.py", "exec")
