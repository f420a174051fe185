"""`devlint verify` on what real scripts print: noise learned from two runs, float16 tolerance, the
differing lines shown.

The first tests are in-process (learning noise, masking it, the precision rule, the report); the
last run small programs of this file's own through real child processes (CUDA emulated where the
machine has no GPU), once for the whole module.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import torch

from devlint.verify import targets
from devlint.verify.child import compare, precision as child_precision
from devlint.verify.command import verify_programs
from devlint.verify.environment import torch_root
from devlint.verify.noise import VARIES, learn
from devlint.verify.precision import EPSILON, UNITS, precision
from devlint.verify.report import Report, write_full, write_json
from devlint.verify.session import Probe, RunRecord, plan
from devlint.verify.textcompare import compare_text, lines
from devlint.verify.verdict import FAIL, PASS, Judge, Tolerance

NO_GPU = Probe("2.x", cuda=False, gpu=None)


def _noise(first: str, second: str):
    return learn(lines(first), lines(second))


# -- learning noise ------------------------------------------------------------------------------


def test_only_the_values_that_vary_between_two_runs_are_noise() -> None:
    noise = _noise(
        "epoch 1 loss 0.5100 (1.27s)\nepoch 2 loss 0.4000 (1.31s)\ndone\n",
        "epoch 1 loss 0.5100 (0.89s)\nepoch 2 loss 0.4000 (0.92s)\ndone\n",
    )
    assert [varying.row for varying in noise.lines] == [0, 1]
    assert noise.set_aside() == "2 varying lines set aside"
    assert noise.mask(0, "epoch 1 loss 0.5100 (3.02s)") == f"epoch 1 loss 0.5100 ({VARIES}s)"
    assert noise.mask(2, "done") == "done"
    reference = "epoch 1 loss 0.5100 (1.27s)\nepoch 2 loss 0.4000 (1.31s)\ndone\n"
    assert compare_text("epoch 1 loss 0.5100 (3.02s)\nepoch 2 loss 0.4000 (0.1s)\ndone\n", reference, mask=noise) is None
    # The loss on a varying line is still compared.
    changed = compare_text("epoch 1 loss 0.6100 (3.02s)\nepoch 2 loss 0.4000 (0.1s)\ndone\n", reference, mask=noise)
    assert changed is not None and changed.line == 1 and changed.total == 1


def test_a_line_that_cannot_be_matched_token_for_token_is_set_aside_whole() -> None:
    noise = _noise("saved to /tmp/tmpk3j9_x/ckpt.pt\nloss 1.5\n", "saved to /tmp/9ab_tmpq/ckpt.pt\nloss 1.5\n")
    [varying] = noise.lines
    assert varying.row == 0 and varying.positions is None
    assert noise.mask(0, "saved to /tmp/anything") == VARIES
    assert compare_text("saved to /x\nloss 1.5\n", "saved to /tmp/tmpk3j9_x/ckpt.pt\nloss 1.5\n", mask=noise) is None
    assert compare_text("saved to /x\nloss 2.5\n", "saved to /tmp/tmpk3j9_x/ckpt.pt\nloss 1.5\n", mask=noise) is not None


def test_deterministic_output_learns_no_noise_and_is_compared_exactly() -> None:
    same = "step 0 loss 0.25\nstep 1 loss 0.125\n"
    noise = _noise(same, same)
    assert noise.lines == () and noise.set_aside() == ""
    assert compare_text("step 0 loss 0.25\nstep 1 loss 0.135\n", same, mask=noise) is not None
    # Numbers that agree within float32's tolerance are the same value printed, not noise.
    assert _noise("x 0.1234567\n", "x 0.1234568\n").lines == ()
    # Counts are exact: an integer that differs varies.
    assert [v.positions for v in _noise("seen 10 files\n", "seen 11 files\n").lines] == [frozenset({2})]


def test_two_runs_that_print_different_numbers_of_lines_set_nothing_aside() -> None:
    noise = _noise("a\nb\n", "a\nb\nc\n")
    assert noise.lines == () and noise.unmatched is not None
    assert "printed 2 and 3 lines" in noise.describe("original")


# -- the differing lines -----------------------------------------------------------------------


def test_a_mismatch_keeps_the_first_differing_lines_as_a_unified_diff() -> None:
    expected = "".join(f"step {i} loss {i / 10:.2f}\n" for i in range(10))
    actual = "".join(f"step {i} loss {i / 10 + (0.5 if i % 2 else 0):.2f}\n" for i in range(10))
    mismatch = compare_text(actual, expected)
    assert mismatch is not None and mismatch.line == 2 and mismatch.total == 5
    excerpt = mismatch.excerpt("fixed on cpu", "original")
    assert excerpt[:5] == ["--- original", "+++ fixed on cpu", "@@ line 2 @@", "-step 1 loss 0.10", "+step 1 loss 0.60"]
    assert excerpt.count("@@ line 10 @@") == 1
    shorter = compare_text("a\n", "a\nb\nc\n")
    assert shorter is not None and shorter.excerpt("x", "y")[2:] == ["@@ line 2 @@", "-b", "@@ line 3 @@", "-c"]
    many = compare_text("".join(f"{i}\n" for i in range(20)), "".join(f"{i + 1}\n" for i in range(20)))
    assert many is not None and many.excerpt("x", "y")[-1] == "(15 more differing lines)"


# -- precision ---------------------------------------------------------------------------------


def _record(mode: str, autocast: tuple[str, ...] = (), emulated: bool = True, stdout: str = "") -> RunRecord:
    status = {"outcome": "ok", "autocast": list(autocast)}
    return RunRecord(mode, status, stdout, "", 0, False, Path(f"/{mode}.pt"), emulated=emulated)


def test_runs_that_computed_in_different_precisions_are_compared_at_the_coarser_ones_tolerance() -> None:
    half, full = _record("original", ("cuda:float16",)), _record("cpu")
    at = precision(full, half, None, None)
    assert at.dtype == "float16" and at.said() == "compared at float16 tolerance"
    assert at.rtol == UNITS * EPSILON["float16"] and at.atol == EPSILON["float16"]
    # The loss near 100, off by 0.51: within float16's tolerance, not float32's.
    assert compare_text("loss 100.51\n", "loss 100.00\n", at.rtol, at.atol) is None
    assert compare_text("loss 100.51\n", "loss 100.00\n") is not None
    # A fix that moves a value by 1% still fails.
    assert compare_text("loss 101.00\n", "loss 100.00\n", at.rtol, at.atol) is not None
    # The same autocast on the same kind of device: float32's own tolerance.
    assert precision(_record("cuda", ("cuda:float16",)), half, None, None).dtype is None
    assert precision(full, _record("original"), None, None).dtype is None
    # A real GPU and emulation, both in float16: their kernels round otherwise.
    assert precision(_record("original", ("cuda:float16",), emulated=False), half, None, None).dtype == "float16"
    assert precision(full, _record("x", ("cuda:float16", "cpu:bfloat16")), None, None).dtype == "bfloat16"
    # A wider tolerance given on the command line wins.
    assert precision(full, half, 0.5, 0.5).rtol == 0.5


def test_a_float16_result_is_compared_as_float32_at_a_reduced_precision() -> None:
    half = torch.tensor([100.0, 2.0], dtype=torch.float16)
    full = torch.tensor([100.25, 2.001])
    assert compare.compare({"y": full}, {"y": half}) != []  # dtype and values
    assert compare.compare({"y": full}, {"y": half}, 8 * 2**-10, 2**-10, reduced=True) == []
    assert compare.compare({"y": full * 1.02}, {"y": half}, 8 * 2**-10, 2**-10, reduced=True) != []


def test_the_child_records_the_reduced_autocast_a_run_entered(monkeypatch) -> None:
    # The recorder wraps torch.autocast.__enter__: put it back after the test.
    monkeypatch.setattr(torch.autocast, "__enter__", torch.autocast.__enter__)
    record = child_precision.AutocastRecord().install(torch)
    with torch.autocast("cpu", enabled=False):
        pass
    assert record.found() == []
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch.ones(2, 2) @ torch.ones(2, 2)
    assert record.found() == ["cpu:bfloat16"]


# -- verdicts and the report -------------------------------------------------------------------


def _program() -> targets.Program:
    return targets.Program(Path("p.py"), "p.py", "p", "script", b"", b"", 1, (), {row: row for row in range(1, 50)})


def test_a_comparison_that_differs_asks_for_its_reference_again_and_then_sets_the_noise_aside() -> None:
    runs = {run.name: _record(run.name) for run in plan(False)}
    runs["original"] = _record("original", stdout="loss 0.5\ntook 1.27s\n")
    runs["cpu"] = _record("cpu", stdout="loss 0.5\ntook 0.89s\n")
    runs["cuda"] = _record("cuda", stdout="loss 0.5\ntook 0.93s\n")
    judge = Judge(0, _program(), runs, {}, NO_GPU, Tolerance())
    assert judge.row().cells["cpu"].status == FAIL and judge.unsteady == {"original"}
    noise = {"original": _noise("loss 0.5\ntook 1.27s\n", "loss 0.5\ntook 1.02s\n")}
    again = Judge(0, _program(), runs, {}, NO_GPU, Tolerance(), noise)
    cells = again.row().cells
    assert cells["cpu"].text() == "pass (= original; stdout; 1 varying line set aside)"
    assert "line 2 (1 value): 'took 1.27s' / 'took 1.02s'" in cells["cpu"].detail
    assert again.unsteady == set()
    # Output that agrees asks for nothing more: no extra run.
    runs["cpu"] = runs["cuda"] = runs["original"]
    steady = Judge(0, _program(), runs, {}, NO_GPU, Tolerance())
    steady.row()
    assert steady.unsteady == set()


def test_emulation_that_differs_from_the_gpu_runs_nothing_again_and_shows_its_lines() -> None:
    """The emulation column's differences are the GPU's own (its random numbers): running the
    original on the GPU again would learn nothing."""
    gpu = Probe("2.x", cuda=True, gpu="a GPU")
    runs = {run.name: _record(run.name, emulated=run.emulated) for run in plan(True)}
    for name in ("original", "cuda"):
        runs[name] = _record(name, emulated=False, stdout="noise 0.25\n")
    for name in ("cpu", "emulated_original", "emulated_cuda"):
        runs[name] = _record(name, stdout="noise 0.75\n")
    judge = Judge(0, _program(), runs, {}, gpu, Tolerance())
    cells = judge.row().cells
    assert cells["cuda"].text() == "pass (= original; stdout)" and cells["cpu"].text() == "pass (= original; stdout)"
    assert cells["emulation"].text() == "differs (stdout differs at line 1)"
    assert cells["emulation"].differing_lines[-2:] == ("-noise 0.25", "+noise 0.75")
    assert judge.unsteady == set()


def test_every_differs_cell_shows_its_differing_lines_in_each_format() -> None:
    runs = {run.name: _record(run.name) for run in plan(False)}
    runs["original"] = _record("original", stdout="loss 0.5\namp True\n")
    runs["cpu"] = _record("cpu", stdout="loss 0.5\namp False\n")
    runs["cuda"] = _record("cuda", stdout="loss 0.5\namp True\n")
    rows = [Judge(0, _program(), runs, {}, NO_GPU, Tolerance()).row()]
    cell = rows[0].cells["cpu"]
    assert cell.text() == "pass (= original on cuda; cpu output differs)"
    assert cell.differing_lines == ("--- original on emulated cuda", "+++ fixed on cpu", "@@ line 2 @@", "-amp True", "+amp False")
    out = io.StringIO()
    write_full(Report(rows, NO_GPU, [], 0), out)
    text = out.getvalue()
    assert "p.py [cpu] pass: = original on cuda; cpu output differs" in text
    assert "    -amp True\n" in text and "    +amp False\n" in text
    out = io.StringIO()
    write_json(Report(rows, NO_GPU, [], 0), out)
    runs_json = json.loads(out.getvalue())["programs"][0]["runs"]
    assert runs_json["cpu"]["differing_lines"][-2:] == ["-amp True", "+amp False"]
    assert runs_json["cuda"]["differing_lines"] is None


# -- whole runs --------------------------------------------------------------------------------

TIMED = '''"""Fits a line and prints each epoch's loss with its run time, the date and its process id."""
import os
import time

