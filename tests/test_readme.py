"""The README is part of the product: its rule table and commands must match the code, it stays
short enough to read, and every link in it and in docs/ leads somewhere."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

from devlint.cli import build_parser, main
from devlint.docs import default_text
from devlint.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
# The long material lives in docs/; the README links it. Past this it is too long again.
README_MAX_LINES = 650


@pytest.mark.parametrize("page", ["README.md", "docs/rule-table.md"])
def test_rule_table_matches_the_rules(page: str) -> None:
    # The README's short table, and the detailed one under docs/.
    text = (ROOT / page).read_text()
    rows = re.findall(r"^\| \[?(DEV\d{3})\]?[^|]*\| `([a-z-]+)` \| ([a-z]+) \| (on|off|from \d+\.\d+) \|", text, re.M)
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


def test_the_readme_stays_short() -> None:
    assert len(README.splitlines()) <= README_MAX_LINES, "move the detail to a page under docs/ and link it"


def test_the_rule_table_has_one_line_per_rule_linking_its_page() -> None:
    rows = re.findall(r"^\| \[(DEV\d{3})\]\(docs/rules/(DEV\d{3})\.md\) \|.*\|$", README, re.M)
    assert [code for code, _ in rows] == [rule.code for rule in all_rules()]
    assert all(code == page for code, page in rows)


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _prose(text: str) -> str:
    # Links and headings are only what lies outside code blocks and code spans.
    return re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))


def _anchors(path: Path) -> set[str]:
    return {_slug(heading) for heading in re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", path.read_text(), flags=re.S), re.M)}


def broken_links(path: Path) -> list[str]:
    """Relative links of a markdown file whose file, or heading anchor, does not exist."""
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(path.read_text())):
        if re.match(r"[a-z]+:", target):
            continue  # https://, mailto: - not ours to check offline
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in _anchors(linked)):
            broken.append(f"{path.relative_to(ROOT)}: {target}")
    return broken


def test_every_link_of_the_readme_and_docs_leads_somewhere() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert [broken for page in pages for broken in broken_links(page)] == []


def test_every_docs_page_is_linked_from_the_readme_or_the_rule_index() -> None:
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in re.findall(r"\]\((docs/[^)#\s]+)", README)}
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert page.resolve() in linked, f"{page.name} is not linked from the README"


def test_the_link_check_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "a.md").write_text("# A title\n\n[ok](#a-title) [gone](b.md) [no heading](a.md#nope) `[code](x.md)`\n")
    assert broken_links(tmp_path / "a.md") == ["a.md: b.md", "a.md: a.md#nope"]


def _block(first_line: str) -> str:
    for block in re.findall(r"```[a-z]*\n(.*?)```", README, re.S):
        if block.splitlines()[0].strip() == first_line:
            return block
    raise AssertionError(f"README.md has no code block starting with {first_line!r}")


def test_the_action_workflow_uses_the_action_as_declared() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    workflow = yaml.safe_load(_block("# .github/workflows/devlint.yml"))
    assert workflow.get("on", workflow.get(True)) == "pull_request"  # YAML 1.1 reads a bare `on` as True
    steps = next(iter(workflow["jobs"].values()))["steps"]
    checkout = next(step for step in steps if step.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0  # the merge base with the base branch needs history
    (ours,) = [step for step in steps if re.fullmatch(r"OWNER/devlint@.+", step.get("uses", ""))]
    assert set(ours["with"]) <= set(action["inputs"]) and ours["with"]["src"] == "src/"
    (upload,) = [step for step in steps if step.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert upload["if"] == "always()" and upload["with"]["sarif_file"] == ours["with"]["sarif"]


def test_the_action_inputs_table_lists_exactly_the_action_s_inputs() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    section = README.split("\n## GitHub Action\n", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `([a-z-]+)` \|", section, re.M)
    assert documented == list(action["inputs"])


def test_the_torch_version_range_is_the_one_devlint_refuses_with(capsys: pytest.CaptureFixture[str]) -> None:
    stated = re.search(r"refused, naming the known range \((\d+\.\d+)–(\d+\.\d+),\s+(\d+\.\d+)–(\d+\.\d+)\)", README)
    assert stated is not None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["check", "--torch-version", "3.1", "x.py"])
    low1, high1, low2, high2 = stated.groups()
    assert f"known: {low1} to {high1} and {low2} to {high2}" in capsys.readouterr().err


def test_the_no_files_warning_is_the_one_devlint_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stated = re.search(r"says `(warning: No Python files[^`]*)`", README)
    assert stated is not None
    assert main(["check", "--no-cache", str(tmp_path)]) == 0
    assert stated.group(1) + "\n" in capsys.readouterr().err
