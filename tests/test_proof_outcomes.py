"""bench/proof_outcomes.py: per-test outcomes from a JUnit XML, their JSON, and the comparison of an
emulated run with a GPU run (issue 32), on small hand-made inputs; no torch, no test run."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
po = SimpleNamespace(**runpy.run_path(str(ROOT / "bench" / "proof_outcomes.py"), run_name="proof_outcomes"))
bench = SimpleNamespace(**runpy.run_path(str(ROOT / "bench" / "test_suite_proof.py"), run_name="test_suite_proof"))

JUNIT = (
    '<?xml version="1.0"?><testsuites><testsuite name="pytest">'
    '<testcase classname="tests.test_a" name="test_ok"/>'
    '<testcase classname="tests.test_a.TestX" name="test_skip[cuda]"><skipped message="CUDA not available">x</skipped></testcase>'
    '<testcase classname="tests.test_a" name="test_fail"><failure message="AssertionError: 1 != 2&#10;second line">tb</failure></testcase>'
    '<testcase classname="tests.test_a" name="test_setup"><error message="failed on setup with &quot;KeyError&quot;">tb</error></testcase>'
    '<testcase classname="tests.test_a" name="test_refused">'
    '<failure message="EmulationUnsupportedError: not emulated: torch.cuda.graphs (at t.py:3)">tb</failure></testcase>'
    '</testsuite></testsuites>'
)


def test_outcomes_from_junit_name_each_test_with_a_one_line_reason(tmp_path: Path) -> None:
    path = tmp_path / "run.xml"
    path.write_text(JUNIT)
    got = po.outcomes_from_junit(path)
    assert got == {
        "tests.test_a::test_ok": po.TestOutcome("passed", ""),
        "tests.test_a.TestX::test_skip[cuda]": po.TestOutcome("skipped", "CUDA not available"),
        "tests.test_a::test_fail": po.TestOutcome("failed", "AssertionError: 1 != 2"),
        "tests.test_a::test_setup": po.TestOutcome("error", 'failed on setup with "KeyError"'),
        "tests.test_a::test_refused": po.TestOutcome("not emulated", "EmulationUnsupportedError: not emulated: torch.cuda.graphs (at t.py:3)"),
    }
    assert po.outcomes_from_junit(tmp_path / "absent.xml") == {}


def _run(run: str, tests: dict[str, tuple[str, str]], name: str = "lib") -> object:
    outcomes = {nodeid: po.TestOutcome(o, r) for nodeid, (o, r) in tests.items()}
    return po.RunOutcomes(run, "2.13.0", "CPU, emulated" if run == "emulated" else "H200", "2026-11-27", {name: po.CodeBaseOutcomes("c0ffee", 0, False, outcomes)})


@pytest.mark.parametrize(
    ("emulated", "gpu", "kind"),
    [
        (("passed", ""), ("passed", ""), po.AGREE),
        (("skipped", "why"), ("skipped", "why"), po.AGREE),
        (("failed", "a"), ("error", "b"), po.AGREE),  # both did not pass
        (("not emulated", "not emulated: x"), ("passed", ""), po.REFUSED),
        (("not emulated", "not emulated: x"), ("failed", "y"), po.REFUSED),
        (("passed", ""), ("failed", "device mix"), po.EMULATION_PASSES),
        (("passed", ""), ("error", "setup"), po.EMULATION_PASSES),
        (("failed", "cpu tensor"), ("passed", ""), po.EMULATION_FAILS),
        (("error", "setup"), ("passed", ""), po.EMULATION_FAILS),
        (("skipped", "why"), ("passed", ""), po.DIFFER),
        (("passed", ""), ("skipped", "why"), po.DIFFER),
        (("passed", ""), None, po.ONLY_EMULATED),
        (None, ("passed", ""), po.ONLY_GPU),
    ],
)
def test_each_pair_of_outcomes_has_one_class(emulated: tuple[str, str] | None, gpu: tuple[str, str] | None, kind: str) -> None:
    assert po.classify(emulated and po.TestOutcome(*emulated), gpu and po.TestOutcome(*gpu)) == kind


def test_compare_counts_each_class_lists_every_difference_and_names_a_code_base_in_one_run() -> None:
    emulated = _run("emulated", {
        "t::same": ("passed", ""), "t::refused": ("not emulated", "not emulated: subclass"),
        "t::wrong_pass": ("passed", ""), "t::wrong_fail": ("failed", "Expected all tensors on the same device"),
        "t::emu_only": ("passed", ""),
    })
    gpu = _run("gpu", {
        "t::same": ("passed", ""), "t::refused": ("passed", ""), "t::wrong_pass": ("failed", "cuda:0 and cpu!"),
        "t::wrong_fail": ("passed", ""), "t::gpu_only": ("skipped", "x"),
    })
    gpu.code_bases["other"] = po.CodeBaseOutcomes("beef", 0, False, {"t::x": po.TestOutcome("passed", "")})
    comparison = po.compare(emulated, gpu)
    assert dict(comparison.counts["lib"]) == {
        po.AGREE: 1, po.REFUSED: 1, po.EMULATION_PASSES: 1, po.EMULATION_FAILS: 1, po.ONLY_EMULATED: 1, po.ONLY_GPU: 1,
    }
    assert [(d.nodeid, d.kind) for d in comparison.differences] == [
        ("t::emu_only", po.ONLY_EMULATED), ("t::gpu_only", po.ONLY_GPU), ("t::refused", po.REFUSED),
        ("t::wrong_fail", po.EMULATION_FAILS), ("t::wrong_pass", po.EMULATION_PASSES),
    ]
    assert comparison.missing == {"other": "only in the GPU run"}

    lines = po.comparison_report(comparison, emulated, gpu)
    assert "Agree: 1 of 6." in lines
    total = next(line for line in lines if line.startswith("| all |"))
    assert [c.strip() for c in total.strip("|").split("|")] == ["all", "6", "1", "1", "1", "1", "0", "1", "1"]
    wrong = next(line for line in lines if "t::wrong_fail" in line)
    assert "failed: Expected all tensors on the same device" in wrong and po.EMULATION_FAILS in wrong
    assert "- other: only in the GPU run, not compared" in lines


def test_the_json_round_trips_and_a_foreign_file_is_a_clear_error(tmp_path: Path) -> None:
    run = _run("gpu", {"t::a": ("failed", "boom"), "t::b": ("passed", "")})
    again = po.from_json(json.loads(json.dumps(po.to_json(run))), "gpu.json")
    assert again == run
    with pytest.raises(po.OutcomesError, match=r"gpu\.json: not a test-suite-proof outcomes file"):
        po.from_json({"run": "gpu"}, "gpu.json")
    bad = po.to_json(run)
    bad["code_bases"]["lib"]["tests"]["t::a"]["outcome"] = "exploded"
    with pytest.raises(po.OutcomesError, match="unknown outcome 'exploded'"):
        po.from_json(bad, "gpu.json")


def test_the_bench_compares_two_outcome_files_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    emulated = tmp_path / "emulated.json"
    gpu = tmp_path / "gpu.json"
    emulated.write_text(json.dumps(po.to_json(_run("emulated", {"t::a": ("passed", ""), "t::b": ("failed", "cpu")}))))
    gpu.write_text(json.dumps(po.to_json(_run("gpu", {"t::a": ("passed", ""), "t::b": ("passed", "")}))))
    assert bench.main(["--compare", str(gpu), "--emulated", str(emulated)]) == 0
    out = capsys.readouterr().out
    assert "Agree: 1 of 2." in out and "`t::b`" in out

    gpu.write_text("{}")
    assert bench.main(["--compare", str(gpu), "--emulated", str(emulated)]) == 2
    assert "not a test-suite-proof outcomes file" in capsys.readouterr().err


def test_the_bench_writes_outcomes_from_its_pytest_runs(tmp_path: Path) -> None:
    path = tmp_path / "run.xml"
    path.write_text(JUNIT)
    base = bench.CODE_BASES[0]
    run = bench.run_outcomes("emulated", ("2.13.0", "CPU, emulated"), {base: bench.PytestRun(1, 3.0, False, bench.read_junit(path))})
    written = bench.write_outcomes(tmp_path / "out", run)
    assert written.name == "emulated.json"
    again = po.from_json(json.loads(written.read_text()), str(written))
    tests = again.code_bases[base.name].tests
    assert tests["tests.test_a::test_refused"].outcome == "not emulated"
    assert tests["tests.test_a::test_fail"] == po.TestOutcome("failed", "AssertionError: 1 != 2")
    assert again.code_bases[base.name].commit == base.commit and again.torch == "2.13.0"


def test_gpu_runs_use_a_copy_of_the_carried_tree_and_name_a_missing_one(tmp_path: Path) -> None:
    trees, scratch = tmp_path / "repo" / "bench" / ".proof-trees", tmp_path / "scratch"
    base = bench.CODE_BASES[0]
    (trees / base.name / "tests").mkdir(parents=True)
    (trees / base.name / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    scratch.mkdir()
    tree = bench.tree_for(base, trees, None, scratch)
    # Outside the checkout, so pytest cannot take the checkout's configuration for the project's.
    assert tree == scratch / base.name and (tree / "tests" / "test_x.py").is_file()
    with pytest.raises(bench.BenchError, match=r"--export"):
        bench.tree_for(bench.CODE_BASES[1], trees, None, scratch)


def test_the_gpu_run_puts_the_carried_site_first_and_makes_every_entry_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "trees" / "site").mkdir(parents=True)
    got = bench.gpu_pythonpath(Path("trees"), "extra" + bench.os.pathsep + "/abs/dir")
    assert got.split(bench.os.pathsep) == [str(tmp_path / "trees" / "site"), str(tmp_path / "extra"), "/abs/dir"]
    assert bench.gpu_pythonpath(Path("no-trees"), "") == ""
