"""The emulated CUDA of `devlint verify`, behaviour by behaviour.

Each case is a few lines a CUDA program runs and what CUDA does with them: a value, or an
exception type and a message. The table runs under emulation on the CPU (in CI) and, on a
machine with a GPU, on the real GPU, where it must come out the same (here it skips). Where
emulation differs from a GPU by design (random numbers come from the CPU generator, autocast
computes in float32, what emulation does not model), the case says so and gives both outcomes.
"""

from __future__ import annotations

import _thread
import copy
import io
import os
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from devlint.torchfacts.api_versions import SINCE
from devlint.verify.child.emulation import Emulation, EmulationUnsupportedError
from devlint.verify.child.emulation.releases import release

HAS_GPU = torch.cuda.is_available()
ORIGINAL_CUDA_VERSION = torch.version.cuda
# A CUDA build on a machine without NVIDIA's driver: with the device hidden, emulation leaves CUDA to
# torch's own code (machine.py, CUDA_BUILD), whose first CUDA call then fails with "Found no NVIDIA
# driver on your system" (torch/cuda/__init__.py, _lazy_init via the driver check), not the "No
# CUDA GPUs are available" that a GPU machine's driver gives.
DRIVERLESS_CUDA_BUILD = ORIGINAL_CUDA_VERSION is not None and not os.path.exists("/proc/driver/nvidia/version")
NEEDS_A_DRIVER = ("cuda() with device 0 hidden", "CUDA_VISIBLE_DEVICES='': a CUDA build with no GPU")
BACKENDS = [
    "emulated",
    pytest.param("gpu", marks=pytest.mark.skipif(not HAS_GPU, reason="needs a GPU that torch can see")),
]


@dataclass(frozen=True)
class Raises:
    kind: type[BaseException] | tuple[type[BaseException], ...]
    message: str  # a regular expression the message must match


@dataclass(frozen=True)
class Case:
    run: Callable[[], Any]
    expected: Any
    # What a real GPU gives where emulation differs from it by design (the reason says why).
    on_gpu: Any = None
    reason: str = ""
    # CUDA_VISIBLE_DEVICES for the case (None: unset); with a GPU such a case needs a fresh process.
    visible_devices: str | None = field(default=None)
    set_visible: bool = False
    # The public torch APIs the case calls that came after the oldest supported release (their
    # first releases are in devlint/torchfacts/api_versions.py): an older torch has none to emulate.
    needs: tuple[str, ...] = ()


RUNNING = release(torch.__version__)


def _missing_api(case: Case) -> str | None:
    """Why the running torch cannot run ``case`` (it lacks an API the case calls), else None."""
    for name in case.needs:
        if RUNNING is not None and RUNNING < SINCE[name]:
            return f"{name} came in torch {SINCE[name][0]}.{SINCE[name][1]}; this is torch {torch.__version__}"
    return None


SAME_DEVICE = r"Expected all tensors to be on the same device"
NO_CUDA = r"not compiled with CUDA|No CUDA GPUs are available"


def _values(t: torch.Tensor) -> list:
    return t.detach().cpu().tolist()


def _where(*tensors: torch.Tensor) -> list[str]:
    return [str(t.device) for t in tensors]


# -- moving tensors ---------------------------------------------------------------------------


def _cuda_methods() -> Any:
    x = torch.arange(6.0).view(2, 3)
    moved = [x.cuda(), x.cuda(0), x.to("cuda"), x.to(torch.device("cuda", 0)), x.to("cuda:0", torch.float64)]
    moved.append(torch.ones(2).to(moved[0]))
    return _where(*moved), moved[4].dtype, _values(moved[0]), moved[0].is_cuda, moved[0].get_device(), x.get_device()


def _same_object_when_already_there() -> Any:
    x = torch.ones(2).cuda()
    return x.cuda() is x, x.to("cuda") is x, x.to("cuda", copy=True) is x


def _cpu_copies() -> Any:
    x = torch.ones(2).cuda()
    back = x.cpu()
    back[0] = 5
    return str(back.device), type(back) is torch.Tensor, _values(x), str(x.to("cpu").device)


def _factories() -> Any:
    made = [
        torch.zeros(2, device="cuda"),
        torch.ones(2, 2, device=torch.device("cuda")),
        torch.full((2,), 3.0, device="cuda:0"),
        torch.arange(3, device="cuda"),
        torch.tensor([1.0, 2.0], device="cuda"),
        torch.empty(2, device="cuda"),
        torch.eye(2, device="cuda"),
        torch.linspace(0, 1, 3, device="cuda"),
        torch.randn(2, device="cuda"),
    ]
    base = made[0]
    derived = [torch.zeros_like(base), torch.ones_like(base), torch.rand_like(base), base.new_zeros(3), base.new_tensor([1.0])]
    derived.append(torch.zeros_like(torch.ones(2), device="cuda"))
    return _where(*made), _where(*derived), _values(made[2])


def _non_blocking() -> Any:
    x = torch.arange(4.0).pin_memory().to("cuda", non_blocking=True)
    return str(x.device), _values(x), str(x.to("cpu", non_blocking=True).device)


def _invalid_ordinal() -> Any:
    return torch.ones(1).cuda(1)


def _legacy_types() -> Any:
    floats = torch.cuda.FloatTensor(2, 3)
    longs = torch.cuda.LongTensor([1, 2])
    typed = torch.ones(2).type(torch.cuda.FloatTensor)
    half = torch.ones(2).type("torch.cuda.HalfTensor")
    return (
        _where(floats, longs, typed, half),
        (floats.dtype, longs.dtype, half.dtype),
        _values(longs),
        isinstance(typed, torch.cuda.FloatTensor),
        isinstance(typed, torch.cuda.LongTensor),
        isinstance(torch.ones(1), torch.cuda.FloatTensor),
        typed.type(),
        typed.type(torch.FloatTensor).device.type,
    )


def _default_tensor_type() -> Any:
    torch.set_default_tensor_type(torch.cuda.DoubleTensor)
    try:
        made = torch.zeros(2)
        return str(made.device), made.dtype, str(torch.get_default_device())
    finally:
        torch.set_default_tensor_type(torch.FloatTensor)


def _default_device() -> Any:
    torch.set_default_device("cuda")
    try:
        made = torch.ones(2)
        with torch.device("cpu"):
            host = torch.ones(1)
        return str(made.device), str(host.device), str(torch.get_default_device())
    finally:
        _reset_default_device()


def _mixed_operands() -> tuple:
    # CUDA's kernels name the GPU first whatever the order of the operands
    found = []
    for left, right in ((torch.ones(2), torch.ones(2, device="cuda")), (torch.ones(2, device="cuda"), torch.ones(2))):
        try:
            left + right
        except RuntimeError as error:
            found.append(str(error).rsplit(", ", 1)[-1])
    return tuple(found)


def _cpu_default_device() -> tuple:
    # pyro's conftest: set_default_device("cpu") on a GPU machine. torch's device context gives
    # as_tensor / asarray / tensor the CPU, so a CUDA tensor passed to them is copied there, and
    # mixing the copy with the original fails naming the CUDA device first.
    x = torch.ones(2, device="cuda")
    torch.set_default_device("cpu")
    try:
        copies = torch.as_tensor(x), torch.asarray(x), torch.tensor([1.0])
        try:
            mixed = str(x + copies[0])
        except RuntimeError as error:
            mixed = str(error)
        return tuple(str(c.device) for c in copies) + (str(torch.ones(1).device), str(x.device), mixed)
    finally:
        _reset_default_device()


def _reset_default_device() -> None:
    """``torch.set_default_device(None)``, the documented reset, leaving the thread as a fresh one.
    The reset stores None in torch._GLOBAL_DEVICE_CONTEXT.device_context, and torch 2.4's
    get_default_device reads ``.device`` of whatever is stored there (AttributeError on a GPU
    too; 2.11 reads the mode stack instead): a later case that asks for the default device would
    fail on that, not on what it checks. A fresh thread stores nothing."""
    torch.set_default_device(None)
    if getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", True) is None:
        del torch._GLOBAL_DEVICE_CONTEXT.device_context


def _made_in_a_thread() -> str:
    made: list[torch.Tensor] = []
    worker = threading.Thread(target=lambda: made.append(torch.ones(1)))
    worker.start()
    worker.join()
    return str(made[0].device)


