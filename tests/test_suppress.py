"""`# noqa`, `# devlint: skip-file` and `--add-noqa`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import devlint.run.suppressions
from devlint.cli import main
from devlint.engine.lint import fix_text, lint_text
from devlint.registry import all_rules
from devlint.run.file_job import process_source
from devlint.run.job import Job
from devlint.run.suppressions import add_noqa, apply_noqa, noqa_codes, scan, skip_file
from devlint.run.writer import WriteError

RULES = list(all_rules())
CALL = "torch.ones(2).cuda()"


def remaining(text: str) -> list[int]:
    """Rows of the DEV101 findings left after suppressions."""
    result, _ = process_source(text.encode(), "t.py", Job(codes=("DEV101",)))
    assert result.error is None
    return [f.location.row for f in result.findings]


@pytest.mark.parametrize(
    ("comment", "suppressed"),
    [
        ("# noqa", True),
        ("# noqa: DEV101", True),
        ("#noqa:DEV101", True),
        ("# NOQA: dev101", True),
        ("# noqa: DEV301, DEV101", True),
        ("# noqa: DEV301 DEV101", True),
        ("# type: ignore  # noqa: DEV101", True),
        ("# noqa: DEV102", False),
        ("# noqa: DEV1", False),  # codes are exact, not prefixes
        ("# noqa-ish", False),
        ("# not a noqa", False),
        ("# no qa", False),
    ],
)
def test_noqa_comment_forms(comment: str, suppressed: bool) -> None:
    assert remaining(f"import torch\nx = {CALL}  {comment}\n") == ([] if suppressed else [2])


def test_noqa_codes_parse() -> None:
    assert noqa_codes("# noqa") == frozenset()
    assert noqa_codes("# noqa: DEV101,DEV301 because reasons") == {"DEV101", "DEV301"}
    assert noqa_codes("# noqa:") == frozenset()
    assert noqa_codes("# just a comment") is None


def test_noqa_inside_a_string_does_not_count() -> None:
    text = f'import torch\nx = ({CALL}, "# noqa")\ny = {CALL}; s = """\n# noqa\n"""\n'
    assert remaining(text) == [2, 3]


def test_noqa_only_covers_its_own_line() -> None:
    assert remaining(f"import torch\nx = {CALL}  # noqa\ny = {CALL}\n") == [3]


def test_noqa_goes_after_a_string_that_spans_lines_and_after_backslashes() -> None:
    text = f'import torch\nx = ({CALL}, """\ntext\n""")  # noqa: DEV101\ny = {CALL} + \\\n    1  # noqa\nz = {CALL}\n'
    assert remaining(text) == [7]


def test_suppressed_findings_are_not_fixed() -> None:
    text = f"import torch\nx = {CALL}  # noqa: DEV101\ny = {CALL}\n"
    result = fix_text(text, "t.py", RULES, keep=apply_noqa)
    assert f"x = {CALL}  # noqa: DEV101\n" in result.text
    assert "y = torch.ones(2).to(device)\n" in result.text
    assert result.applied == 1 and result.remaining == []
    untouched = f"import torch\nx = {CALL}  # noqa\n"
    fixed, new = process_source(untouched.encode(), "t.py", Job(codes=("DEV101",), fix=True))
    assert new is None and fixed.findings == [] and fixed.fixes_applied == 0


@pytest.mark.parametrize(
    ("text", "skipped"),
    [
        ("# devlint: skip-file\nimport torch\n", True),
        ("#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n\n#   DEVLINT:skip-file  (generated)\n", True),
        ("# Copyright\n#\n# devlint: skip-file\n", True),
        ('"""Docstring."""\n# devlint: skip-file\n', False),
        ("import torch\n# devlint: skip-file\n", False),
        ('x = """\n# devlint: skip-file\n"""\n', False),
        ("# devlint: skip-filename\n", False),
        ("# devlint: noqa\n", False),
    ],
)
def test_skip_file_rule(text: str, skipped: bool) -> None:
    assert skip_file(text) is skipped


def test_skip_file_skips_a_file_before_parsing_it() -> None:
    result, new = process_source(b"# devlint: skip-file\nx = torch.ones(2).cuda(\n", "t.py", Job(codes=("DEV101",), fix=True))
    assert result.error is None and result.findings == [] and new is None


