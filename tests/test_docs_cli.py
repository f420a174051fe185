"""`devlint rules` and `devlint rule CODE`: rendered from the rule modules, whatever rules exist."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from devlint.docs import default_text
from devlint.cli import main
from devlint.docs import list_rules, rule_markdown, rules_table
from devlint.registry import all_rules, rule_by_code
from devlint.rule import Invalid, Rule

RULES = all_rules()


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def squeeze(text: str) -> str:
    """Text without whitespace (rich wraps prose and pads code blocks) nor the markdown marks
    that rich renders as styles."""
    return re.sub(r"[\s`*_]+", "", text)


def rows(output: str) -> dict[str, str]:
    """The line on which each rule code appears."""
    found: dict[str, str] = {}
    for line in output.splitlines():
        for rule in RULES:
            if re.search(rf"\b{rule.code}\b", line):
                assert rule.code not in found, f"{rule.code} on two lines"
                found[rule.code] = line
    return found


def assert_every_rule_listed(output: str) -> None:
    listed = rows(output)
    assert sorted(listed) == [rule.code for rule in RULES]
    for rule in RULES:
        line = listed[rule.code]
        assert rule.name in line, line
        assert re.search(rf"\b{rule.fix_availability}\b", line), line
        # "on", "off", or "from 2.6" for a rule whose default follows torch-version
        assert re.search(rf"\b{re.escape(default_text(rule))}\b", line), line
    assert "…" not in output


def test_rules_lists_every_rule_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert_every_rule_listed(captured.out)
    # a pipe gets no colour codes and, at 120 columns, the summary of each rule
    assert "\x1b[" not in captured.out
    table = squeeze(captured.out.replace("│", ""))
    assert all(squeeze(rule.what) in table for rule in RULES)


@pytest.mark.parametrize("columns", ["20", "60", "250"])
def test_rules_into_a_pipe_ignores_a_narrow_columns_setting(capsys, monkeypatch, columns: str) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    assert main(["rules"]) == 0
    assert_every_rule_listed(capsys.readouterr().out)


@pytest.mark.parametrize("width", [24, 40, 64, 80, 100, 160])
def test_a_narrow_terminal_still_shows_every_code_whole(width: int) -> None:
    out = FakeTerminal()
    assert list_rules(out, width=width) == 0
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())
    assert_every_rule_listed(text)
    if "┃" in text:  # a table, not the one-line-per-rule fallback
        assert max(len(line) for line in text.splitlines()) <= width


def test_the_summary_goes_before_anything_is_cut() -> None:
    wide, narrow = FakeTerminal(), FakeTerminal()
    list_rules(wide, width=160)
    list_rules(narrow, width=70)
    first_words = RULES[0].what.split()[1]
    assert first_words in wide.getvalue() and "summary" in wide.getvalue()
    assert "summary" not in narrow.getvalue()


def test_rule_prose_is_printed_as_text_not_markup() -> None:
    class Bracketed(Rule):
        code = "DEV999"
        name = "bracketed"
        what = "Flags [bold]x[0][/bold] and [red]"
        why = example = use_instead = "x"
        triggers = ("x",)
        VALID = ("y = 1\n",)
        INVALID = (Invalid("x\n"),)

    out = io.StringIO()
    Console(file=out, width=200).print(rules_table([Bracketed]))
    assert "Flags [bold]x[0][/bold] and [red]" in out.getvalue()


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.code)
def test_rule_shows_the_documentation_from_the_rule_module(capsys, rule: type[Rule]) -> None:
    assert main(["rule", rule.code]) == 0
    out = capsys.readouterr().out
    for heading in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix"):
        assert heading in out
    text = squeeze(out)
    for part in (rule.what, rule.why, rule.example, rule.use_instead, rule.fix_note):
        assert squeeze(part) in text, part


def test_rule_markdown_has_the_sections_in_order() -> None:
    markdown = rule_markdown(rule_by_code("DEV101"))
    headings = re.findall(r"^#+ (.*)$", markdown, re.MULTILINE)
    assert headings == ["DEV101 cuda-call", "What it does", "Why is this bad?", "Example", "Use instead", "Fix", "Selection"]
    assert "```python\nmodel = Net().cuda()\nx = x.cuda(non_blocking=True)\n```" in markdown
    assert "A safe fix is available: `devlint fix` applies it." in markdown
    assert "`# noqa: DEV101`" in markdown


@pytest.mark.parametrize("name", ["dev101", "cuda-call"])
def test_rule_accepts_a_lowercase_code_or_the_name(capsys, name: str) -> None:
    assert main(["rule", name]) == 0
    assert "DEV101 cuda-call" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("code", "hint"),
    [("DEV999", "`devlint rules` lists them"), ("cuda-cal", "did you mean cuda-call?"), ("DEV1", "give one code, such as DEV101")],
)
def test_an_unknown_rule_is_one_line_and_exit_2(capsys, code: str, hint: str) -> None:
    assert main(["rule", code]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith(f"devlint: error: unknown rule code {code!r}")
    assert captured.err.rstrip().endswith(hint)
