"""The claims about PyTorch the DEV6 fixes rely on, checked on this CPU-only build of torch.

Each fix must (a) do on a CUDA machine what the original did, (b) run on a machine with no
accelerator, (c) use only APIs of the project's torch-version. (a) rests on PyTorch's
documentation (cited in each rule's fix note): the accelerator of a CUDA machine is CUDA, and
``torch.get_device_module(cuda_device)`` is ``torch.cuda`` itself. (b) is tested here: what the
original CUDA calls do without CUDA, why the obvious generic replacements are wrong, and that
every form the fixes write runs and gives the original's value. (c) is tested in
tests/test_dev6_rules.py against the version table in devlint.rulekit.accelerator.
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from devlint.engine.lint import fix_text  # noqa: E402
from devlint.registry import select_rules  # noqa: E402
from devlint.settings import FixSettings  # noqa: E402

pytestmark = pytest.mark.skipif(torch.cuda.is_available() or torch.accelerator.is_available(), reason="claims about a machine without an accelerator")


def test_the_trap_accelerator_functions_raise_without_an_accelerator() -> None:
    for call in (
        torch.accelerator.synchronize,
        torch.accelerator.empty_cache,
        torch.accelerator.memory_allocated,
        torch.accelerator.current_device_index,
        torch.accelerator.reset_peak_memory_stats,
    ):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
            call()


def test_what_the_cuda_calls_do_without_cuda() -> None:
    # values a fix must keep where it falls back
    assert torch.cuda.memory_allocated() == 0
    assert torch.cuda.max_memory_allocated() == 0
    assert torch.cuda.memory_reserved() == torch.cuda.max_memory_reserved() == 0
    assert torch.cuda.memory_stats() == {}
    assert torch.cuda.empty_cache() is None
    assert torch.cuda.device_count() == 0
    # calls the original makes fail: the fix may make them run
    for call in (torch.cuda.synchronize, torch.cuda.current_device, torch.cuda.current_stream, torch.cuda.mem_get_info):
        with pytest.raises((AssertionError, RuntimeError)):
            call()
    with pytest.raises(AttributeError):
        torch.cuda.reset_peak_memory_stats()


def test_the_generic_forms_that_would_be_wrong() -> None:
    # torch.cpu.device_count() is 1 where torch.cuda.device_count() was 0: `world = device_count()` changes
    assert torch.get_device_module("cpu").device_count() == 1 != torch.cuda.device_count()
    # torch.cpu.current_device() is a string where torch.cuda.current_device() is an int
    assert torch.get_device_module("cpu").current_device() == "cpu"
    # torch.cpu has no memory functions
    assert not hasattr(torch.cpu, "memory_allocated") and not hasattr(torch.cpu, "empty_cache")
    # the CPU's events keep no time: no fix for timing events
    start = torch.Event(enable_timing=True)
    with pytest.raises(RuntimeError):
        start.record()


def test_the_forms_the_fixes_write_run_and_keep_the_values() -> None:
    assert torch.accelerator.device_count() == torch.cuda.device_count()
    assert (torch.accelerator.memory_allocated() if torch.accelerator.is_available() else 0) == torch.cuda.memory_allocated()
    assert (torch.accelerator.memory_stats() if torch.accelerator.is_available() else {}) == torch.cuda.memory_stats()
    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
    assert device == torch.device("cpu")
    module = torch.get_device_module(device)
    assert module is torch.cpu and torch.get_device_module("cpu") is torch.cpu
    module.synchronize()
    side = module.Stream()
    with module.stream(side):
        pass
    module.current_stream().wait_stream(side)
    # a string device and a device object both give their type through torch.device(...)
    assert torch.device("cpu").type == torch.device(torch.device("cpu")).type == "cpu"
    with pytest.raises(AttributeError):
        "cpu".type  # noqa: B018 - why DEV603 writes torch.device(d).type for a string d


def _linear_output(device_type: str, **options) -> torch.Tensor:
    torch.manual_seed(0)
    layer = torch.nn.Linear(8, 8)
    x = torch.randn(4, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "CUDA is not available ... Disabling autocast"
        with torch.autocast(device_type, dtype=torch.bfloat16, **options):
            return layer(x)


def test_autocast_stays_off_on_the_cpu_as_the_cuda_original_was() -> None:
    original = _linear_output("cuda")
    kind = torch.device("cpu").type
    fixed = _linear_output(kind, enabled=True and kind != "cpu")
    assert original.dtype == fixed.dtype == torch.float32
    assert torch.equal(original, fixed)
    # `device.type` alone would switch CPU autocast on and change CPU numerics
    assert _linear_output(kind).dtype == torch.bfloat16


def test_grad_scaler_stays_off_on_the_cpu_as_the_cuda_original_was() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not torch.amp.GradScaler("cuda").is_enabled()
        assert not torch.amp.GradScaler().is_enabled()  # no device: CUDA
    assert not torch.amp.GradScaler("cpu", enabled="cpu" != "cpu").is_enabled()
    assert torch.amp.GradScaler("cpu").is_enabled()  # what `device.type` alone would do


PROGRAM = """\
import torch

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(3, 2).to(device)
x = torch.randn(5, 3).to(device)
scaler = torch.amp.GradScaler("cuda")
torch.cuda.synchronize()
side = torch.cuda.Stream()
with torch.cuda.stream(side):
    y = model(x)
torch.cuda.current_stream().wait_stream(side)
with torch.autocast("cuda", dtype=torch.bfloat16):
    z = model(x)