def _defaults_in_threads() -> Any:
    """The default device is the calling thread's; the default tensor type the process's."""
    torch.set_default_device("cuda")
    try:
        per_thread = _made_in_a_thread()
    finally:
        _reset_default_device()
    torch.set_default_tensor_type(torch.cuda.FloatTensor)
    try:
        per_process = _made_in_a_thread()
    finally:
        torch.set_default_tensor_type(torch.FloatTensor)
    return per_thread, per_process


def _device_context() -> Any:
    with torch.device("cuda"):
        inside = torch.randn(2)
    return str(inside.device), str(torch.ones(1).device)


# -- modules, autograd, optimizers ------------------------------------------------------------


def _module_cuda() -> Any:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    first = model[0].weight
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model.cuda()
    inputs = torch.randn(5, 3).cuda()
    for _ in range(2):
        optimizer.zero_grad()
        model(inputs).pow(2).mean().backward()
        optimizer.step()
    state = optimizer.state[first]
    host = copy.deepcopy(model).cpu()
    return (
        first is model[0].weight,
        isinstance(first, nn.Parameter),
        _where(first, model[1].running_mean, first.grad, state["exp_avg"]),
        str(state["step"].device),
        torch.allclose(model(inputs).cpu(), host(inputs.cpu()), atol=1e-6),
    )


def _module_to_and_back() -> Any:
    model = nn.Linear(2, 2).to("cuda")
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.ones(1, 2, device="cuda")).sum().backward()
    sgd.step()
    momentum = sgd.state[model.weight]["momentum_buffer"]
    model.to("cpu")
    return str(momentum.device), str(model.weight.device), type(model.weight) is nn.Parameter


def _module_to_keywords() -> Any:
    moved = [nn.Linear(2, 2).to(device="cuda"), nn.Linear(2, 2).to(device=torch.device("cuda", 0), dtype=torch.float64)]
    moved.append(nn.Linear(2, 2).to(device=torch.device("cuda"), non_blocking=True))
    return _where(*(m.weight for m in moved)), moved[1].weight.dtype


def _convert_after_backward() -> Any:
    model = nn.Linear(3, 1).cuda()
    weight = model.weight
    out = model(torch.ones(2, 3, device="cuda")).sum()
    out.backward()  # the graph still holds the parameters
    model.half()
    halved = (weight is model.weight, model.weight.dtype, str(model.weight.device), str(model.weight.grad.device))
    model.cpu()
    return halved, str(model.weight.device), type(model.weight) is nn.Parameter, str(model.weight.grad.device)


def _autograd() -> Any:
    x = torch.tensor([1.0, 2.0, 3.0]).cuda().requires_grad_()
    y = (x * x).sum()
    y.backward()
    (g,) = torch.autograd.grad((x**3).sum(), x)
    seen = []
    z = torch.ones(2, device="cuda", requires_grad=True)
    z.register_hook(lambda grad: seen.append(str(grad.device)))
    (z * 2).sum().backward()
    return str(x.grad.device), _values(x.grad), str(g.device), _values(g), seen, y.grad_fn.name()


def _deepcopy_and_print() -> Any:
    model = nn.Linear(2, 1).cuda()
    twin = copy.deepcopy(model)
    text = repr(model.weight)
    return str(twin.weight.device), twin.weight is not model.weight, text.startswith("Parameter containing:"), "device='cuda:0'" in text


def _data_parallel() -> Any:
    torch.manual_seed(0)
    model = nn.Linear(3, 2).cuda()
    wrapped = nn.DataParallel(model, device_ids=[0])
    x = torch.randn(4, 3)
    out = wrapped(x.cuda())
    return str(out.device), torch.allclose(out.cpu(), model(x.cuda()).cpu())


# -- devices meeting -----------------------------------------------------------------------------


def _host_lengths() -> Any:
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 4, batch_first=True)
    x = torch.randn(2, 5, 3)
    log_probs = torch.randn(6, 2, 5).log_softmax(2)
    targets, lengths = torch.tensor([[1, 2], [3, 1]]), torch.tensor([6, 6])

    def run(device: str) -> tuple:
        packed = nn.utils.rnn.pack_padded_sequence(x.to(device), torch.tensor([5, 3]), batch_first=True)
        padded, sizes = nn.utils.rnn.pad_packed_sequence(lstm.to(device)(packed)[0], batch_first=True)
        ctc = F.ctc_loss(log_probs.to(device), targets, lengths, torch.tensor([2, 2]))
        return padded, sizes, packed.batch_sizes, ctc

    host = run("cpu")
    padded, sizes, batch_sizes, ctc = run("cuda")
    same = torch.allclose(padded.cpu(), host[0], atol=1e-5) and torch.allclose(ctc.cpu(), host[3], atol=1e-4)
    return _where(padded, sizes, batch_sizes, ctc), same


def _rnn_hidden_on_cpu() -> Any:
    gru = nn.GRU(3, 4).cuda()
    return gru(torch.randn(2, 1, 3).cuda(), torch.zeros(1, 1, 4))


def _rnn_input_on_cpu() -> Any:
    lstm = nn.LSTM(3, 4).cuda()
    return lstm(torch.randn(2, 1, 3))


def _shape_only_meetings() -> Any:
    x, host = torch.ones(1, 3).cuda(), torch.zeros(2, 3)
    shaped = [x.expand_as(host), torch.arange(6.0).cuda().view_as(host), torch.arange(6.0).cuda().reshape_as(host)]
    return _where(*shaped), [tuple(t.shape) for t in shaped]


def _legacy_variable() -> Any:
    from torch.autograd import Variable

    data = torch.ones(2).cuda()
    wrapped = Variable(data, requires_grad=True)
    (wrapped * 3).sum().backward()
    Variable(data).add_(1)
    return _where(wrapped, wrapped.grad, Variable(torch.ones(1))), _values(data)


def _mixed_add() -> Any:
    return torch.ones(2).cuda() + torch.ones(2)


def _mixed_mm() -> Any:
    return torch.mm(torch.ones(2, 3), torch.ones(3, 2).cuda())


def _mixed_linear() -> Any:
    return nn.Linear(3, 1).cuda()(torch.ones(2, 3))


def _mixed_cat() -> Any:
    return torch.cat([torch.ones(2).cuda(), torch.ones(2)])


def _mixed_loss_weight() -> Any:
    loss = nn.CrossEntropyLoss(weight=torch.ones(3))
    return loss(torch.randn(4, 3).cuda(), torch.tensor([0, 1, 2, 0]).cuda())


def _allowed_meetings() -> Any:
    x = torch.arange(4.0).cuda()
    scaled = x * torch.tensor(2.0)  # a 0-dim CPU tensor joins any device
    picked = x[torch.tensor([0, 2])]  # CPU indices
    x[torch.tensor([1])] = torch.tensor([9.0])
    copied = torch.zeros(4).cuda().copy_(torch.ones(4))
    back = torch.zeros(4).copy_(x)
    return _where(scaled, picked, copied, back), _values(x)


def _numpy_of_cuda() -> Any:
    return torch.ones(2).cuda().numpy()


def _real_values() -> Any:
    x = torch.tensor([1.5, 2.5]).cuda()
    return x.sum().item(), x.tolist(), float(x[0]), bool(x[1] > 2), f"{x[0].item():.2f}", repr(x)


# -- pinned memory, loaders ------------------------------------------------------------------------


def _pinning() -> Any:
    pinned = torch.ones(3).pin_memory()
    return pinned.is_pinned(), torch.ones(3).is_pinned(), str(pinned.device)


def _pin_a_cuda_tensor() -> Any:
    return torch.ones(2).cuda().pin_memory()


def _loader_pins() -> Any:
    seen = []
    for workers in (0, 1):
        loader = DataLoader(TensorDataset(torch.arange(6.0).view(3, 2)), batch_size=2, pin_memory=True, num_workers=workers)
        (batch,) = next(iter(loader))
        seen.append((batch.is_pinned(), str(batch.device), str(batch.to("cuda", non_blocking=True).device)))
    return seen


# -- checkpoints ------------------------------------------------------------------------------------


def _roundtrip(obj: Any, **load: Any) -> Any:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, **load)