import torch

torch.manual_seed(0)
weight = torch.zeros(3, 1).{move}.requires_grad_()
points = torch.randn(32, 3).{move}
targets = points @ torch.tensor([[1.0], [-2.0], [0.5]]).{move}
print("pid", os.getpid(), "started", time.strftime("%Y-%m-%d %H:%M:%S"), time.time_ns())
for epoch in range(3):
    began = time.perf_counter()
    error = ((points @ weight - targets) ** 2).mean(){change}
    error.backward()
    with torch.no_grad():
        weight -= 0.1 * weight.grad
        weight.grad = None
    print(f"epoch {{epoch}} loss {{error.item():.4f}} ({{time.perf_counter() - began + time.time_ns() % 997:.2f}}s)")
'''

HALF = '''"""Mixed-precision regression on values near 100, with the torch.cuda.amp API."""
import torch
from torch.cuda.amp import autocast
{device}
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)).{move}
with torch.no_grad():
    model[2].bias.fill_({bias})
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(256, 64).{move} * 3
y = x.sum(1, keepdim=True) * 4 + 100
for step in range(4):
    with {autocast}:
        out = model(x)
    loss = (out.float() - y).abs().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {{step}} loss {{loss.item():.4f}} first {{out[0].item():.4f}}")
{tail}'''
DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
FIXED_AUTOCAST = 'torch.amp.autocast(device.type, enabled=device.type == "cuda")'
# `.numpy()` of a CUDA tensor: the original fails at its last line, so the cpu run is compared
# with the fixed program under emulation, which computed in float16.
NUMPY_TAIL = 'print("first rows", out[:2, 0].detach(){}.numpy().round(1).tolist())\n'


def _pair(name: str, original: str, fixed: str) -> targets.Program:
    lines_map = targets.line_map(fixed, original)
    return targets.Program(Path(name), name, Path(name).stem, "script", original.encode(), fixed.encode(), 2, (), lines_map)


def _timed(change: str = "") -> tuple[str, str]:
    """The original, and the fixed program (changing its loss by ``change``)."""
    fixed = TIMED.format(move="to(device)", change=change).replace("import torch\n", "import torch\n\n" + DEVICE, 1)
    return TIMED.format(move="cuda()", change=""), fixed


def _half(bias: float = 100.0, tail: str = "", fixed_tail: str = "") -> tuple[str, str]:
    original = HALF.format(device="", move="cuda()", bias=100.0, autocast="autocast()", tail=tail)
    fixed = HALF.format(device=DEVICE, move="to(device)", bias=bias, autocast=FIXED_AUTOCAST, tail=fixed_tail)
    return original, fixed


@pytest.fixture(scope="module")
def verified() -> dict[str, dict]:
    """One verify of the programs above (about 10 s on two idle cores)."""
    pairs = {
        "timed.py": _timed(),
        "timed_changed.py": _timed(change=" * 1.5"),
        "half.py": _half(),
        "half_changed.py": _half(bias=102.0),
        "half_original_fails.py": _half(tail=NUMPY_TAIL.format(""), fixed_tail=NUMPY_TAIL.format(".cpu()")),
    }
    programs = [_pair(name, *texts) for name, texts in pairs.items()]
    probe, rows = verify_programs(programs, torch_root(), Tolerance(), 120, 2)
    return {row.program.display: row.cells for row in rows} | {"probe": probe}


def test_a_program_that_prints_its_own_run_time_passes_with_the_varying_lines_set_aside(verified) -> None:
    cells = verified["timed.py"]
    for mode in ("cpu", "cuda"):
        assert cells[mode].text() == "pass (= original; stdout; 4 varying lines set aside)", cells[mode]
        assert "vary between two runs of the original" in cells[mode].detail


def test_a_fix_that_changes_a_printed_value_still_fails_beside_a_timing(verified) -> None:
    cells = verified["timed_changed.py"]
    for mode in ("cpu", "cuda"):
        assert cells[mode].text() == "FAIL (stdout differs at line 2)", cells[mode]
        assert "4 varying lines" not in cells[mode].reason
        assert "set aside, as they vary between two runs of the original" in cells[mode].detail
        shown = "\n".join(cells[mode].differing_lines)
        assert "@@ line 2 @@" in shown and "-epoch 0 loss" in shown and "+epoch 0 loss" in shown


def test_float16_autocast_output_is_compared_with_the_cpu_at_float16_tolerance(verified) -> None:
    cells = verified["half.py"]
    assert cells["cpu"].text() == "pass (= original; stdout; compared at float16 tolerance)"
    assert "|a - e| <= 0.000977 + 0.00781 * |e|" in cells["cpu"].detail
    # Both float16 on the same device: float32's tolerance, said nowhere.
    assert cells["cuda"].text() == "pass (= original; stdout)"
    # A fixed program that moves the values by 2% fails, float16 or not.
    changed = verified["half_changed.py"]
    assert changed["cpu"].status == FAIL and changed["cuda"].status == FAIL
    assert "compared at float16 tolerance" in changed["cpu"].detail


def test_when_the_original_fails_the_cpu_run_meets_the_emulated_float16_run_at_its_tolerance(verified) -> None:
    cells = verified["half_original_fails.py"]
    assert cells["original"].text().startswith("skipped (original fails: ")
    assert cells["cpu"].text() == "pass (= cuda; stdout; compared at float16 tolerance)"
    assert cells["cuda"].text() == "pass (= cpu; stdout; compared at float16 tolerance)"
    assert cells["cpu"].status == PASS
