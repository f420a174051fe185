"""Writes docs/rules/: one page per rule (``DEV101.md``, ...) and the index (``README.md``), rendered
from each rule's own documentation by devlint.docs, the same text `devlint rule CODE` prints. The
pages are generated so that they cannot drift from the rules; tests/test_rule_docs.py fails when
they do.

    python tools/rule_docs.py            # rewrite the pages (and remove a page whose rule is gone)
    python tools/rule_docs.py --check    # exit 1, naming each page, if any differs, is missing or has no rule
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from devlint.docs import rule_page, rules_index
from devlint.registry import all_rules
from devlint.rule import Rule

FOLDER = Path(__file__).resolve().parent.parent / "docs" / "rules"
INDEX = "README.md"
# A file in docs/rules/ that is a rule's page, whatever rule it names.
PAGE_NAME = re.compile(r"DEV\d{3}\.md")


def expected_pages(rules: Sequence[type[Rule]]) -> dict[str, str]:
    """File name in docs/rules/ -> the text it must hold."""
    pages = {f"{rule.code}.md": rule_page(rule) for rule in rules}
    pages[INDEX] = rules_index(rules)
    return pages


def _rule_pages_present(folder: Path) -> set[str]:
    return {path.name for path in folder.glob("*.md") if PAGE_NAME.fullmatch(path.name)} if folder.is_dir() else set()


def differences(folder: Path, rules: Sequence[type[Rule]]) -> list[str]:
    """One line per page that is not what the rules give: out of date, missing, or with no rule."""
    problems = []
    expected = expected_pages(rules)
    for name, text in expected.items():
        path = folder / name
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"{path}: differs from the rule's documentation")
    for name in sorted(_rule_pages_present(folder) - set(expected)):
        problems.append(f"{folder / name}: no rule has this code")
    return problems


def write(folder: Path, rules: Sequence[type[Rule]]) -> list[str]:
    """Writes the pages that differ and removes those whose rule is gone; returns what it changed."""
    folder.mkdir(parents=True, exist_ok=True)
    changed = []
    expected = expected_pages(rules)
    for name, text in expected.items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(f"wrote {path}")
    for name in sorted(_rule_pages_present(folder) - set(expected)):
        (folder / name).unlink()
        changed.append(f"removed {folder / name}")
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if any page is out of date")
    parser.add_argument("--folder", type=Path, default=FOLDER, help="where the pages go (default: docs/rules/)")
    args = parser.parse_args(argv)
    rules = all_rules()
    if args.check:
        problems = differences(args.folder, rules)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print("run `python tools/rule_docs.py` to write the rule pages again", file=sys.stderr)
        return 1 if problems else 0
    for line in write(args.folder, rules):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