def _checkpoints() -> Any:
    on_gpu = {"w": torch.arange(3.0).cuda()}
    on_cpu = {"w": torch.arange(3.0)}
    locations: list[str] = []

    def note(storage: Any, location: str) -> Any:
        locations.append(location)
        return storage

    loaded = [
        _roundtrip(on_gpu)["w"],
        _roundtrip(on_gpu, map_location="cpu")["w"],
        _roundtrip(on_gpu, map_location="cuda")["w"],
        _roundtrip(on_gpu, map_location=torch.device("cuda"))["w"],
        _roundtrip(on_gpu, map_location={"cuda:0": "cpu"})["w"],
        _roundtrip(on_gpu, map_location=note)["w"],
        _roundtrip(on_gpu, map_location=lambda storage, loc: storage.cuda())["w"],
        _roundtrip(on_cpu)["w"],
        _roundtrip(on_cpu, map_location="cuda")["w"],
    ]
    return _where(*loaded), locations, _values(loaded[0])


def _model_checkpoint() -> Any:
    model = nn.Linear(2, 2).cuda()
    restored = nn.Linear(2, 2).cuda()
    restored.load_state_dict(_roundtrip(model.state_dict()))
    host = nn.Linear(2, 2)
    host.load_state_dict(_roundtrip(model.state_dict()))  # copies from the GPU into the CPU model
    whole = _roundtrip(model, weights_only=False)
    return (
        str(restored.weight.device),
        torch.equal(restored.weight.cpu(), model.weight.cpu()),
        str(host.weight.device),
        str(whole.weight.device),
        isinstance(whole.weight, nn.Parameter),
    )


# -- torch.cuda and torch.accelerator --------------------------------------------------------------


def _queries() -> Any:
    torch.cuda.set_device(0)
    properties = torch.cuda.get_device_properties(0)
    with torch.cuda.device(0):
        index = torch.cuda.current_device()
    return (
        torch.cuda.is_available(),
        torch.cuda.device_count(),
        index,
        isinstance(torch.cuda.get_device_name(0), str),
        properties.total_memory > 0,
        len(torch.cuda.get_device_capability()),
        torch.cuda.is_bf16_supported(),
    )


def _no_ops() -> Any:
    torch.ones(1).cuda()
    done = [
        torch.cuda.synchronize(),
        torch.cuda.empty_cache(),
        torch.cuda.reset_peak_memory_stats(),
        torch.cuda.manual_seed(1),
        torch.cuda.manual_seed_all(1),
        torch.cuda.set_per_process_memory_fraction(0.5),
    ]
    counters = [torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated(), torch.cuda.memory_reserved()]
    return done, [type(c) for c in counters], isinstance(torch.cuda.memory_stats(), dict), torch.cuda.is_initialized()


def _streams_and_events() -> Any:
    x = torch.arange(3.0).cuda()
    stream = torch.cuda.Stream()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    with torch.cuda.stream(stream):
        y = x * 2
    torch.cuda.current_stream().wait_stream(stream)
    end.record()
    end.synchronize()
    return _values(y), isinstance(start.elapsed_time(end), float), stream.query(), isinstance(stream, torch.cuda.Stream)


def _other_device_index() -> Any:
    with torch.cuda.device(1):
        return torch.ones(1).cuda()


def _accelerator() -> Any:
    accelerator = torch.accelerator
    return (
        accelerator.is_available(),
        str(accelerator.current_accelerator()),
        accelerator.device_count(),
        accelerator.current_device_index(),
        accelerator.synchronize(),
        torch.get_device_module("cuda") is torch.cuda,
        torch.get_device_module() is torch.cuda,
        str(torch.ones(1, device=accelerator.current_accelerator()).device),
    )


# -- mixed precision -----------------------------------------------------------------------------------


def _autocast() -> Any:
    model = nn.Linear(4, 2).cuda()
    with torch.autocast("cuda", dtype=torch.float16):
        enabled = torch.is_autocast_enabled("cuda")
        out = model(torch.ones(3, 4).cuda())
    with torch.cuda.amp.autocast():
        legacy = torch.is_autocast_enabled("cuda")
    return enabled, legacy, out.dtype, str(out.device)


def _grad_scaler() -> Any:
    torch.manual_seed(0)
    model = nn.Linear(3, 1).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    results = []
    for scaler in (torch.amp.GradScaler("cuda"), torch.cuda.amp.GradScaler()):
        loss = model(torch.ones(2, 3).cuda()).sum()
        scaled = scaler.scale(loss)
        scaled.backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        results.append((scaler.is_enabled(), round(scaled.item() / loss.item()), scaler.get_scale()))
    return results


# -- random numbers, visibility, what emulation does not model ------------------------------------------


def _random_on_cuda() -> Any:
    torch.manual_seed(0)
    drawn = torch.randn(3, device="cuda")
    torch.manual_seed(0)
    return torch.equal(drawn.cpu(), torch.randn(3))


def _cuda_generator() -> Any:
    generator = torch.Generator(device="cuda").manual_seed(3)
    drawn = torch.randn(3, generator=generator, device="cuda")
    host = torch.randn(3, generator=torch.Generator().manual_seed(3))
    return str(generator.device), isinstance(generator, torch.Generator), str(drawn.device), torch.equal(drawn.cpu(), host)


def _parameter_kinds() -> Any:
    """DistributedDataParallel refuses a model holding an UninitializedParameter; a CUDA parameter
    is none (torch before 2.6 counts a tensor marked `_is_param` as one of every subclass)."""
    weight = torch.nn.Linear(2, 2).cuda().weight
    uninitialized = torch.nn.parameter.UninitializedParameter
    return isinstance(weight, torch.nn.Parameter), isinstance(weight, uninitialized), hasattr(weight, "_is_param"), weight.is_cuda


def _visible() -> Any:
    return torch.cuda.is_available(), torch.cuda.device_count()


def _visible_is_read_once() -> Any:
    first = torch.cuda.is_available()
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    return first, torch.cuda.is_available(), str(torch.ones(1).cuda().device)


def _hidden_then_shown() -> Any:
    hidden = torch.cuda.is_available()
    os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    return hidden, torch.cuda.is_available()


def _shown_before_the_first_query() -> Any:
    torch.zeros(2)  # CPU work, seeds and type checks do not start CUDA
    torch.cuda.manual_seed(0)
    checked = isinstance(torch.ones(1), torch.cuda.FloatTensor)
    initialised = torch.cuda.is_initialized()
    os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    return checked, initialised, torch.cuda.is_available()


def _hidden_cuda_tensor() -> Any:
    return torch.ones(1).cuda()


def _compiled() -> Any:
    model = nn.Linear(2, 1).cuda()
    compiled = torch.compile(model)
    return str(compiled(torch.ones(3, 2).cuda()).device), compiled is model


def _cuda_graph() -> Any:
    return type(torch.cuda.CUDAGraph()).__name__


# -- generators, conversions, random streams (each row failed before emulation modelled it) ----


def _cpu_generator_for_a_cuda_draw() -> Any:
    return torch.randn(2, device="cuda", generator=torch.Generator())


def _cuda_generator_for_a_cpu_draw() -> Any:
    return torch.randperm(4, generator=torch.Generator(device="cuda"))


def _as_tensor_of_an_array_copies() -> Any:
    array = np.zeros(3, dtype=np.float32)
    made = [torch.as_tensor(array, device="cuda"), torch.asarray(array, device="cuda")]
    array[0] = 5.0
    return _where(*made), [_values(t) for t in made]


def _as_tensor_of_a_cpu_tensor() -> Any:
    host = torch.ones(2)
    moved = torch.as_tensor(host, device="cuda")
    host[0] = 7.0
    total = moved + torch.ones(2, device="cuda")
    back = torch.as_tensor(moved, device="cpu")
    back[1] = 9.0
    return str(moved.device), str(total.device), _values(moved), str(back.device), moved is torch.as_tensor(moved, device="cuda")


def _host_draws_leave_the_cuda_stream() -> Any:
    torch.manual_seed(0)
    first = torch.rand(2, device="cuda")
    torch.manual_seed(0)
    torch.rand(5)  # a CPU draw between: the CUDA stream does not move
    again = torch.rand(2, device="cuda")
    torch.manual_seed(0)
    host = torch.rand(2)
    torch.manual_seed(0)
    torch.rand(3, device="cuda")  # a CUDA draw between: the CPU stream does not move
    return torch.equal(first, again), torch.equal(host, torch.rand(2))


