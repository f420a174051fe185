"""No fix writes an API newer than the project's `torch-version` (issue 22, item 1): every name a
fix introduces is in devlint.torchfacts.api_versions' table, and from a release no newer than the one
configured, at every version boundary, over every rule's examples and the bundled fixtures."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from devlint.engine.lint import fix_text, lint_text
from devlint.registry import all_rules
from devlint.settings import FixSettings
from devlint.torchfacts.api_versions import SINCE, introduced, names_in

RULES = list(all_rules())
ROOT = Path(__file__).resolve().parent.parent
BOUNDARIES = [(2, minor) for minor in range(0, 11)]


def _sources() -> list[tuple[str, str]]:
    found = [(f"{rule.code}-invalid-{i}", case.code) for rule in RULES for i, case in enumerate(rule.INVALID)]
    found += [(f"{rule.code}-valid-{i}", code) for rule in RULES for i, code in enumerate(rule.VALID)]
    for folder in ("fixtures/pairs", "fixtures/programs", "examples"):
        found += [(str(p.relative_to(ROOT)), p.read_text()) for p in sorted((ROOT / folder).rglob("*.py"))]
    return found


SOURCES = _sources()


def _introduced(text: str, version: tuple[int, int]) -> list[tuple[str, str]]:
    """(rule code, API name) for each name a fix introduces, DEV604 selected so that the
    accelerator forms are reached where the version allows them."""
    found = []
    for finding in lint_text(text, "example.py", RULES, FixSettings(torch_version=version)):
        if finding.fix is None:
            continue
        for edit in finding.fix.edits:
            # An edit replaces only the characters that change; the span the rule replaced
            # (`held`) is what the new code is read against.
            start, end = edit.held or (edit.start_offset, edit.end_offset)
            new = text[start : edit.start_offset] + edit.content + text[edit.end_offset : end]
            for name in introduced(new, text[start:end]):
                found.append((finding.code, name))
    return found


@pytest.mark.parametrize("version", BOUNDARIES, ids=lambda v: f"{v[0]}.{v[1]}")
def test_no_fix_names_an_api_newer_than_torch_version(version: tuple[int, int]) -> None:
    unknown, too_new = [], []
    for origin, text in SOURCES:
        for code, name in _introduced(text, version):
            if name not in SINCE:
                unknown.append((origin, code, name))
            elif SINCE[name] > version:
                too_new.append((origin, code, name, SINCE[name]))
    assert unknown == [], "a fix writes an API the version table lacks"
    assert too_new == []


def test_the_boundaries_reach_the_newest_apis_the_fixes_use() -> None:
    """At the newest boundary the fixes do write the accelerator API (else the test above proves nothing)."""
    names = {name for _, text in SOURCES for _, name in _introduced(text, BOUNDARIES[-1])}
    assert {"torch.amp.GradScaler", "torch.accelerator.synchronize", "torch.accelerator.empty_cache"} <= names


def test_names_are_cut_at_the_api_the_table_knows() -> None:
    assert names_in("torch.amp.GradScaler(device.type).scale(loss)") == {"torch.amp.GradScaler"}
    assert names_in("torch.get_device_module(torch.device(d)).Stream()") == {
        "torch.get_device_module", "torch.get_device_module().Stream", "torch.device",
    }
    assert introduced("torch.amp.autocast(device.type)", "torch.cuda.amp.autocast()") == {"torch.amp.autocast"}
    assert introduced("torch.zeros(2).to(device)", "torch.zeros(2).cuda()") == set()


SCALER = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
scaler = torch.cuda.amp.GradScaler()
with torch.cuda.amp.autocast():
    pass
"""


def test_dev501_below_2_3_leaves_grad_scaler_and_says_which_torch_its_fix_needs() -> None:
    settings = FixSettings(torch_version=(2, 1))
    scaler, autocast = lint_text(SCALER, "t.py", RULES, settings)
    assert scaler.fix is None
    assert "its fix needs torch 2.3 (`torch.amp.GradScaler`); `torch-version` is 2.1" in scaler.message
    assert autocast.fix is not None and "needs torch" not in autocast.message
    text = fix_text(SCALER, "t.py", RULES, settings).text
    assert "torch.cuda.amp.GradScaler()" in text and "torch.amp.autocast(device.type" in text
    assert "torch.amp.GradScaler(device.type" in fix_text(SCALER, "t.py", RULES, FixSettings(torch_version=(2, 3))).text


def test_a_fix_that_only_keeps_a_newer_name_the_code_already_used_is_offered() -> None:
    """The program's own use of a newer API is its own choice, not the fix's."""
    source = textwrap.dedent(
        """\
        import torch
        scaler = torch.amp.GradScaler("cuda")
        """
    )
    (finding,) = lint_text(source, "t.py", RULES, FixSettings(torch_version=(2, 3)))
    assert finding.code == "DEV603" and finding.fix is not None
