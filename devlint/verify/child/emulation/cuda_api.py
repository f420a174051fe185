"""``torch.cuda``, ``torch.accelerator`` and ``torch.get_device_module`` answering as a machine
with one GPU.

Every replaced function first asks whether the emulated device is visible (reading
``CUDA_VISIBLE_DEVICES`` once, see machine.py). When the variable hides it, the function answers as
a CUDA build with no visible GPU does (no device; first use raises "No CUDA GPUs are available");
without CUDA at all it is torch's own. When it is visible:

- queries answer for one device (``is_available``, ``device_count``, ``current_device``,
  ``get_device_name``/``_properties``/``_capability``, ``is_bf16_supported``);
- ``set_device``, ``torch.cuda.device(i)``, ``synchronize``, ``empty_cache``, seeds, streams and
  events are accepted for device 0 (another index raises CUDA's "invalid device ordinal");
  streams and events are no-ops, since every kernel runs synchronously on the CPU;
- memory statistics are the caching allocator's (memory.py); seeds and RNG state are the emulated
  device's own generator's (rng.py);
- features with no CPU meaning (CUDA graphs, NVML queries, external streams, the CUDA runtime
  API, raw allocations, scattering to more than one GPU) raise ``EmulationUnsupportedError``,
  which verify reports as "not emulated".
"""

from __future__ import annotations

import abc
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch

from .machine import (
    CAPABILITY,
    CUDA0,
    MULTIPROCESSORS,
    NAME,
    TOTAL_MEMORY,
    EmulationUnsupportedError,
    Machine,
    cuda_index,
    invalid_device_id,
    invalid_ordinal,
)
from .memory import Memory
from .patches import Patches
from .rng import DeviceRandom
from .tensor import Dispatcher

_MEMORY_COUNTERS = {
    "memory_allocated": "allocated_bytes.all.current",
    "max_memory_allocated": "allocated_bytes.all.peak",
    "memory_reserved": "reserved_bytes.all.current",
    "max_memory_reserved": "reserved_bytes.all.peak",
    "memory_cached": "reserved_bytes.all.current",
    "max_memory_cached": "reserved_bytes.all.peak",
}
_UNSUPPORTED = {
    "CUDAGraph": "CUDA graphs (torch.cuda.CUDAGraph)",
    "graph": "CUDA graphs (torch.cuda.graph)",
    "make_graphed_callables": "CUDA graphs (torch.cuda.make_graphed_callables)",
    "utilization": "NVML queries (torch.cuda.utilization)",
    "temperature": "NVML queries (torch.cuda.temperature)",
    "power_draw": "NVML queries (torch.cuda.power_draw)",
    "clock_rate": "NVML queries (torch.cuda.clock_rate)",
    "memory_usage": "NVML queries (torch.cuda.memory_usage)",
    "list_gpu_processes": "NVML queries (torch.cuda.list_gpu_processes)",
    "ExternalStream": "external CUDA streams (torch.cuda.ExternalStream)",
    "cudart": "the CUDA runtime API (torch.cuda.cudart)",
    "caching_allocator_alloc": "raw allocations (torch.cuda.caching_allocator_alloc)",
}


class Properties:
    """What ``torch.cuda.get_device_properties`` returns, for the emulated device."""

    name = NAME
    major, minor = CAPABILITY
    total_memory = TOTAL_MEMORY
    multi_processor_count = MULTIPROCESSORS
    is_integrated = False
    is_multi_gpu_board = False
    warp_size = 32
    gcnArchName = "NVIDIA CUDA"
    uuid = "00000000-0000-0000-0000-000000000000"
    L2_cache_size = 50 * 1024**2

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // 1024**2}MB, multi_processor_count={self.multi_processor_count})"
        )