def _cuda_seeding() -> Any:
    torch.cuda.manual_seed(7)
    seed = torch.cuda.initial_seed()
    state = torch.cuda.get_rng_state()
    first = torch.rand(3, device="cuda")
    torch.cuda.set_rng_state(state)
    again = torch.rand(3, device="cuda")
    torch.cuda.manual_seed_all(7)
    dropped = F.dropout(torch.ones(8, device="cuda"), 0.5)
    torch.cuda.manual_seed_all(7)
    return seed, torch.equal(first, again), torch.equal(dropped, F.dropout(torch.ones(8, device="cuda"), 0.5))


# -- memory, types, build, autocast, errors, int devices -----------------------------------------


def _memory_statistics() -> Any:
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    x = torch.ones(1000, device="cuda")
    held = torch.cuda.memory_allocated() - before
    stats = torch.cuda.memory_stats()
    reserved = torch.cuda.memory_reserved()
    free, total = torch.cuda.mem_get_info()
    del x
    after = torch.cuda.memory_allocated() - before
    peak = torch.cuda.max_memory_allocated() - before
    torch.cuda.reset_peak_memory_stats()
    return (
        held,
        after,
        peak,
        torch.cuda.max_memory_allocated() == torch.cuda.memory_allocated(),
        stats["allocated_bytes.all.current"] == before + held,
        reserved >= before + held,
        free <= total - reserved,
    )


def _accelerator_memory() -> Any:
    x = torch.ones(1000, device="cuda")
    return x.numel(), torch.accelerator.memory_allocated() == torch.cuda.memory_allocated()


def _legacy_cpu_types() -> Any:
    x = torch.ones(2, device="cuda")
    return isinstance(x, torch.FloatTensor), isinstance(x, torch.cuda.FloatTensor), isinstance(torch.ones(2), torch.FloatTensor)


def _type_names_and_parameter_printing() -> Any:
    weight = nn.Linear(2, 1).cuda().weight
    made = nn.Parameter(torch.ones(2, device="cuda"))
    return (
        type(torch.ones(1, device="cuda")).__name__,
        type(weight).__name__,
        type(made).__name__,
        repr(made).splitlines()[:2],
        isinstance(made, nn.Parameter),
        f"{torch.tensor(1.5, device='cuda'):.2f}",
    )


def _build_facts() -> Any:
    return (
        torch.version.cuda is not None,
        torch.backends.cuda.is_built(),
        torch.backends.cudnn.is_available(),
        isinstance(torch.backends.cudnn.version(), int),
    )


