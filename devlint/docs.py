"""`devlint rules` and `devlint rule CODE`: the rule catalogue, rendered from the rule modules."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import TextIO

from rich.console import Console
from rich.markdown import Markdown
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from devlint.registry import UnknownCodeError, all_rules, rule_by_code
from devlint.rule import Rule

FIX_SENTENCES = {
    "safe": "A safe fix is available: `devlint fix` applies it.",
    "unsafe": "An unsafe fix is available: `devlint fix --unsafe-fixes` applies it.",
    "sometimes": "A fix is available in some cases only.",
    "none": "No automatic fix: the change needs a person.",
}
FIX_STYLES = {"safe": "green", "unsafe": "yellow", "sometimes": "cyan", "none": "dim"}
PIPE_WIDTH = 120
SUMMARY_MIN_WIDTH = 20
# Measuring a table against this width gives the width it needs, not what is left.
UNBOUNDED = 1_000_000


def default_text(rule: type[Rule], torch_version: tuple[int, int] | None = None) -> str:
    """The rule's default as `devlint rules` and the README show it: "on", "off", or, for a rule
    whose default follows torch-version, "from 2.6"; "on"/"off" for one ``torch_version``."""
    if torch_version is not None:
        return "on" if _on_by_default(rule, torch_version) else "off"
    if rule.default_enabled:
        return "on"
    since = rule.default_since
    return f"from {since[0]}.{since[1]}" if since is not None else "off"


def _on_by_default(rule: type[Rule], torch_version: tuple[int, int]) -> bool:
    return rule.default_enabled or (rule.default_since is not None and torch_version >= rule.default_since)


def rule_markdown(rule: type[Rule]) -> str:
    """A rule's documentation in ruff's shape: what it does, why, example, use instead, fix."""
    if rule.default_enabled:
        default = f"On by default; `--ignore {rule.code}` turns it off."
    elif rule.default_since is not None:
        since = f"{rule.default_since[0]}.{rule.default_since[1]}"
        default = (
            f"On by default where `torch-version` is {since} or newer (`--ignore {rule.code}` turns it off); "
            f"off below (`--extend-select {rule.code}` turns it on). An explicit `select` or `ignore` always wins."
        )
    else:
        default = f"Off by default; `--extend-select {rule.code}` turns it on."
    fix = FIX_SENTENCES.get(rule.fix_availability, rule.fix_availability)
    note = f" {rule.fix_note}" if rule.fix_note else ""
    return (
        f"# {rule.code} {rule.name}\n\n"
        f"## What it does\n{rule.what}\n\n"
        f"## Why is this bad?\n{rule.why}\n\n"
        f"## Example\n```python\n{rule.example.rstrip()}\n```\n\n"
        f"## Use instead\n```python\n{rule.use_instead.rstrip()}\n```\n\n"
        f"## Fix\n{fix}{note}\n\n"
        f"## Selection\n{default} Silence one line with `# noqa: {rule.code}`.\n"
    )


def rules_table(rules: Sequence[type[Rule]], summary: bool = True, torch_version: tuple[int, int] | None = None) -> Table:
    title = "devlint rules" if torch_version is None else f"devlint rules (defaults at torch-version {torch_version[0]}.{torch_version[1]})"
    table = Table(
        title=title,
        caption="`devlint rule CODE` shows a rule's documentation",
        title_justify="left",
        caption_justify="left",
    )
    table.add_column("code", no_wrap=True, style="bold")
    table.add_column("name", no_wrap=True)
    table.add_column("fix", no_wrap=True)
    table.add_column("default", no_wrap=True)
    if summary:
        table.add_column("summary", ratio=1, min_width=SUMMARY_MIN_WIDTH, overflow="fold")
    for rule in rules:
        row = [
            Text(rule.code),
            Text(rule.name),
            Text(rule.fix_availability, style=FIX_STYLES.get(rule.fix_availability, "")),
            Text(default_text(rule, torch_version)),
        ]
        # Text, not markup: a rule's prose may hold brackets such as `x[0]`.
        table.add_row(*row, *([Text(rule.what)] if summary else []))
    return table


def list_rules(out: TextIO, width: int | None = None, torch_version: tuple[int, int] | None = None) -> int:
    """Print the rule table. The summary wraps to fit the width, and goes when even the other
    columns would not fit; below that, one plain line per rule. No rule code is ever cut. The
    default column says "from 2.6" for a rule on by default from that torch-version; with
    ``torch_version``, "on"/"off" at that version."""
    rules = all_rules()
    console = Console(file=out, width=width, highlight=False)
    if width is None and not console.is_terminal:
        # A pipe or a file has no width of its own: use COLUMNS when set wider, else 120.
        console = Console(file=out, width=max(console.width, PIPE_WIDTH), highlight=False)
    # The width the table needs without the summary; the summary column takes 3 more for its
    # border and padding, and folds its words to fit whatever is left.
    unbounded = console.options.update(max_width=UNBOUNDED)
    needed = Measurement.get(console, unbounded, rules_table(rules, summary=False, torch_version=torch_version)).maximum
    if needed + 3 + SUMMARY_MIN_WIDTH <= console.width:
        console.print(rules_table(rules, torch_version=torch_version))
    elif needed <= console.width:
        console.print(rules_table(rules, summary=False, torch_version=torch_version))
    else:
        # Too narrow for any table: one rule a line, nothing cut.
        for rule in rules:
            default = default_text(rule, torch_version)
            out.write(f"{rule.code} {rule.name} fix={rule.fix_availability} default={default}\n")
    return 0


def show_rule(code: str, out: TextIO, err: TextIO) -> int:
    try:
        rule = rule_by_code(code)
    except UnknownCodeError as error:
        err.write(f"devlint: error: {error}{_hint(code)}\n")
        return 2
    Console(file=out, highlight=False).print(Markdown(rule_markdown(rule)))
    return 0


def _hint(code: str) -> str:
    rules = all_rules()
    prefixed = [rule.code for rule in rules if rule.code.startswith(code.upper())]
    if prefixed:
        return f"; give one code, such as {prefixed[0]}"
    close = difflib.get_close_matches(code.upper(), [r.code for r in rules], n=1) or difflib.get_close_matches(
        code.lower(), [r.name for r in rules], n=1
    )
    return f"; did you mean {close[0]}?" if close else "; `devlint rules` lists them"
