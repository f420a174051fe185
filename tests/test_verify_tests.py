"""`devlint verify --tests "COMMAND"`: end to end on the fixture packages (as subprocesses), and
the verdicts, the copy and the outcome plugin on their own.

Each end-to-end run costs three pytest runs that import torch: each is made once per module and
shared by the assertions about it.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from devlint.verify.project_copy import copy_project, fixed_files
from devlint.verify.suite_command import fix_copy
from devlint.verify.suite_runs import Outcome, RunResult, plan
from devlint.verify.suite_verdict import CHANGED, GATED, NEEDS, NOW_PASSES, SAME, judge

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ROOT / "fixtures" / "packages"
DEVLINT = [sys.executable, "-m", "devlint"]
TESTS = f"{sys.executable} -m pytest -q -p no:cacheprovider"
ALIASING = "tests/test_staging.py::test_updating_the_staged_copy_leaves_the_input_alone"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DEVLINT_"))}
    env.pop("PYTHONPATH", None)
    return env


def _verify(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*DEVLINT, "verify", *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=900, check=False
    )


def _digest(folder: Path) -> dict[str, str]:
    return {
        path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, dict, Path, dict]:
    project = tmp_path_factory.mktemp("clean") / "gpu_pkg"
    shutil.copytree(PACKAGES / "gpu_pkg", project)
    before = _digest(project)
    done = _verify(project, "--tests", TESTS, "--output-format", "json")
    return done, json.loads(done.stdout or "null"), project, before


@pytest.fixture(scope="module")
def aliasing(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess:
    project = tmp_path_factory.mktemp("aliasing") / "alias_pkg"
    shutil.copytree(PACKAGES / "alias_pkg", project)
    return _verify(project, "--tests", TESTS)


def test_safe_fixes_of_the_clean_package_change_no_test(clean) -> None:
    done, report, _, _ = clean
    assert done.returncode == 0, done.stdout + done.stderr
    assert report["exit_code"] == 0
    assert report["summary"]["changed"] == 0
    assert [fix["path"] for fix in report["fixes"]] == ["src/gpu_pkg/ops.py"]


def test_gpu_tests_run_under_emulation_and_are_gated_on_the_cpu(clean) -> None:
    _, report, _, _ = clean
    assert report["summary"]["tests_run"] == 4
    assert report["summary"]["emulation_only"] == 3
    tests = {test["nodeid"].split("::")[-1]: test for test in report["tests"]}
    gated = tests["test_one_hot_marks_each_label"]
    assert gated["reference"]["outcome"] == "passed"
    assert gated["runs"]["cuda"] == {**gated["runs"]["cuda"], "outcome": "passed", "verdict": SAME}
    assert gated["runs"]["cpu"] == {
        **gated["runs"]["cpu"], "outcome": "skipped", "message": "needs a CUDA GPU", "verdict": GATED
    }
    assert tests["test_smoothing_factor_is_checked_first"]["runs"]["cpu"]["verdict"] == SAME


def test_the_json_report_describes_each_run(clean) -> None:
    _, report, _, _ = clean
    assert set(report) >= {"command", "torch", "gpu", "fixes", "runs", "tests", "errors", "warnings", "summary", "exit_code"}
    runs = report["runs"]
    assert list(runs) == ["reference", "cuda", "cpu"]
    assert (runs["reference"]["fixed"], runs["reference"]["emulated"]) == (False, True)
    assert (runs["cpu"]["fixed"], runs["cpu"]["emulated"], runs["cpu"]["gpus_hidden"]) == (True, False, True)
    assert all(run["tests"] == 4 and run["exit_status"] == 0 for run in runs.values())


def test_the_users_files_are_never_written(clean) -> None:
    _, _, project, before = clean
    assert _digest(project) == before


def test_a_fix_that_aliases_on_the_cpu_is_reported_by_name_in_the_cpu_run(aliasing) -> None:
    assert aliasing.returncode == 1, aliasing.stdout + aliasing.stderr
    changed = [line for line in aliasing.stdout.splitlines() if line.startswith("CHANGED")]
    # pytest shows the full diff where it detects CI (the CI variable) and a truncated one elsewhere:
    # the verdict carries pytest's message as it came, so only its head is the same everywhere.
    assert len(changed) == 1, changed
    assert changed[0].startswith(
        f"CHANGED {ALIASING} [cpu]: passed -> failed "
        "(assert [2.0, 2.0, 2.0] == [1.0, 1.0, 1.0] At index 0 diff: 2.0 != 1.0 "
    ), changed[0]
    lines = aliasing.stdout.splitlines()
    assert lines[lines.index(changed[0]) + 1] == (
        "    cause: only the CPU run changed: there `.to(device)` returns the tensor itself where `.cuda()` "
        "copied it, so code that changes the copy changes the original (fixed lines: src/alias_pkg/staging.py:8)"
    )


def test_a_test_failing_on_the_original_is_not_a_change(aliasing) -> None:
    assert "fails on the original too (not a change): tests/test_staging.py::test_mean_of_the_values" in aliasing.stdout
    assert aliasing.stdout.splitlines()[-1] == (
        "4 test(s) run; 1 ran only under emulation (skipped on the CPU by their GPU gate); "
        "1 changed by the fixes; 1 fail on the original too"
    )


OUTCOMES_PROJECT = {
    "tests/conftest.py": """
        import pytest

        @pytest.fixture
        def broken_setup():
            raise RuntimeError("setup broke")

        @pytest.fixture
        def broken_teardown():
            yield
            raise RuntimeError("teardown broke")
    """,
    "tests/test_kinds.py": """
        import pytest

        def test_passes():
            pass

        def test_fails():
            assert 1 == 2

        def test_setup_error(broken_setup):
            pass

        def test_teardown_error(broken_teardown):
            pass

        @pytest.mark.xfail(reason="known")
        def test_xfail():
            assert False

        @pytest.mark.xfail(reason="fixed upstream")
        def test_xpass():
            pass

        @pytest.mark.skip(reason="not today")
        def test_skipped():
            pass
    """,
    "tests/test_broken_import.py": "import no_such_module_devlint\n",
    # Not a test: a file devlint fix cannot parse is a warning, the runs go on.
    "legacy/broken_syntax.py": "def (:\n",
}


def test_every_kind_of_outcome_is_recorded_one_run_at_a_time_and_an_unchanged_project_exits_0(tmp_path: Path) -> None:
    for name, text in OUTCOMES_PROJECT.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    done = _verify(tmp_path, "--tests", f"{TESTS} -n 2", "--output-format", "json", "--jobs", "1")
    report = json.loads(done.stdout)
    outcomes = {test["nodeid"].split("::")[-1]: test["reference"]["outcome"] for test in report["tests"]}
    assert outcomes == {
        "test_passes": "passed",
        "test_fails": "failed",
        "test_setup_error": "error",
        "test_teardown_error": "error",
        "test_xfail": "xfailed",
        "test_xpass": "xpassed",
        "test_skipped": "skipped",
        "tests/test_broken_import.py": "error",
    }
    messages = {test["nodeid"].split("::")[-1]: test["reference"]["message"] for test in report["tests"]}
    assert messages["test_setup_error"] == "RuntimeError: setup broke"
    assert messages["test_skipped"] == "not today"
    assert messages["tests/test_broken_import.py"] == "ModuleNotFoundError: No module named 'no_such_module_devlint'"
    assert (done.returncode, report["summary"]["changed"], report["summary"]["fails_on_original"]) == (0, 0, 4)
    assert report["warnings"] == ["devlint fix: error: legacy/broken_syntax.py:1:5: syntax error: invalid syntax"]


def test_a_command_that_cannot_run_exits_2_with_one_line(tmp_path: Path) -> None:
    done = _verify(tmp_path, "--tests", "no-such-command-devlint -q")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "devlint verify: error: command not found: no-such-command-devlint\n"
    done = _verify(tmp_path, "--tests", f"{sys.executable} -c pass")
    assert done.returncode == 2
    assert "the reference run recorded no test (exit status 0)" in done.stdout
    assert "is the command a pytest run?" in done.stdout
    done = _verify(tmp_path, "--tests", "pytest 'unclosed")
    assert done.returncode == 2 and done.stderr.startswith("devlint verify: error: cannot read the --tests command")


# -- verdicts, in process ------------------------------------------------------------------------

REFERENCE, CUDA, CPU = plan(gpu=False)


def _result(run, tree: Path, **outcomes: Outcome) -> RunResult:
    return RunResult(run, tree, 0, False, 1.0, {f"t.py::{name}": outcome for name, outcome in outcomes.items()})


def _judge(tmp_path: Path, reference: dict, cpu: dict, fixes=()) -> dict[str, str]:
    rows = judge(
        _result(REFERENCE, tmp_path / "original", **reference),
        [_result(CPU, tmp_path / "fixed", **cpu)],
        list(fixes),
    )
    return {row.nodeid.split("::")[-1]: row.verdicts["cpu"] for row in rows}


def test_verdicts_tell_gates_and_failures_of_the_original_from_changes(tmp_path: Path) -> None:
    passed = Outcome("passed", "", "call")
    verdicts = _judge(
        tmp_path,
        {
            "gated": passed,
            "other_skip": passed,
            "same_failure": Outcome("failed", f"assert device(type='cuda', index=0) at 0x7f01 in {tmp_path}/original", "call"),
            "now_passes": Outcome("failed", "RuntimeError: boom", "call"),
            "needs": passed,
            "param[cuda]": passed,
            "gone": passed,
        },
        {
            "gated": Outcome("skipped", "CUDA not available", "setup"),
            "other_skip": Outcome("skipped", "needs network", "setup"),
            "same_failure": Outcome("failed", f"assert device(type='cpu') at 0x7f99 in {tmp_path}/fixed", "call"),
            "now_passes": passed,
            "needs": Outcome("failed", "AssertionError: Torch not compiled with CUDA enabled", "call"),
        },
    )
    assert {name: verdict.verdict for name, verdict in verdicts.items()} == {
        "gated": GATED,
        "other_skip": CHANGED,
        "same_failure": SAME,
        "now_passes": NOW_PASSES,
        "needs": NEEDS,
        "param[cuda]": GATED,
        "gone": CHANGED,
    }


def test_causes_name_a_fixed_line_in_the_traceback_an_emulation_limit_and_a_device_comparison(tmp_path: Path) -> None:
    (tmp_path / "original" / "pkg").mkdir(parents=True)
    (tmp_path / "fixed" / "pkg").mkdir(parents=True)
    (tmp_path / "original" / "pkg" / "m.py").write_text("import torch\nx = y.cuda()\n", encoding="utf-8")
    (tmp_path / "fixed" / "pkg" / "m.py").write_text("import torch\nx = y.to(device)\n", encoding="utf-8")
    fixes = fixed_files(tmp_path / "original", tmp_path / "fixed")
    passed = Outcome("passed", "", "call")
    frame = (str(tmp_path / "fixed" / "pkg" / "m.py"), 2)
    verdicts = _judge(
        tmp_path,
        {"traced": passed, "limit": passed, "devices": passed},
        {
            "traced": Outcome("failed", "RuntimeError: bad", "call", (frame,)),
            "limit": Outcome("failed", "EmulationUnsupportedError: not emulated: CUDA graphs (at t.py:3)", "call"),
            "devices": Outcome("failed", "assert 'cpu' == 'cuda'", "call"),
        },
        fixes,
    )
    assert verdicts["traced"].causes == ("a fixed line is in its traceback: pkg/m.py:2: x = y.to(device)",)
    assert verdicts["limit"].causes == (
        "emulation does not model a call it made: not emulated: CUDA graphs (at t.py:3)",
    )
    assert verdicts["devices"].causes[0].startswith("the test compares device names")


def test_the_copy_leaves_out_what_git_ignores_and_environments(tmp_path: Path) -> None:
    source = tmp_path / "project"
    for name in ("a.py", "data/keep.txt", "data/big.bin", ".venv/lib/x.py", ".git/HEAD", "pkg/__pycache__/m.pyc"):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text("x", encoding="utf-8")
    (source / ".gitignore").write_text("*.bin\n", encoding="utf-8")
    targets = [tmp_path / "one", tmp_path / "two"]
    assert copy_project(source, targets) == 3
    for target in targets:
        assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()) == [
            ".gitignore", "a.py", "data/keep.txt"
        ]


@pytest.mark.parametrize(("unsafe", "fixed"), [(False, []), (True, ["m.py"])])
def test_unsafe_fixes_are_applied_to_the_copy_only_when_asked(tmp_path: Path, unsafe: bool, fixed: list[str]) -> None:
    source = tmp_path / "project"
    source.mkdir()
    (source / "m.py").write_text("import torch\n\n\ndef f(x, gpu):\n    return x.cuda(gpu)\n", encoding="utf-8")
    original, copy = tmp_path / "original", tmp_path / "fixed"
    copy_project(source, [original, copy])
    args = argparse.Namespace(unsafe_fixes=unsafe, torch_version=None)
    assert fix_copy(copy, ["."], args) == []
    assert [file.path for file in fixed_files(original, copy)] == fixed
    assert (source / "m.py").read_text(encoding="utf-8").endswith("x.cuda(gpu)\n")


def test_the_fixed_trees_run_with_cuda_tells_the_suites_own_gates_from_changes(tmp_path: Path) -> None:
    """Found on captum and gpytorch: tests defined only where a GPU is found (named for nothing
    CUDA), numbered parameter cases whose list depends on CUDA, and a test failing before and
    after with another message."""
    passed, failed = Outcome("passed", "", "call"), Outcome("failed", "AttributeError: no attribute 'cuda'", "call")
    reference = {"test_jit_quantized": passed, "p_0": passed, "p_1": passed, "broken": failed, "plain": passed}
    with_cuda = {"test_jit_quantized": passed, "p_0": passed, "p_1": passed, "plain": passed}
    with_cuda["broken"] = Outcome("failed", "AttributeError: no attribute 'to'", "call")
    without = {"p_0": Outcome("failed", "assert 1 == 2", "call"), "plain": Outcome("failed", "boom", "call")}
    without["broken"] = with_cuda["broken"]
    rows = judge(
        _result(REFERENCE, tmp_path / "original", **reference),
        [_result(CUDA, tmp_path / "fixed", **with_cuda), _result(CPU, tmp_path / "fixed", **without)],
        [],
    )
    cpu = {row.nodeid.split("::")[-1]: row.verdicts["cpu"].verdict for row in rows}
    # The module collects other tests without CUDA: nothing in it is compared on the CPU.
    assert cpu == {"test_jit_quantized": GATED, "p_0": GATED, "p_1": GATED, "broken": SAME, "plain": GATED}
    assert {row.nodeid.split("::")[-1] for row in rows if row.fails_on_original} == {"broken"}
    # With the same tests collected, a real change on the CPU is still one.
    rows = judge(
        _result(REFERENCE, tmp_path / "original", plain=passed),
        [_result(CUDA, tmp_path / "fixed", plain=passed), _result(CPU, tmp_path / "fixed", plain=without["plain"])],
        [],
    )
    assert rows[0].verdicts["cpu"].verdict == CHANGED and rows[0].changed


# -- runs that prove nothing, and a GPU as the reference (in process, with stubs) ------------------

WHERE_PROJECT = {
    "conftest.py": """
        import os
        from pathlib import Path

        # The reference runs the copy named "original": a crash of that run alone.
        if os.environ.get("CRASH_THE_ORIGINAL") and Path(__file__).resolve().parent.name == "original":
            os.abort()
    """,
    "tests/test_where.py": """
        import sys

        import torch

        def test_torch_is_not_emulated():
            assert not any(name.startswith("_devlint_verify_emulation") for name in sys.modules)
            assert torch.ones(2).sum().item() == 2.0
    """,
    "tests/test_plain.py": """
        def test_without_torch():
            assert sum([1, 2]) == 3
    """,
}


def _project(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


def _verify_in_process(project: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, dict, str]:
    """verify --tests with the JSON report, in this process (so that stubs reach it), and the text
    report of the same verdict."""
    from devlint.verify.suite_command import run_verify_tests

    for name in [name for name in os.environ if name.startswith(("PYTEST_", "DEVLINT_"))]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(project)
    answers = []
    for output_format in ("json", "full"):
        args = argparse.Namespace(
            tests=TESTS, timeout=600.0, jobs=None, paths=[], output_format=output_format, unsafe_fixes=False,
            torch_version=None,
        )
        out, err = io.StringIO(), io.StringIO()
        answers.append((run_verify_tests(args, out, err), out.getvalue(), err.getvalue()))
    (code, report, err), (text_code, text, _) = answers
    assert code == text_code, text
    return code, json.loads(report or "null"), text + err


def test_with_a_gpu_the_original_on_the_gpu_is_the_reference_and_its_crash_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from devlint.verify import suite_command
    from devlint.verify.gpu_probe import Machine

    project = _project(tmp_path / "where", WHERE_PROJECT)
    monkeypatch.setattr(suite_command, "probe", lambda: Machine("2.x", "NVIDIA Stub GPU"))
    code, report, text = _verify_in_process(project, monkeypatch)
    assert code == 0, text
    runs = report["runs"]
    assert {name: (run["fixed"], run["emulated"], run["gpus_hidden"]) for name, run in runs.items()} == {
        "reference": (False, False, False),
        "cuda": (True, False, False),
        "cpu": (True, False, True),
    }
    tests = {test["nodeid"]: test for test in report["tests"]}
    # The test fails wherever emulation is installed: it passed in the reference, so none was.
    assert tests["tests/test_where.py::test_torch_is_not_emulated"]["reference"]["outcome"] == "passed"
    assert "NVIDIA Stub GPU: the original on the GPU is the reference" in text.splitlines()[0]

    monkeypatch.setenv("CRASH_THE_ORIGINAL", "1")
    code, report, text = _verify_in_process(project, monkeypatch)
    assert code == 2, text
    assert report["tests"] == [] and report["summary"]["changed"] == 0
    assert any(error.startswith("the reference run was killed by signal") for error in report["errors"]), report["errors"]
    assert "CHANGED" not in text and text.rstrip().endswith("could not verify the fixes: 1 error(s) above")


CRASHING_BOOTSTRAP = """
    import os
    import sys

    # A fake of emulated CUDA that crashes where the real one would install itself: on torch's import.
    if os.environ.get("DEVLINT_EMULATE_CUDA") == "1":
        class _Crash:
            def find_spec(self, name, path=None, target=None):
                if name == "torch":
                    raise RuntimeError("emulation crashed (a fake of the test)")
                return None

        sys.meta_path.insert(0, _Crash())
