"""CI output formats: GitHub annotations, SARIF, JUnit XML, GitLab Code Quality; and the README's
CI recipes, run as written."""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import yaml

from devlint.cli import build_parser, main
from devlint.findings import FileError, Finding, Location
from devlint.formats import RunReport, writers
from devlint.formats.github import escape_data, escape_property
from devlint.formats.sarif import sarif_log
from devlint.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
# The CI recipes the README links (docs/ci.md), run as written.
CI_DOC = ROOT / "docs" / "ci.md"
CUDA = "import torch\nx = torch.ones(2).cuda()\n"


def finding(filename: str = "a.py", row: int = 2, col: int = 19, end_row: int = 2, end_col: int = 25,
            message: str = "`.cuda()` hardcodes the CUDA device", line: str = "x = torch.ones(2).cuda()",
            cell: int | None = None) -> Finding:
    return Finding("DEV101", "cuda-call", message, filename, Location(row, col), Location(end_row, end_col),
                   source_line=line, noqa_row=row, cell=cell)


def render(fmt: str, report: RunReport) -> str:
    out = StringIO()
    writers()[fmt](report, out)
    return out.getvalue()


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(CUDA + "y = torch.zeros(3).cuda()\n")
    (tmp_path / "src" / "clean.py").write_text("x = 1\n")
    return tmp_path


# -- GitHub ----------------------------------------------------------------------------------------


def parse_workflow_command(line: str) -> tuple[str, dict[str, str], str]:
    """Reads `::name k=v,k=v::data` back the way the runner does."""
    match = re.fullmatch(r"::(\w+) ([^:]*)::(.*)", line)
    assert match, line
    unescape = lambda text: text.replace("%2C", ",").replace("%3A", ":").replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%")
    properties = dict(item.split("=", 1) for item in match.group(2).split(","))
    return match.group(1), {k: unescape(v) for k, v in properties.items()}, unescape(match.group(3))


def test_github_escaping_follows_the_toolkit() -> None:
    assert escape_data("50% done\r\nnext: a,b") == "50%25 done%0D%0Anext: a,b"
    assert escape_property("dir:a,b%\n") == "dir%3Aa%2Cb%25%0A"


def test_github_annotation_round_trips_odd_names_and_messages() -> None:
    odd = finding(filename="we:ird,name%.py", message="100% wrong:\nsee, here")
    line = render("github", RunReport([odd])).strip()
    assert line == (
        "::error file=we%3Aird%2Cname%25.py,line=2,col=19,endLine=2,endColumn=25,title=DEV101::"
        "100%25 wrong:%0Asee, here"
    )
    name, props, data = parse_workflow_command(line)
    assert name == "error" and data == odd.message
    assert props == {"file": odd.filename, "line": "2", "col": "19", "endLine": "2", "endColumn": "25", "title": "DEV101"}


def test_github_multiline_spans_drop_columns_and_errors_are_annotated() -> None:
    report = RunReport([finding(end_row=4, end_col=3)], [FileError("bad.py", "syntax error: oops", 3, 7)])
    lines = render("github", report).splitlines()
    assert lines[0] == "::error file=bad.py,line=3,col=7,title=devlint::syntax error: oops"
    assert parse_workflow_command(lines[1])[1] == {"file": "a.py", "line": "2", "endLine": "4", "title": "DEV101"}