torch.cuda.empty_cache()
print(torch.equal(y, model(x)), z.dtype, torch.cuda.device_count(), torch.cuda.memory_allocated())
print(sorted(torch.cuda.memory_stats()), scaler.is_enabled(), torch.zeros(1, device=torch.cuda.current_device()).device)
"""
# What the program prints on a CPU-only machine once fixed: the values the CUDA calls return
# there (0 GPUs, 0 bytes, no stats), autocast and scaling off, the CPU device.
EXPECTED = "True torch.float32 0 0\n[] False cpu\n"


@pytest.mark.parametrize("version", [(2, 5), (2, 6), (2, 7), (2, 9), (2, 13)])
def test_fixed_program_runs_on_the_cpu_at_every_torch_version(version: tuple[int, int], capsys) -> None:
    rules = select_rules(["DEV6"])
    settings = FixSettings(torch_version=version)
    fixed = fix_text(PROGRAM, "program.py", rules, settings).text
    assert "torch.cuda.synchronize()" not in fixed and "torch.cuda.Stream()" not in fixed
    _run(fixed)
    assert capsys.readouterr().out == EXPECTED


def test_fixed_memory_calls_run_on_the_cpu(capsys) -> None:
    source = "import torch\ntorch.cuda.reset_peak_memory_stats()\nprint(torch.cuda.max_memory_allocated() // 2**20)\n"
    with pytest.raises(AttributeError):
        _run(source)  # the original fails on a CPU-only build
    fixed = fix_text(source, "memory.py", select_rules(["DEV602"]), FixSettings(torch_version=(2, 9))).text
    assert "torch.cuda" not in fixed
    _run(fixed)
    assert capsys.readouterr().out == "0\n"


def test_the_deprecated_memory_names_are_the_functions_they_call(capsys) -> None:
    from devlint.torchfacts.names import CUDA_MEMORY_ALIASES

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the readers answer as their functions do without CUDA (why they run there below 2.6)
        assert torch.cuda.memory_cached() == torch.cuda.max_memory_cached() == 0
        for name, called in CUDA_MEMORY_ALIASES.items():
            assert getattr(torch.cuda, called).__name__ == called
            assert f"{called}(device=device)" in _source_of(getattr(torch.cuda, name))
        with pytest.raises(AttributeError):
            torch.cuda.reset_max_memory_allocated()
    source = "import torch\ntorch.cuda.reset_max_memory_cached()\nprint(torch.cuda.max_memory_cached() // 2**20)\n"
    fixed = fix_text(source, "memory.py", select_rules(["DEV602"]), FixSettings(torch_version=(2, 9))).text
    assert "torch.cuda" not in fixed and "torch.accelerator.reset_peak_memory_stats()" in fixed
    _run(fixed)
    assert capsys.readouterr().out == "0\n"


def _source_of(function: object) -> str:
    import inspect

    return inspect.getsource(function)  # type: ignore[arg-type]


def _run(source: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(source, "program.py", "exec"), {"__name__": "__main__"})  # noqa: S102


def test_the_claims_of_issue_22_item_7() -> None:
    # torch.cuda.OutOfMemoryError is the device-generic class itself: renaming it changes nothing
    assert torch.cuda.OutOfMemoryError is torch.OutOfMemoryError
    # the CUDA seeds are queued without CUDA; torch.manual_seed moves the CPU generator: not the same
    state = torch.get_rng_state()
    torch.cuda.manual_seed_all(123)
    torch.cuda.manual_seed(123)
    assert torch.equal(torch.get_rng_state(), state)
    torch.manual_seed(123)
    assert not torch.equal(torch.get_rng_state(), state)
    # the device queries raise without CUDA; torch.accelerator's capability is no (major, minor)
    for query in (torch.cuda.get_device_name, torch.cuda.get_device_properties, torch.cuda.get_device_capability):
        with pytest.raises((AssertionError, RuntimeError)):
            query()
    with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
        torch.accelerator.get_device_capability()
    # torch.cpu's event (the device module's) records, waits and synchronizes; it keeps no time
    event = torch.get_device_module("cpu").Event()
    event.record()
    event.wait()
    event.synchronize()
    assert event.query() and not hasattr(event, "elapsed_time")
    # torch.Event is made without an accelerator, but recording it raises: the timing fix is unsafe
    with pytest.raises(RuntimeError, match="doesn't support events"):
        torch.Event(enable_timing=True).record()
    # mem_get_info's generic twin still needs an accelerator
    with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
        torch.accelerator.get_memory_info()


def test_whether_cuda_is_named_after_a_guard_reads_each_statement_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`if not <check>: return` protects the rest of its block when a later statement names CUDA:
    asked of every guard of a block, the block is read forward once, with the answers of reading
    all of it after each guard."""
    import random

    from devlint.rulekit import accelerator

    read: list[int] = []
    monkeypatch.setattr(accelerator, "_names_cuda", lambda ctx, statement: read.append(statement[0]) or statement[1])
    rng = random.Random(3)
    for _ in range(500):
        body = [(i, rng.random() < 0.3) for i in range(rng.randint(1, 12))]
        later, read[:] = accelerator._CudaLater(None, body), []  # type: ignore[arg-type]
        for position in (rng.randrange(len(body)) for _ in range(8)):
            assert later.after(position) == any(names for _, names in body[position + 1 :])
        assert len(read) == len(set(read))
