"""`devlint verify`: comparisons and verdicts in-process; whole runs end to end.

The end-to-end runs start real child processes (torch in each, CUDA emulated where the machine
has no GPU); the bundled programs and the fixture pairs are verified once, in a subprocess that
also proves the devlint process itself never imports torch. Tests that need a GPU skip here with
the reason; the same assertions hold on a machine with one.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from devlint.cli import main
from devlint.engine.lint import lint_text
from devlint.registry import all_rules
from devlint.verify import targets
from devlint.verify.child import compare, harness
from devlint.verify.command import verify_programs
from devlint.verify.environment import HIDE_GPUS, base_environment, run_environment, torch_root
from devlint.verify.report import Report, write_full
from devlint.verify.runners import Job, SubprocessRunner
from devlint.verify.session import Probe, RunRecord, plan
from devlint.verify.textcompare import compare_text
from devlint.verify.verdict import DIFFERS, NA, PASS, Judge, Tolerance

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "fixtures" / "programs"
NEGATIVE = ROOT / "fixtures" / "negative"
PAIRS = ROOT / "fixtures" / "pairs"
EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)$")
# SPEC's rule table: every rule with a fix.
FIXABLE = {
    *("DEV101", "DEV102", "DEV103", "DEV104", "DEV105", "DEV201"),
    *("DEV301", "DEV302", "DEV304", "DEV401", "DEV402", "DEV501"),
}
NO_GPU = Probe("2.x", cuda=False, gpu=None)
GPU = Probe("2.x", cuda=True, gpu="a GPU")
HAS_GPU = torch.cuda.is_available()
NEEDS_GPU = pytest.mark.skipif(not HAS_GPU, reason="needs a GPU that torch can see")

# What `devlint verify` (safe fixes) says about each bundled program on a machine without a GPU:
# the original, cpu and cuda cells.
SAME = ("pass (emulated cuda)", "pass (= original)", "pass (= original)")
EXPECTED_WITHOUT_GPU = {
    "attention_masks": SAME,
    "checkpoint_roundtrip": SAME,
    # The loss weights stay on the CPU: the original crashes on CUDA, the fixed runs agree.
    "class_weighted_training": ("skipped (original fails: mixes devices at line 34)", "pass (= cuda)", "pass (= cpu)"),
    "default_tensor_type": SAME,
    "device_strings": SAME,
    "evaluate_with_device": SAME,
    "gpu_index": SAME,
    "inference_report": ("pass (emulated cuda)", "pass (= original; stdout)", "pass (= original; stdout)"),
    "legacy_tensor_types": SAME,
    # Emulated autocast computes in float16, as a GPU does; the CPU run, in float32, agrees within
    # float16's tolerance.
    "mixed_precision": ("pass (emulated cuda)", "pass (= original; compared at float16 tolerance)", "pass (= original)"),
    # Noise drawn on the device: the cpu run is compared with an original whose device draws come
    # from the CPU generator, and the cells say that device numbers differ from a GPU's.
    "noise_on_the_device": (
        "pass (emulated cuda; random numbers drawn on the device (a GPU's values differ))",
        "pass (= original)",
        "pass (= original; random numbers drawn on the device (a GPU's values differ))",
    ),
    # `.numpy()` of a CUDA tensor.
    "numpy_metrics": ("skipped (original fails: TypeError at line 13)", "pass (= cuda)", "pass (= cpu)"),
    "own_cuda_method": SAME,
    "variable_api": SAME,
    # It pins GPU 0 itself: on a machine without a GPU there is nothing to unhide, so the cpu
    # run runs (with a GPU it is skipped until the unsafe DEV201 fix).
    "visible_devices": SAME,
}


def _verify_json(*args: str, cwd: Path = ROOT) -> tuple[int, dict, str]:
    """`devlint verify --output-format json ARGS` in a fresh interpreter that must not import torch."""
    code = (
        "import sys\n"
        "from devlint.cli import main\n"
        f"status = main(['verify', '--output-format', 'json', *{list(args)!r}])\n"
        "assert 'torch' not in sys.modules, 'the devlint process imported torch'\n"
        "sys.exit(status)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in run.stderr, run.stderr
    return run.returncode, json.loads(run.stdout) if run.stdout.strip() else {}, run.stderr


def _rows(report: dict) -> dict[str, dict]:
    return {Path(p["path"]).stem: p for p in report["programs"]}


def _cells(row: dict) -> tuple[str, ...]:
    return tuple(row["runs"][mode]["cell"] for mode in ("original", "cpu", "cuda"))


# -- comparing results -------------------------------------------------------------------------


def test_equal_nested_results_agree() -> None:
    value = {"loss": torch.tensor(0.5), "parts": [torch.arange(3), (1, 2.5, "x", None)]}
    assert compare.compare(value, {"loss": torch.tensor(0.5), "parts": [torch.arange(3), (1, 2.5, "x", None)]}) == []


def test_a_mismatch_names_its_key_path_and_largest_difference() -> None:
    expected = {"metrics": [torch.tensor([1.0, 2.0, 3.0]), torch.ones(2)]}
    actual = {"metrics": [torch.tensor([1.0, 2.5, 3.0]), torch.ones(2)]}
    [mismatch] = compare.compare(actual, expected)
    assert mismatch.path == "result['metrics'][0]"
    assert mismatch.max_abs_diff == pytest.approx(0.5)
    assert "not close" in mismatch.message


def test_tolerances_are_those_of_assert_close_and_can_be_widened() -> None:
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.001])
    assert compare.compare(a, b) != []
    assert compare.compare(a, b, rtol=1e-3, atol=1e-3) == []
    assert compare.compare(torch.tensor([float("nan")]), torch.tensor([float("nan")])) == []


@pytest.mark.parametrize(
    ("actual", "expected", "words"),
    [
        (torch.ones(2, 3), torch.ones(3, 2), "shape"),
        (torch.ones(2), torch.ones(2, dtype=torch.float64), "dtype"),
        ({"a": torch.ones(1)}, {"b": torch.ones(1)}, "keys"),
        ([torch.ones(1)], [torch.ones(1), torch.ones(1)], "length"),
        ("cpu", "cuda", "'cpu' vs 'cuda'"),
        (3, 4, "not"),
    ],
)
def test_structural_mismatches_are_reported(actual, expected, words: str) -> None:
    [mismatch] = compare.compare(actual, expected)
    assert words in mismatch.message


def test_unsupported_results_are_refused_by_name() -> None:
    with pytest.raises(compare.UnsupportedResultError, match=r"result\['model'\]"):
        compare.normalize({"model": torch.nn.Linear(2, 2)})


def test_printed_output_compares_text_exactly_and_numbers_with_tolerance() -> None:
    assert compare_text("loss 0.1234\n", "loss 0.1235\n") is None  # one unit in the last digit
    assert compare_text("tensor([1., 2.], device='cuda:0')\n", "tensor([1., 2.])\n") is None
    mismatch = compare_text("step 3: 0.50\n", "step 3: 0.60\n")
    assert mismatch is not None and mismatch.line == 1 and mismatch.max_abs_diff == pytest.approx(0.1)
    assert compare_text("epoch 10\n", "epoch 11\n") is not None  # integers are counts: exact
    # the same value as another type: an int64 buffer printed where a float32 one was
    assert compare_text("tensor(1, device='cuda:0')\n", "tensor(1., device='cuda:0')\n") is not None
    assert compare_text("scale 3\n", "scale 3.0\n") is not None
    assert compare_text("a\nb\n", "a\n") is not None
    assert compare_text("accuracy on cpu\n", "accuracy on cuda\n") is not None


@pytest.mark.parametrize(
    ("cpu", "cuda"),
    [
        ("running on cpu\n", "running on cuda\n"),
        ("device cpu\n", "device cuda:0\n"),
        ("device(type='cpu')\n", "device(type='cuda', index=0)\n"),
        ("torch.FloatTensor 2\n", "torch.cuda.FloatTensor 2\n"),
    ],
)
def test_device_names_can_be_set_aside(cpu: str, cuda: str) -> None:
    assert compare_text(cpu, cuda) is not None
    assert compare_text(cpu, cuda, ignore_devices=True) is None


def test_setting_device_names_aside_keeps_everything_else() -> None:
    assert compare_text("cpu 1.5\n", "cuda 2.5\n", ignore_devices=True) is not None
    assert compare_text("scale enabled False\n", "scale enabled True\n", ignore_devices=True) is not None
    assert compare_text("cpus 2\n", "cudas 2\n", ignore_devices=True) is not None


# -- the child side: classifying failures, the environment, the protocol -------------------------


class _Emulation:
    """What harness._failure reads of an installed emulation."""

    def __init__(self, visible: bool) -> None:
        self.machine = type("Machine", (), {"visible": visible})()


@pytest.mark.parametrize(
    ("error", "emulation", "outcome"),
    [
        (AssertionError("Torch not compiled with CUDA enabled"), None, "needs_cuda"),
        (RuntimeError("No CUDA GPUs are available"), _Emulation(False), "needs_cuda"),
        (RuntimeError("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, ..."), None, "needs_cuda"),
        (TypeError("type torch.cuda.FloatTensor not available. Torch not compiled with CUDA enabled."), None, "needs_cuda"),
        (RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False."),
         _Emulation(False), "needs_cuda"),
        # Emulation showed a GPU: a CUDA-is-missing error means emulation did not model something.
        (AssertionError("Torch not compiled with CUDA enabled"), _Emulation(True), "not_emulated"),
        (RuntimeError("Invalid device, must be cuda device"), _Emulation(True), "error"),
        (RuntimeError("Invalid device, must be cuda device"), None, "needs_cuda"),
        (RuntimeError("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"),
         _Emulation(True), "mixed_devices"),
        # .numpy() of a CUDA tensor: a real failure of the original (DEV304), not a missing GPU
        (TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor first."),
         _Emulation(True), "error"),
        (ValueError("bad shape"), _Emulation(True), "error"),
        (SystemExit(3), None, "error"),
    ],
)  # fmt: skip
def test_harness_classifies_failures(error: BaseException, emulation, outcome: str) -> None:
    assert harness._failure(error, "p.py", emulation, 1)["outcome"] == outcome


def test_what_emulation_does_not_model_is_classified_as_such() -> None:
    from devlint.verify.child.emulation import EmulationUnsupportedError

    failure = harness._failure(EmulationUnsupportedError("CUDA graphs"), "p.py", _Emulation(True), 1)
    assert failure["outcome"] == "not_emulated"
    assert "not emulated: CUDA graphs" in failure["message"]


def test_children_get_a_clean_environment() -> None:
    here = torch_root()
    assert here is not None
    parent = {"PATH": "/bin", "HOME": "/h", "PYTHONPATH": f"/elsewhere{os.pathsep}{here}", "SECRET": "x", "PYTHONSTARTUP": "s.py"}
    env = base_environment({**parent, "CUDA_VISIBLE_DEVICES": "3"}, torch_at=here)
    assert env["PYTHONPATH"] == str(here)
    assert "SECRET" not in env and "PYTHONSTARTUP" not in env
    assert env["PATH"] == "/bin" and env["PYTHONHASHSEED"] == "0"
    # torch.cuda.is_available() asks NVML: the fork server's children can still start CUDA.
    assert env["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1"
    assert "PYTHONPATH" not in base_environment({"PYTHONPATH": "/elsewhere"}, torch_at=here)
    hidden = run_environment(env, "hidden", Path("/t"))
    assert hidden["TMPDIR"] == "/t" and all(hidden[name] == "" for name in HIDE_GPUS)
    assert run_environment(env, "real", Path("/t"))["CUDA_VISIBLE_DEVICES"] == "3"
    # The emulated machine has its own one GPU: this machine's CUDA_VISIBLE_DEVICES is not about it.
    assert "CUDA_VISIBLE_DEVICES" not in run_environment(env, "emulated", Path("/t"))


def test_the_plan_emulates_without_a_gpu_and_compares_with_one() -> None:
    assert [(r.name, r.fixed, r.emulated, r.hidden) for r in plan(False)] == [
        ("original", False, True, False),
        ("cpu", True, True, True),
        ("cuda", True, True, False),
    ]
    with_gpu = {r.name: (r.fixed, r.emulated, r.hidden) for r in plan(True)}
    assert with_gpu == {
        "original": (False, False, False),
        "cpu": (True, True, True),
        "cuda": (True, False, False),
        "emulated_original": (False, True, False),
        "emulated_cuda": (True, True, False),
    }


@pytest.mark.parametrize(
    ("text", "protocol"),
    [
        ("def main():\n    return 1\n", "main"),
        ("def main(steps=3, *, seed=0):\n    return 1\n", "main"),
        ("def main(args):\n    return 1\n", "script"),
        ("print(1)\n", "script"),
        ("class A:\n    def main(self):\n        pass\n", "script"),
    ],
)
def test_protocol(text: str, protocol: str) -> None:
    assert targets._protocol(text) == protocol


def test_fixture_pair_outputs_are_left_out_of_folders(tmp_path: Path) -> None:
    for name in ("a.py", "a.fixed.py", "a.unsafe.py", "b.fixed.py", "c.py"):
        (tmp_path / name).write_text("print(1)\n")
    found, problems, twins = targets.discover([str(tmp_path)])
    assert [p.name for p in found] == ["a.py", "b.fixed.py", "c.py"]  # b.fixed.py has no b.py beside it
    assert sorted(p.name for p in twins) == ["a.fixed.py", "a.unsafe.py"]
    assert problems == []
    named, _, none = targets.discover([str(tmp_path / "a.fixed.py")])
    assert [p.name for p in named] == ["a.fixed.py"] and none == []


# -- verdicts ----------------------------------------------------------------------------------


def _program(protocol: str = "main", remaining: tuple[str, ...] = (), lines: dict[int, int] | None = None) -> targets.Program:
    same = {row: row for row in range(1, 50)} if lines is None else lines
    return targets.Program(Path("p.py"), "p.py", "p", protocol, b"", b"", 1, remaining, same)


def _run(mode: str, outcome: str = "ok", stdout: str = "", **status) -> RunRecord:
    return RunRecord(mode, {"outcome": outcome, **status}, stdout, "", 0, False, Path(f"/{mode}.pt"))


def _runs(gpu: bool = False, **given: RunRecord) -> dict[str, RunRecord]:
    runs = {run.name: _run(run.name) for run in plan(gpu)}
    runs.update(given)
    return runs


def _cells_of(runs, probe=NO_GPU, answers=None, program=None) -> dict:
    return Judge(0, program or _program(), runs, answers or {}, probe, Tolerance()).row().cells


def _answer(actual: str, expected: str, mismatches: list | None = None) -> dict:
    return {f"0:{actual}:{expected}": {"mismatches": mismatches or [], "error": None}}


def test_every_run_is_compared_and_says_with_what() -> None:
    runs = _runs(**{name: _run(name, result=True) for name in ("original", "cpu", "cuda")})
    answers = {**_answer("cpu", "original"), **_answer("cuda", "original")}
    cells = _cells_of(runs, answers=answers)
    assert cells["original"].text() == "pass (emulated cuda)" and cells["original"].emulated
    assert cells["cpu"].text() == "pass (= original)" and cells["cpu"].compared_with == "original"
    assert not cells["cpu"].emulated
    assert cells["cuda"].text() == "pass (= original)" and cells["cuda"].emulated


def test_a_result_mismatch_fails_and_names_both_runs() -> None:
    runs = _runs(**{name: _run(name, result=True) for name in ("original", "cpu", "cuda")})
    wrong = [{"path": "result['w']", "message": "not close", "max_abs_diff": 0.25}]
    answers = {**_answer("cpu", "original", wrong), **_answer("cuda", "original", wrong)}
    cell = _cells_of(runs, answers=answers)["cpu"]
    assert cell.text() == "FAIL (differs at result['w'])"
    assert "fixed on cpu vs original on emulated cuda" in cell.detail and "0.25" in cell.detail
    assert _cells_of(_runs(original=_run("original", result=True)))["cpu"].text() == "FAIL (results differ)"


def test_printed_device_names_are_not_a_behaviour_change() -> None:
    runs = _runs(
        original=_run("original", stdout="x on cuda:0\n"),
        cpu=_run("cpu", stdout="x on cpu\n"),
        cuda=_run("cuda", stdout="x on cuda:0\n"),
    )
    cells = _cells_of(runs)
    assert cells["cpu"].text() == "pass (= original; stdout; prints its device)"
    assert "only the device named differs" in cells["cpu"].detail
    assert cells["cuda"].text() == "pass (= original; stdout)"


def test_output_the_fixed_program_prints_differently_on_each_device_is_its_design() -> None:
    runs = _runs(
        original=_run("original", stdout="loss 0.5\namp True\n"),
        cpu=_run("cpu", stdout="loss 0.5\namp False\n"),
        cuda=_run("cuda", stdout="loss 0.5\namp True\n"),
    )
    cell = _cells_of(runs)["cpu"]
    assert cell.text() == "pass (= original on cuda; cpu output differs)"
    assert "'amp False' vs 'amp True'" in cell.detail and "own CUDA run agrees" in cell.detail
    # When the fixed program's CUDA run does not agree with the original either, it is a failure.
    runs["cuda"] = _run("cuda", stdout="loss 0.7\namp True\n")
    cells = _cells_of(runs)
    assert cells["cpu"].text() == "FAIL (stdout differs at line 2)"
    assert cells["cuda"].text() == "FAIL (stdout differs at line 1)"


def test_an_original_that_crashes_is_no_reference_and_the_fixed_runs_meet() -> None:
    runs = _runs(
        original=_run("original", "mixed_devices", message="RuntimeError: Expected all tensors ...", line=3, source="x = f()"),
        cpu=_run("cpu", stdout="1\n"),
        cuda=_run("cuda", stdout="1\n"),
    )
    cells = _cells_of(runs)
    assert cells["original"].text() == "skipped (original fails: mixes devices at line 3)"
    assert "x = f()" in cells["original"].detail
    assert cells["cpu"].text() == "pass (= cuda; stdout)" and cells["cpu"].compared_with == "cuda"
    assert cells["cuda"].text() == "pass (= cpu; stdout)" and cells["cuda"].compared_with == "cpu"
    runs["cuda"] = _run("cuda", "mixed_devices", message="RuntimeError: Expected all", line=4)
    cells = _cells_of(runs)
    assert cells["cpu"].text() == "pass (no reference)" and cells["cpu"].compared_with is None
    assert cells["cuda"].text() == "FAIL (mixes devices at line 4)"


def test_fixed_code_that_still_needs_cuda_fails_and_names_what_is_left() -> None:
    runs = _runs(cpu=_run("cpu", "needs_cuda", message="AssertionError: Torch not compiled with CUDA enabled", line=7))
    # Line 7 of the fixed code is line 6 of the original: the fix inserted a line above it.
    cell = _cells_of(runs, program=_program(remaining=("DEV102",), lines={7: 6}))["cpu"]
    assert cell.text() == "FAIL (needs CUDA at line 6)"
    assert "DEV102" in cell.detail and "--unsafe-fixes" in cell.detail
    runs["cpu"].status["line"] = 3
    assert _cells_of(runs, program=_program(lines={7: 6}))["cpu"].text() == "FAIL (needs CUDA at line 3 of the fixed code)"


def test_a_cpu_run_that_unhides_the_gpu_fails_and_names_what_is_left() -> None:
    runs = _runs(cpu=_run("cpu", "unhid_gpu", message="the program initialised CUDA although verify hid every GPU"))
    cell = _cells_of(runs, program=_program(remaining=("DEV102",)))["cpu"]
    assert cell.text() == "FAIL (uses a GPU it was not given)"
    assert "DEV102" in cell.detail


def test_a_program_that_picks_its_own_gpu_is_skipped_in_the_cpu_column_until_dev201_is_fixed() -> None:
    """Its own CUDA_VISIBLE_DEVICES setting is what the unsafe DEV201 fix changes: without that
    fix no CPU run can be had, which says nothing about the safe fixes."""
    runs = _runs(cpu=_run("cpu", "unhid_gpu", message="the program initialised CUDA although verify hid every GPU"))
    cell = _cells_of(runs, program=_program(remaining=("DEV201",)))["cpu"]
    assert cell.text() == "skipped (sets CUDA_VISIBLE_DEVICES itself: DEV201, fixed with --unsafe-fixes)"


def test_lines_of_the_fixed_code_map_back_to_the_original() -> None:
    original = "import torch\nx = torch.ones(2).cuda()\ny = x * 2\n"
    fixed = "import torch\ndevice = torch.device('cpu')\nx = torch.ones(2).to(device)\ny = x * 2\n"
    assert targets.line_map(fixed, original) == {1: 1, 3: 2, 4: 3}


def test_fixed_code_that_leaves_the_gpu_unused_fails_on_cuda() -> None:
    runs = _runs(original=_run("original", cuda_used=True), cuda=_run("cuda", cuda_used=False))
    assert _cells_of(runs)["cuda"].text() == "FAIL (never used the GPU)"
    runs["cuda"].status["cuda_used"] = True
    assert _cells_of(runs)["cuda"].text() == "pass (nothing to compare)"


def test_what_emulation_cannot_run_is_said_plainly() -> None:
    message = "EmulationUnsupportedError: not emulated: CUDA graphs (at p.py:5)"
    runs = _runs(
        original=_run("original", "not_emulated", message=message, line=5),
        cpu=_run("cpu", stdout="1\n"),
        cuda=_run("cuda", "not_emulated", message=message, line=5),
    )
    cells = _cells_of(runs)
    assert cells["original"].text() == "skipped (not emulated at line 5)"
    assert cells["cuda"].status == NA and cells["cuda"].text() == "n/a (not emulated at line 5)"
    assert "CUDA graphs" in cells["cuda"].detail
    assert cells["cpu"].text() == "pass (no reference)"


def test_a_run_torch_aborts_for_an_emulated_tensor_is_not_emulated() -> None:
    abort = "terminate called after throwing an instance of 'c10::Error'\n  what():  PyTorch is not linked with support for cuda devices\n"
    died = RunRecord("cuda", None, "", abort, -6, False, Path("/cuda.pt"), emulated=True)
    assert died.outcome == "not_emulated"
    cell = _cells_of(_runs(cuda=died))["cuda"]
    assert cell.text() == "n/a (not emulated)" and "not linked with support for cuda" in cell.detail
    real = RunRecord("cuda", None, "", abort, -6, False, Path("/cuda.pt"), emulated=False)
    assert real.outcome == "died"


def test_with_a_gpu_the_cpu_run_meets_the_emulated_original_and_emulation_meets_the_gpu() -> None:
    runs = _runs(
        True,
        original=_run("original", stdout="0.5 cuda\n"),
        cpu=_run("cpu", stdout="0.25 cpu\n"),
        cuda=_run("cuda", stdout="0.5 cuda\n"),
        emulated_original=_run("emulated_original", stdout="0.25 cuda\n"),
        emulated_cuda=_run("emulated_cuda", stdout="0.25 cuda\n"),
    )
    cells = _cells_of(runs, GPU)
    assert cells["original"].text() == "pass (on cuda)" and not cells["original"].emulated
    assert cells["cpu"].text() == "pass (= original; stdout; prints its device)"
    assert cells["cpu"].compared_with == "emulated_original"
    assert cells["cuda"].text() == "pass (= original; stdout)" and cells["cuda"].compared_with == "original"
    # Random numbers drawn on the GPU, for instance: emulation draws others.
    agreement = cells["emulation"]
    assert agreement.status == DIFFERS and agreement.text() == "differs (stdout differs at line 1)"
    runs["emulated_original"] = _run("emulated_original", stdout="0.5 cuda\n")
    assert _cells_of(runs, GPU)["emulation"].text() == "pass (agrees with the GPU)"


def test_the_full_report_is_a_table_with_failures_spelled_out() -> None:
    cuda = _run("cuda", "mixed_devices", message="RuntimeError: Expected all tensors to be on the same device", line=4)
    runs = _runs(original=_run("original", "mixed_devices", message="RuntimeError: Expected", line=4), cuda=cuda)
    rows = [Judge(0, _program(), runs, {}, NO_GPU, Tolerance()).row()]
    out = io.StringIO()
    write_full(Report(rows, NO_GPU, [], 1, ["pairs/a.fixed.py"]), out)
    text = out.getvalue()
    header = next(line for line in text.splitlines() if "program" in line)
    assert re.search(r"program .*fixes .*original .*cpu .*cuda", header) and "meta" not in header
    row = next(line for line in text.splitlines() if "p.py" in line)
    for cell in ("skipped (original fails: mixes devices at line 4)", "pass (no reference)", "FAIL (mixes devices at line 4)"):
        assert cell in row
    assert "p.py [cuda] FAIL: mixes devices at line 4" in text
    assert "Expected all tensors to be on the same device" in text
    assert (
        "1 program(s): 1 pass, 1 FAIL, 1 skipped, 0 n/a; 1 passing run(s) had nothing to compare with; "
        "left out 1 expected output(s) of fixture pairs" in text
    )


# -- whole runs --------------------------------------------------------------------------------


def _planted(path: Path) -> set[str]:
    codes = set()
    for line in path.read_text().splitlines():
        match = EXPECT.search(line)
        if match:
            codes |= {code.strip() for code in match.group(1).split(",") if code.strip()}
    return codes


def test_bundled_programs_plant_every_rule_with_a_fix_and_each_is_reported() -> None:
    programs = sorted(PROGRAMS.glob("*.py"))
    assert len(programs) >= 12
    planted = {path.stem: _planted(path) for path in programs}
    # opt-in rules (DEV604) are not in the selection verify fixes with
    fixable = FIXABLE | {rule.code for rule in all_rules() if rule.fix_availability != "none" and rule.default_enabled}
    assert fixable <= set().union(*planted.values())
    registered = {rule.code for rule in all_rules()}
    for path in programs:
        reported = {finding.code for finding in lint_text(path.read_text(), path.name, list(all_rules()))}
        assert planted[path.stem] & registered <= reported, path.name


@pytest.fixture(scope="module")
def bundled_and_pairs() -> tuple[int, dict]:
    """One verify of the bundled programs, the fixture pairs and the negative programs (about
    10 s on two idle cores)."""
    folders = [str(folder.relative_to(ROOT)) for folder in (PROGRAMS, PAIRS, NEGATIVE)]
    status, report, _ = _verify_json(*folders)
    return status, report


def test_bundled_programs_verify_under_emulation(bundled_and_pairs) -> None:
    if HAS_GPU:
        pytest.skip("this machine has a GPU: see test_bundled_programs_verify_on_a_gpu")
    status, report = bundled_and_pairs
    rows = {stem: row for stem, row in _rows(report).items() if row["path"].startswith("fixtures/programs/")}
    assert set(rows) == set(EXPECTED_WITHOUT_GPU)
    # leftover_cpu_tensor's cpu run (see below), and the cpu and cuda runs of the module the pair
    # dev103_own_loader imports, which prints and returns nothing
    assert report["summary"]["not_compared"] == 3
    for stem, cells in EXPECTED_WITHOUT_GPU.items():
        assert _cells(rows[stem]) == cells, stem
        runs = rows[stem]["runs"]
        assert runs["original"]["emulated"] and runs["cuda"]["emulated"] and not runs["cpu"]["emulated"]
    # Noise drawn on the device: the cpu run was compared with the original's twin whose device
    # numbers come from the CPU generator (with the original itself, they would differ).
    assert rows["noise_on_the_device"]["runs"]["cpu"]["compared_with"] == "host_random_original"
    assert status == 1


def test_fixture_pairs_verify_on_any_machine(bundled_and_pairs) -> None:
    """Every pair's cpu and cuda runs are compared with a reference, with a GPU or without."""
    _, report = bundled_and_pairs
    rows = {stem: row for stem, row in _rows(report).items() if row["path"].startswith("fixtures/pairs/")}
    originals = sorted(p.stem for p in PAIRS.rglob("*.py") if not p.name.endswith((".fixed.py", ".unsafe.py")))
    assert sorted(rows) == originals
    assert sorted(Path(p).name for p in report["skipped_twins"]) == sorted(
        p.name for p in PAIRS.rglob("*.py") if p.name.endswith((".fixed.py", ".unsafe.py"))
    )
    for stem, row in rows.items():
        runs = row["runs"]
        if stem == "_checkpoints":
            # a module a pair imports that prints and returns nothing: it runs, nothing to compare
            assert {runs[mode]["reason"] for mode in ("cpu", "cuda")} == {"nothing to compare"}, (stem, runs)
            continue
        started = ("pass (on cuda", "pass (emulated cuda", "skipped (original fails: ")
        assert runs["original"]["cell"].startswith(started), (stem, runs["original"])
        for mode in ("cpu", "cuda"):
            if stem == "dev201_pin_gpu" and mode == "cpu" and HAS_GPU:
                # The script pins GPU 0 itself; only the unsafe DEV201 fix lets a launcher hide it.
                assert runs[mode]["cell"] == "skipped (sets CUDA_VISIBLE_DEVICES itself: DEV201, fixed with --unsafe-fixes)"
                continue
            assert runs[mode]["compared_with"] is not None, (stem, mode, runs[mode])
            assert runs[mode]["status"] == PASS, (stem, mode, runs[mode])
    # What a program prints about its own device differs on the CPU by design, and says so.
    assert rows["dev103_score_batches"]["runs"]["cpu"]["cell"] == "pass (= original; stdout; prints its device)"
    dev501 = rows["dev501_mixed_precision"]["runs"]["cpu"]
    assert dev501["cell"] == "pass (= original on cuda; cpu output differs; compared at float16 tolerance)"
    # the lines that differ on the CPU by design are shown
    assert dev501["differing_lines"][-2:] == ["-scale enabled True", "+scale enabled False"]
    # (the losses agree at float16 tolerance; the prediction after float32 training on the CPU does not)
    assert "fixed on cpu vs original under emulation" in rows["dev501_mixed_precision"]["runs"]["cpu"]["detail"]