def test_github_paths_are_relative_to_the_workspace(project: Path, capsys) -> None:
    assert main(["check", "--output-format", "github", str(project / "src")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [parse_workflow_command(line)[1]["file"] for line in lines] == ["src/train.py", "src/train.py"]


# -- SARIF -----------------------------------------------------------------------------------------

LEVELS = {"none", "note", "warning", "error"}


def _text(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("text"), str) and bool(value["text"].strip())


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def sarif_problems(log: Any) -> list[str]:
    """The essential parts of the SARIF 2.1.0 schema, and what GitHub code scanning requires."""
    problems: list[str] = []
    if not isinstance(log, dict) or log.get("version") != "2.1.0":
        return ["version must be 2.1.0"]
    if not isinstance(log.get("$schema"), str) or "sarif" not in log["$schema"]:
        problems.append("$schema missing")
    runs = log.get("runs")
    if not isinstance(runs, list) or not runs:
        return problems + ["runs must be a non-empty array"]
    for run in runs:
        driver = run.get("tool", {}).get("driver") if isinstance(run.get("tool"), dict) else None
        if not isinstance(driver, dict) or not isinstance(driver.get("name"), str):
            problems.append("tool.driver.name missing")
            continue
        if not isinstance(driver.get("version"), str):
            problems.append("tool.driver.version missing")
        if not re.match(r"https?://", str(driver.get("informationUri", ""))):
            problems.append("tool.driver.informationUri must be an absolute URI")
        rules = driver.get("rules")
        if not isinstance(rules, list):
            problems.append("tool.driver.rules must be an array")
            rules = []
        ids = [rule.get("id") for rule in rules]
        if len(set(ids)) != len(ids):
            problems.append("rule ids must be unique")
        for rule in rules:
            if not isinstance(rule.get("id"), str) or not isinstance(rule.get("name"), str):
                problems.append("rule id/name missing")
            for key in ("shortDescription", "fullDescription"):
                if not _text(rule.get(key)):
                    problems.append(f"rule {rule.get('id')}: {key}.text missing")
            help_ = rule.get("help")
            if not _text(help_) or not isinstance(help_.get("markdown"), str):
                problems.append(f"rule {rule.get('id')}: help.text and help.markdown needed")
            if rule.get("defaultConfiguration", {}).get("level") not in LEVELS:
                problems.append(f"rule {rule.get('id')}: defaultConfiguration.level invalid")
        bases = run.get("originalUriBaseIds", {})
        results = run.get("results")
        if not isinstance(results, list):
            problems.append("results must be an array")
            continue
        for number, result in enumerate(results):
            where = f"result {number}"
            index = result.get("ruleIndex")
            if not isinstance(index, int) or not 0 <= index < len(rules) or rules[index].get("id") != result.get("ruleId"):
                problems.append(f"{where}: ruleIndex does not point at ruleId")
            if result.get("level") not in LEVELS:
                problems.append(f"{where}: level invalid")
            if not _text(result.get("message")):
                problems.append(f"{where}: message.text missing")
            locations = result.get("locations")
            if not isinstance(locations, list) or not locations:
                problems.append(f"{where}: locations missing")
                continue
            for location in locations:
                physical = location.get("physicalLocation", {})
                artifact = physical.get("artifactLocation", {})
                uri = artifact.get("uri")
                if not isinstance(uri, str) or not uri or " " in uri:
                    problems.append(f"{where}: artifactLocation.uri must be a URI")
                    continue
                if "uriBaseId" in artifact:
                    if re.match(r"[a-z]+:", uri) or uri.startswith("/"):
                        problems.append(f"{where}: uri with a uriBaseId must be relative")
                    base = bases.get(artifact["uriBaseId"], {}).get("uri", "")
                    if not base.endswith("/"):
                        problems.append(f"{where}: originalUriBaseIds[{artifact['uriBaseId']}] must end with /")
                elif not uri.startswith("file://"):
                    problems.append(f"{where}: relative uri without uriBaseId")
                region = physical.get("region")
                if region is None:
                    continue
                if not all(_positive(region.get(key)) for key in ("startLine", "startColumn", "endLine", "endColumn")):
                    problems.append(f"{where}: region needs 1-based startLine/startColumn/endLine/endColumn")
                elif (region["endLine"], region["endColumn"]) < (region["startLine"], region["startColumn"]):
                    problems.append(f"{where}: region ends before it starts")
            fingerprints = result.get("partialFingerprints", {})
            if not all(isinstance(value, str) for value in fingerprints.values()):
                problems.append(f"{where}: partialFingerprints values must be strings")
    return problems


def test_sarif_from_a_run_is_valid_and_relative(project: Path, capsys) -> None:
    assert main(["check", "--output-format", "sarif", str(project / "src")]) == 1
    log = json.loads(capsys.readouterr().out)
    assert sarif_problems(log) == []
    run = log["runs"][0]
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == [rule.code for rule in all_rules()]
    assert len(run["results"]) == 2
    first = run["results"][0]
    assert first["ruleId"] == "DEV101"
    assert first["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 2, "startColumn": 18, "endLine": 2, "endColumn": 25},
    }
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"
    rule = run["tool"]["driver"]["rules"][0]
    assert "## Why is this bad?" in rule["help"]["markdown"] and rule["help"]["text"].strip()
    assert run["invocations"][0]["executionSuccessful"] is True


def test_sarif_encodes_uris_and_reports_errors(project: Path) -> None:
    report = RunReport(
        [finding(filename="my dir/a.py"), finding(filename="/elsewhere/b.py"), finding(filename="nb.ipynb", cell=3)],
        [FileError("broken.py", "syntax error", 4, 2)],
    )
    log = sarif_log(report)
    assert sarif_problems(log) == []
    results = log["runs"][0]["results"]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "my%20dir/a.py"
    assert results[1]["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "file:///elsewhere/b.py"}
    assert "region" not in results[2]["locations"][0]["physicalLocation"]
    assert "(cell 3, line 2)" in results[2]["message"]["text"]
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["message"]["text"] == "syntax error"


@pytest.mark.parametrize(
    "breakage",
    [
        lambda log: log.update(version="2.0.0"),
        lambda log: log["runs"][0]["tool"]["driver"].pop("informationUri"),
        lambda log: log["runs"][0]["tool"]["driver"]["rules"][0].pop("help"),
        lambda log: log["runs"][0]["results"][0].update(ruleIndex=len(log["runs"][0]["tool"]["driver"]["rules"])),
        lambda log: log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"].update(startLine=0),
        lambda log: log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"].update(uri="/abs/a.py"),
    ],
)
def test_the_sarif_check_catches_broken_logs(breakage) -> None:
    log = copy.deepcopy(sarif_log(RunReport([finding()])))
    breakage(log)
    assert sarif_problems(log) != []


# -- JUnit -----------------------------------------------------------------------------------------


def test_junit_is_one_suite_with_failures_per_finding_and_passes_per_clean_file(project: Path, capsys) -> None:
    (project / "src" / "broken.py").write_text("def (:\n")
    assert main(["check", "--output-format", "junit", "src"]) == 2
    root = ET.fromstring(capsys.readouterr().out)
    suites = root.findall("testsuite")
    assert root.tag == "testsuites" and len(suites) == 1
    suite = suites[0]
    cases = suite.findall("testcase")
    assert suite.get("tests") == str(len(cases)) == "4"
    assert suite.get("failures") == "2" and suite.get("errors") == "1"
    failures = [case for case in cases if case.find("failure") is not None]
    assert {case.get("classname") for case in failures} == {os.path.join("src", "train.py")}
    assert failures[0].find("failure").get("type") == "DEV101"
    assert "hardcodes the CUDA device" in failures[0].find("failure").get("message")
    passing = [case for case in cases if len(case) == 0]
    assert [case.get("name") for case in passing] == [os.path.join("src", "clean.py")]
    assert cases[0].find("error") is not None and "broken.py" in cases[0].get("classname")


def test_junit_survives_characters_xml_cannot_hold() -> None:
    text = render("junit", RunReport([finding(message="bad \x00 byte & <tag>", line="x = '\x1b'")], files=["a.py"]))
    failure = ET.fromstring(text).find("testsuite/testcase/failure")
    assert failure is not None and failure.get("message") == "DEV101 bad \ufffd byte & <tag>"


# -- GitLab ----------------------------------------------------------------------------------------


def test_gitlab_code_quality_fields_and_stable_fingerprints(project: Path, capsys) -> None:
    assert main(["check", "--output-format", "gitlab", "src"]) == 1
    issues = json.loads(capsys.readouterr().out)
    assert len(issues) == 2
    for issue in issues:
        assert set(issue) >= {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["check_name"] == "DEV101" and issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
        assert issue["location"]["path"] == "src/train.py" and isinstance(issue["location"]["lines"]["begin"], int)
    assert len({issue["fingerprint"] for issue in issues}) == 2
    # unrelated lines inserted above: same fingerprints, new line numbers
    train = project / "src" / "train.py"
    train.write_text("# header\n\n" + train.read_text())
    assert main(["check", "--output-format", "gitlab", "src"]) == 1
    moved = json.loads(capsys.readouterr().out)
    assert [i["fingerprint"] for i in moved] == [i["fingerprint"] for i in issues]
    assert [i["location"]["lines"]["begin"] for i in moved] == [i["location"]["lines"]["begin"] + 2 for i in issues]


# -- the CI recipes the README links, run as written ---------------------------------------------------------


def readme_block(first_line: str) -> str:
    """The fenced code block of docs/ci.md whose first line is ``first_line``."""
    for block in re.findall(r"```[a-z]*\n(.*?)```", CI_DOC.read_text(), re.DOTALL):
        if block.splitlines()[0].strip() == first_line:
            return block
    raise AssertionError(f"docs/ci.md has no code block starting with {first_line!r}")


def devlint_commands(script: str) -> list[str]:
    return [line.strip() for line in script.splitlines() if line.strip().startswith("devlint ")]


def assert_real_flags(command: str) -> None:
    argv = shlex.split(command.split(">")[0])[1:]
    build_parser().parse_args(argv)  # exits on an unknown flag


def run_shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("CI", None)
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_readme_github_actions_workflow_runs_as_written(project: Path) -> None:
    workflow = yaml.safe_load(readme_block("# .github/workflows/devlint-manual.yml"))
    assert workflow["permissions"]["security-events"] == "write"
    steps = next(iter(workflow["jobs"].values()))["steps"]
    uploads = [s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@")]
    assert len(uploads) == 1 and uploads[0].get("if") == "always()"
    sarif_file = uploads[0]["with"]["sarif_file"]
    commands = [c for s in steps if "run" in s for c in devlint_commands(s["run"])]
    assert any("--output-format github" in c for c in commands)
    assert any("--output-format sarif" in c and c.endswith(f"> {sarif_file}") for c in commands)
    for command in commands:
        assert_real_flags(command)
        result = run_shell(command, project)
        assert result.returncode in (0, 1), result.stderr
        if "--output-format github" in command:
            assert result.returncode == 1
            assert result.stdout.startswith("::error file=src/train.py,line=2,col=18,")
    log = json.loads((project / sarif_file).read_text())
    assert sarif_problems(log) == [] and len(log["runs"][0]["results"]) == 2


def test_readme_gitlab_job_runs_as_written(project: Path) -> None:
    config = yaml.safe_load(readme_block("# .gitlab-ci.yml"))
    job = next(value for value in config.values() if isinstance(value, dict) and "script" in value)
    report = job["artifacts"]["reports"]["codequality"]
    assert job["artifacts"].get("when") == "always"
    commands = [c for line in job["script"] for c in devlint_commands(line)]
    assert commands
    for command in commands:
        assert_real_flags(command)
        assert run_shell(command, project).returncode in (0, 1)
    issues = json.loads((project / report).read_text())
    assert [issue["location"]["path"] for issue in issues] == ["src/train.py", "src/train.py"]
