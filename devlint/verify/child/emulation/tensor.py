"""Emulated CUDA tensors: CPU storage and CPU kernels, CUDA to every Python caller.

An emulated tensor is an instance of a ``torch.Tensor`` subclass whose data stays on the CPU, so
autograd, optimizers and every CPU kernel work on it unchanged. To Python it says it is on
``cuda:0``: ``device``, ``is_cuda``, ``get_device()``, its ``repr``, ``type()``. One handler,
``Dispatcher.handle``, sees every torch call (through a ``TorchFunctionMode`` for calls without
an emulated tensor, such as factories with ``device="cuda"`` or ``x.cuda()``, and through the
subclass's ``__torch_function__`` in threads the mode does not reach), and:

- turns a CUDA device argument (``device="cuda"``, ``.cuda()``, ``.to("cuda")``, a default
  device of CUDA) into a CPU computation whose tensors come back emulated;
- raises CUDA's ``RuntimeError`` when an operation receives an emulated tensor and a CPU tensor
  with at least one dimension (a 0-dim CPU tensor may join, as on CUDA); copies and indexing with
  CPU indices may mix, as on CUDA;
- makes every tensor computed from an emulated one emulated too, and ``.cpu()`` a plain copy;
- hands a call with a program's tensor subclass to that class's ``__torch_function__`` first, as
  torch does after the modes (subclasses.py: a subclass on the device is a class of its own that
  derives from the program's).

While the handler runs torch code, emulated tensors report their true device (``cpu``) to it,
so torch's own Python code, which reads ``x.device`` to make new tensors, makes CPU ones.
"""

from __future__ import annotations

import contextlib
import copy
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack
from torch.utils._device import DeviceContext, _device_constructors

from . import autocast, subclasses
from .machine import CUDA0, TOTAL_MEMORY, Machine, cuda_index, not_a_cuda_device
from .memory import Memory
from .rng import DeviceRandom