def _autocast_dtypes() -> Any:
    a = torch.ones(4, 4, device="cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        half = (a @ a).dtype, nn.Linear(4, 4).cuda()(a).dtype, torch.softmax(a, 0).dtype
    with torch.autocast("cuda", dtype=torch.bfloat16):
        brain = (a @ a).dtype
    return half, brain, (a @ a).dtype, (torch.ones(2, 2) @ torch.ones(2, 2)).dtype


def _cuda_autocast_policy() -> Any:
    a = torch.ones(4, 4, device="cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        h = a @ a
        lower = [torch.mv(a, a[0]).dtype, torch.einsum("ij,jk->ik", a, a).dtype]
        to_float32 = [F.softmax(h, -1).dtype, h.sum().dtype, (h**2).dtype, torch.exp(h).dtype, F.layer_norm(h, (4,)).dtype]
        kept = [F.softmax(h, -1, dtype=torch.float16).dtype, torch.relu(h).dtype, torch.addcmul(a, h, h).dtype]
        attention, _ = nn.MultiheadAttention(4, 2).cuda()(a[None], a[None], a[None])
    return lower, to_float32, kept, attention.dtype


def _binary_cross_entropy_under_autocast() -> Any:
    with torch.autocast("cuda"):
        probabilities = torch.sigmoid(torch.ones(2, 2, device="cuda") @ torch.ones(2, 2, device="cuda"))
        return F.binary_cross_entropy(probabilities, torch.ones(2, 2, device="cuda"))


def _cpu_work_inside_cuda_autocast() -> Any:
    with torch.autocast("cuda", dtype=torch.float16):
        return (torch.ones(2, 2) @ torch.ones(2, 2)).dtype


def _device_name_past_the_last_gpu() -> Any:
    return torch.cuda.get_device_name(1)


def _cpu_convolution_given_cuda_input() -> Any:
    return nn.Conv2d(1, 1, 3)(torch.ones(1, 1, 5, 5, device="cuda"))


def _int_devices() -> Any:
    moved = torch.ones(2).to(0)
    module = nn.Linear(2, 2).to(0)
    return str(torch.device(0)), str(moved.device), str(module.weight.device), isinstance(torch.device(0), torch.device)


class _Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        _Twice.seen = str(grad.device)
        return grad * 2


class _SavesItsOutput(torch.autograd.Function):
    """Saves its output and its input: the output is kept as data and rebuilt when unpacked."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = x.exp()
        ctx.save_for_backward(y, x)
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        y, x = ctx.saved_tensors
        _SavesItsOutput.seen = (str(y.device), str(x.device))
        return grad * y


def _saved_outputs_in_custom_backward() -> Any:
    # pyro's Beta/Dirichlet rsample and linear_operator's solve: a saved output is used with the
    # gradient, on the device
    x = torch.zeros(2, device="cuda", requires_grad=True)
    _SavesItsOutput.apply(x).sum().backward()
    return _SavesItsOutput.seen, str(x.grad.device), x.grad.tolist()


def _gradcheck_on_the_device() -> Any:
    # gradcheck's undefined-grad check wraps each output in UndefinedGrad (a C++ node): its clone
    # is on the output's device; then gradcheck and gradgradcheck pass, as on a GPU
    x = torch.rand(2, 3, dtype=torch.float64, device="cuda", requires_grad=True)
    undefined = torch._C._functions.UndefinedGrad()(x * 2)
    checks = torch.autograd.gradcheck(torch.sin, (x,)), torch.autograd.gradgradcheck(torch.sin, (x,))
    return str(undefined.device), checks


def _grad_of_inputs_on_two_devices() -> Any:
    # the engine holds each gradient to its own input: a CPU leaf moved into a CUDA graph gets a
    # CPU gradient (kornia's rgb_shift gradcheck: CPU shifts, a CUDA image)
    a = torch.ones(3, device="cuda", requires_grad=True)
    b = torch.full((1,), 2.0, requires_grad=True)
    ga, gb = torch.autograd.grad((a * b.to(a)).sum(), [a, b])
    (a * b.to(a)).sum().backward(inputs=[a, b])
    shift = torch.tensor([0.5], dtype=torch.float64, requires_grad=True)
    image = torch.rand(2, 3, dtype=torch.float64, device="cuda", requires_grad=True)
    passes = torch.autograd.gradcheck(lambda i, s: i + s.to(i), (image, shift))
    return [str(t.device) for t in (ga, gb, a.grad, b.grad)], ga.tolist(), gb.tolist(), passes


def _root_gradient_on_the_cpu() -> Any:
    # a gradient for a CUDA output must be on the device (engine.cpp, validate_outputs)
    x = torch.ones(3, device="cuda", requires_grad=True)
    return torch.autograd.grad(x * 2, x, torch.ones(3))


def _root_gradient_without_dimensions() -> Any:
    # ... unless it has no dimension: the engine moves it to the output's device
    x = torch.ones(3, device="cuda", requires_grad=True)
    (grad,) = torch.autograd.grad((x * 2).sum(), x, torch.tensor(1.0))
    return str(grad.device), grad.tolist()


def _scaled_sum(x: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor, float]:
    total = torch.zeros(x.shape, device=x.device)
    for _ in range(n):
        total = total + x * 2
    if x.dim() == 0:
        raise ValueError(f"expected a vector, got {x}")
    return total, x.cpu(), float(total.sum().item())


def _reads_is_cuda(x: torch.Tensor) -> bool:
    return x.is_cuda


def _branches_on_the_device(x: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    # kornia's color conversions pick a kernel by `image.device.type`; the interpreter would
    # read the CPU its data is on and take the other branch
    if bias is not None:
        x = x + bias
    if x.device.type == "cpu":
        return x + 1
    return x + 2


class _Scaler(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x).relu() + 1


def _torchscript_results() -> Any:
    # the interpreter runs ATen ops on the inputs' device: results computed from the device are
    # on it, a .cpu() inside is on the host (kornia's and captum's test_jit)
    x = torch.ones(2, 3, device="cuda")
    total, host, value = torch.jit.script(_scaled_sum)(x, 2)
    traced = torch.jit.trace(lambda t: t * 2, x)(x)
    scripted = torch.jit.script(_Scaler().cuda())(x)
    moved_after = torch.jit.script(_Scaler()).cuda()(x)
    traced_module = torch.jit.trace(_Scaler().cuda(), x)(x)
    devices = [str(t.device) for t in (total, host, traced, scripted, moved_after, traced_module)]
    return devices, total.tolist(), value, torch.jit.script(_scaled_sum)(torch.ones(3), 1)[0].device.type


def _torchscript_reads_the_device() -> Any:
    return torch.jit.script(_reads_is_cuda)(torch.ones(3, device="cuda"))


def _minus_optional(x: torch.Tensor, shift: Optional[torch.Tensor] = None) -> torch.Tensor:
    # kornia's morphology: both branches fill the offset with a scalar where x is 0
    if shift is None:
        offset = torch.zeros_like(x)
        offset[x == 0] = -5.0
    else:
        offset = shift.clone()
        offset[x == 0] = -5.0
    return (x - offset).flip(0)


def _stacked(x: torch.Tensor, n: int) -> torch.Tensor:
    parts: list[torch.Tensor] = []
    for i in range(n):
        parts.append(x * i)
    return torch.stack(parts)


def _stacked_on_host(x: torch.Tensor, n: int) -> torch.Tensor:
    parts: list[torch.Tensor] = []
    for _ in range(n):
        parts.append(torch.ones(x.shape))
    return torch.stack(parts)


def _torchscript_lists_and_optionals() -> Any:
    # an Optional argument left None, a list filled in a loop: from the device, or made on the host
    x = torch.ones(3, device="cuda")
    minus, stacked, on_host = (torch.jit.script(f) for f in (_minus_optional, _stacked, _stacked_on_host))
    results = minus(x), minus(x, x), stacked(x, 3), on_host(x, 2)
    return [str(t.device) for t in results], results[2].tolist()


def _to_device_of(host: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return host.to(like.device)


def _torchscript_moves_a_host_argument() -> Any:
    # the interpreter's `to` of a CPU tensor to the CPU hands back the argument itself: the
    # caller's tensor stays on the host, the result is on the device
    host = torch.zeros(2)
    moved = torch.jit.script(_to_device_of)(host, torch.ones(1, device="cuda"))
    return str(moved.device), str(host.device), moved is host


def _torchscript_branches_on_the_device() -> Any:
    return torch.jit.script(_branches_on_the_device)(torch.zeros(2, device="cuda")).tolist()


def _torchscript_mixes_devices() -> Any:
    return torch.jit.script(_Scaler())(torch.ones(2, 3, device="cuda"))


def _gradients_in_custom_backward_and_hooks() -> Any:
    x = torch.ones(2, 3, device="cuda", requires_grad=True)
    _Twice.apply(x).sum().backward()
    layer, seen = nn.Linear(3, 1).cuda(), []
    layer.register_full_backward_hook(lambda module, grad_in, grad_out: seen.append(_where(*grad_in, *grad_out)))
    layer(x).sum().backward()
    parallel = nn.DataParallel(nn.Linear(3, 1).cuda())
    (grad,) = torch.autograd.grad(parallel(x).sum(), x)
    return _Twice.seen, seen, str(grad.device)


class _Tagged(torch.Tensor):
    """A subclass with torch's default __torch_function__: every result of a call on it is one."""


def _names(*tensors: torch.Tensor) -> list[str]:
    return [type(t).__name__ for t in tensors]


def _subclass_keeps_its_class() -> Any:
    # Tensor.__torch_function__ (torch/_tensor.py) converts each result to the class, on any device
    t = torch.arange(3.0).as_subclass(_Tagged)
    moved = [t.cuda(), t.to("cuda"), t.to(torch.device("cuda", 0), torch.float64), torch.zeros_like(t, device="cuda")]
    on, other = moved[0], torch.ones(3, device="cuda")
    computed = [on + 1, other - on, on * other, torch.cat([on, other]), on.sum(), on[1:], on.exp().log(), on.data]
    back = (on * 2).cpu()
    return (
        _names(*moved, *computed),
        _where(*moved, *computed),
        all(isinstance(x, _Tagged) for x in (*moved, *computed)),
        (on.is_cuda, on.get_device(), _values(computed[1]), on.as_subclass(torch.Tensor).device.type),
        (type(back).__name__, str(back.device), back.tolist()),
        repr(on + 1),
    )


class _Made(torch.Tensor):
    """Made with torch.Tensor._make_subclass, carrying a note."""

    @staticmethod
    def __new__(cls, data: torch.Tensor, note: str) -> Any:
        made = torch.Tensor._make_subclass(cls, data, data.requires_grad)
        made.note = note
        return made


class _Aliased(torch.Tensor):
    """Made with Tensor.__new__ of a tensor: an alias of it."""

    def __new__(cls, data: torch.Tensor) -> Any:
        return super().__new__(cls, data)


def _made_subclasses() -> Any:
    data = torch.arange(2.0, device="cuda")
    made, aliased = _Made(data, "kept"), _Aliased(data)
    data.add_(1)  # both share the data
    try:
        torch.add(made, aliased)
        mixed = "added"
    except TypeError as error:  # neither class is a subclass of the other: each handler declines
        mixed = str(error)
    back = made.cpu()
    return (
        _names(made, aliased, made * 2, aliased * 2),
        _where(made, aliased, made * 2, aliased * 2),
        (made.note, _values(made), _values(aliased)),
        mixed,
        (type(back).__name__, str(back.device), hasattr(back, "note")),
    )


def _flat(value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _flat(item)]
    if isinstance(value, dict):
        return _flat(list(value.values()))
    return [value]


def _unwrap(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(item) for item in value)
    if isinstance(value, dict):
        return {key: _unwrap(item) for key, item in value.items()}
    return value.plain if isinstance(value, _Traced) else value


class _Traced(torch.Tensor):
    """Carries the set of sources every result came from through each call, as pyro's
    ProvenanceTensor does: unwraps its arguments, calls, wraps the results."""

    @staticmethod
    def __new__(cls, data: torch.Tensor, sources: frozenset) -> Any:
        if not sources:
            return data
        made = data.as_subclass(cls)
        made.plain, made.sources = data, sources
        return made

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):  # type: ignore[override]
        sources = frozenset().union(*(t.sources for t in _flat([args, kwargs or {}]) if isinstance(t, _Traced)))
        result = func(*_unwrap(args), **_unwrap(kwargs or {}))
        if isinstance(result, (tuple, list)):
            return type(result)(_Traced(r, sources) if isinstance(r, torch.Tensor) else r for r in result)
        return _Traced(result, sources) if isinstance(result, torch.Tensor) else result


def _traced_subclass() -> Any:
    x = _Traced(torch.arange(3.0), frozenset({"x"}))
    y = _Traced(torch.ones(3), frozenset({"y"}))
    on = x.cuda()
    mixed = on * y.to("cuda") + torch.ones(3, device="cuda")
    parts = torch.stack([on, mixed]).max(dim=0)
    back = parts.values.cpu()
    # pyro's test_provenance_tensor: torch.as_tensor reads its data as data (no __torch_function__)
    converted = torch.as_tensor(x, device="cuda", dtype=torch.float64)
    results = (on, mixed, parts.values, parts.indices)
    return (
        _names(*results, back, converted),
        _where(*results, back, converted),
        [sorted(r.sources) for r in (*results, back)],
        (_values(mixed), _values(parts.indices), back.tolist(), _values(converted)),
        (type(on.plain).__name__, str(on.plain.device)),
    )


def _subclass_in_a_bare_thread() -> Any:
    # a thread started below threading.Thread (its run() is where emulation enters its mode)
    on, found, done = torch.arange(2.0).as_subclass(_Tagged).cuda(), [], threading.Event()

    def work() -> None:
        found.append(on * 2)
        done.set()

    _thread.start_new_thread(work, ())
    done.wait(60)
    return _names(*found), _where(*found), _values(found[0])


def _subclass_meets_a_cpu_tensor() -> Any:
    return _Traced(torch.ones(3), frozenset({"x"})).cuda() + torch.ones(3)


def _subclass_saved_and_printed() -> Any:
    t = torch.arange(2.0).as_subclass(_Tagged).cuda()
    t.unit = "m"
    buffer = io.BytesIO()
    torch.save(t, buffer)
    loaded = [torch.load(io.BytesIO(buffer.getvalue()), map_location=where, weights_only=False) for where in (None, "cpu")]
    return (_names(*loaded), _where(*loaded), [x.unit for x in loaded], repr(t), f"{t.sum()}")


class _Dispatching(torch.Tensor):
    """A wrapper subclass whose __torch_dispatch__ computes on the tensor it wraps."""

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> Any:
        return torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype, device=elem.device)

    def __init__(self, elem: torch.Tensor) -> None:
        self.elem = elem

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        inner = torch.utils._pytree.tree_map_only(cls, lambda t: t.elem, (args, kwargs or {}))
        return torch.utils._pytree.tree_map_only(torch.Tensor, cls, func(*inner[0], **inner[1]))


