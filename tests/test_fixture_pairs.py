"""Before/after pairs in fixtures/pairs/.

Each ``NAME.py`` is a small runnable program with planted patterns; every line that must be
flagged ends with ``# expect: CODE`` (several codes separated by commas). Beside it:
``NAME.fixed.py`` is the exact text `devlint fix` must produce, ``NAME.unsafe.py`` (optional) the
text with ``--unsafe-fixes``, and ``NAME.stdout`` what the fixed program prints on a CPU-only run.
Pairs written for a newer torch live in a folder whose ``devlint.toml`` says so (``torch-2.6/``,
``torch-2.9/``): every pair is linted and fixed with every rule selected and the rest of its
settings resolved as the CLI does, so `devlint verify fixtures/pairs` sees the same fixes; the
constants a pair imports from a module beside it are read as the CLI reads them. Such a module
(``_NAME.py``, a leading underscore) is part of a pair's project, not a program of its own.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from devlint.engine.lint import fix_text, lint_text
from devlint.project import ImportedConstants
from devlint.registry import all_rules
from devlint.run.config import Overrides, Resolver
from devlint.run.project_imports import imported_constants
from devlint.settings import FixSettings

PAIRS = Path(__file__).resolve().parent.parent / "fixtures" / "pairs"
BEFORE = sorted(p for p in PAIRS.rglob("*.py") if not p.name.endswith((".fixed.py", ".unsafe.py")) and not p.name.startswith("_"))
RULES = list(all_rules())
EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)$")


def _settings(before: Path, text: str) -> FixSettings:
    return Resolver(Overrides(select=("ALL",))).settings_for(before).fix


def _imported(before: Path, text: str) -> ImportedConstants:
    return imported_constants(text, str(before), str(PAIRS))[0]


def _expected(text: str) -> list[tuple[int, str]]:
    found = []
    for row, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            found += [(row, code.strip()) for code in match.group(1).split(",") if code.strip()]
    return sorted(found)


def test_there_are_pairs_for_every_rule_with_a_fix() -> None:
    planted = {code for path in BEFORE for _, code in _expected(path.read_text())}
    fixable = {rule.code for rule in RULES if rule.fix_availability != "none"}
    assert fixable <= planted, f"no fixture pair plants {sorted(fixable - planted)}"


@pytest.mark.parametrize("before", BEFORE, ids=lambda p: p.stem)
def test_every_planted_pattern_is_reported(before: Path) -> None:
    text = before.read_text()
    findings = lint_text(text, before.name, RULES, _settings(before, text), imported=_imported(before, text))
    assert sorted((f.location.row, f.code) for f in findings) == _expected(text)


@pytest.mark.parametrize("before", BEFORE, ids=lambda p: p.stem)
def test_fix_gives_the_after_text_and_is_idempotent(before: Path) -> None:
    text = before.read_text()
    settings = _settings(before, text)
    for suffix, unsafe in ((".fixed.py", False), (".unsafe.py", True)):
        after = before.with_name(before.stem + suffix)
        if not after.exists():
            assert suffix == ".unsafe.py", f"{after.name} is missing"
            continue
        imported = _imported(before, text)
        fixed = fix_text(text, before.name, RULES, settings, unsafe=unsafe, imported=imported).text
        assert fixed == after.read_text(), f"{before.name} -> {after.name}"
        cst.parse_module(fixed)
        assert fix_text(fixed, before.name, RULES, settings, unsafe=unsafe, imported=imported).text == fixed


@pytest.mark.parametrize("before", BEFORE, ids=lambda p: p.stem)
def test_fixed_program_runs_on_the_cpu(before: Path) -> None:
    fixed = before.with_name(before.stem + ".fixed.py")
    expected = before.with_name(before.stem + ".stdout")
    assert expected.exists(), f"{expected.name} is missing"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    run = subprocess.run([sys.executable, fixed.name], cwd=fixed.parent, capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout == expected.read_text()


@pytest.mark.parametrize("before", BEFORE, ids=lambda p: p.stem)
def test_every_edit_touches_only_what_changes(before: Path) -> None:
    """A fix's edits replace only the characters that change (the fixed texts above are what they
    were when edits replaced whole nodes): no edit starts or ends by writing back what is there."""
    text = before.read_text()
    findings = lint_text(text, before.name, RULES, _settings(before, text), imported=_imported(before, text))
    for e in (e for f in findings if f.fix is not None for e in f.fix.edits):
        old = text[e.start_offset : e.end_offset]
        if old and e.content:
            assert old[0] != e.content[0] and old[-1] != e.content[-1], (before.name, e)
