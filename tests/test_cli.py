"""The command line as users and CI see it: exit statuses, output formats, selection, fix modes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from devlint.cli import main
from report_lines import finding_lines

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
    assert "good.py:2:30: DEV101" in captured.out


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
        f"{tmp_path / 'a.py'}:2:30: DEV101 [*] `.cuda()` hardcodes the CUDA device; use `.to(device)`",
        f"{tmp_path / 'a.py'}:3:18: DEV101 [*] `.cuda()` hardcodes the CUDA device; use `.to(device)`",
        "Found 2 findings (2 fixable, 0 with --unsafe-fixes).",
    ]


def test_json_format_carries_the_spec_fields(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA})
    main(["check", "--output-format", "json", str(tmp_path)])
    [finding] = json.loads(capsys.readouterr().out)
    assert finding["code"] == "DEV101" and finding["name"] == "cuda-call"
    assert finding["filename"] == str(tmp_path / "a.py")
    assert finding["location"] == {"row": 2, "column": 30}
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
    assert f"{tmp_path / 'a.py'}:2:30: DEV101 [*]" in out
    assert "2 | model = torch.nn.Linear(2, 2).cuda()" in out
    lines = out.splitlines()
    source_line = next(line for line in lines if line.startswith("2 |"))
    caret_line = next(line for line in lines if "^" in line)
    assert caret_line.index("^") == source_line.index(".cuda")  # the dot of `.cuda()` first
    assert caret_line.count("^") == len(".cuda()")
    assert "+ model = torch.nn.Linear(2, 2).to(device)" in out
    assert "Found 1 finding (1 fixable, 0 with --unsafe-fixes)." in out


def test_quiet_prints_findings_only(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA})
    main(["check", "--quiet", "--output-format", "full", str(tmp_path)])
    out = capsys.readouterr().out
    assert "DEV101" in out and "Found" not in out


def test_statistics_counts_per_rule(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA + "y = torch.ones(1).cuda()\n"})
    assert main(["check", "--statistics", "--output-format", "concise", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^\s+2\tDEV101\t\[\*\] cuda-call$", out, re.M)
    # as ruff's: the table alone, no finding lines and no summary
    assert "a.py" not in out and "Found" not in out, out


def test_statistics_as_json(tmp_path, capsys) -> None:
    _tree(tmp_path, **{"a.py": CUDA + "y = torch.ones(1).cuda()\n"})
    main(["check", "--statistics", "--output-format", "json", str(tmp_path)])
    table = json.loads(capsys.readouterr().out)
    assert table == [{"code": "DEV101", "name": "cuda-call", "count": 2, "fixable": True}]


def test_concise_marks_only_the_fixes_that_apply(tmp_path, capsys) -> None:
    # DEV102's fix of `.cuda(args.gpu)` is unsafe: marked only with --unsafe-fixes
    _tree(tmp_path, **{"a.py": "import torch\nx = x.cuda(args.gpu)\ny = torch.ones(1).cuda()\n"})
    main(["check", "--output-format", "concise", str(tmp_path)])
    lines = finding_lines(capsys.readouterr().out)
    assert [" [*] " in line for line in lines] == [False, True], lines
    main(["check", "--output-format", "concise", "--unsafe-fixes", str(tmp_path)])
    assert all(" [*] " in line for line in finding_lines(capsys.readouterr().out))


def test_a_folder_without_python_files_warns(tmp_path, capsys) -> None:
    (tmp_path / "notes.txt").write_text("no code\n")
    assert main(["check", str(tmp_path)]) == 0
    assert capsys.readouterr().err == "warning: No Python files found under the given path(s)\n"


@pytest.mark.parametrize("version", ["3.0", "2.40", "1.14"])
def test_a_torch_version_that_is_no_release_is_refused(tmp_path, capsys, version: str) -> None:
    _tree(tmp_path, **{"a.py": CUDA, "pyproject.toml": f'[tool.devlint]\ntorch-version = "{version}"\n'})
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "pyproject.toml" in err and f"torch {version} is no torch release" in err and "2.0 to 2.15" in err, err
    assert "Traceback" not in err


def test_show_settings_says_where_the_torch_version_comes_from(tmp_path, capsys, monkeypatch) -> None:
    _tree(tmp_path, **{"a.py": CUDA, "requirements.txt": "numpy\ntorch>=1.7\n"})
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--show-settings", "a.py"]) == 0
    out = capsys.readouterr().out
    assert 'torch-version = "1.7"  # from the lowest torch that requirements.txt admits' in out, out
    assert main(["check", "--show-settings", "--torch-version", "2.6", "a.py"]) == 0
    assert 'torch-version = "2.6"  # from --torch-version' in capsys.readouterr().out
    (tmp_path / "pyproject.toml").write_text('[tool.devlint]\ntorch-version = "2.9"\n')
    main(["check", "--show-settings", "."])
    out = capsys.readouterr().out
    assert 'torch-version = "2.9"  # from `torch-version` in pyproject.toml' in out and '"DEV101"' in out, out


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
        f"{tmp_path / 'a.py'}:2:30: DEV101 [*] `.cuda()` hardcodes the CUDA device; use `.to(device)`"
    ]
    for fmt in ("json", "github", "sarif", "junit", "gitlab"):
        main(["check", "--output-format", fmt, str(tmp_path)])
        captured = capsys.readouterr()
        assert "Found " not in captured.out + captured.err, fmt
    main(["check", "--output-format", "json", "--fix", str(tmp_path)])
    captured = capsys.readouterr()
    assert json.loads(captured.out) == [] and "Fixed" not in captured.out + captured.err