@NEEDS_GPU
def test_bundled_programs_verify_on_a_gpu() -> None:
    status, report, _ = _verify_json("--unsafe-fixes")
    rows = _rows(report)
    for stem, row in rows.items():
        runs = row["runs"]
        assert runs["cuda"]["status"] == PASS and runs["cuda"]["compared_with"], (stem, runs["cuda"])
        assert runs["cpu"]["status"] == PASS and runs["cpu"]["compared_with"], (stem, runs["cpu"])
        assert not runs["original"]["emulated"] and runs["emulation"]["status"] in (PASS, DIFFERS, NA), stem
    # The originals that crash on a GPU (a loss weight left on the CPU, .numpy() of a CUDA tensor)
    # are no reference; the fixed programs run, and nothing fails.
    crashing = {stem for stem, row in rows.items() if row["runs"]["original"]["cell"].startswith("skipped (original fails")}
    assert crashing == {"class_weighted_training", "numpy_metrics"}
    assert status == 0


def _row_of(path: Path, text: str) -> int:
    return next(row for row, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_negative_programs_fail(bundled_and_pairs) -> None:
    leftover_path, naive_path = NEGATIVE / "leftover_cpu_tensor.py", NEGATIVE / "untraceable_cuda_method.py"
    status, report = bundled_and_pairs
    assert status == 1
    rows = _rows(report)
    leftover = rows["leftover_cpu_tensor"]["runs"]
    # The features stay on the CPU, which only the CUDA run can see: on the GPU or under emulation.
    mm_row = _row_of(leftover_path, "torch.mm(")
    assert leftover["cuda"]["cell"] == f"FAIL (mixes devices at line {mm_row})"
    assert "Expected all tensors to be on the same device" in leftover["cuda"]["detail"]
    assert leftover["original"]["cell"] == f"skipped (original fails: mixes devices at line {mm_row})"
    # The class hides behind a factory: DEV101 takes `batch.cuda()` for a tensor's, the rewrite
    # breaks the program, and verify says so.
    naive = rows["untraceable_cuda_method"]["runs"]
    call_row = _row_of(naive_path, "batch = batch.cuda()")
    for mode in ("cpu", "cuda"):
        assert naive[mode]["cell"] == f"FAIL (AttributeError at line {call_row})"
        assert "'Batch' object has no attribute 'to'" in naive[mode]["detail"]


# A script that pins its GPU in code, as fixtures/pairs/dev201_pin_gpu.py does, with the device
# definition a fix inserts: right after the imports, it asks for CUDA while the script still has
# GPU 1 selected (hidden on a one-GPU machine), before it selects GPU 0.
PINNING = '''"""Select GPU 0 from inside the script, then fit a line."""
import os

os.environ["CUDA_VISIBLE_DEVICES"] = "1"

import torch
{early}
os.environ.update({{"CUDA_VISIBLE_DEVICES": "0"}})
{late}
torch.manual_seed(0)
weight = torch.zeros(3, 1).{move}.requires_grad_()
points = torch.randn(16, 3).{move}
targets = points @ torch.tensor([[1.0], [-2.0], [0.5]]).{move}
for step in range(4):
    error = ((points @ weight - targets) ** 2).mean()
    error.backward()
    with torch.no_grad():
        weight -= 0.1 * weight.grad
        weight.grad = None
    print(step, round(error.item(), 4))
'''
DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


def _pair(name: str, original: str, fixed: str) -> targets.Program:
    lines = targets.line_map(fixed, original)
    return targets.Program(Path(name), name, "program", "script", original.encode(), fixed.encode(), 2, (), lines)


def test_a_device_defined_before_the_script_pins_its_gpu_never_uses_it() -> None:
    """The definition placed before the script's own CUDA_VISIBLE_DEVICES="0" sees GPU 1 (hidden
    on a one-GPU machine), so the fixed program trains on the CPU: FAIL. Placed after it, the
    fixed program trains on the GPU as the original does. Under emulation on a machine without a
    GPU, and on a real one (where torch asks NVML, which reads the variable as CUDA would)."""
    original = PINNING.format(early="", late="", move="cuda()")
    early = PINNING.format(early=DEVICE, late="", move="to(device)")
    late = PINNING.format(early="", late=DEVICE, move="to(device)")
    programs = [_pair("early.py", original, early), _pair("late.py", original, late)]
    probe, rows = verify_programs(programs, torch_root(), Tolerance(), 120, 2)
    wrong, right = (row.cells for row in rows)
    assert wrong["original"].text() == ("pass (on cuda)" if probe.cuda else "pass (emulated cuda)")
    assert wrong["cuda"].text() == "FAIL (never used the GPU)"
    assert wrong["cpu"].text() == "pass (= original; stdout)"
    assert right["cuda"].text() == "pass (= original; stdout)"
    # Placed after the script pins GPU 0, the definition finds it even in the run where verify hid
    # every GPU: the program pins its GPU itself (DEV201, whose fix is unsafe), as on a GPU machine.
    # Without a GPU the cpu run has none to find, as on a CPU-only machine, and runs.
    expected = "FAIL (uses a GPU it was not given)" if probe.cuda else "pass (= original; stdout)"
    assert right["cpu"].text() == expected


def test_mismatches_timeouts_and_bad_files(tmp_path: Path, capsys) -> None:
    """The same verdicts on any machine, with a GPU or without."""
    (tmp_path / "returns.py").write_text("import os\nimport torch\n\n\ndef main():\n    return {'n': [torch.tensor([float(os.getpid())])]}\n")
    (tmp_path / "prints.py").write_text("import os\nprint('run', os.getpid())\n")
    (tmp_path / "forever.py").write_text("import time\nwhile True:\n    time.sleep(0.05)\n")
    (tmp_path / "second_gpu.py").write_text(
        "import torch\n\n\nclass Options:\n    gpu = 1\n\n\nx = torch.ones(2).cuda(Options.gpu)\nprint(x.sum().item())\n"
    )
    (tmp_path / "picks_gpu.py").write_text("import torch\ntorch.cuda.set_device(0)\nprint(torch.ones(1).cuda().sum().item())\n")
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    status = main(["verify", "--timeout", "2", "--output-format", "json", str(tmp_path)])
    captured = capsys.readouterr()
    assert status == 2
    assert re.search(r"broken\.py:1:\d+: syntax error", captured.err)
    rows = _rows(json.loads(captured.out))
    assert set(rows) == {"returns", "prints", "forever", "second_gpu", "picks_gpu"}
    # Each run is its own process: a program that returns its process id never agrees.
    returns = rows["returns"]["runs"]["cpu"]
    assert returns["cell"] == "FAIL (differs at result['n'][0])" and returns["compared_with"]
    assert re.search(r"fixed on cpu vs original (on emulated cuda|under emulation): largest absolute", returns["detail"])
    # A printed process id varies between two runs of the original: it is set aside, and said.
    assert rows["prints"]["runs"]["cuda"]["cell"] == "pass (= original; stdout; 1 varying line set aside)"
    assert rows["forever"]["runs"]["original"]["cell"] == "skipped (original fails: timed out after 2 s)"
    for mode in ("cpu", "cuda"):
        assert rows["forever"]["runs"][mode]["cell"] == "FAIL (timed out after 2 s)"
    # DEV102's fix is unsafe for an argument of unknown type: without --unsafe-fixes the cpu run
    # still asks for GPU 1, and says so (on a GPU machine too, where the fork server never started CUDA).
    second = rows["second_gpu"]["runs"]["cpu"]
    assert second["cell"] == "FAIL (needs CUDA at line 8)" and "DEV102" in second["detail"], second
    # a torch.cuda call a CPU build has no binding for (DEV202 has no fix) needs CUDA, and says so
    assert rows["picks_gpu"]["runs"]["cpu"]["cell"] == "FAIL (needs CUDA at line 2)"


def test_usage_errors_exit_2(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["verify"]) == 2
    assert "fixtures/programs/" in capsys.readouterr().err
    assert main(["verify", "--rtol", "0.1", str(PROGRAMS)]) == 2
    assert "--atol" in capsys.readouterr().err
    assert main(["verify", "missing.py"]) == 2
    assert "missing.py: no such file or folder" in capsys.readouterr().err
    (tmp_path / "nb.ipynb").write_text("{}")
    assert main(["verify", "nb.ipynb"]) == 2
    assert "nb.ipynb: not a Python program" in capsys.readouterr().err
    monkeypatch.setattr("devlint.verify.command.torch_root", lambda: None)
    assert main(["verify", str(PROGRAMS)]) == 2
    assert "pip install devlint[verify]" in capsys.readouterr().err


def test_one_process_per_run_where_there_is_no_fork(tmp_path: Path) -> None:
    program = tmp_path / "work" / "p.py"
    program.parent.mkdir()
    program.write_text("import os\nimport torch\n\ndef main():\n    print(os.getcwd())\n    return torch.ones(2).cuda()\n")
    env = run_environment(base_environment(torch_at=torch_root()), "emulated", tmp_path)
    job = {
        "kind": "run", "program": str(program), "mode": "cuda", "emulate": True, "protocol": "main", "module": "p",
        "workdir": str(program.parent), "status": str(tmp_path / "status.json"), "result": str(tmp_path / "r.pt"),
        "stdout": str(tmp_path / "out"), "stderr": str(tmp_path / "err"), "env": env,
    }  # fmt: skip
    (tmp_path / "job.json").write_text(json.dumps(job))
    ended = SubprocessRunner().run(Job(tmp_path / "job.json", program.parent, env, tmp_path / "out", tmp_path / "err", 120))
    assert (ended.rc, ended.timed_out) == (0, False), (tmp_path / "err").read_text()
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["outcome"] == "ok" and status["result"] is True
    assert status["cuda_used"] is True and status["notes"] == []
    assert (tmp_path / "out").read_text().strip() == str(program.parent)
    saved = torch.load(tmp_path / "r.pt")
    assert type(saved) is torch.Tensor and torch.equal(saved, torch.ones(2))


def test_a_fixed_program_that_calls_an_api_newer_than_this_torch_is_skipped_not_failed() -> None:
    fixed = b"import torch\nif torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n"
    program = targets.Program(Path("p.py"), "p.py", "p", "script", b"import torch\n", fixed, 1, (), {1: 1})
    failing = RunRecord(
        "cpu", {"outcome": "error", "error": {"type": "AttributeError", "message": "module 'torch' has no attribute 'accelerator'"}},
        "", "", 1, False, Path("/cpu.pt"),
    )
    runs = _runs(cpu=failing)
    old = _cells_of(runs, probe=Probe("2.4.1+cu121", cuda=False, gpu=None), program=program)["cpu"]
    assert (old.status, old.reason) == (
        "skipped", "the fixed program calls torch.accelerator.synchronize (torch 2.6); this is torch 2.4.1+cu121"
    )
    # On a torch that has the API the same failure is the fixes' own.
    assert _cells_of(runs, probe=Probe("2.6.0", cuda=False, gpu=None), program=program)["cpu"].status == "FAIL"


def test_a_torch_older_than_the_fixes_target_proves_nothing_about_them() -> None:
    # The pair targets torch 2.9 (its torch-version): on 2.6 its fixed runs are skipped, passing or
    # not, since its fixes may choose otherwise there; on 2.9 and later they are judged.
    source = b"import torch\nprint(torch.ones(1).cuda().device.type)\n"
    fixed = b"import torch\nprint(torch.ones(1).to(device).device.type)\n"
    program = targets.Program(Path("p.py"), "p.py", "p", "script", source, fixed, 1, (), {1: 1}, torch_version=(2, 9))
    failing = RunRecord(
        "cpu", {"outcome": "error", "error": {"type": "NameError", "message": "name 'device' is not defined"}},
        "", "", 1, False, Path("/cpu.pt"),
    )
    runs = _runs(cpu=failing)
    old = _cells_of(runs, probe=Probe("2.6.0", cuda=False, gpu=None), program=program)
    assert (old["cpu"].status, old["cpu"].reason) == ("skipped", "the fixes target torch 2.9 (torch-version); this is torch 2.6.0")
    assert old["cuda"].status == "skipped"
    assert _cells_of(runs, probe=Probe("2.9.1", cuda=False, gpu=None), program=program)["cpu"].status == "FAIL"
