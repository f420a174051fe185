"""The first releases of DEV605's table and of devlint.torchfacts.api_versions come from observed torch
releases (issue 33): the generated tables are what the observations give (tools/device_api_table.py
--check), every hand entry lies inside its observed bracket, and the running torch answers what the
observations recorded for its release."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import device_api_table  # noqa: E402
import torch_releases  # noqa: E402

from devlint.torchfacts import observed_releases  # noqa: E402
from devlint.torchfacts.api_versions import HAND, SINCE  # noqa: E402
from devlint.torchfacts.version import RELEASES  # noqa: E402


def test_the_tables_are_what_the_observations_give() -> None:
    run = subprocess.run([sys.executable, "tools/device_api_table.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize(
    ("table", "seen", "late"),
    [(device_api_table.FIRST_SEEN, observed_releases.SOURCES, False), (HAND, observed_releases.IMPORTED, True)],
    ids=["DEV605", "api_versions"],
)
def test_every_hand_entry_lies_inside_its_observed_bracket(table, seen, late) -> None:
    wrong = []
    for name, hand in table.items():
        try:
            torch_releases.first_release(name, seen.get(name), hand, late=late)
        except torch_releases.Contradiction as error:
            wrong.append(str(error))
    assert wrong == []


def test_a_contradicted_hand_entry_fails_the_tool(monkeypatch, capsys) -> None:
    # torch 2.6 has current_device_index: a hand entry of 2.7 contradicts it, as 2.3 would for a
    # name torch 2.4 lacks
    monkeypatch.setitem(device_api_table.FIRST_SEEN, "torch.accelerator.current_device_index", (2, 7))
    monkeypatch.setattr(sys, "argv", ["device_api_table.py", "--check"])
    assert device_api_table.main() == 1
    assert "torch.accelerator.current_device_index" in capsys.readouterr().err
    monkeypatch.setitem(device_api_table.FIRST_SEEN, "torch.accelerator.current_device_index", (2, 6))
    monkeypatch.setitem(device_api_table.FIRST_SEEN, "torch.accelerator.synchronize", (2, 4))
    assert device_api_table.main() == 1


def test_every_fix_name_has_its_observed_first_release() -> None:
    assert set(SINCE) == set(HAND)
    for name, first in SINCE.items():
        with_, without = observed_releases.IMPORTED[name]
        assert first <= with_[0] and all(r < first for r in without), name


def test_nothing_claims_a_release_no_one_observed_nor_past_the_known_range() -> None:
    newest = max(observed_releases.RELEASES)
    assert newest <= (max(RELEASES), RELEASES[max(RELEASES)])
    firsts = [*SINCE.values(), *device_api_table.FIRST_SEEN.values()]
    from devlint.torchfacts.device_api_table import ACCELERATOR, AMP

    firsts += [v for v in (*ACCELERATOR.values(), *AMP.values()) if v is not None]
    assert max(firsts) <= newest  # no 2.15 name until a torch 2.15 is observed


def test_names_new_in_2_14_have_first_release_2_14() -> None:
    from devlint.torchfacts.device_api_table import ACCELERATOR

    new = [n for n, (w, wo) in observed_releases.SOURCES.items() if w and w[0] == (2, 14) and (2, 13) in wo]
    assert new, "torch 2.14.1 lists names torch 2.13.0 does not"
    for name in new:
        if name.startswith("torch.accelerator."):
            assert ACCELERATOR[name.rsplit(".", 1)[1]] == (2, 14), name


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="asks the installed torch")
def test_the_running_torch_answers_what_was_observed_for_it() -> None:
    release, _ = torch_releases.running_release()
    if release not in observed_releases.RELEASES:
        pytest.skip(f"torch {release} is not among the observed releases")
    listed = torch_releases.read_sources(torch_releases.torch_dir())
    for name, (with_, without) in observed_releases.SOURCES.items():
        if release in with_ or release in without:
            assert (name in listed) == (release in with_), name
    for name, (with_, without) in observed_releases.IMPORTED.items():
        if release in with_ or release in without:
            assert torch_releases.exists(name) == (release in with_), name
