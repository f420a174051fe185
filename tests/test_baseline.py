"""Baselines: record findings, then report only new ones; fingerprints survive shifted lines."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from report_lines import finding_lines

from devlint.cli import main
from devlint.findings import Finding, Location
from devlint.formats.baseline import fingerprints, normalise, relative_to

TRAIN = (
    "import torch\n"
    "\n"
    "model = torch.nn.Linear(2, 2).cuda()\n"
    "x = torch.ones(2).cuda()\n"
    "y = torch.ones(2).cuda()\n"
    "x = torch.ones(2).cuda()\n"  # the same line text twice: told apart by occurrence
)


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(TRAIN)
    return tmp_path


def concise(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    status = main(["check", "--output-format", "concise", *argv])
    return status, finding_lines(capsys.readouterr().out)


def test_write_then_check_against_the_baseline(project: Path, capsys) -> None:
    assert main(["check", "--write-baseline", "baseline.json", "src"]) == 0
    assert "Recorded 4 findings in baseline.json." in capsys.readouterr().err
    data = json.loads((project / "baseline.json").read_text())
    assert data["devlint-baseline"] == 1 and len(data["findings"]) == 4
    assert {entry["path"] for entry in data["findings"]} == {"src/train.py"}
    assert len({entry["fingerprint"] for entry in data["findings"]}) == 4
    assert concise(capsys, "--baseline", "baseline.json", "src") == (0, [])
    assert concise(capsys, "src")[0] == 1


def test_lines_shifted_by_code_above_are_not_new(project: Path, capsys) -> None:
    main(["check", "--write-baseline", "baseline.json", "src"])
    train = project / "src" / "train.py"
    train.write_text('"""Training."""\nimport os\n\n\ndef helper():\n    return 1\n' + TRAIN.replace("\n\n", "\n\n\n"))
    assert concise(capsys, "--baseline", "baseline.json", "src") == (0, [])


def test_a_new_cuda_call_is_exactly_one_new_finding(project: Path, capsys) -> None:
    main(["check", "--write-baseline", "baseline.json", "src"])
    train = project / "src" / "train.py"
    # a third copy of a line already recorded twice, and nothing else
    train.write_text("import os\n" + TRAIN + "x = torch.ones(2).cuda()\n")
    status, lines = concise(capsys, "--baseline", "baseline.json", "src")
    assert status == 1 and len(lines) == 1 and lines[0].startswith(f"{Path('src/train.py')}:8:")


def test_editing_the_flagged_line_makes_it_new_and_fixing_one_leaves_the_rest_known(project: Path, capsys) -> None:
    main(["check", "--write-baseline", "baseline.json", "src"])
    train = project / "src" / "train.py"
    train.write_text(TRAIN.replace("y = torch.ones(2).cuda()", "y = torch.zeros(2).cuda()").replace(
        "model = torch.nn.Linear(2, 2).cuda()", "model = torch.nn.Linear(2, 2)"))
    status, lines = concise(capsys, "--baseline", "baseline.json", "src")
    assert status == 1 and [line.split(":")[1] for line in lines] == ["5"]


def test_stale_entries_are_reported(project: Path, capsys) -> None:
    main(["check", "--write-baseline", "baseline.json", "src"])
    capsys.readouterr()
    train = project / "src" / "train.py"
    # one finding fixed and one line edited: two entries match nothing now, one finding is new
    train.write_text(TRAIN.replace("model = torch.nn.Linear(2, 2).cuda()", "model = torch.nn.Linear(2, 2)").replace(
        "y = torch.ones(2).cuda()", "y = torch.zeros(2).cuda()"))
    assert main(["check", "--baseline", "baseline.json", "src"]) == 1
    err = capsys.readouterr().err
    assert "warning: 2 baseline entries of baseline.json match no finding" in err, err
    train.write_text(TRAIN)
    assert main(["check", "--baseline", "baseline.json", "src"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_paths_are_relative_to_the_baseline_so_any_folder_works(project: Path, capsys, monkeypatch) -> None:
    main(["check", "--write-baseline", "baseline.json", "src"])
    monkeypatch.chdir(project / "src")
    assert concise(capsys, "--baseline", "../baseline.json", ".") == (0, [])


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "invalid JSON"),
        ('{"findings": []}', "not a devlint baseline"),
        ('{"devlint-baseline": 1, "findings": [{"code": "DEV101"}]}', "needs a string `fingerprint`"),
    ],
)
def test_a_bad_baseline_is_an_error(project: Path, capsys, content: str, expected: str) -> None:
    (project / "b.json").write_text(content)
    assert main(["check", "--baseline", "b.json", "src"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("devlint: error: b.json: ") and expected in err and "Traceback" not in err
    assert main(["check", "--baseline", "missing.json", "src"]) == 2
    assert "missing.json: cannot read baseline" in capsys.readouterr().err


def test_fingerprint_ignores_rows_and_whitespace_but_not_path_code_or_text() -> None:
    def one(filename: str = "a.py", row: int = 3, code: str = "DEV101", line: str = "x = t.cuda()") -> str:
        finding = Finding(code, "n", "m", filename, Location(row, 1), Location(row, 2), source_line=line)
        return fingerprints([finding], relative_to(Path.cwd()))[0]

    base = one()
    assert one(row=40) == base and one(line="  x  =  t.cuda()   ") == base
    assert len({base, one(filename="b.py"), one(code="DEV102"), one(line="y = t.cuda()")}) == 4
    assert normalise("\tx =\t1 ") == "x = 1"


def test_readme_baseline_commands_run_as_written(project: Path, capsys) -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("## Baseline", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL).group(1)
    commands = [shlex.split(line.split("#")[0]) for line in block.splitlines() if line.strip()]
    assert [argv[0] for argv in commands] == ["devlint", "devlint"]
    assert main([*commands[0][1:-1], "src"]) == 0
    assert main([*commands[1][1:-1], "--output-format", "concise", "src"]) == 0
    assert capsys.readouterr().out == "All checks passed!\n"


def test_fingerprints_accept_file_names_that_are_not_utf8(tmp_path: Path) -> None:
    from devlint.findings import Finding, Location
    from devlint.formats.baseline import fingerprints

    name = str(tmp_path / "caf\udce9.py")  # the byte 0xE9 from a latin-1 file name
    finding = Finding("DEV101", "cuda-call", "m", name, Location(1, 1), Location(1, 2), source_line="x.cuda()")
    assert len(fingerprints([finding], str)) == 1
