"""The tables of torch's names that more than one part of devlint reads, each defined once here.

A rule reports what one of these tables lists, and the gate (devlint.gate.conditions) rules a file
out unless it may hold such a name: both must read the same table, or the gate drops findings.
Where a rule needs more than a name (the dtype of a legacy type, the replacement of a deprecated
class) the table carries it, and a reader that needs only the names takes the keys.
tests/test_torch_names.py fails where another module writes a table again.

Read-only: frozensets, tuples (where the order counts or ``str.startswith`` reads them) and
mappings behind ``MappingProxyType``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from devlint.torchfacts.device_api_table import ACCELERATOR, AMP, EVENT, STREAM
from devlint.torchfacts.version import TorchVersion

# -- devices: where a value names a device ----------------------------------------------------

# Tensor and Module methods whose `device=` keyword (or, for `to`, first argument) is a device.
# DEV103 and its gate condition.
DEVICE_METHODS = frozenset({"to", "to_empty", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"})
# torch functions whose first positional argument is a device (not a device *type*, as for
# autocast). DEV103 and its gate condition.
POSITIONAL_DEVICE_FUNCTIONS = ("torch.device", "torch.set_default_device", "torch.Generator")
# The keywords through which torch's calls take a device (`torch.load` calls it `map_location`).
# DEV103, DEV601 and DEV103's gate condition.
DEVICE_KEYWORDS = ("device", "map_location")
# Names that hold a device by the convention of torch code (so does any `*_device`).
# devlint.analysis.devices and devlint.rulekit.value_flow.
DEVICE_NAMES = frozenset({"device", "dev"})
# Parameters named like this hold a device: those names and torch.load's `map_location`. DEV103
# and its gate condition.
DEVICE_PARAM_NAMES = DEVICE_NAMES | {"map_location"}
# `Tensor.cuda`'s keywords for the device (`device_id=` is the keyword of torch < 0.4; it still
# appears in old code), the first one given counts. DEV102 and its gate condition.
CUDA_DEVICE_KEYWORDS = ("device", "device_id")
# Tensor and Module methods that move a value to a device (`x.to(device)`, `x.cuda()`). DEV103,
# DEV302, DEV401, devlint.analysis.devices, devlint.rulekit.value_flow (DEV301 to DEV304) and the
# gate conditions of those.
MOVES = ("to", "cuda")
# Tensor methods that read a tensor's data on the host (DEV301, DEV303), and with `cpu` those
# whose result is on the host whatever the receiver's device (the dataset items of DEV302).
HOST_READ_METHODS = frozenset({"numpy", "item", "tolist"})
TO_HOST = HOST_READ_METHODS | {"cpu"}
# NumPy's array methods that torch.Tensor lacks (2.4.1, 2.13, 2.14.1): a receiver that calls one
# is no tensor, and neither is what it returns (GroundingDINO's notebook: a pipeline's numpy
# `.images`, scaled and `.astype(np.uint8)`).
NUMPY_ONLY_METHODS = frozenset({"astype", "tobytes", "tofile", "copy"})
# Tensor methods that give something other than a tensor on the receiver's device, and the
# methods no tensor has: DEV304's flow (devlint.rulekit.value_flow) and its gate condition.
LEAVES_DEVICE = TO_HOST | NUMPY_ONLY_METHODS | frozenset(
    {"type", "size", "dim", "numel", "nelement", "get_device", "data_ptr", "element_size", "is_contiguous",
     "is_floating_point", "storage", "untyped_storage"}
)
# numpy functions that copy their first argument (a tensor, or a list of tensors) to the host
# through `Tensor.__array__`, which fails for a tensor on the device as `.numpy()` does. DEV304
# and its gate condition.
NUMPY_HOST_COPIES = frozenset(
    {"numpy.array", "numpy.asarray", "numpy.concatenate", "numpy.stack", "numpy.vstack", "numpy.hstack"}
)
# Tensor methods whose result is one tensor on the tensor's device (checked on 2.4.1), as numpy's
# copy of a method's result needs: an object that is moved with `.to()` need not be a tensor, and
# its other methods may return anything (kornia's `Image.to_numpy()` an array, which has no `.cpu()`;
# `Tensor.max(dim)` a tuple). DEV304.
TENSOR_RESULT_METHODS = frozenset({
    "float", "double", "half", "bfloat16", "int", "long", "bool", "detach", "squeeze", "unsqueeze", "view",
    "reshape", "permute", "transpose", "contiguous", "clone", "flatten", "argmax", "argmin", "sum", "mean",
    "abs", "exp", "log", "sigmoid", "softmax", "type_as", "t",
})
# The environment variable through which CUDA is told which GPUs a process sees. DEV201 and its
# gate condition.
VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
# The legacy typed tensor classes (`torch.FloatTensor`, `torch.cuda.FloatTensor`) and the dtype
# each holds. DEV104 and its gate condition; DEV105 reads the floating ones.
LEGACY_TENSOR_TYPES: Mapping[str, str] = MappingProxyType({
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
    "LongTensor": "int64",
    "IntTensor": "int32",
    "ShortTensor": "int16",
    "CharTensor": "int8",
    "ByteTensor": "uint8",
    "BoolTensor": "bool",
})

# -- data loading -----------------------------------------------------------------------------

# torch's DataLoader, by both of its names. DEV302 and its gate condition.
DATALOADERS = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
# torch.multiprocessing's launchers: `spawn(fn, args=...)` calls `fn(i, *args)` in process i
# (torch/multiprocessing/spawn.py, `_wrap`), so fn's first parameter is an int. DEV102.
SPAWNS = ("torch.multiprocessing.spawn", "torch.multiprocessing.spawn.spawn", "torch.multiprocessing.start_processes")
# torch's map-style Dataset base class by both its names: a class with only it as a base gets its
# items from its own `__getitem__`. DEV302.
DATASETS = ("torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset")
# DataLoader's `pin_memory` is its eighth parameter: a call with more positionals sets it.
# DEV302 and its gate condition.
PIN_MEMORY_POSITION = 7
# Its `collate_fn`, the seventh: without one, `torch.utils.data.default_collate` makes each field of
# a batch a tensor, or a container with no `to()`. DEV301.
COLLATE_FN_POSITION = 6
# Calls whose items are the items of the iterable they wrap: what a loop over a DataLoader goes
# through (`enumerate` adds an index). Python's and tqdm's, not torch's, but kept with the
# DataLoader's names since devlint.rulekit.value_flow and the gate conditions of DEV301 and DEV302
# must agree on them.
LOOP_WRAPPERS = frozenset({"tqdm", "iter", "trange", "enumerate"})

# -- torch.nn ---------------------------------------------------------------------------------

# The losses (under torch.nn) whose constructors take tensors, and where: the keyword by
# positional index. DEV401 and its gate condition.
LOSS_TENSOR_ARGUMENTS: Mapping[str, Mapping[int, str]] = MappingProxyType({
    "CrossEntropyLoss": {0: "weight"},
    "NLLLoss": {0: "weight"},
    "NLLLoss2d": {0: "weight"},
    "BCELoss": {0: "weight"},
    "BCEWithLogitsLoss": {0: "weight", 4: "pos_weight"},
    "MultiLabelSoftMarginLoss": {0: "weight"},
    "MultiMarginLoss": {2: "weight"},
})
# DataParallel, by each module that defines or re-exports it. DEV403 and its gate condition.
DATA_PARALLEL = frozenset(
    {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel"}
)

# -- automatic mixed precision ----------------------------------------------------------------


@dataclass(frozen=True)
class AmpCall:
    """The signature of an autocast or GradScaler class: its device-type parameter (``None`` for
    the torch.cuda.amp classes, which have none) and the names of the positional parameters
    after it."""

    device_parameter: str | None
    parameters: tuple[str, ...]
    # The dtype the class passes on where a call gives none, and that its replacement must then
    # be given: `torch.cuda.amp.autocast` always passes `torch.float16`; `torch.amp.autocast`
    # without one reads the thread's autocast dtype, which an enclosing
    # `torch.autocast("cuda", dtype=torch.bfloat16)` or `torch.set_autocast_dtype` sets.
    dtype: str | None = None
    # Entering it sets the thread's autocast state for its device type (autocast's `__enter__`,
    # torch/amp/autocast_mode.py); a scaler keeps its own.
    thread_state: bool = False


# torch.amp's classes (and torch.autocast): the device type first.
AUTOCAST = AmpCall("device_type", ("dtype", "enabled", "cache_enabled"), thread_state=True)
SCALER = AmpCall("device", ("init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled"))
# torch.cuda.amp's classes: no device parameter; autocast's other parameters in another order
CUDA_AMP_AUTOCAST = AmpCall(None, ("enabled", "dtype", "cache_enabled"), "torch.float16", thread_state=True)
CUDA_AMP_SCALER = AmpCall(None, SCALER.parameters)

# The device-generic autocast and GradScaler, by each of their names, whose first argument is a
# device type. DEV603 and its gate condition.
AMP_DEVICE_TYPE: Mapping[str, AmpCall] = MappingProxyType({
    "torch.autocast": AUTOCAST,
    "torch.amp.autocast": AUTOCAST,
    "torch.amp.autocast_mode.autocast": AUTOCAST,
    "torch.amp.GradScaler": SCALER,
    "torch.amp.grad_scaler.GradScaler": SCALER,
})
# Where `device_type=` names the device type AMP runs for (`torch.amp.custom_fwd`, ...); torch's
# own test helpers (`DecorateInfo(..., device_type="cuda")`) use the word for a test filter.
# Prefixes, for `str.startswith`. DEV603 and its gate condition.
AMP_MODULES = ("torch.amp.", "torch.autocast", "torch.cpu.amp.")
# torch.cuda.amp's classes, deprecated since torch 2.4: each name -> (its replacement, the
# deprecated class's signature). DEV501 and its gate condition.
DEPRECATED_AMP: Mapping[str, tuple[str, AmpCall]] = MappingProxyType({
    "torch.cuda.amp.autocast": ("torch.amp.autocast", CUDA_AMP_AUTOCAST),
    "torch.cuda.amp.autocast_mode.autocast": ("torch.amp.autocast", CUDA_AMP_AUTOCAST),
    "torch.cuda.amp.GradScaler": ("torch.amp.GradScaler", CUDA_AMP_SCALER),
    "torch.cuda.amp.grad_scaler.GradScaler": ("torch.amp.GradScaler", CUDA_AMP_SCALER),
})

# -- torch.distributed: device types and collective backends chosen for CUDA -------------------

# torch.distributed's calls that take a device type -> its position (or `device_type=`): a mesh
# of "cuda" devices. DEV603 and its gate condition.
MESH_DEVICE_TYPE: Mapping[str, int] = MappingProxyType({
    "torch.distributed.device_mesh.init_device_mesh": 0,
    "torch.distributed.init_device_mesh": 0,
    "torch.distributed.tensor.init_device_mesh": 0,
    "torch.distributed._tensor.init_device_mesh": 0,
    "torch.distributed.device_mesh.DeviceMesh": 0,
    "torch.distributed.DeviceMesh": 0,
    "torch.distributed.tensor.DeviceMesh": 0,
    "torch.distributed._tensor.DeviceMesh": 0,
    "torch.distributed.device_mesh.DeviceMesh.from_group": 1,
    "torch.distributed.DeviceMesh.from_group": 1,
})
# Process-group constructors -> the position of their `backend` parameter. DEV603 and its gate
# condition.
PROCESS_GROUP_BACKEND: Mapping[str, int] = MappingProxyType({
    "torch.distributed.init_process_group": 0,
    "torch.distributed.distributed_c10d.init_process_group": 0,
    "torch.distributed.new_group": 2,
    "torch.distributed.distributed_c10d.new_group": 2,
})
# Their keyword binding the group to one accelerator device (DEV103): every release rejects a CPU
# device there ("must be an accelerator with an index", `_new_process_group_helper`, 2.4.1 to
# 2.14.1); None binds none.
PROCESS_GROUP_DEVICE_ID = "device_id"
# The collective backend that runs on CUDA devices only, and the one torch pairs with the CPU
# (`torch.distributed.Backend.default_device_backend_map`).
CUDA_BACKEND = "nccl"
CPU_BACKEND = "gloo"

# -- torch.cuda and the device-generic API ----------------------------------------------------

# torch.cuda is a package: its functions also answer to their submodule's name. Prefixes.
# devlint.rulekit.accelerator.cuda_function (DEV601, DEV602) and their gate conditions.
CUDA_SUBMODULES = ("torch.cuda.", "torch.cuda.memory.", "torch.cuda.streams.")
# `torch.get_device_module("cuda")` (or of `torch.device("cuda")`) is torch.cuda itself: its
# functions are CUDA's (devlint.analysis.devices.cuda_device_module and the gate conditions of
# DEV601 and DEV602).
DEVICE_MODULE = "torch.get_device_module"
# The torch.cuda runtime functions that have a device-generic equivalent.
# DEV601 and its gate condition.
CUDA_RUNTIME_API = frozenset(
    {"synchronize", "device_count", "current_device", "current_stream", "Stream", "Event", "stream", "set_device"}
)
# The torch.cuda memory functions that torch.accelerator also offers -> what each returns on a
# machine without CUDA (a fix's fallback there); None: it raises without CUDA, so no fix.
# DEV602 reads the table, its gate condition the names.
CUDA_MEMORY_FALLBACKS: Mapping[str, str | None] = MappingProxyType({
    "empty_cache": "None",
    "reset_peak_memory_stats": "None",
    "reset_accumulated_memory_stats": "None",
    "memory_allocated": "0",
    "max_memory_allocated": "0",
    "memory_reserved": "0",
    "max_memory_reserved": "0",
    "memory_stats": "{}",
    "mem_get_info": None,
})
# torch.cuda's deprecated memory names -> the function each calls (torch/cuda/memory.py, 2.4.1 to
# 2.14.1: the same call after a FutureWarning; `reset_max_memory_*` reset every peak statistic).
# DEV602 reports them as the function they call.
CUDA_MEMORY_ALIASES: Mapping[str, str] = MappingProxyType({
    "memory_cached": "memory_reserved",
    "max_memory_cached": "max_memory_reserved",
    "reset_max_memory_allocated": "reset_peak_memory_stats",
    "reset_max_memory_cached": "reset_peak_memory_stats",
})
CUDA_MEMORY_API = frozenset(CUDA_MEMORY_FALLBACKS) | frozenset(CUDA_MEMORY_ALIASES)
# The device-generic namespaces and what each holds (devlint.torchfacts.device_api_table): modules
# by name -> first release, classes -> their members. DEV605 and its gate condition.
DEVICE_API_MODULES: Mapping[str, Mapping[str, TorchVersion | None]] = MappingProxyType(
    {"torch.accelerator": ACCELERATOR, "torch.amp": AMP}
)
DEVICE_API_CLASSES: Mapping[str, frozenset[str]] = MappingProxyType({"torch.Stream": STREAM, "torch.Event": EVENT})

# -- torch.cuda calls with no exact device-generic twin (issue 22 item 7) ---------------------

# torch.cuda's seeding functions: silently queued (a no-op) without CUDA; `torch.manual_seed` seeds
# the CPU and every device, so it replaces them only where it already runs with the same seed.
# DEV601 and its gate condition.
CUDA_SEED_API = frozenset({"manual_seed", "manual_seed_all"})
# torch.manual_seed by both its names: it seeds the CPU and every device. DEV601.
TORCH_SEEDS = frozenset({"torch.manual_seed", "torch.random.manual_seed"})
# The seeding calls that may stand beside torch.manual_seed in a run of seeding statements
# (Python's, NumPy's, torch's own). DEV601.
SEEDING_CALLS = TORCH_SEEDS | {
    "random.seed", "numpy.random.seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all",
    "torch.cuda.random.manual_seed", "torch.cuda.random.manual_seed_all",
}
# Calls that read a generator's state and draw nothing (`torch.cuda.get_rng_state` returns
# `default_generator.get_state()`; `get_rng_state_all` does so for each device). A seeding run may
# pass over them where they run before the call a fix changes. DEV601.
RNG_STATE_READS = frozenset({
    "torch.get_rng_state", "torch.random.get_rng_state", "torch.cuda.get_rng_state",
    "torch.cuda.get_rng_state_all", "torch.cuda.random.get_rng_state", "torch.cuda.random.get_rng_state_all",
    "numpy.random.get_state", "random.getstate",
})
# torch.cuda's device queries: they raise without CUDA ("Torch not compiled with CUDA enabled");
# torch.accelerator has no name or properties query, and its `get_device_capability` returns the
# supported dtypes, not (major, minor). DEV601 and its gate condition.
CUDA_DEVICE_QUERIES = frozenset({"get_device_name", "get_device_properties", "get_device_capability"})
# torch.cuda calls reported only, outside a GPU check: the device queries, and `ipc_collect`, which
# starts CUDA (`_lazy_init`) to free what CUDA IPC shared, so it raises without CUDA as they do,
# and has no accelerator-generic form (Restormer's test scripts call it beside `empty_cache`).
# DEV601 and its gate condition.
CUDA_ONLY_CALLS = CUDA_DEVICE_QUERIES | frozenset({"ipc_collect"})
# torch.cuda.OutOfMemoryError is torch.OutOfMemoryError (the same class, renamed in torch 2.5).
# DEV602 and its gate condition.
CUDA_OUT_OF_MEMORY = "torch.cuda.OutOfMemoryError"

# -- what runs without CUDA --------------------------------------------------------------------

# The torch.cuda functions that a machine without CUDA answers without raising (0 GPUs, 0 bytes,
# `{}` for the stats, `empty_cache()` does nothing; tests/test_dev6_semantics.py checks it on this
# CPU build). Below torch-version 2.6 nothing device-generic replaces them, and they already run
# everywhere, so DEV601 and DEV602 do not report them there (devlint.rulekit.before_accelerator).
CUDA_RUNS_WITHOUT_CUDA = frozenset({
    "device_count", "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "memory_stats", "memory_cached", "max_memory_cached",
})