STORAGE_MARK = "_devlint_emulated_cuda"
_PINNED = "_devlint_pinned"
# Calls that move or copy data between devices on purpose: CUDA lets them mix devices.
_CROSS_DEVICE = frozenset(
    {"to", "copy_", "cpu", "cuda", "type", "type_as", "new_tensor", "tensor", "as_tensor", "set_", "__set__"}
    | {"_has_compatible_shallow_copy_type", "__reduce_ex__", "__deepcopy__", "__setstate__", "__get__"}
    | {"module_load"}
    # shape-only: they read the other tensor's size, never its data
    | {"expand_as", "view_as", "reshape_as", "broadcast_tensors", "result_type"}
)
# Calls whose CUDA kernels take some arguments on the CPU by design: the lengths of a packed
# sequence, the lengths of CTC.
_HOST_ARGUMENTS = frozenset({"_pack_padded_sequence", "_pad_packed_sequence", "ctc_loss", "_ctc_loss"})
# The recurrent kernels: only the batch sizes of a packed sequence may stay on the CPU; the input,
# the hidden state and the weights must share a device.
_RECURRENT = frozenset({"lstm", "gru", "rnn_tanh", "rnn_relu"})
# Of these, the ones whose second result stays on the CPU on CUDA too (batch sizes, lengths).
_HOST_SECOND_RESULT = frozenset({"_pack_padded_sequence", "_pad_packed_sequence"})
# Convolutions: ATen checks their input and parameters for one tensor type (device and dtype).
_CONVOLUTIONS = frozenset(
    {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution"}
    | {"_convolution", "conv_tbc"}
)
# The host allocator's refusal, and the size it was asked for.
_HOST_ALLOCATION = re.compile(r"DefaultCPUAllocator: can't allocate memory: you tried to allocate (\d+) bytes")
# What torch makes, before emulation gives it its class.
_PLAIN = (torch.Tensor, torch.nn.Parameter)
# Conversions that share the memory of their input where they can: never across devices.
_CONVERSIONS = frozenset({"as_tensor", "asarray"})
# Indexing a CUDA tensor with CPU indices (or assigning CPU values) is fine on CUDA.
_INDEXING = frozenset({"__getitem__", "__setitem__", "index_put_", "index_put", "_index_put_impl_"})

# What a program sees when it has emulation pin a tensor of this kind.
LEGACY_NAMES = {
    torch.float32: "FloatTensor",
    torch.float64: "DoubleTensor",
    torch.float16: "HalfTensor",
    torch.bfloat16: "BFloat16Tensor",
    torch.int64: "LongTensor",
    torch.int32: "IntTensor",
    torch.int16: "ShortTensor",
    torch.int8: "CharTensor",
    torch.uint8: "ByteTensor",
    torch.bool: "BoolTensor",
}


def mixed_devices_error() -> RuntimeError:
    # CUDA's kernels name the GPU first whatever the operands' order (seen on an H200, torch 2.11)
    return RuntimeError("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")


def numpy_error() -> TypeError:
    return TypeError(
        "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
    )


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shares_memory(result: torch.Tensor, source: Any) -> bool:
    """Whether ``result`` uses the memory of ``source`` (a tensor, or a NumPy array or other
    buffer that ``as_tensor`` may wrap without copying)."""
    if isinstance(source, torch.Tensor):
        return result.untyped_storage().data_ptr() == source.untyped_storage().data_ptr()
    interface = getattr(source, "__array_interface__", None)
    if interface is None or result.numel() == 0:
        return False
    start = interface["data"][0]
    return start <= result.data_ptr() < start + max(1, getattr(source, "nbytes", 0))


def tensors_in(value: Any) -> Iterator[torch.Tensor]:
    """The tensors of a call's arguments, inside lists, tuples and dicts."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors_in(item)


class Dispatcher:
    """Everything emulated tensors do; ``cls`` is their class (one per installation)."""

    def __init__(
        self, machine: Machine, legacy_default: Callable[[], bool], random: DeviceRandom, memory: Memory
    ) -> None:
        self.machine = machine
        # Whether torch.set_default_tensor_type made a CUDA type the default (see legacy.py).
        self._legacy_default = legacy_default
        self.random = random
        self.memory = memory
        # The class of torch.Generator(device="cuda") under emulation (set by cuda_api.py).
        self.generator_class: type | None = None
        self._local = threading.local()
        self._mark, self.cls, self.parameter_cls, self._printing_cls = _tensor_classes(self)
        self.subclasses = subclasses.Subclasses(self._mark, self.cls, self.parameter_cls, self.handle)
        self._special: dict[Any, Callable[..., Any]] = {
            torch.Tensor.cuda: self._cuda,
            torch.Tensor.to: self._to,
            torch.Tensor.cpu: self._cpu,
            torch.Tensor.type: self._type,
            torch.Tensor.type_as: lambda self_, other: self._to(self_, other),
            torch.Tensor.numpy: self._numpy,
            torch.Tensor.__array__: self._array,
            torch.Tensor.pin_memory: self._pin_memory,
            torch.Tensor.is_pinned: self._is_pinned,
            torch.Tensor.get_device: self._get_device,
            torch.Tensor.register_hook: self._register_hook,
            torch.device: self._device,
            torch.Tensor.__reduce_ex__: self._reduce_ex,
            torch.Tensor.__deepcopy__: self._deepcopy,
            torch.Tensor.__repr__: self._repr,
            torch.Tensor.__format__: self._format,
            torch.Tensor.untyped_storage: self._storage_call(torch.Tensor.untyped_storage),
            torch.Tensor.storage: self._storage_call(torch.Tensor.storage),
            torch.Tensor._typed_storage: self._storage_call(torch.Tensor._typed_storage),
            # Module.to(device=...) parses its arguments with this: it makes no tensor, so its
            # device= is an answer to give back, not a factory's device to emulate.
            torch._C._nn._parse_to: self._parse_to,
        }

    def add_special(self, func: Any, handler: Callable[..., Any]) -> None:
        """Have ``handler`` answer every call of ``func`` (for a module of emulation that models
        one of torch's mechanisms, such as the autograd engine's entry points in gradients.py)."""
        self._special[func] = handler

    # -- the two kinds of tensors ------------------------------------------------------------

    @property
    def inside(self) -> bool:
        """True while the handler runs torch code: emulated tensors then report ``cpu``."""
        return getattr(self._local, "depth", 0) > 0

    @contextlib.contextmanager
    def raw(self) -> Iterator[None]:
        """Run torch itself: no torch-function handling, true devices."""
        self._local.depth = getattr(self._local, "depth", 0) + 1
        try:
            with torch._C.DisableTorchFunction():
                yield
        finally:
            self._local.depth -= 1

    @contextlib.contextmanager
    def program(self) -> Iterator[None]:
        """Run the program's own code (a hook autograd calls) from inside ``raw``: under emulation."""
        depth = getattr(self._local, "depth", 0)
        self._local.depth = 0
        try:
            with torch._C._EnableTorchFunction(), EmulationMode(self):
                yield
        finally:
            self._local.depth = depth

    def is_emulated(self, value: Any) -> bool:
        """On the device: of emulation's class or of a program's subclass on the device."""
        return isinstance(value, self._mark)

    def wrap(self, value: Any, inputs: tuple = ()) -> Any:
        """Tensors in ``value`` (nested in tuples and lists) made emulated. A new plain tensor
        changes class in place (an alias would add a node to its autograd history); one of the
        call's ``inputs`` is aliased instead, so that the caller's CPU tensor stays one."""
        if isinstance(value, torch.Tensor):
            if isinstance(value, self._mark):
                return value
            with self.raw():
                self.memory.track(value)
                kind = self.subclasses.on_device(type(value))
                if type(value) in _PLAIN and not any(value is given for given in inputs):
                    value.__class__ = kind
                    return value
                return value.as_subclass(kind)
        if isinstance(value, (tuple, list)):
            return type(value)(self.wrap(item, inputs) for item in value)
        return value

    def relabel(self, tensor: torch.Tensor, emulated: bool) -> None:
        """Give ``tensor`` (a parameter or a gradient whose data was replaced in place) the class
        that says where its data now is. A parameter stays one by its class, not by the
        ``_is_param`` mark: before torch 2.6 ``Parameter``'s instance check counts a marked tensor
        as an instance of every Parameter subclass (``UninitializedParameter`` included, which
        DistributedDataParallel refuses), where a CUDA parameter is marked by nothing. A program's
        subclass stays one."""
        if self.is_emulated(tensor) == emulated:
            return
        if emulated:
            tensor.__class__ = self.subclasses.on_device(type(tensor))
        else:
            tensor.__class__ = self.subclasses.off_device(type(tensor))

    def plain(self, tensor: torch.Tensor) -> torch.Tensor:
        """A plain tensor sharing ``tensor``'s data (and autograd history)."""
        with self.raw():
            return tensor.as_subclass(torch.Tensor)

    def mark_storage(self, tensor: torch.Tensor) -> None:
        """Emulated storages say ``cuda:0`` (see storage.py): checkpoints record CUDA locations."""
        with self.raw():
            setattr(tensor.untyped_storage(), STORAGE_MARK, True)

    # -- dispatch ----------------------------------------------------------------------------

    def handle(self, func: Any, args: tuple, kwargs: dict | None) -> Any:
        kwargs = dict(kwargs or {})
        tensors = list(tensors_in((args, kwargs)))
        ordinary = self.subclasses.ordinary(tensors)
        # A program's subclass handles the call first, as after the modes on a GPU; the calls it
        # makes come back here with subclasses disabled (Tensor.__torch_function__) or unwrapped.
        if not ordinary and torch._C._is_torch_function_enabled():
            overloaded = self.subclasses.overloaded(func, args, tensors)
            if overloaded:
                with EmulationMode(self):
                    return self.subclasses.dispatch(func, overloaded, args, kwargs)
        special = self._special.get(func)
        if special is not None:
            return special(*args, **kwargs)
        name = getattr(func, "__name__", "")
        target = self._device_target(func, kwargs)
        emulated = any(isinstance(t, self._mark) for t in tensors)
        if emulated:
            self._check_devices(name, args, tensors)
        on_device = target == "cuda" or (target is None and emulated)
        if not ordinary:
            self.refuse_dispatch(tensors, on_device)
        generator = kwargs.get("generator")
        if generator is not None:
            self._check_generator(generator, on_device)
        if name in _CONVERSIONS and args and target is not None:
            return self._convert(func, args, kwargs, target)
        if target is None and not emulated:
            return func(*args, **kwargs)
        drawing = on_device and generator is None and self.random.draws(name, args, kwargs)
        with self.raw(), self.random.drawing() if drawing else contextlib.nullcontext(), self._out_of_memory(on_device):
            if on_device and torch.is_autocast_enabled("cuda"):
                result = autocast.run(name, func, args, kwargs)
            else:
                result = func(*args, **kwargs)
        if args and result is args[0]:
            return result  # in place, or the tensor itself: already what it was
        if target not in (None, "cuda"):
            return result
        if name in _HOST_SECOND_RESULT:
            return (self.wrap(result[0], tuple(tensors)), *result[1:])
        return self.wrap(result, tuple(tensors))

    def _device_target(self, func: Any, kwargs: dict) -> str | None:
        """``cuda`` when the call makes tensors on the emulated device (``device=`` is then set to
        the CPU), ``other`` when it names another device, None when it names none."""
        if "device" in kwargs and kwargs["device"] is not None:
            index = cuda_index(kwargs["device"])
            if index is False or not self.machine.emulates_build:
                return "other"
            self.machine.use(index)
            kwargs["device"] = "cpu"
            return "cuda"
        if func not in _device_constructors():
            return None
        current = self._default_device()
        if current is not None and cuda_index(current) is False:
            # torch's device context gives these `device=` its default (torch/utils/_device.py):
            # `torch.as_tensor(gpu_tensor)` under set_default_device("cpu") copies to the CPU
            kwargs["device"] = current
            return "other"
        if self._default_is_cuda():
            self.machine.use()
            kwargs["device"] = "cpu"
            return "cuda"
        return None

    @contextlib.contextmanager
    def _out_of_memory(self, on_device: bool) -> Iterator[None]:
        """An allocation on the device that the host cannot make is CUDA's out-of-memory error,
        the exception type (``torch.OutOfMemoryError``) a program catches to retry smaller."""
        try:
            yield
        except RuntimeError as error:
            found = _HOST_ALLOCATION.search(str(error))
            if not on_device or found is None:
                raise
            free = (TOTAL_MEMORY - self.memory.get("reserved_bytes.all.current")) / 1024**3
            raise torch.OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate {int(found.group(1)) / 1024**3:.2f} GiB. GPU 0 has a total "
                f"capacity of {TOTAL_MEMORY / 1024**3:.2f} GiB of which {free:.2f} GiB is free."
            ) from None

    def refuse_dispatch(self, tensors: Any, on_device: bool = True) -> None:
        """A program's subclass with ``__torch_dispatch__`` in a call on the device is not
        emulated (see subclasses.py); any other subclass keeps its class there. Such a wrapper
        made around an emulated tensor (``_make_wrapper_subclass(device=elem.device)``) is
        itself on a CUDA device by torch's own metadata."""
        for tensor in tensors:
            if self.subclasses.dispatches_below(type(tensor)):
                with self.raw():
                    cuda = tensor.device.type == "cuda"
                if on_device or cuda:
                    self.subclasses.refuse_dispatch(type(tensor))

    def _check_generator(self, generator: Any, on_device: bool) -> None:
        """A generator must be of the device the call draws on (ATen's check_generator)."""
        cuda = self.generator_class is not None and issubclass(type(generator), self.generator_class)
        if cuda != on_device:
            wanted, found = ("cuda", "cpu") if on_device else ("cpu", "cuda")
            raise RuntimeError(f"Expected a '{wanted}' device type for generator but found '{found}'")

    def _convert(self, func: Any, args: tuple, kwargs: dict, target: str) -> Any:
        """``as_tensor``/``asarray`` with a device: data from another device is copied (host
        memory is never shared with a GPU), data already there is returned as it is."""
        source = args[0]
        source_emulated = self.is_emulated(source)
        with self.raw():
            result = func(*args, **kwargs)
            moved = (target == "cuda") != source_emulated
            if moved and isinstance(result, torch.Tensor) and _shares_memory(result, source):
                result = result.clone()
        if target == "cuda":
            return source if result is source else self.wrap(result)
        return self.plain(result) if self.is_emulated(result) else result

    def _default_is_cuda(self) -> bool:
        """A CUDA default device (or tensor type) that is there. A CPU factory call must not read
        CUDA_VISIBLE_DEVICES: the program may still be about to set it. The default device is the
        calling thread's (`set_default_device` pushes a mode on that thread's stack only; another
        thread makes CPU tensors); the default tensor type is the whole process's."""
        current = self._default_device()
        wanted = cuda_index(current) is not False if current is not None else self._legacy_default()
        return wanted and self.machine.emulates_build

    @staticmethod
    def _default_device() -> Any:
        """The calling thread's default device (`torch.set_default_device`), None where unset."""
        return next((mode.device for mode in _get_current_function_mode_stack() if isinstance(mode, DeviceContext)), None)

    def _check_devices(self, name: str, args: tuple, tensors: list[torch.Tensor]) -> None:
        if name in _CROSS_DEVICE or name in _HOST_ARGUMENTS:
            return
        if name in _RECURRENT and args:
            self._check_recurrent(args)
            return
        if name in _CONVOLUTIONS and len(args) > 1:
            self._check_convolution(args)
            return
        if name in _INDEXING and args:
            indexed = args[0]
            if self.is_emulated(indexed):
                return
            if any(self.is_emulated(t) for t in tensors_in(args[1:2])):
                raise RuntimeError("indices should be either on cpu or on the same device as the indexed tensor (cpu)")
            return
        mark = self._mark
        counted = [t for t in tensors if isinstance(t, mark) or (t.device.type == "cpu" and t.dim() > 0)]
        if any(not isinstance(t, mark) for t in counted):
            raise mixed_devices_error()

    def _check_convolution(self, args: tuple) -> None:
        """ATen's convolution compares the input's type with the weight's, then the bias's."""
        given = args[0]
        for kind, parameter in (("weight", args[1]), ("bias", args[2] if len(args) > 2 else None)):
            if isinstance(parameter, torch.Tensor) and self.is_emulated(parameter) != self.is_emulated(given):
                raise RuntimeError(
                    f"Input type ({self.type_name(given)}) and {kind} type ({self.type_name(parameter)}) "
                    "should be the same"
                )

    def type_name(self, tensor: torch.Tensor) -> str:
        if self.is_emulated(tensor):
            return self.legacy_name(tensor)
        with self.raw():
            return tensor.type()

    def _check_recurrent(self, args: tuple) -> None:
        """``lstm(input, hx, weights, ...)``, or for a packed sequence ``lstm(data, batch_sizes,
        hx, weights, ...)``: CUDA's own check, hidden state first, then the weights."""
        packed = len(args) > 3 and isinstance(args[3], (list, tuple))
        hidden, weights = (args[2], args[3]) if packed else (args[1], args[2])
        where = self._where(args[0])
        for kind, value in (("hidden", hidden), ("parameter", weights)):
            for tensor in tensors_in(value):
                if self._where(tensor) != where:
                    raise RuntimeError(
                        f"Input and {kind} tensors are not at the same device, found input tensor at {where} "
                        f"and {kind} tensor at {self._where(tensor)}"
                    )

    def _where(self, tensor: torch.Tensor) -> str:
        return "cuda:0" if self.is_emulated(tensor) else str(tensor.device)

    # -- calls that change or reveal the device --------------------------------------------

    def _cuda(self, tensor: torch.Tensor, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        if not self.machine.emulates_build:
            return torch.Tensor.cuda(tensor, device, non_blocking, **kwargs)
        index = cuda_index(device if device is not None else "cuda")
        if index is False:
            raise not_a_cuda_device()
        self.machine.use(index)
        self.refuse_dispatch((tensor,))
        if self.is_emulated(tensor):
            return tensor
        with self.raw():
            moved = tensor.to(dtype=tensor.dtype, copy=True, **kwargs)
        return self.wrap(moved)

    def _to(self, tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], torch.Tensor):
            other, rest = args[0], args[1:]
            device: Any = CUDA0 if self.is_emulated(other) else other.device
            dtype, non_blocking = other.dtype, kwargs.get("non_blocking", False)
            memory_format = kwargs.get("memory_format")
        else:
            rest = args[2:] if args and not isinstance(args[0], torch.dtype) else args[1:]
            parsed = {key: value for key, value in kwargs.items() if key != "copy"}
            given = args[: len(args) - len(rest)]
            device, dtype, non_blocking, memory_format = self._parse_to(*given, **parsed)
        copies = bool(kwargs.get("copy", False) or (len(rest) > 1 and rest[1]))
        options: dict[str, Any] = {"non_blocking": non_blocking, "copy": copies}
        if memory_format is not None:
            options["memory_format"] = memory_format
        to_cuda = device is not None and cuda_index(device) is not False
        if to_cuda and not self.machine.emulates_build:
            with self.raw():
                return torch.Tensor.to(tensor, *args, **kwargs)
        if to_cuda or (device is None and self.is_emulated(tensor)):
            if to_cuda:
                index = cuda_index(device)
                self.machine.use(index if isinstance(index, int) else None)
                self.refuse_dispatch((tensor,))
            moving = not self.is_emulated(tensor)
            with self.raw():
                result = tensor.to(dtype=dtype or tensor.dtype, **{**options, "copy": copies or moving})
            return result if result is tensor else self.wrap(result)
        with self.raw():
            if self.is_emulated(tensor):
                # Leaving the emulated device always copies, as leaving a GPU does.
                options["copy"] = True
                return tensor.to(device=device, dtype=dtype or tensor.dtype, **options)
            return torch.Tensor.to(tensor, *args, **kwargs)

    def _parse_to(self, *args: Any, **kwargs: Any) -> Any:
        """An int device is an index of the current accelerator: CUDA, here."""
        if args and _is_index(args[0]):
            args = (self._index_device(args[0]), *args[1:])
        if _is_index(kwargs.get("device")):
            kwargs["device"] = self._index_device(kwargs["device"])
        with self.raw():
            return torch._C._nn._parse_to(*args, **kwargs)

    def _device(self, *args: Any, **kwargs: Any) -> Any:
        """``torch.device(0)``: an index of the current accelerator. Before torch 2.9 the C++
        constructor asks the accelerator itself, which emulation cannot reach; it is CUDA here."""
        if len(args) == 1 and not kwargs and _is_index(args[0]):
            return self._index_device(args[0])
        with self.raw():
            return torch.device(*args, **kwargs)

    def _index_device(self, index: int) -> Any:
        return torch.device("cuda", index) if self.machine.emulates_build else index

    def _cpu(self, tensor: torch.Tensor, **kwargs: Any) -> Any:
        if not self.is_emulated(tensor):
            with self.raw():
                return tensor.cpu(**kwargs)
        return self._to(tensor, "cpu", **kwargs)

    def _type(self, tensor: torch.Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        emulated = self.is_emulated(tensor)
        if dtype is None:
            with self.raw():
                name = tensor.type()
            return name.replace("torch.", "torch.cuda.", 1) if emulated else name
        cuda_type, scalar_type = self.legacy_type(dtype)
        if scalar_type is None:
            with self.raw():
                return tensor.type(dtype, non_blocking, **kwargs)
        if cuda_type:
            if not self.machine.emulates_build:
                with self.raw():
                    return tensor.type(dtype, non_blocking, **kwargs)
            if emulated and tensor.dtype == scalar_type:
                return tensor
            return self._to(tensor, "cuda", scalar_type)
        if not emulated and tensor.dtype == scalar_type:
            return tensor
        return self._to(tensor, "cpu", scalar_type)

    def legacy_type(self, value: Any) -> tuple[bool, torch.dtype | None]:
        """(a CUDA type?, its dtype) for a legacy tensor type or its name; (False, None): not one."""
        if isinstance(value, str):
            name = value
        else:
            name = f"{getattr(value, '__module__', '')}.{getattr(value, '__name__', '')}"
        if isinstance(value, torch.dtype):
            return False, None
        cuda = name.startswith("torch.cuda.")
        short = name.rsplit(".", 1)[-1]
        for dtype, legacy in LEGACY_NAMES.items():
            if legacy == short and (cuda or name == f"torch.{short}"):
                return cuda, dtype
        return False, None

    def legacy_name(self, tensor: torch.Tensor) -> str:
        return f"torch.cuda.{LEGACY_NAMES.get(tensor.dtype, 'Tensor')}"

    def _numpy(self, tensor: torch.Tensor, *, force: bool = False) -> Any:
        if self.is_emulated(tensor) and not force:
            raise numpy_error()
        with self.raw():
            return tensor.numpy(force=force)

    def _array(self, tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if self.is_emulated(tensor):
            raise numpy_error()
        with self.raw():
            return tensor.__array__(*args, **kwargs)

    def _pin_memory(self, tensor: torch.Tensor, *args: Any) -> Any:
        if self.is_emulated(tensor):
            raise RuntimeError(f"cannot pin '{self.legacy_name(tensor)}' only dense CPU tensors can be pinned")
        if not self.machine.emulates_build:
            with self.raw():
                return tensor.pin_memory(*args)
        self.machine.use()
        with self.raw():
            pinned = tensor.clone()
        setattr(pinned, _PINNED, True)
        return pinned

    def _is_pinned(self, tensor: torch.Tensor, *args: Any) -> bool:
        if self.is_emulated(tensor):
            return False
        if not self.machine.visible:
            with self.raw():
                return tensor.is_pinned(*args)
        return bool(getattr(tensor, _PINNED, False))

    def _get_device(self, tensor: torch.Tensor) -> int:
        if self.is_emulated(tensor):
            return 0
        with self.raw():
            return tensor.get_device()

    def _register_hook(self, tensor: torch.Tensor, hook: Callable[[torch.Tensor], Any]) -> Any:
        if self.is_emulated(tensor):
            inner = hook

            def hook(grad: torch.Tensor) -> Any:
                with self.program():
                    return inner(self.wrap(grad))

        with self.raw():
            return tensor.register_hook(hook)

    def _storage_call(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            if self.is_emulated(tensor):
                self.mark_storage(tensor)
            with self.raw():
                return method(tensor, *args, **kwargs)

        return call

    # -- Python protocols ------------------------------------------------------------------

    def _reduce_ex(self, tensor: torch.Tensor, protocol: int) -> Any:
        """Pickled as the plain tensor a GPU would pickle; its storage says ``cuda:0``."""
        if not self.is_emulated(tensor):
            with self.raw():
                return tensor.__reduce_ex__(protocol)
        self.mark_storage(tensor)
        data = self.plain(tensor)
        kind = self.subclasses.off_device(type(tensor))
        if self.subclasses.is_program_class(kind):
            # a subclass pickles as its rebuilder, its class and its state (Tensor.__reduce_ex__)
            with self.raw():
                rebuild, arguments = data.__reduce_ex__(protocol)
            state = torch._utils._get_obj_state(tensor)
            return torch._tensor._rebuild_from_type_v2, (rebuild, kind, arguments, state)
        if isinstance(tensor, torch.nn.Parameter):
            with self.raw():
                data = data.detach()
            return torch._utils._rebuild_parameter, (data, tensor.requires_grad, {})
        with self.raw():
            return data.__reduce_ex__(protocol)

    def _deepcopy(self, tensor: torch.Tensor, memo: dict) -> Any:
        """A leaf's copy, emulated, with its gradient and attributes, as ``Tensor.__deepcopy__``.
        A program's subclass is copied by torch's own code, which makes the copy with its
        ``new_empty`` and refuses one of another class, as on a GPU."""
        if not self.is_emulated(tensor):
            with self.raw():
                return tensor.__deepcopy__(memo)
        if self.subclasses.is_program_class(self.subclasses.off_device(type(tensor))):
            return torch.Tensor.__deepcopy__(tensor, memo)
        if id(tensor) in memo:
            return memo[id(tensor)]
        with self.raw():
            if not tensor.is_leaf:
                raise RuntimeError(
                    "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol "
                    "at the moment."
                )
            duplicate = tensor.detach().clone().requires_grad_(tensor.requires_grad)
            grad = tensor.grad
        duplicate = self.wrap(duplicate)
        if isinstance(tensor, self.parameter_cls):
            duplicate.__class__ = self.parameter_cls
        memo[id(tensor)] = duplicate
        if grad is not None:
            duplicate.grad = self._deepcopy(self.wrap(grad), memo)
        for name, value in vars(tensor).items():
            setattr(duplicate, name, copy.deepcopy(value, memo))
        return duplicate

    def _repr(self, tensor: torch.Tensor, *, tensor_contents: Any = None) -> str:
        """As torch prints a CUDA tensor (``Parameter.__repr__`` adds its own first line). torch
        names a subclass in front of the values: for the time of printing, a tensor of emulation's
        class is of a class named as torch's own prefix (a program's subclass keeps its name)."""
        kind, marked = type(tensor), vars(tensor).pop("_is_param", None)
        if kind in (self.cls, self.parameter_cls):
            tensor.__class__ = self._printing_cls
        try:
            with torch._C.DisableTorchFunctionSubclass():
                return torch._tensor_str._str(tensor, tensor_contents=tensor_contents)
        finally:
            tensor.__class__ = kind
            if marked is not None:
                tensor._is_param = marked

    def _format(self, tensor: torch.Tensor, format_spec: str) -> str:
        """``f"{t}"``: a one-element tensor formats as its number, any other as it prints."""
        if not self.is_emulated(tensor):
            with self.raw():
                return tensor.__format__(format_spec)
        with self.raw():
            scalar = tensor.dim() == 0 and type(tensor) is self.cls
            if scalar:
                return tensor.detach().item().__format__(format_spec)
        if format_spec:
            raise TypeError(f"unsupported format string passed to {type(tensor).__name__}.__format__")
        return self._repr(tensor)


def _tensor_classes(dispatcher: Dispatcher) -> tuple[type, type, type, type]:
    """The mark every class on the device derives from, the class of emulated tensors, of
    emulated parameters, and the one they print as."""

    class OnEmulatedDevice:
        """What a tensor on the emulated ``cuda:0`` says of its device: CPU data, CUDA to Python
        (see tensor.py). Put before a tensor class in the bases (it adds no storage)."""

        __slots__ = ()

        @property
        def device(self) -> torch.device:
            return torch.Tensor.device.__get__(self) if dispatcher.inside else CUDA0

        @property
        def is_cuda(self) -> bool:
            return not dispatcher.inside

        @property
        def is_cpu(self) -> bool:
            return dispatcher.inside

    class EmulatedCudaTensor(OnEmulatedDevice, torch.Tensor):
        """A plain tensor on the emulated ``cuda:0``."""

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):  # type: ignore[override]
            return dispatcher.handle(func, args, kwargs)

    # A program that prints or compares a type's name sees torch's: `type(t) is torch.Tensor`
    # itself is False (see the list of what emulation does not model in docs/emulation.md).
    _name(EmulatedCudaTensor, "Tensor", "torch")
    parameter = type("Parameter", (EmulatedCudaTensor, torch.nn.Parameter), {"__module__": "torch.nn.parameter"})
    # torch prints a subclass as `<its name>(...)`: the printing class is named as a tensor prints.
    printing = type("tensor", (EmulatedCudaTensor,), {})
    return OnEmulatedDevice, EmulatedCudaTensor, parameter, printing


def _name(cls: type, name: str, module: str) -> None:
    cls.__name__ = cls.__qualname__ = name
    cls.__module__ = module


class EmulationMode(TorchFunctionMode):
    """Sends every torch call of the program to the dispatcher (factories, ``.cuda()`` of CPU
    tensors: calls no emulated tensor takes part in)."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        super().__init__()
        self.dispatcher = dispatcher

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        return self.dispatcher.handle(func, args, kwargs)