def _dispatching_subclass_on_cuda() -> Any:
    return type(_Dispatching(torch.ones(2)).cuda()).__name__


def _record_stream() -> Any:
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        made = torch.ones(2, device="cuda") * 2
    made.record_stream(side)
    return _values(made)


def _out_of_memory() -> Any:
    try:
        torch.empty(10**13, device="cuda")  # 40 TB
    except torch.cuda.OutOfMemoryError as error:
        return type(error).__name__, str(error).startswith("CUDA out of memory. Tried to allocate")
    return "allocated"


def _hidden_gpu_on_first_use() -> Any:
    answers = [torch.cuda.is_available(), torch.cuda.device_count(), torch.cuda.memory_allocated()]
    raised = []
    for use in (torch.cuda.current_device, lambda: torch.zeros(1, device="cuda"), torch.cuda.synchronize):
        try:
            use()
        except RuntimeError as error:
            raised.append(str(error))
    return answers, raised


def _exact_types() -> Any:
    return type(torch.ones(1, device="cuda")) is torch.Tensor, type(nn.Linear(1, 1).cuda().weight) is nn.Parameter


CASES: dict[str, Case] = {
    "cuda() and to()": Case(
        _cuda_methods, (["cuda:0"] * 6, torch.float64, [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], True, 0, -1)
    ),
    "already on cuda: the same tensor": Case(_same_object_when_already_there, (True, True, False)),
    "a parameter on cuda is a Parameter, of no subclass": Case(_parameter_kinds, (True, False, False, True)),
    "cpu() copies": Case(_cpu_copies, ("cpu", True, [1.0, 1.0], "cpu")),
    "device= factories, *_like, new_*": Case(_factories, (["cuda:0"] * 9, ["cuda:0"] * 6, [3.0, 3.0])),
    "non_blocking": Case(_non_blocking, ("cuda:0", [0.0, 1.0, 2.0, 3.0], "cpu")),
    "cuda(1) on one GPU": Case(_invalid_ordinal, Raises(getattr(torch, "AcceleratorError", RuntimeError), "invalid device ordinal")),
    "torch.cuda.*Tensor and .type()": Case(
        _legacy_types,
        (
            ["cuda:0"] * 4,
            (torch.float32, torch.int64, torch.float16),
            [1, 2],
            True,
            False,
            False,
            "torch.cuda.FloatTensor",
            "cpu",
        ),
    ),
    # torch.get_default_device() knows only set_default_device: "cpu" on a GPU too.
    "set_default_tensor_type": Case(_default_tensor_type, ("cuda:0", torch.float64, "cpu")),
    "set_default_device": Case(_default_device, ("cuda:0", "cpu", "cuda:0")),
    "a custom Function's saved output": Case(
        _saved_outputs_in_custom_backward, (("cuda:0", "cuda:0"), "cuda:0", [1.0, 1.0])
    ),
    "gradcheck and gradgradcheck on the device": Case(_gradcheck_on_the_device, ("cuda:0", (True, True))),
    "autograd.grad of inputs on two devices": Case(
        _grad_of_inputs_on_two_devices, (["cuda:0", "cpu", "cuda:0", "cpu"], [2.0] * 3, [3.0], True)
    ),
    "a root gradient on another device than its output": Case(
        _root_gradient_on_the_cpu,
        Raises(RuntimeError, r"^invalid gradient at index 0 - expected device cuda:0 but got cpu$"),
    ),
    "a root gradient without dimensions": Case(_root_gradient_without_dimensions, ("cuda:0", [2.0] * 3)),
    "TorchScript results on the device": Case(
        _torchscript_results,
        (["cuda:0", "cpu", "cuda:0", "cuda:0", "cuda:0", "cuda:0"], [[4.0] * 3] * 2, 24.0, "cpu"),
    ),
    "TorchScript that reads the device": Case(
        _torchscript_reads_the_device,
        Raises(EmulationUnsupportedError, r"^not emulated: TorchScript on the device \(prim::is_cuda of a tensor on the device"),
        on_gpu=True,
        reason="not emulated: the interpreter would read the CPU its data is on",
    ),
    "TorchScript lists and optional arguments": Case(
        _torchscript_lists_and_optionals, (["cuda:0", "cuda:0", "cuda:0", "cpu"], [[0.0] * 3, [1.0] * 3, [2.0] * 3])
    ),
    "TorchScript moving a host argument to the device": Case(
        _torchscript_moves_a_host_argument, ("cuda:0", "cpu", False)
    ),
    "TorchScript that branches on the device": Case(
        _torchscript_branches_on_the_device,
        Raises(EmulationUnsupportedError, r"^not emulated: TorchScript on the device \(prim::type reads the device of a tensor on the device\)"),
        on_gpu=[2.0, 2.0],
        reason="not emulated: the interpreter would read the CPU its data is on and take the other branch",
    ),
    "TorchScript mixing devices": Case(
        _torchscript_mixes_devices,
        Raises(EmulationUnsupportedError, r"^not emulated: TorchScript on the device \(aten::linear of tensors on the device and on the host\)"),
        on_gpu=Raises(RuntimeError, "Expected all tensors to be on the same device"),
        reason="not emulated: where a host tensor inside a graph meets a device one is not followed",
    ),
    "the device-mix message names the GPU first": Case(_mixed_operands, ("cuda:0 and cpu!", "cuda:0 and cpu!")),
    "a CPU default device": Case(
        _cpu_default_device,
        ("cpu", "cpu", "cpu", "cpu", "cuda:0", "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"),
    ),
    "with torch.device('cuda')": Case(_device_context, ("cuda:0", "cpu")),
    "default device per thread, default tensor type per process": Case(_defaults_in_threads, ("cpu", "cuda:0")),
    "Module.cuda(): parameters, buffers, gradients, Adam state": Case(
        _module_cuda, (True, True, ["cuda:0"] * 4, "cpu", True)
    ),
    "Module.to() and back, SGD momentum": Case(_module_to_and_back, ("cuda:0", "cpu", True)),
    "Module.to(device=...) as keywords": Case(_module_to_keywords, (["cuda:0"] * 3, torch.float64)),
    "Module.half() and .cpu() after backward": Case(
        _convert_after_backward, ((True, torch.float16, "cuda:0", "cuda:0"), "cpu", True, "cpu")
    ),
    "autograd and hooks": Case(
        _autograd, ("cuda:0", [2.0, 4.0, 6.0], "cuda:0", [3.0, 12.0, 27.0], ["cuda:0"], "SumBackward0")
    ),
    "deepcopy and printing a parameter": Case(_deepcopy_and_print, ("cuda:0", True, True, True)),
    "DataParallel on one GPU": Case(_data_parallel, ("cuda:0", True)),
    "packed sequences and CTC take CPU lengths": Case(_host_lengths, (["cuda:0", "cpu", "cpu", "cuda:0"], True)),
    "Variable(t) stays where t is and shares its data": Case(_legacy_variable, (["cuda:0", "cuda:0", "cpu"], [2.0, 2.0])),
    "an RNN's hidden state left on the cpu": Case(_rnn_hidden_on_cpu, Raises(RuntimeError, "Input and hidden tensors are not at the same device")),
    "a cpu input to a cuda RNN": Case(_rnn_input_on_cpu, Raises(RuntimeError, "Input and parameter tensors are not at the same device")),
    "expand_as, view_as, reshape_as read only a cpu tensor's shape": Case(
        _shape_only_meetings, (["cuda:0"] * 3, [(2, 3)] * 3)
    ),
    "cuda + cpu": Case(_mixed_add, Raises(RuntimeError, SAME_DEVICE)),
    "mm(cpu, cuda)": Case(_mixed_mm, Raises(RuntimeError, SAME_DEVICE)),
    "cuda Linear on a cpu batch": Case(_mixed_linear, Raises(RuntimeError, SAME_DEVICE)),
    "cat of cuda and cpu": Case(_mixed_cat, Raises(RuntimeError, SAME_DEVICE)),
    "loss weight left on the cpu": Case(_mixed_loss_weight, Raises(RuntimeError, SAME_DEVICE)),
    "cpu scalars, cpu indices, copies": Case(_allowed_meetings, (["cuda:0", "cuda:0", "cuda:0", "cpu"], [0.0, 9.0, 2.0, 3.0])),
    ".numpy() of a cuda tensor": Case(
        _numpy_of_cuda, Raises(TypeError, r"can't convert cuda:0 device type tensor to numpy\. Use Tensor\.cpu\(\)")
    ),
    "item, tolist, print": Case(
        _real_values, (4.0, [1.5, 2.5], 1.5, True, "1.50", "tensor([1.5000, 2.5000], device='cuda:0')")
    ),
    "pin_memory": Case(_pinning, (True, False, "cpu")),
    "pin_memory of a cuda tensor": Case(
        _pin_a_cuda_tensor,
        Raises(RuntimeError, r"cannot pin 'torch\.cuda\.FloatTensor' only dense CPU tensors can be pinned"),
    ),
    "DataLoader(pin_memory=True)": Case(_loader_pins, [(True, "cpu", "cuda:0")] * 2),
    "torch.save/load and map_location": Case(
        _checkpoints, (["cuda:0", "cpu", "cuda:0", "cuda:0", "cpu", "cpu", "cuda:0", "cpu", "cuda:0"], ["cuda:0"], [0.0, 1.0, 2.0])
    ),
    "state_dict and whole-model checkpoints": Case(_model_checkpoint, ("cuda:0", True, "cpu", "cuda:0", True)),
    "torch.cuda queries": Case(_queries, (True, 1, 0, True, True, 2, True)),
    "torch.cuda no-ops and statistics": Case(_no_ops, ([None] * 6, [int] * 3, True, True)),
    "streams and events": Case(_streams_and_events, ([0.0, 2.0, 4.0], True, True, True)),
    "torch.cuda.device(1) on one GPU": Case(_other_device_index, Raises(RuntimeError, "invalid device ordinal")),
    "torch.accelerator, get_device_module": Case(
        _accelerator,
        (True, "cuda", 1, 0, None, True, True, "cuda:0"),
        needs=("torch.accelerator.current_device_index", "torch.get_device_module"),
    ),
    "autocast": Case(_autocast, (True, True, torch.float16, "cuda:0")),
    "GradScaler": Case(_grad_scaler, [(True, 65536, 65536.0)] * 2),
    "random numbers on cuda": Case(
        _random_on_cuda,
        True,
        on_gpu=False,
        reason="emulated CUDA's generator is a CPU generator: one seed gives the CPU's numbers, a GPU's Philox others",
    ),
    "torch.Generator(device='cuda')": Case(
        _cuda_generator,
        # CUDA's generator keeps the index it was given: none (seen on an H200, torch 2.11)
        ("cuda", True, "cuda:0", True),
        on_gpu=("cuda", True, "cuda:0", False),
        reason="emulated CUDA generators are CPU generators",
    ),
    "CUDA_VISIBLE_DEVICES unset": Case(_visible, (True, 1), set_visible=True),
    "CUDA_VISIBLE_DEVICES=0": Case(_visible, (True, 1), visible_devices="0", set_visible=True),
    "CUDA_VISIBLE_DEVICES=''": Case(_visible, (False, 0), visible_devices="", set_visible=True),
    "CUDA_VISIBLE_DEVICES=1": Case(_visible, (False, 0), visible_devices="1", set_visible=True),
    "CUDA_VISIBLE_DEVICES=-1": Case(_visible, (False, 0), visible_devices="-1", set_visible=True),
    "CUDA_VISIBLE_DEVICES is read once": Case(_visible_is_read_once, (True, True, "cuda:0"), set_visible=True),
    "hidden, then shown too late": Case(_hidden_then_shown, (False, False), visible_devices="1", set_visible=True),
    "shown before the first CUDA query": Case(
        _shown_before_the_first_query, (False, False, True), visible_devices="1", set_visible=True
    ),
    "cuda() with device 0 hidden": Case(
        _hidden_cuda_tensor, Raises(RuntimeError, "^No CUDA GPUs are available$"), visible_devices="", set_visible=True
    ),
    "torch.compile": Case(
        _compiled,
        ("cuda:0", True),
        on_gpu=("cuda:0", False),
        reason="emulation runs the model eagerly: the compiler would take emulated tensors for CUDA ones",
    ),
    "a cpu Generator for a cuda draw": Case(
        _cpu_generator_for_a_cuda_draw,
        Raises(RuntimeError, r"Expected a 'cuda' device type for generator but found 'cpu'"),
    ),
    "a cuda Generator for a cpu draw": Case(
        _cuda_generator_for_a_cpu_draw,
        Raises(RuntimeError, r"Expected a 'cpu' device type for generator but found 'cuda'"),
    ),
    "as_tensor/asarray of an array on cuda copy it": Case(
        _as_tensor_of_an_array_copies, (["cuda:0", "cuda:0"], [[0.0, 0.0, 0.0]] * 2)
    ),
    "as_tensor of a cpu tensor on cuda, and back": Case(
        _as_tensor_of_a_cpu_tensor, ("cuda:0", "cuda:0", [1.0, 1.0], "cpu", True)
    ),
    "cuda and cpu draw from their own generators": Case(_host_draws_leave_the_cuda_stream, (True, True)),
    "torch.cuda seeds, state and dropout": Case(_cuda_seeding, (7, True, True)),
    "memory statistics": Case(_memory_statistics, (4096, 0, 4096, True, True, True, True)),
    "torch.accelerator's memory statistics": Case(
        _accelerator_memory, (1000, True), needs=("torch.accelerator.memory_allocated",)
    ),
    "a cuda tensor is no torch.FloatTensor": Case(_legacy_cpu_types, (False, True, True)),
    "type names and a cuda Parameter's printing": Case(
        _type_names_and_parameter_printing,
        ("Tensor", "Parameter", "Parameter", ["Parameter containing:", "tensor([1., 1.], device='cuda:0', requires_grad=True)"], True, "1.50"),
    ),
    "build facts of a CUDA build": Case(_build_facts, (True, True, True, True)),
    "autocast computes in its dtype": Case(
        _autocast_dtypes, ((torch.float16, torch.float16, torch.float32), torch.bfloat16, torch.float32, torch.float32)
    ),
    "cuda autocast's op lists": Case(
        _cuda_autocast_policy,
        ([torch.float16] * 2, [torch.float32] * 5, [torch.float16, torch.float16, torch.float32], torch.float16),
    ),
    "binary_cross_entropy under cuda autocast": Case(
        _binary_cross_entropy_under_autocast, Raises(RuntimeError, r"binary_cross_entropy and torch\.nn\.BCELoss are unsafe to autocast")
    ),
    "cpu work inside cuda autocast stays float32": Case(_cpu_work_inside_cuda_autocast, torch.float32),
    "get_device_name(1) on one GPU": Case(_device_name_past_the_last_gpu, Raises(AssertionError, "Invalid device id")),
    "a cpu convolution given cuda input": Case(
        _cpu_convolution_given_cuda_input,
        Raises(RuntimeError, r"Input type \(torch\.cuda\.FloatTensor\) and weight type \(torch\.FloatTensor\) should be the same"),
    ),
    "an int device is the current accelerator": Case(_int_devices, ("cuda:0", "cuda:0", "cuda:0", True)),
    "CUDA_VISIBLE_DEVICES='': a CUDA build with no GPU": Case(
        _hidden_gpu_on_first_use,
        ([False, 0, 0], ["No CUDA GPUs are available"] * 3),
        visible_devices="",
        set_visible=True,
    ),
    "exact types": Case(
        _exact_types,
        (False, False),
        on_gpu=(True, True),
        reason="not modelled: an emulated tensor is an instance of a subclass (docs/emulation.md, what emulation does not model)",
    ),
    "custom Function backward, module backward hooks, DataParallel backward": Case(
        _gradients_in_custom_backward_and_hooks, ("cuda:0", [["cuda:0", "cuda:0"]], "cuda:0")
    ),
    "a program's tensor subclass keeps its class on cuda": Case(
        _subclass_keeps_its_class,
        (
            ["_Tagged"] * 12,
            ["cuda:0"] * 12,
            True,
            (True, 0, [1.0, 0.0, -1.0], "cuda"),
            ("_Tagged", "cpu", [0.0, 2.0, 4.0]),
            "_Tagged([1., 2., 3.], device='cuda:0')",
        ),
    ),
    "subclasses made with _make_subclass and Tensor.__new__ on cuda": Case(
        _made_subclasses,
        (
            ["_Made", "_Aliased"] * 2,
            ["cuda:0"] * 4,
            ("kept", [1.0, 2.0], [1.0, 2.0]),
            # torch's C++ dispatch, in torch 2.4 to 2.14 alike
            "Multiple dispatch failed for 'torch.add'; all __torch_function__ handlers returned NotImplemented:\n\n"
            f"  - tensor subclass {_Made}\n  - tensor subclass {_Aliased}\n\n"
            "For more information, try re-running with TORCH_LOGS=not_implemented",
            ("_Made", "cpu", False),
        ),
    ),
    "a __torch_function__ subclass carrying sources (pyro's ProvenanceTensor)": Case(
        _traced_subclass,
        (
            ["_Traced"] * 5 + ["Tensor"],
            ["cuda:0"] * 4 + ["cpu", "cuda:0"],
            [["x"], ["x", "y"], ["x", "y"], ["x", "y"], ["x", "y"]],
            ([1.0, 2.0, 3.0], [1, 1, 1], [1.0, 2.0, 3.0], [0.0, 1.0, 2.0]),
            ("Tensor", "cuda:0"),
        ),
    ),
    "a subclass on cuda in a thread emulation's mode does not reach": Case(
        _subclass_in_a_bare_thread, (["_Tagged"], ["cuda:0"], [0.0, 2.0])
    ),
    "a subclass on cuda meeting a cpu tensor": Case(_subclass_meets_a_cpu_tensor, Raises(RuntimeError, SAME_DEVICE)),
    "a subclass on cuda saved, loaded and printed": Case(
        _subclass_saved_and_printed,
        (["_Tagged"] * 2, ["cuda:0", "cpu"], ["m", "m"], "_Tagged([0., 1.], device='cuda:0')", "_Tagged(1., device='cuda:0')"),
    ),
    "a __torch_dispatch__ subclass on cuda": Case(
        _dispatching_subclass_on_cuda,
        Raises(
            EmulationUnsupportedError,
            r"^not emulated: a tensor subclass with __torch_dispatch__ on the device \(.*_Dispatching\)",
        ),
        on_gpu="_Dispatching",
        reason="not emulated: its handler runs at ATen's dispatcher, below the torch-function layer emulation works in",
    ),
    "record_stream of a tensor made on a side stream": Case(_record_stream, [2.0, 2.0]),
    "an allocation past the device's memory": Case(_out_of_memory, ("OutOfMemoryError", True)),
    "CUDA graphs": Case(
        _cuda_graph,
        Raises(EmulationUnsupportedError, r"^not emulated: CUDA graphs \(torch\.cuda\.CUDAGraph\) \(at .*test_emulation\.py:\d+\)$"),
        on_gpu="CUDAGraph",
        reason="not emulated: verify reports such a program as n/a (not emulated)",
    ),
}