class Stream:
    """A CUDA stream of the emulated device: every kernel has finished when it returns, so waiting
    and querying are immediate."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = CUDA0
        self.priority = priority
        self.cuda_stream = id(self)
        self.stream_id = id(self)
        self.device_index = 0
        self.device_type = 1

    def wait_stream(self, stream: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> Any:
        event = event if event is not None else Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def is_capturing(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other.stream_id == self.stream_id

    def __hash__(self) -> int:
        return hash(self.stream_id)

    def __repr__(self) -> str:
        return f"<torch.cuda.Stream device=cuda:0 cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A CUDA event: recording notes the time; ``elapsed_time`` gives the milliseconds between two."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.enable_timing = enable_timing
        self._when: float | None = None

    def record(self, stream: Any = None) -> None:
        self._when = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end_event: Event) -> float:
        if not self.enable_timing or self._when is None or end_event._when is None:
            raise RuntimeError("Both events must be recorded with enable_timing=True before calling elapsed_time()")
        return (end_event._when - self._when) * 1000.0


# ``replace(owner, name, emulated, hidden=None, optional=False)``: see _replacer.
_Replace = Callable[..., None]


def install(patches: Patches, machine: Machine, dispatcher: Dispatcher) -> None:
    """The emulated device's answers in place of torch's CUDA API (see the module docstring)."""
    replace = _replacer(patches, machine)
    _install_queries(replace, patches, machine)
    _install_memory(replace, machine, dispatcher.memory)
    _install_random(replace, patches, machine, dispatcher.random)
    current_stream, set_stream = _install_streams(replace, machine)
    _install_device_contexts(replace, machine, dispatcher)
    _install_unsupported(replace)
    _install_accelerator(replace, machine, current_stream, set_stream)
    _install_parallel(replace)
    if dispatcher.generator_class is not None:
        patches.set(torch, "Generator", dispatcher.generator_class)


def _replacer(patches: Patches, machine: Machine) -> _Replace:
    def replace(
        owner: Any, name: str, emulated: Callable[..., Any], hidden: Callable[..., Any] | None = None, optional: bool = False
    ) -> None:
        """``owner.name`` becomes ``emulated`` while the device is visible (calling it looks for
        the device, as CUDA does, reading CUDA_VISIBLE_DEVICES the first time); ``hidden`` (else
        ``emulated``, whose ``machine.use`` raises CUDA's "No CUDA GPUs are available") where
        CUDA_VISIBLE_DEVICES hides it; torch's own where there is no CUDA at all. A class stays a
        class (``isinstance`` works): its ``__new__`` hands over to torch's. ``optional``: see
        ``Patches.set``."""
        if optional and not hasattr(owner, name):
            return
        original = getattr(owner, name, None)
        if isinstance(emulated, type):
            patches.set(owner, name, _delegating_class(emulated, original, machine))
            return

        def call(*args: Any, **kwargs: Any) -> Any:
            if original is None or machine.visible:
                return emulated(*args, **kwargs)
            if machine.hidden:
                return (hidden or emulated)(*args, **kwargs)
            return original(*args, **kwargs)

        call.__name__ = name
        call.__doc__ = getattr(original, "__doc__", None)
        patches.set(owner, name, call)

    return replace


def _install_queries(replace: _Replace, patches: Patches, machine: Machine) -> None:
    """Availability, the device count and index, the device's properties: one device."""
    cuda = torch.cuda

    def initialised(result: Any = None) -> Callable[..., Any]:
        def call(device: Any = None, *args: Any, **kwargs: Any) -> Any:
            machine.use(_index(device))
            return result() if callable(result) else result

        return call

    def properties(device: Any = None) -> type:
        """torch.cuda.get_device_properties (and so get_device_name and get_device_capability)
        checks the index against the device count itself: an AssertionError, not a CUDA error."""
        index = _index(device)
        machine.use()
        if index is not None and index != 0:
            raise invalid_device_id()
        return Properties

    replace(cuda, "is_available", lambda: True, hidden=_never)
    replace(cuda, "device_count", lambda: 1, hidden=lambda: 0)
    patches.set(cuda, "is_initialized", lambda: machine.initialized)
    replace(cuda, "init", initialised())
    replace(cuda, "_lazy_init", initialised())
    replace(cuda, "current_device", initialised(0))
    replace(cuda, "set_device", initialised())
    replace(cuda, "synchronize", initialised())
    replace(cuda, "get_device_properties", properties)
    replace(cuda, "get_device_name", lambda device=None: properties(device).name)
    replace(cuda, "get_device_capability", lambda device=None: (properties(device).major, properties(device).minor))
    replace(cuda, "get_arch_list", lambda: [f"sm_{CAPABILITY[0]}{CAPABILITY[1]}"], hidden=lambda: [])
    replace(cuda, "is_bf16_supported", lambda including_emulation=True: True, hidden=_never)
    replace(cuda, "is_current_stream_capturing", _never)


def _never(*args: Any, **kwargs: Any) -> bool:
    """The hidden answer of several queries."""
    return False


def _install_random(replace: _Replace, patches: Patches, machine: Machine, random: DeviceRandom) -> None:
    """Seeds and RNG state: the emulated device's own generator's (rng.py)."""
    cuda = torch.cuda
    # Seeds reach the device's generator before CUDA starts, as torch queues them on a GPU.
    patches.set(cuda, "manual_seed", lambda seed: random.manual_seed(seed))
    patches.set(cuda, "manual_seed_all", lambda seed: random.manual_seed(seed))
    patches.set(cuda, "seed", lambda: random.seed())
    patches.set(cuda, "seed_all", lambda: random.seed())
    patches.set(cuda, "default_generators", (random.generator,))
    replace(cuda, "initial_seed", lambda: _then(machine.use(), random.initial_seed()))
    replace(cuda, "get_rng_state", lambda device="cuda": _then(machine.use(_index(device)), random.get_state()))
    replace(cuda, "get_rng_state_all", lambda: _then(machine.use(), [random.get_state()]))
    replace(cuda, "set_rng_state", lambda state, device="cuda": _then(machine.use(_index(device)), random.set_state(state)))
    replace(cuda, "set_rng_state_all", lambda states: _then(machine.use(), random.set_state(states[0])))


def _install_streams(replace: _Replace, machine: Machine) -> tuple[Callable[..., Stream], Callable[[Stream], None]]:
    """Streams and events, and which stream is current; ``current_stream`` and ``set_stream``
    come back for torch.accelerator's."""
    current = {"stream": Stream()}
    default_stream = current["stream"]

    def current_stream(device: Any = None) -> Stream:
        machine.use(_index(device))
        return current["stream"]

    def set_stream(stream: Stream) -> None:
        machine.use()
        current["stream"] = stream

    class StreamContext:
        def __init__(self, stream: Stream | None) -> None:
            self.stream = stream
            self.previous: Stream | None = None

        def __enter__(self) -> Stream | None:
            self.previous = current["stream"]
            if self.stream is not None:
                set_stream(self.stream)
            return self.stream

        def __exit__(self, *exc_info: object) -> None:
            current["stream"] = self.previous

    _register_stream_bases()
    replace(torch.cuda, "Stream", Stream)
    replace(torch.cuda, "Event", Event)
    replace(torch.cuda, "current_stream", current_stream)
    replace(torch.cuda, "default_stream", lambda device=None: default_stream)
    replace(torch.cuda, "set_stream", set_stream)
    replace(torch.cuda, "stream", StreamContext)
    replace(torch.cuda, "StreamContext", StreamContext)
    return current_stream, set_stream


def _register_stream_bases() -> None:
    """torch 2.4's dynamo asserts, when torch/_dynamo/device_interface.py is first imported (an
    optimizer's first step imports it), that torch.cuda.Stream and Event subclass the abstract
    bases of torch/_streambase.py, as torch's own classes do; emulation's are registered as their
    virtual subclasses there. Later releases made those bases plain classes deriving from
    torch.Stream and torch.Event and check nothing: nothing to register. A registration cannot be
    undone, and needs no undoing: it names emulation's classes, which torch never holds once
    emulation is uninstalled."""
    from torch._streambase import _EventBase, _StreamBase

    for base, emulated in ((_StreamBase, Stream), (_EventBase, Event)):
        if isinstance(base, abc.ABCMeta):
            base.register(emulated)


def _install_device_contexts(replace: _Replace, machine: Machine, dispatcher: Dispatcher) -> None:
    class DeviceContext:
        """``torch.cuda.device(i)`` and ``device_of(tensor)``: only device 0 (or -1/None: no change)."""

        def __init__(self, device: Any) -> None:
            index = _index(device, none_for_negative=True)
            if index is not None:
                machine.use(index)

        def __enter__(self) -> None:
            pass

        def __exit__(self, *exc_info: object) -> None:
            pass

    def device_of(value: Any) -> DeviceContext:
        return DeviceContext(0 if dispatcher.is_emulated(value) else -1)

    replace(torch.cuda, "device", DeviceContext)
    replace(torch.cuda, "device_of", device_of)


def _install_unsupported(replace: _Replace) -> None:
    """What has no CPU meaning raises EmulationUnsupportedError; NVTX ranges are no-ops."""
    for name, feature in _UNSUPPORTED.items():
        replace(torch.cuda, name, _unsupported(feature))
    for name in ("range_push", "range_pop", "mark", "range"):
        replace(torch.cuda.nvtx, name, _nvtx(name))


def _then(_: Any, value: Any) -> Any:
    """``value``, once the call before it (``machine.use()``, which may raise) has run."""
    return value


def _install_memory(replace: _Replace, machine: Machine, memory: Memory) -> None:
    """The caching allocator's statistics (memory.py). Reading them does not start CUDA: before
    the first allocation they are empty, as torch reports for an uninitialised device."""

    def counter(key: str) -> Callable[..., int]:
        def call(device: Any = None) -> int:
            _index(device)
            return memory.get(key) if machine.initialized else 0

        return call

    def stats(device: Any = None) -> OrderedDict:
        _index(device)
        return OrderedDict(memory.flat() if machine.initialized else {})

    def reset(action: Callable[[], None]) -> Callable[..., None]:
        def call(device: Any = None) -> None:
            machine.use(_index(device))
            action()

        return call

    def empty_cache() -> None:
        if machine.initialized:
            memory.empty_cache()

    def free_and_total(device: Any = None) -> tuple[int, int]:
        machine.use(_index(device))
        return TOTAL_MEMORY - memory.get("reserved_bytes.all.current"), TOTAL_MEMORY

    def summary(device: Any = None, abbreviated: bool = False) -> str:
        machine.use(_index(device))
        allocated, reserved = memory.get("allocated_bytes.all.current"), memory.get("reserved_bytes.all.current")
        return f"|  emulated CUDA device: {allocated} bytes allocated, {reserved} bytes reserved  |"

    zero = lambda device=None: 0  # noqa: E731 - an uninitialised device's counters
    for name, key in _MEMORY_COUNTERS.items():
        replace(torch.cuda, name, counter(key), hidden=zero)
    replace(torch.cuda, "memory_stats", stats, hidden=lambda device=None: OrderedDict())
    replace(torch.cuda, "memory_summary", summary)
    replace(torch.cuda, "mem_get_info", free_and_total)
    replace(torch.cuda, "empty_cache", empty_cache, hidden=lambda: None)
    replace(torch.cuda, "ipc_collect", lambda: machine.use())
    for name in ("reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached"):
        replace(torch.cuda, name, reset(memory.reset_peak))
    replace(torch.cuda, "reset_accumulated_memory_stats", reset(memory.reset_accumulated))
    # a cap on the caching allocator: the emulated device has no limit to enforce
    replace(torch.cuda, "set_per_process_memory_fraction", lambda fraction, device=None: machine.use(_index(device)))
    # torch.accelerator's memory functions (2.9+; names_table.py has each name's first release).
    c = torch._C
    replace(c, "_accelerator_emptyCache", empty_cache, hidden=lambda: None, optional=True)
    replace(c, "_accelerator_getDeviceStats", lambda index=None: memory.nested() if machine.initialized else {}, optional=True)
    replace(c, "_accelerator_resetAccumulatedStats", lambda index=None: memory.reset_accumulated(), optional=True)
    replace(c, "_accelerator_resetPeakStats", lambda index=None: memory.reset_peak(), optional=True)
    replace(c, "_accelerator_getMemoryInfo", free_and_total, optional=True)


def _install_accelerator(
    replace: _Replace, machine: Machine, current_stream: Callable[..., Any], set_stream: Callable[..., Any]
) -> None:
    """``torch.accelerator`` and ``torch.get_device_module()`` reach the device through these.
    torch.accelerator came in 2.6 and grew since: each name is optional (names_table.py), and a
    torch that lacks one has no function that calls it."""
    c = torch._C

    def use(index: Any = None, *args: Any) -> int:
        machine.use(_index(index, none_for_negative=True))
        return 0

    replace(c, "_accelerator_getAccelerator", lambda: torch.device("cuda"), optional=True)
    # torch.accelerator.device_count() before 2.9 (later releases ask torch.cuda.device_count)
    replace(c, "_accelerator_deviceCount", lambda: 1, hidden=lambda: 0, optional=True)
    replace(c, "_get_accelerator", lambda check=False: torch.device("cuda"))
    for name in ("_accelerator_getDeviceIndex", "_accelerator_setDeviceIndex", "_accelerator_exchangeDevice"):
        replace(c, name, use, optional=True)
    replace(c, "_accelerator_maybeExchangeDevice", use, optional=True)
    replace(c, "_accelerator_synchronizeDevice", use, optional=True)
    replace(c, "_accelerator_getStream", current_stream, optional=True)
    replace(c, "_accelerator_setStream", set_stream, optional=True)
    replace(c, "_accelerator_isAllocatorInitialized", lambda: machine.initialized, optional=True)
    replace(c, "_accelerator_emptyHostCache", lambda: None, optional=True)
    replace(
        c,
        "_accelerator_getDeviceCapability",
        lambda index=None: {"supported_dtypes": [torch.float32, torch.float64, torch.float16, torch.bfloat16]},
        optional=True,
    )


def _install_parallel(replace: _Replace) -> None:
    """``nn.DataParallel`` on the one emulated device: its scatter and gather, without copy streams."""
    from torch.nn.parallel import _functions, comm

    def scatter(tensor: torch.Tensor, devices: Any = None, *args: Any, out: Any = None, **kwargs: Any) -> tuple:
        if out is not None or [_index(d) for d in devices or [0]] != [0]:
            raise EmulationUnsupportedError("scattering to more than one GPU (there is one)")
        return (tensor.to(CUDA0),)

    def gather(tensors: Any, dim: int = 0, destination: Any = None, *, out: Any = None) -> torch.Tensor:
        if out is not None:
            raise EmulationUnsupportedError("torch.cuda.comm.gather(out=...)")
        target = torch.device("cpu") if destination == -1 or destination == "cpu" else CUDA0
        return torch.cat([t.to(target) for t in tensors], dim)

    replace(comm, "scatter", scatter)
    replace(comm, "gather", gather)
    replace(_functions, "_get_stream", lambda device: None)


def _delegating_class(emulated: type, original: Any, machine: Machine) -> type:
    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        if not machine.emulates_build and original is not None:
            return original(*args, **kwargs)
        machine.use()
        return object.__new__(cls)

    return type(emulated.__name__, (emulated,), {"__new__": __new__, "__module__": "torch.cuda"})


def _index(device: Any, none_for_negative: bool = False) -> int | None:
    """The CUDA index ``device`` names (None: the current device); raise for what is not CUDA."""
    if device is None:
        return None
    if isinstance(device, int) and device < 0 and none_for_negative:
        return None
    index = cuda_index(device)
    if index is False:
        if isinstance(device, torch.device) or isinstance(device, str):
            raise ValueError(f"Expected a cuda device, but got: {device}")
        raise invalid_ordinal()
    return index


def _unsupported(feature: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise EmulationUnsupportedError(feature)

    return call


def _nvtx(name: str) -> Callable[..., Any]:
    if name == "range":

        class Range:
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                pass

            def __enter__(self) -> None:
                pass

            def __exit__(self, *exc_info: object) -> None:
                pass

        return Range
    return lambda *args, **kwargs: 0