def test_tokenizer_error_falls_back_to_lines_after_it() -> None:
    comments = scan("x = 1  # noqa\ny = (\n  2  # noqa: DEV101\n")
    assert comments.exact_until is not None
    assert comments.comment(1) == (7, "# noqa")
    assert comments.comment(3) is not None and "DEV101" in comments.comment(3)[1]


def test_add_noqa_text() -> None:
    text = (
        "import torch\n"
        f"a = {CALL}\n"
        f"b = {CALL}   # keep this\n"
        f"c = {CALL}  # noqa: DEV999\n"
        f"d = {CALL}; e = {CALL}\n"
        f'f = ({CALL}, """\n"""); g = 1\n'
        f"h = {CALL}  # noqa: DEV101\n"
    )
    findings = lint_text(text, "t.py", RULES)
    assert len(findings) == 7  # lint_text reports h too; apply_noqa drops it
    new, count = add_noqa(text, apply_noqa(text, findings))
    assert count == 5
    assert new == (
        "import torch\n"
        f"a = {CALL}  # noqa: DEV101\n"
        f"b = {CALL}   # keep this  # noqa: DEV101\n"
        f"c = {CALL}  # noqa: DEV101, DEV999\n"
        f"d = {CALL}; e = {CALL}  # noqa: DEV101\n"
        f'f = ({CALL}, """\n"""); g = 1  # noqa: DEV101\n'
        f"h = {CALL}  # noqa: DEV101\n"
    )
    assert apply_noqa(new, lint_text(new, "t.py", RULES)) == []
    assert add_noqa(new, apply_noqa(new, lint_text(new, "t.py", RULES))) == (new, 0)


def test_add_noqa_command_keeps_line_endings_and_encoding(tmp_path: Path, capsys) -> None:
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(f"import torch\r\nx = {CALL}\r\ny = 1\r\n".encode())
    latin = tmp_path / "latin.py"
    latin.write_bytes(f"# -*- coding: latin-1 -*-\nimport torch\nx = {CALL}  # caf\xe9\n".encode("latin-1"))
    clean = tmp_path / "clean.py"
    clean.write_text("x = 1\n")
    before = clean.stat().st_mtime_ns
    assert main(["check", "--add-noqa", str(tmp_path)]) == 0
    assert "Added 2 noqa directives to 2 files." in capsys.readouterr().err
    assert crlf.read_bytes() == f"import torch\r\nx = {CALL}  # noqa: DEV101\r\ny = 1\r\n".encode()
    assert latin.read_bytes() == f"# -*- coding: latin-1 -*-\nimport torch\nx = {CALL}  # caf\xe9  # noqa: DEV101\n".encode("latin-1")
    assert clean.stat().st_mtime_ns == before
    assert main(["check", "--output-format", "concise", str(tmp_path)]) == 0
    assert main(["check", "--add-noqa", str(tmp_path)]) == 0
    assert "Added 0 noqa directives to 0 files." in capsys.readouterr().err


def test_add_noqa_refuses_fix_and_reports_unwritable_files(tmp_path: Path, capsys, monkeypatch) -> None:
    target = tmp_path / "a.py"
    target.write_text(f"import torch\nx = {CALL}\n")
    assert main(["fix", "--add-noqa", str(target)]) == 2
    assert "--add-noqa cannot be combined with --fix" in capsys.readouterr().err

    def refuse(path, data, expected):
        raise WriteError("changed on disk since it was read; not overwritten")

    monkeypatch.setattr(devlint.run.suppressions, "write_atomic", refuse)
    assert main(["check", "--add-noqa", str(target)]) == 2
    err = capsys.readouterr().err
    assert f"devlint: error: {target}: changed on disk since it was read" in err
    assert "Traceback" not in err and "noqa" not in target.read_text()


def test_readme_suppression_example(tmp_path: Path, capsys) -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("## Suppressing findings", 1)[1]
    snippet = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    target = tmp_path / "example.py"
    target.write_text("import torch\n" + snippet)
    assert main(["check", "--select", "ALL", "--output-format", "concise", str(target)]) == 0
    target.write_text("import torch\n" + re.sub(r"  # noqa.*", "", snippet))
    assert main(["check", "--select", "ALL", "--output-format", "concise", str(target)]) == 1
    assert capsys.readouterr().out.count(str(target)) >= 1
