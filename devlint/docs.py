"""`devlint rules` and `devlint rule CODE`: the rule catalogue, rendered from the rule modules."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table

from devlint.registry import UnknownCodeError, all_rules, rule_by_code
from devlint.rule import Rule


def rule_markdown(rule: type[Rule]) -> str:
    """A rule's documentation in ruff's shape: what it does, why, example, use instead, fix."""
    return (
        f"# {rule.code} {rule.name}\n\n"
        f"## What it does\n{rule.what}\n\n"
        f"## Why is this bad?\n{rule.why}\n\n"
        f"## Example\n```python\n{rule.example}\n```\n\n"
        f"## Use instead\n```python\n{rule.use_instead}\n```\n\n"
        f"## Fix\n{rule.fix_availability}. {rule.fix_note}\n"
    )


def list_rules(out: TextIO) -> int:
    table = Table(title="devlint rules")
    for column in ("code", "name", "fix", "default", "summary"):
        table.add_column(column)
    for rule in all_rules():
        table.add_row(rule.code, rule.name, rule.fix_availability, "on" if rule.default_enabled else "off", rule.what)
    Console(file=out, soft_wrap=False, width=max(120, Console(file=out).width)).print(table)
    return 0


def show_rule(code: str, out: TextIO, err: TextIO) -> int:
    try:
        rule = rule_by_code(code)
    except UnknownCodeError as error:
        err.write(f"devlint: error: {error}\n")
        return 2
    Console(file=out).print(Markdown(rule_markdown(rule)))
    return 0