def _outcome(case: Case) -> Any:
    try:
        return case.run()
    except Exception as error:  # noqa: BLE001 - the exception is the outcome
        return error


def _check(outcome: Any, expected: Any) -> None:
    if isinstance(expected, Raises):
        assert isinstance(outcome, expected.kind), outcome
        assert re.search(expected.message, str(outcome)), str(outcome)
        return
    assert not isinstance(outcome, BaseException), repr(outcome)
    assert outcome == expected


@pytest.fixture
def environment(monkeypatch):
    """Each case starts with CUDA_VISIBLE_DEVICES as the case says, and leaves it as it was. A
    variable absent at the start is recorded only through a set: a case that sets it itself
    (`os.environ[...] = ""`) would otherwise leave it behind for the next test of the worker."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    return monkeypatch


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_behaviour(name: str, backend: str, environment) -> None:
    case = CASES[name]
    missing = _missing_api(case)
    if missing is not None:
        pytest.skip(missing)
    expected = case.expected if backend == "emulated" or case.on_gpu is None else case.on_gpu
    if case.visible_devices is not None:
        environment.setenv("CUDA_VISIBLE_DEVICES", case.visible_devices)
    if backend == "gpu":
        if case.set_visible:
            pytest.skip("CUDA reads CUDA_VISIBLE_DEVICES once per process: see test_visible_devices_on_a_gpu")
        _check(_outcome(case), expected)
        return
    if name in NEEDS_A_DRIVER and DRIVERLESS_CUDA_BUILD:
        pytest.skip("a CUDA build of torch without NVIDIA's driver says 'Found no NVIDIA driver' for a hidden GPU")
    with Emulation():
        outcome = _outcome(case)
    _check(outcome, expected)


@pytest.mark.skipif(not HAS_GPU, reason="needs a GPU that torch can see")
@pytest.mark.parametrize("name", sorted(name for name, case in CASES.items() if case.set_visible))
def test_visible_devices_on_a_gpu(name: str) -> None:
    """The CUDA_VISIBLE_DEVICES cases on the real GPU, each in a fresh process."""
    case = CASES[name]
    code = textwrap.dedent(
        f"""
        import pickle, sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import test_emulation as table
        case = table.CASES[{name!r}]
        outcome = table._outcome(case)
        table._check(outcome, case.on_gpu if case.on_gpu is not None else case.expected)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    if case.visible_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = case.visible_devices
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr


