"""The command line as users and CI see it: exit statuses, output formats, selection, fix modes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from devlint.cli import main

CUDA = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
CLEAN = "import torch\nx = torch.ones(2)\n"


def _tree(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_clean_tree_exits_0(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CLEAN})
    assert main(["check", "--output-format", "full", str(tmp_path)]) == 0
    assert "All checks passed!" in capsys.readouterr().out


def test_findings_exit_1_and_exit_zero_overrides(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA})
    assert main(["check", str(tmp_path)]) == 1
    assert main(["check", "--exit-zero", str(tmp_path)]) == 0


def test_unparsable_file_exits_2_and_others_are_still_checked(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"bad.py": "def f(:\n    pass\n", "good.py": CUDA})
    assert main(["check", "--output-format", "concise", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert re.search(r"bad\.py:1:\d+: syntax error", captured.err)
    assert "Traceback" not in captured.err
    assert "good.py:2:31: DEV101" in captured.out


def test_missing_path_and_unknown_code_and_bad_flag_exit_2(tmp_path, capsys) -> None:
    assert main(["check", str(tmp_path / "nope.py")]) == 2
    assert "nope.py: no such file or directory" in capsys.readouterr().err
    _tree(tmp_path, **{"a.py": CUDA})
    assert main(["check", "--select", "DEV999", str(tmp_path)]) == 2
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "--no-such-flag"])
    assert exit_info.value.code == 2


def test_concise_format_is_one_line_per_finding(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA + "y = torch.ones(1).cuda()\n"})
    main(["check", "--output-format", "concise", str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"{tmp_path / 'a.py'}:2:31: DEV101 `.cuda()` hardcodes the CUDA device; use `.to(device)`",
        f"{tmp_path / 'a.py'}:3:19: DEV101 `.cuda()` hardcodes the CUDA device; use `.to(device)`",
        "Found 2 findings (2 fixable, 0 with --unsafe-fixes).",
    ]


def test_json_format_carries_the_spec_fields(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA})
    main(["check", "--output-format", "json", str(tmp_path)])
    [finding] = json.loads(capsys.readouterr().out)
    assert finding["code"] == "DEV101" and finding["name"] == "cuda-call"
    assert finding["filename"] == str(tmp_path / "a.py")
    assert finding["location"] == {"row": 2, "column": 31}
    assert finding["end_location"] == {"row": 2, "column": 37}
    assert finding["cell"] is None
    fix = finding["fix"]
    assert fix["applicability"] == "safe"
    # applying the edits by hand gives the same text as `devlint fix`
    text = CUDA
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    def offset(loc):
        return starts[loc["row"] - 1] + loc["column"] - 1
    for edit in sorted(fix["edits"], key=lambda e: offset(e["location"]), reverse=True):
        text = text[: offset(edit["location"])] + edit["content"] + text[offset(edit["end_location"]) :]
    main(["fix", str(tmp_path)])
    assert (tmp_path / "a.py").read_text() == text


def test_full_format_shows_source_caret_fix_and_summary(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA})
    main(["check", "--output-format", "full", str(tmp_path)])
    out = capsys.readouterr().out
    assert f"{tmp_path / 'a.py'}:2:31: DEV101 [*]" in out
    assert "2 | model = torch.nn.Linear(2, 2).cuda()" in out
    lines = out.splitlines()
    source_line = next(line for line in lines if line.startswith("2 |"))
    caret_line = next(line for line in lines if "^" in line)
    assert caret_line.index("^") == source_line.index(".cuda") + 1
    assert caret_line.count("^") == len("cuda()")
    assert "+ model = torch.nn.Linear(2, 2).to(device)" in out
    assert "Found 1 finding (1 fixable, 0 with --unsafe-fixes)." in out


def test_quiet_prints_findings_only(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA})
    main(["check", "--quiet", "--output-format", "full", str(tmp_path)])
    out = capsys.readouterr().out
    assert "DEV101" in out and "Found" not in out


def test_statistics_counts_per_rule(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA + "y = torch.ones(1).cuda()\n"})
    main(["check", "--statistics", "--output-format", "concise", str(tmp_path)])
    assert re.search(r"^\s+2\tDEV101\t\[\*\] cuda-call$", capsys.readouterr().out, re.M)


def test_diff_writes_nothing_and_exits_1_only_with_changes(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA})
    assert main(["fix", "--diff", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "-model = torch.nn.Linear(2, 2).cuda()" in out
    assert "+model = torch.nn.Linear(2, 2).to(device)" in out
    assert (tmp_path / "a.py").read_text() == CUDA
    assert main(["check", "--diff", str(tmp_path)]) == 1
    (tmp_path / "a.py").write_text(CLEAN)
    assert main(["fix", "--diff", str(tmp_path)]) == 0


def test_fix_writes_and_reports_what_remains(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA})
    assert main(["check", "--fix", str(tmp_path)]) == 0
    fixed = (tmp_path / "a.py").read_text()
    assert ".to(device)" in fixed and ".cuda()" not in fixed
    assert main(["fix", str(tmp_path)]) == 0
    assert (tmp_path / "a.py").read_text() == fixed


def test_select_ignore_and_prefixes(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA})
    assert main(["check", "--select", "DEV1", str(tmp_path)]) == 1
    assert main(["check", "--ignore", "DEV101", str(tmp_path)]) == 0
    assert main(["check", "--select", "DEV10", "--ignore", "DEV101", "--extend-select", "DEV101", str(tmp_path)]) == 0
    assert main(["check", "--select", "DEV4", "--extend-select", "DEV101", str(tmp_path)]) == 1
    assert main(["check", "--select", "DEV101", "--ignore", "DEV1", str(tmp_path)]) == 0


def test_concise_and_piped_output_end_with_the_summary_as_ruff_does(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA + "torch.cuda.set_device(0)\n"})
    # piped (capsys is no terminal): concise, with the count of what is left
    assert main(["check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "Found 2 findings (1 fixable, 0 with --unsafe-fixes)."
    assert main(["fix", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2:] == ["Fixed 1 finding.", "Found 1 finding (0 fixable, 0 with --unsafe-fixes)."]
    (tmp_path / "a.py").write_text(CLEAN)
    assert main(["check", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "All checks passed!\n"


def test_quiet_and_machine_formats_print_no_summary(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA})
    main(["check", "--quiet", str(tmp_path)])
    assert capsys.readouterr().out.splitlines() == [
        f"{tmp_path / 'a.py'}:2:31: DEV101 `.cuda()` hardcodes the CUDA device; use `.to(device)`"
    ]
    for fmt in ("json", "github", "sarif", "junit", "gitlab"):
        main(["check", "--output-format", fmt, str(tmp_path)])
        captured = capsys.readouterr()
        assert "Found " not in captured.out + captured.err, fmt
    main(["check", "--output-format", "json", "--fix", str(tmp_path)])
    captured = capsys.readouterr()
    assert json.loads(captured.out) == [] and "Fixed" not in captured.out + captured.err
