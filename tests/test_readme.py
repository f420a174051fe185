"""The README is part of the product: its rule table and commands must match the code."""

from __future__ import annotations

import re
from pathlib import Path

from devlint.cli import build_parser
from devlint.docs import default_text
from devlint.registry import all_rules

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_rule_table_matches_the_rules() -> None:
    rows = re.findall(r"^\| \[?(DEV\d{3})\]?[^|]*\| `([a-z-]+)` \| ([a-z]+) \| (on|off|from \d+\.\d+) \|", README, re.M)
    documented = {code: (name, fix, default) for code, name, fix, default in rows}
    actual = {
        rule.code: (rule.name, rule.fix_availability, default_text(rule)) for rule in all_rules()
    }
    assert documented == actual


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_second() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.+?)\n```", quick, re.S)
    assert len(commands) == 2
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert commands[1] in ci


def test_every_documented_flag_exists() -> None:
    parser = build_parser()
    known = set()
    for action in parser._subparsers._group_actions[0].choices["check"]._actions:  # noqa: SLF001
        known.update(action.option_strings)
    usage = README.split("## Usage", 1)[1].split("\n## ", 1)[0]
    for flag in set(re.findall(r"`(--[a-z-]+)", usage)):
        assert flag in known, flag