def test_uninstalling_puts_torch_back() -> None:
    before = (torch.cuda.is_available, torch.cuda.FloatTensor, torch.UntypedStorage.to, torch.nn.Module._apply, torch.Generator)
    with Emulation(visible=True) as emulation:
        assert torch.cuda.is_available() and emulation.machine.visible
        made = torch.ones(1).cuda()
        assert isinstance(made, emulation.tensor_class)
    after = (torch.cuda.is_available, torch.cuda.FloatTensor, torch.UntypedStorage.to, torch.nn.Module._apply, torch.Generator)
    assert after == before
    assert str(torch.ones(1).device) == "cpu"
    assert torch.cuda.is_available() == HAS_GPU


def test_training_under_emulation_matches_the_cpu_bit_for_bit() -> None:
    """The same loop on the CPU and on emulated CUDA drawing from the CPU's stream (verify's
    reference for the cpu run): same losses, same weights."""

    def train(device: str) -> tuple[list[float], torch.Tensor]:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1)).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
        inputs = torch.randn(16, 5, device=device)
        targets = inputs.sum(dim=1, keepdim=True)
        losses = []
        for _ in range(5):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses, model[0].weight.detach().cpu()

    host_losses, host_weight = train("cpu")
    with Emulation(visible=True, random_stream="host"):
        losses, weight = train("cuda")
    assert losses == host_losses
    assert torch.equal(weight, host_weight)
    # With the device's own stream (as on a GPU), the inputs drawn on it are other numbers.
    with Emulation(visible=True):
        own_stream_losses, _ = train("cuda")
    assert own_stream_losses != host_losses


def test_without_cuda_at_all_a_program_finds_no_gpu_to_unhide(monkeypatch) -> None:
    """verify's cpu run on a machine without a GPU: setting CUDA_VISIBLE_DEVICES shows nothing."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    with Emulation(visible=False) as emulation:
        assert not torch.cuda.is_available()
        assert torch.version.cuda == ORIGINAL_CUDA_VERSION
        with pytest.raises((AssertionError, RuntimeError)):
            torch.ones(1).cuda()
        assert not emulation.machine.initialized


def test_memory_is_returned_when_tensors_die_and_empty_cache_releases_segments() -> None:
    with Emulation(visible=True):
        blocks = [torch.ones(300_000, device="cuda") for _ in range(3)]  # 1.2 MB each: large pool
        held, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
        del blocks
        assert held == 3 * 1_200_128 and reserved >= held
        assert torch.cuda.memory_allocated() == 0
        assert torch.cuda.memory_reserved() == reserved  # cached until empty_cache
        torch.cuda.empty_cache()
        assert torch.cuda.memory_reserved() == 0
        assert torch.cuda.max_memory_allocated() == held
