"""`devlint verify`: the guard, the comparisons and the verdicts in-process; whole runs end to end.

The end-to-end runs start real child processes (torch in each); the bundled fixtures are verified
once, in a subprocess that also proves the devlint process itself never imports torch.
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
import torch.nn.functional as F

from devlint.cli import main
from devlint.registry import all_rules
from devlint.runner import lint_text
from devlint.verify import compare, guard, targets
from devlint.verify.environment import HIDE_GPUS, base_environment, run_environment, torch_root
from devlint.verify.meta_source import to_meta
from devlint.verify.report import Report, write_full
from devlint.verify.runners import Job, SubprocessRunner
from devlint.verify.session import Probe, RunRecord
from devlint.verify.textcompare import compare_text
from devlint.verify.verdict import FAIL, NA, PASS, SKIPPED, Tolerance, judge

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "fixtures" / "programs"
NEGATIVE = ROOT / "fixtures" / "negative"
EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)$")
# SPEC's rule table: every rule with a fix.
FIXABLE = {
    *("DEV101", "DEV102", "DEV103", "DEV104", "DEV105", "DEV201"),
    *("DEV301", "DEV302", "DEV304", "DEV401", "DEV402", "DEV501"),
}
NO_GPU = Probe("2.x", cuda=False, gpu=None)
GPU = Probe("2.x", cuda=True, gpu="a GPU")
HAS_GPU = torch.cuda.is_available()

# What `devlint verify` reports for each bundled program on a machine without a GPU:
# (original, cpu, meta) statuses, and a phrase the meta cell must contain.
EXPECTED_WITHOUT_GPU = {
    "attention_masks": (SKIPPED, PASS, PASS, ""),
    "checkpoint_roundtrip": (SKIPPED, PASS, PASS, ""),
    "class_weighted_training": (PASS, PASS, PASS, ""),
    "default_tensor_type": (SKIPPED, PASS, PASS, ""),
    "device_strings": (SKIPPED, PASS, PASS, ""),
    "evaluate_with_device": (SKIPPED, PASS, PASS, ""),
    "gpu_index": (PASS, PASS, NA, "no tensor reached the meta device"),
    "inference_report": (SKIPPED, PASS, NA, "needs real values: `.tolist()`"),
    "legacy_tensor_types": (SKIPPED, PASS, PASS, ""),
    "mixed_precision": (SKIPPED, PASS, PASS, ""),
    "numpy_metrics": (SKIPPED, PASS, NA, "needs real values: `.cpu()`"),
    "own_cuda_method": (SKIPPED, PASS, PASS, ""),
    "variable_api": (SKIPPED, PASS, PASS, ""),
    "visible_devices": (PASS, PASS, PASS, ""),
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


# -- the device-mixing guard -----------------------------------------------------------------


def _meta(*shape: int) -> torch.Tensor:
    return torch.empty(*shape, device="meta")


MIXES = {
    "mm": lambda: torch.mm(torch.ones(2, 3), _meta(3, 4)),
    "matmul": lambda: torch.ones(2, 3) @ _meta(3, 4),
    "linear": lambda: F.linear(torch.ones(2, 3), _meta(4, 3)),
    "bmm": lambda: torch.bmm(torch.ones(1, 2, 3), _meta(1, 3, 4)),
    "conv2d": lambda: F.conv2d(_meta(1, 1, 5, 5), torch.ones(2, 1, 3, 3)),
    "einsum": lambda: torch.einsum("ij,jk->ik", _meta(2, 3), torch.ones(3, 4)),
    "add": lambda: _meta(3) + torch.ones(3),
    "cat": lambda: torch.cat([_meta(2), torch.ones(2)]),
}


@pytest.mark.parametrize("op", sorted(MIXES))
def test_guard_catches_a_cpu_tensor_mixed_with_a_meta_one(op: str) -> None:
    with pytest.raises(guard.MixedDevicesError) as caught, guard.DeviceGuard():
        MIXES[op]()
    assert caught.value.devices == ["cpu", "meta"]
    assert caught.value.op in (op, "__matmul__", "__add__", "matmul")


def test_guard_lets_deliberate_moves_and_cpu_scalars_through() -> None:
    with guard.DeviceGuard() as watch:
        net = torch.nn.Linear(3, 2).to("meta")
        net.load_state_dict(torch.nn.Linear(3, 2).state_dict())  # copy_ from the CPU
        x = torch.ones(4, 3).to("meta")
        y = net(x) * torch.tensor(2.0)  # a 0-dim CPU tensor joins any device
        picked = y[torch.tensor([0, 2])]  # CPU indices into a device tensor
        y[torch.tensor([1])] = torch.zeros(1, 2)
        z = torch.empty(2, 2, device="meta").copy_(torch.ones(2, 2))
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        y.sum().backward()
        optimizer.step()
    assert watch.saw_meta
    assert picked.device.type == z.device.type == "meta"


def test_a_mix_the_program_catches_is_still_recorded() -> None:
    with guard.DeviceGuard() as watch:
        try:
            torch.mm(torch.ones(2, 3), _meta(3, 4))
        except RuntimeError:
            pass
    assert isinstance(watch.violation, guard.MixedDevicesError)


def test_guard_records_that_no_tensor_ever_reached_meta() -> None:
    with guard.DeviceGuard() as watch:
        torch.ones(2, 3) @ torch.ones(3, 2)
    assert not watch.saw_meta


READS = {
    "item": lambda t: t.sum().item(),
    "__repr__": lambda t: print(t),
    "__format__": lambda t: f"{t:}",
    "__bool__": lambda t: bool(t.sum() > 0),
    "__float__": lambda t: float(t.sum()),
    "tolist": lambda t: t.tolist(),
    "numpy": lambda t: t.numpy(),
    "cpu": lambda t: t.cpu(),
    "to": lambda t: t.to("cpu"),
    "copy_": lambda t: torch.ones(2, 2).copy_(t),
}


@pytest.mark.parametrize("op", sorted(READS))
def test_guard_stops_reads_of_meta_values(op: str) -> None:
    with pytest.raises(guard.NeedsRealValuesError) as caught, guard.DeviceGuard():
        READS[op](_meta(2, 2))
    assert caught.value.op == op


def test_guard_allows_reads_of_real_tensors_and_moves_within_meta() -> None:
    with guard.DeviceGuard():
        assert torch.ones(2).sum().item() == 2.0
        assert _meta(2).to("meta").shape == (2,)
        assert _meta(2).to(torch.float64).dtype == torch.float64


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


def test_described_leaves_keep_the_device_and_saved_ones_are_on_the_cpu() -> None:
    value = {"x": _meta(2, 3), "n": 4}
    assert compare.describe(compare.normalize(value, to_cpu=False)) == [
        {"path": "result['x']", "kind": "tensor", "dtype": "torch.float32", "shape": [2, 3], "device": "meta"},
        {"path": "result['n']", "kind": "int"},
    ]


def test_printed_output_compares_text_exactly_and_numbers_with_tolerance() -> None:
    assert compare_text("loss 0.1234\n", "loss 0.1235\n") is None  # one unit in the last digit
    assert compare_text("tensor([1., 2.], device='cuda:0')\n", "tensor([1., 2.])\n") is None
    mismatch = compare_text("step 3: 0.50\n", "step 3: 0.60\n")
    assert mismatch is not None and mismatch.line == 1 and mismatch.max_abs_diff == pytest.approx(0.1)
    assert compare_text("epoch 10\n", "epoch 11\n") is not None  # integers are counts: exact
    assert compare_text("a\nb\n", "a\n") is not None
    assert compare_text("accuracy on cpu\n", "accuracy on cuda\n") is not None


@pytest.mark.parametrize(
    ("error", "mode", "outcome"),
    [
        (AssertionError("Torch not compiled with CUDA enabled"), "original", "needs_cuda"),
        (RuntimeError("No CUDA GPUs are available"), "cpu", "needs_cuda"),
        (TypeError("type torch.cuda.FloatTensor not available. Torch not compiled with CUDA enabled."), "cpu", "needs_cuda"),
        (RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False."),
         "original", "needs_cuda"),
        (RuntimeError("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"),
         "cuda", "mixed_devices"),
        # .numpy() of a CUDA tensor: a real failure of the original (DEV304), not a missing GPU
        (TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor first."),
         "original", "error"),
        (NotImplementedError("Cannot copy out of meta tensor; no data!"), "meta", "meta_unsupported"),
        (NotImplementedError("Cannot copy out of meta tensor; no data!"), "cpu", "error"),
        (ValueError("bad shape"), "meta", "error"),
        (SystemExit(3), "cpu", "error"),
    ],
)
def test_harness_classifies_failures(error: BaseException, mode: str, outcome: str) -> None:
    from devlint.verify import harness

    assert harness._failure(error, "p.py", mode, guard, 1)["outcome"] == outcome


# -- the meta variant of a program, the environment, the protocol --------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n', 'device = torch.device("meta")\n'),
        ('dev = "cuda:0" if args.cuda else "cpu"\n', 'dev = "meta"\n'),
        ('d = torch.device("cuda", 0) if ok else torch.device("cpu")\n', 'd = torch.device("meta")\n'),
        (
            "d = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device('cpu')\n",
            'd = torch.device("meta")\n',
        ),
        ("def f(device='cuda' if torch.cuda.is_available() else 'cpu'):\n    pass\n", 'def f(device="meta"):\n    pass\n'),
    ],
)
def test_device_choices_become_meta(before: str, after: str) -> None:
    assert to_meta(before) == after


@pytest.mark.parametrize(
    "text",
    [
        'with torch.autocast("cuda" if use_cuda else "cpu"):\n    pass\n',
        'scaler = torch.amp.GradScaler(device_type="cuda" if use_cuda else "cpu")\n',
        'device_type = "cuda" if use_cuda else "cpu"\n',
        'device = torch.device("cuda")\n',
        'label = "big" if n > 3 else "small"\n',
    ],
)
def test_device_types_and_other_conditionals_stay(text: str) -> None:
    assert to_meta(text) == text


def test_children_get_a_clean_environment() -> None:
    here = torch_root()
    assert here is not None
    parent = {"PATH": "/bin", "HOME": "/h", "PYTHONPATH": f"/elsewhere{os.pathsep}{here}", "SECRET": "x", "PYTHONSTARTUP": "s.py"}
    env = base_environment(parent, torch_at=here)
    assert env["PYTHONPATH"] == str(here)
    assert "SECRET" not in env and "PYTHONSTARTUP" not in env
    assert env["PATH"] == "/bin" and env["PYTHONHASHSEED"] == "0"
    assert "PYTHONPATH" not in base_environment({"PYTHONPATH": "/elsewhere"}, torch_at=here)
    hidden = run_environment(env, True, Path("/t"))
    assert hidden["TMPDIR"] == "/t" and all(hidden[name] == "" for name in HIDE_GPUS)
    assert "CUDA_VISIBLE_DEVICES" not in run_environment(env, False, Path("/t"))


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


# -- verdicts ----------------------------------------------------------------------------------


def _program(protocol: str = "main", remaining: tuple[str, ...] = (), lines: dict[int, int] | None = None) -> targets.Program:
    same = {row: row for row in range(1, 50)} if lines is None else lines
    return targets.Program(Path("p.py"), "p.py", "p", protocol, b"", b"", b"", 1, remaining, same, same)


def _run(mode: str, outcome: str = "ok", stdout: str = "", **status) -> RunRecord:
    return RunRecord(mode, {"outcome": outcome, **status}, stdout, "", 0, False, Path(f"/{mode}.pt"))


def _runs(**given: RunRecord) -> dict[str, RunRecord]:
    runs = {mode: _run(mode) for mode in ("original", "cpu", "meta")}
    runs.update(given)
    return runs


def _cells(runs, probe=NO_GPU, answers=None, program=None) -> dict:
    return judge(0, program or _program(), runs, answers or {}, probe, Tolerance()).cells


def test_original_needing_cuda_is_skipped_only_without_a_gpu() -> None:
    runs = _runs(original=_run("original", "needs_cuda", message="AssertionError: Torch not compiled with CUDA enabled"))
    cells = _cells(runs)
    assert cells["original"].text() == "skipped (needs CUDA)"
    assert cells["cpu"].text() == "pass (no reference)" and cells["cpu"].compared_with is None
    assert cells["cuda"].text() == "skipped (torch sees no GPU)"
    runs["cuda"] = _run("cuda")
    on_gpu = _cells(runs, GPU)["original"]
    assert on_gpu.status == SKIPPED and on_gpu.text().startswith("skipped (original fails: needs CUDA")


def test_an_original_that_crashes_is_no_reference_and_fails_nothing() -> None:
    runs = _runs(original=_run("original", "error", message="ValueError: bad", line=3, source="x = f()"))
    cells = _cells(runs)
    assert cells["original"].text() == "skipped (original fails: ValueError at line 3)"
    assert "x = f()" in cells["original"].detail
    assert cells["cpu"].text() == "pass (no reference)"
    assert "did not" in cells["cpu"].detail


def test_fixed_code_that_still_needs_cuda_fails_and_names_what_is_left() -> None:
    runs = _runs(cpu=_run("cpu", "needs_cuda", message="AssertionError: Torch not compiled with CUDA enabled", line=7))
    # Line 7 of the fixed code is line 6 of the original: the fix inserted a line above it.
    cell = _cells(runs, program=_program(remaining=("DEV102",), lines={7: 6}))["cpu"]
    assert cell.text() == "FAIL (needs CUDA at line 6)"
    assert "DEV102" in cell.detail and "--unsafe-fixes" in cell.detail
    runs["cpu"].status["line"] = 3
    assert _cells(runs, program=_program(lines={7: 6}))["cpu"].text() == "FAIL (needs CUDA at line 3 of the fixed code)"


def test_lines_of_the_fixed_code_map_back_to_the_original() -> None:
    original = "import torch\nx = torch.ones(2).cuda()\ny = x * 2\n"
    fixed = "import torch\ndevice = torch.device('cpu')\nx = torch.ones(2).to(device)\ny = x * 2\n"
    assert targets.line_map(fixed, original) == {1: 1, 3: 2, 4: 3}


def test_result_mismatches_and_missing_results_fail() -> None:
    answer = {"0:cpu": {"mismatches": [{"path": "result['w']", "message": "not close", "max_abs_diff": 0.25}], "error": None}}
    runs = _runs(original=_run("original", result=True), cpu=_run("cpu", result=True))
    cell = _cells(runs, answers=answer)["cpu"]
    assert cell.text() == "FAIL (differs at result['w'])"
    assert "fixed on cpu vs original on cpu" in cell.detail and "0.25" in cell.detail
    assert _cells(runs, answers={"0:cpu": {"mismatches": [], "error": None}})["cpu"].text() == "pass (= original)"
    assert _cells(_runs(original=_run("original", result=True)))["cpu"].text() == "FAIL (results differ)"


def test_printed_output_is_compared_when_main_returns_nothing() -> None:
    runs = _runs(original=_run("original", stdout="acc 0.50\n"), cpu=_run("cpu", stdout="acc 0.75\n"))
    assert _cells(runs)["cpu"].text() == "FAIL (stdout differs at line 1)"
    runs["cpu"] = _run("cpu", stdout="acc 0.50\n")
    assert _cells(runs)["cpu"].text() == "pass (= original; stdout)"
    quiet = _cells(_runs())["cpu"]
    assert quiet.text() == "pass (nothing to compare)" and quiet.compared_with is None


def test_fixed_code_that_leaves_the_gpu_unused_fails_on_cuda() -> None:
    runs = _runs(original=_run("original", cuda_used=True), cuda=_run("cuda", cuda_used=False))
    assert _cells(runs, GPU)["cuda"].text() == "FAIL (never used the GPU)"


def test_without_the_original_the_cuda_run_is_compared_with_the_cpu_run() -> None:
    runs = _runs(original=_run("original", "error", message="RuntimeError: x"), cuda=_run("cuda", stdout="1\n"))
    runs["cpu"] = _run("cpu", stdout="2\n")
    cell = _cells(runs, GPU)["cuda"]
    assert cell.status == FAIL and cell.compared_with == "cpu"


@pytest.mark.parametrize(
    ("meta", "text"),
    [
        (_run("meta", "needs_values", message="item", line=9), "n/a (needs real values: `.item()` at line 9)"),
        (_run("meta", "meta_unsupported", message="NotImplementedError: no meta kernel"), "n/a (not supported on meta)"),
        (_run("meta", "no_meta"), "n/a (no tensor reached the meta device)"),
        (_run("meta", "mixed_devices", message="`mm` received tensors on cpu and meta", line=4), "FAIL (mixes devices at line 4)"),
        (
            _run("meta", leaves=[{"path": "result", "kind": "tensor", "dtype": "torch.float32", "shape": [2]}]),
            "FAIL (result differs from cpu run)",
        ),
    ],
)
def test_meta_cells(meta: RunRecord, text: str) -> None:
    cpu = _run("cpu", leaves=[{"path": "result", "kind": "tensor", "dtype": "torch.float32", "shape": [3]}])
    assert _cells(_runs(meta=meta, cpu=cpu))["meta"].text() == text


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


def test_bundled_programs_verify_without_a_gpu() -> None:
    if HAS_GPU:
        pytest.skip("this machine has a GPU: see test_bundled_programs_verify_on_a_gpu")
    status, report, _ = _verify_json()
    rows = _rows(report)
    assert set(rows) == set(EXPECTED_WITHOUT_GPU)
    for stem, (original, cpu, meta, phrase) in EXPECTED_WITHOUT_GPU.items():
        runs = rows[stem]["runs"]
        assert (runs["original"]["status"], runs["cpu"]["status"], runs["meta"]["status"]) == (original, cpu, meta), stem
        assert runs["cuda"]["cell"] == "skipped (torch sees no GPU)"
        assert phrase in runs["meta"]["cell"], stem
        if original == SKIPPED:
            assert runs["original"]["cell"] == "skipped (needs CUDA)"
        else:
            assert runs["cpu"]["compared_with"] == "original", stem
    assert status == 0
    assert report["summary"]["FAIL"] == 0


@pytest.mark.skipif(not HAS_GPU, reason="needs a GPU that torch can see")
def test_bundled_programs_verify_on_a_gpu() -> None:
    status, report, _ = _verify_json("--unsafe-fixes")
    rows = _rows(report)
    for stem, row in rows.items():
        assert row["runs"]["cuda"]["status"] == PASS, (stem, row["runs"]["cuda"])
        assert row["runs"]["cpu"]["status"] == PASS, (stem, row["runs"]["cpu"])
    # The originals that crash on a GPU (a loss weight left on the CPU, .numpy() of a CUDA tensor)
    # are no reference; the fixed programs run, and nothing fails.
    crashing = {stem for stem, row in rows.items() if row["runs"]["original"]["cell"].startswith("skipped (original fails")}
    assert crashing == {"class_weighted_training", "numpy_metrics"}
    assert status == 0


def _row_of(path: Path, text: str) -> int:
    return next(row for row, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_negative_programs_fail(capsys) -> None:
    leftover_path, naive_path = NEGATIVE / "leftover_cpu_tensor.py", NEGATIVE / "untraceable_cuda_method.py"
    assert main(["verify", "--output-format", "json", str(leftover_path), str(naive_path)]) == 1
    rows = _rows(json.loads(capsys.readouterr().out))
    leftover = rows["leftover_cpu_tensor"]["runs"]
    # Everything is on the CPU in the CPU run, so only the meta guard can see the mix.
    assert leftover["cpu"]["status"] == PASS
    assert leftover["meta"]["cell"] == f"FAIL (mixes devices at line {_row_of(leftover_path, 'torch.mm(')})"
    assert "`mm` received tensors on cpu and meta" in leftover["meta"]["detail"]
    # The class hides behind a factory: DEV101 takes `batch.cuda()` for a tensor's, the rewrite
    # breaks the program, and verify says so.
    naive = rows["untraceable_cuda_method"]["runs"]
    call_row = _row_of(naive_path, "batch = batch.cuda()")
    assert naive["cpu"]["cell"] == f"FAIL (AttributeError at line {call_row})"
    assert "'Batch' object has no attribute 'to'" in naive["cpu"]["detail"]


def test_a_local_class_with_its_own_cuda_is_left_alone_and_verifies(capsys) -> None:
    path = PROGRAMS / "own_cuda_method.py"
    text = path.read_text()
    call_row = _row_of(path, "batch = batch.cuda()")
    flagged_rows = {f.location.row for f in lint_text(text, path.name, list(all_rules()))}
    assert call_row not in flagged_rows
    assert _row_of(path, "self.inputs.cuda(") in flagged_rows
    assert main(["verify", "--output-format", "json", str(path)]) == 0
    runs = _rows(json.loads(capsys.readouterr().out))["own_cuda_method"]["runs"]
    assert runs["cpu"]["status"] == PASS and runs["meta"]["status"] == PASS


def test_mismatches_timeouts_and_bad_files(tmp_path: Path, capsys) -> None:
    unsafe = 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\nimport torch\n'
    visible = "float(len(os.environ['CUDA_VISIBLE_DEVICES']))"
    (tmp_path / "returns.py").write_text(unsafe + f"\n\ndef main():\n    return {{'n': [torch.tensor([{visible}])]}}\n")
    (tmp_path / "prints.py").write_text(unsafe + "print('visible', repr(os.environ['CUDA_VISIBLE_DEVICES']))\n")
    (tmp_path / "forever.py").write_text("import time\nwhile True:\n    time.sleep(0.05)\n")
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    status = main(["verify", "--unsafe-fixes", "--timeout", "2", "--output-format", "json", str(tmp_path)])
    captured = capsys.readouterr()
    assert status == 2
    assert re.search(r"broken\.py:1:\d+: syntax error", captured.err)
    rows = _rows(json.loads(captured.out))
    assert set(rows) == {"returns", "prints", "forever"}
    # The unsafe DEV201 fix lets the launcher's CUDA_VISIBLE_DEVICES="" win: a real difference.
    returns = rows["returns"]["runs"]["cpu"]
    assert returns["cell"] == "FAIL (differs at result['n'][0])"
    assert "fixed on cpu vs original on cpu: largest absolute difference 1" in returns["detail"]
    prints = rows["prints"]["runs"]["cpu"]["detail"]
    assert prints == "fixed on cpu vs original on cpu: stdout line 1: \"visible ''\" vs \"visible '0'\""
    assert rows["forever"]["runs"]["original"]["cell"] == "skipped (original fails: timed out after 2 s)"
    for mode in ("cpu", "meta"):
        assert rows["forever"]["runs"][mode]["cell"] == "FAIL (timed out after 2 s)"


def test_the_full_report_is_a_table_with_failures_spelled_out() -> None:
    meta = _run("meta", "mixed_devices", message="`mm` received tensors on cpu and meta", line=4)
    runs = _runs(original=_run("original", "needs_cuda"), meta=meta)
    rows = [judge(0, _program(), runs, {}, NO_GPU, Tolerance())]
    out = io.StringIO()
    write_full(Report(rows, NO_GPU, [], 1), out)
    text = out.getvalue()
    header = next(line for line in text.splitlines() if "program" in line)
    assert re.search(r"program .*fixes .*original .*cpu .*cuda .*meta", header)
    row = next(line for line in text.splitlines() if "p.py" in line)
    for cell in ("skipped (needs CUDA)", "pass (no reference)", "skipped (torch sees no GPU)", "FAIL (mixes devices at line 4)"):
        assert cell in row
    assert "p.py [meta] FAIL: mixes devices at line 4" in text
    assert "`mm` received tensors on cpu and meta" in text
    assert "1 program(s): 1 pass, 1 FAIL, 2 skipped, 0 n/a; 1 passing run(s) had nothing to compare with" in text


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
    program.write_text("import os\nimport torch\n\ndef main():\n    print(os.getcwd())\n    return torch.ones(2)\n")
    env = run_environment(base_environment(torch_at=torch_root()), True, tmp_path)
    job = {
        "kind": "run", "program": str(program), "mode": "cpu", "protocol": "main", "module": "p",
        "workdir": str(program.parent), "status": str(tmp_path / "status.json"), "result": str(tmp_path / "r.pt"),
        "stdout": str(tmp_path / "out"), "stderr": str(tmp_path / "err"), "env": env,
    }  # fmt: skip
    (tmp_path / "job.json").write_text(json.dumps(job))
    ended = SubprocessRunner().run(Job(tmp_path / "job.json", program.parent, env, tmp_path / "out", tmp_path / "err", 120))
    assert (ended.rc, ended.timed_out) == (0, False), (tmp_path / "err").read_text()
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["outcome"] == "ok" and status["result"] is True
    assert (tmp_path / "out").read_text().strip() == str(program.parent)
    assert torch.equal(torch.load(tmp_path / "r.pt"), torch.ones(2))