"""


def test_an_emulation_crash_at_import_exits_2_and_judges_no_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from devlint.verify import suite_runs

    fake = tmp_path / "bootstrap"
    fake.mkdir()
    (fake / "sitecustomize.py").write_text(textwrap.dedent(CRASHING_BOOTSTRAP), encoding="utf-8")
    shutil.copy(suite_runs.BOOTSTRAP / f"{suite_runs.PLUGIN}.py", fake)
    monkeypatch.setattr(suite_runs, "BOOTSTRAP", fake)
    project = _project(tmp_path / "where", {k: v for k, v in WHERE_PROJECT.items() if k != "conftest.py"})
    code, report, text = _verify_in_process(project, monkeypatch)
    # The module that imports torch ran only on the CPU (a collection error stops pytest before
    # any test, so the emulated runs ran none): nothing is judged.
    assert code == 2, text
    assert report["tests"] == [] and "CHANGED" not in text
    crashes = [error for error in report["errors"] if "emulation crashed (a fake of the test)" in error]
    assert sorted(crashes) == [
        f"the {run} run could not collect {what}: RuntimeError: emulation crashed (a fake of the test)"
        for run in ("cuda", "reference")
        for what in ("any test (exit status 2): tests/test_where.py", "tests/test_where.py, which ran in the cpu run")
    ], report["errors"]


def test_a_run_that_collected_nothing_or_ran_no_test_proves_nothing(tmp_path: Path) -> None:
    from devlint.verify.suite_verdict import unproven

    passed, skipped = Outcome("passed", "", "call"), Outcome("skipped", "needs a CUDA GPU", "setup")
    broken = Outcome("error", "RuntimeError: boom", "collect")
    reference = _result(REFERENCE, tmp_path, test=passed)
    assert unproven(reference, [_result(CUDA, tmp_path, test=passed), _result(CPU, tmp_path, test=skipped)]) == []
    only_skips = _result(REFERENCE, tmp_path, test=skipped)
    assert unproven(only_skips, []) == [
        "the reference run ran no test (1 recorded, none ran): there is nothing to compare with"
    ]
    collected_nothing = RunResult(CUDA, tmp_path, 2, False, 1.0, {"t.py": broken})
    assert unproven(reference, [collected_nothing]) == [
        "the cuda run could not collect any test (exit status 2): t.py: RuntimeError: boom",
        "the cuda run could not collect t.py, which ran in the reference run: RuntimeError: boom",
    ]
    killed = RunResult(CPU, tmp_path, -11, False, 1.0, {"t.py::test": passed}, stderr_tail="Segmentation fault")
    assert unproven(reference, [killed]) == ["the cpu run was killed by signal 11: Segmentation fault"]
