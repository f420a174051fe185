"""bench/test_suite_proof.py's own logic, without torch, the mirrors or a test run: the export from a
bare mirror that lacks a blob the tests do not need, JUnit reading, which tests count as gated by
a GPU, and the tables printed again from the JSON the bench writes."""

from __future__ import annotations

import json
import runpy
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The script is no package module: run it as a file (not as __main__) and use its functions.
bench = SimpleNamespace(**runpy.run_path(str(ROOT / "bench" / "test_suite_proof.py"), run_name="test_suite_proof"))


def _git(*args: str, cwd: Path) -> str:
    identity = ["-c", "user.name=bench test", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"]
    return subprocess.run(["git", *identity, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_export_writes_the_package_tests_and_configuration_and_needs_no_other_blob(tmp_path: Path) -> None:
    work = tmp_path / "work"
    files = {
        "pkg/__init__.py": "VALUE = 1\n",
        "tests/test_value.py": "from pkg import VALUE\n\n\ndef test_value():\n    assert VALUE == 1\n",
        "setup.cfg": "[tool:pytest]\n",
        "docs/slides.key": "a large blob a mirror may lack\n",
        "pkgextra/other.py": "x = 1\n",
    }
    for rel, text in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    _git("init", "-q", str(work), cwd=tmp_path)
    _git("add", ".", cwd=work)
    _git("commit", "-qm", "one", cwd=work)
    commit = _git("rev-parse", "HEAD", cwd=work)
    mirror = tmp_path / "mirrors" / "owner+proj" / "repo"
    _git("clone", "-q", "--bare", "--no-hardlinks", str(work), str(mirror), cwd=tmp_path)
    slides = _git("rev-parse", f"{commit}:docs/slides.key", cwd=work)
    (mirror / "objects" / slides[:2] / slides[2:]).unlink()  # as the fetch tool leaves large blobs out

    base = bench.CodeBase("proj", "owner+proj", commit, ("pkg", "tests"), ("tests",))
    dest = tmp_path / "export"
    dest.mkdir()
    count = bench.export(bench.git_dir(tmp_path / "mirrors", "owner+proj"), base, dest)

    exported = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert exported == ["pkg/__init__.py", "setup.cfg", "tests/test_value.py"]
    assert count == 3
    assert (dest / "tests" / "test_value.py").read_text() == files["tests/test_value.py"]


def test_a_mirror_that_is_not_there_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(bench.BenchError, match="fetch github:owner/proj"):
        bench.git_dir(tmp_path, "owner+proj")


def _junit(path: Path, cases: str) -> Path:
    path.write_text(f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>')
    return path


PLAIN = (
    '<testcase classname="tests.test_a" name="test_cpu"/>'
    '<testcase classname="tests.test_a" name="test_gated"><skipped message="cuda is not available"/></testcase>'
    '<testcase classname="tests.test_a.TestX" name="test_body_gate_cuda"/>'
)
EMULATED = (
    '<testcase classname="tests.test_a" name="test_cpu"/>'
    '<testcase classname="tests.test_a" name="test_gated">'
    '<failure message="EmulationUnsupportedError: not emulated: torch.cuda.graphs (at t.py:3)">tb</failure></testcase>'
    '<testcase classname="tests.test_a.TestX" name="test_body_gate_cuda"><failure message="AssertionError: x">tb</failure></testcase>'
    '<testcase classname="tests.test_a" name="test_defined_only_with_a_gpu[cuda]"/>'
)


def _result(tmp_path: Path) -> object:
    plain = bench.read_junit(_junit(tmp_path / "plain.xml", PLAIN))
    emulated = bench.read_junit(_junit(tmp_path / "emulated.xml", EMULATED))
    base = bench.CODE_BASES[0]
    return bench.BaseResult(base, 3, bench.PytestRun(0, 10.0, False, plain), bench.PytestRun(1, 20.0, False, emulated), ())


def test_the_gated_tests_are_those_the_cpu_skipped_or_never_defined(tmp_path: Path) -> None:
    result = _result(tmp_path)
    assert result.plain.tests["tests.test_a::test_gated"].outcome == "skipped"
    assert result.gated() == ["tests.test_a::test_defined_only_with_a_gpu[cuda]", "tests.test_a::test_gated"]
    assert dict(result.gated_outcomes()) == {"passed": 1, "not emulated": 1}
    assert result.named_for_gpu() == ["tests.test_a.TestX::test_body_gate_cuda"]

    table = bench.emulation_table([result])
    cells = [cell.strip() for cell in table.splitlines()[2].strip("|").split("|")]
    # CPU: 3 tests, 2 passed, 1 skipped, 1 defined only with a GPU; emulate: 4 tests, 2 gated run:
    # 1 passed, 0 failed, 1 not emulated, 0 skipped; the body-gated test fails under emulation.
    assert cells[2:] == ["3", "2", "1", "1", "4", "2", "1", "0", "1", "0", "0 of 1"]
    failures = bench.emulation_failures([result])
    assert any("test_gated" in line and "not emulated" in line for line in failures)
    assert any("test_body_gate_cuda" in line and "AssertionError" in line for line in failures)


def test_the_tables_print_again_from_the_json(tmp_path: Path) -> None:
    result = _result(tmp_path)
    verify = bench.VerifyRun(
        "safe", 1, 50.0,
        {
            "summary": {"tests": 4, "emulation_only": 2, "changed": 1, "fails_on_original": 0, "needs_cuda": 0},
            "fixes": [{"path": "pkg/a.py", "lines": [3, 4]}],
            "tests": [{
                "nodeid": "tests/test_a.py::test_cpu", "changed": True,
                "reference": {"outcome": "passed", "message": None},
                "runs": {"cpu": {"outcome": "failed", "message": "assert 2 == 1", "verdict": "changed",
                                 "causes": ["a fixed line is in its traceback: pkg/a.py:3"]},
                         "cuda": {"outcome": "passed", "message": None, "verdict": "same", "causes": []}},
            }],
        },
        "",
    )
    result = bench.BaseResult(result.base, result.files, result.plain, result.emulated, (verify,))
    saved = tmp_path / "proof.json"
    saved.write_text(json.dumps(bench.to_json([result])))
    again = bench.from_json(json.loads(saved.read_text()))
    assert bench.report(again) == bench.report([result])
    changed = bench.changed_tests(again)
    assert changed == [
        "- captum (safe) `tests/test_a.py::test_cpu` [cpu]: passed -> failed: assert 2 == 1 "
        "(a fixed line is in its traceback: pkg/a.py:3)"
    ]
    cost = bench.cost_table(again).splitlines()[2]
    assert "| 10 | 20 | 2.00 | 50 | 5.00 | 2.50 |" in cost
