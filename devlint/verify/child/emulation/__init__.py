"""Emulated CUDA: a program sees one CUDA device whose tensors hold real values computed on the CPU.

Part of step 8's child side (devlint/verify/child): verify runs every program under emulation.
This package imports torch and the standard library, nothing of devlint, and is loaded by path
(by harness.py and the bootstrap's hook), never through devlint. Under emulation:

- ``torch.cuda.is_available()`` is true and ``torch.cuda.*`` answers as a one-GPU machine does
  (cuda_api.py); so do ``torch.accelerator`` and ``torch.get_device_module()``;
- tensors put on ``"cuda"`` (``.cuda()``, ``.to("cuda")``, ``device="cuda"`` factories, the
  legacy ``torch.cuda.*Tensor`` types, a CUDA default device or default tensor type,
  ``Module.cuda()``/``.to()``, checkpoints restored to CUDA) report ``device(type='cuda',
  index=0)`` and ``is_cuda``, print with ``device='cuda:0'``, and compute on the CPU
  (tensor.py, legacy.py, storage.py); gradients, optimizer state and everything computed from
  them are emulated too; a program's own tensor subclass keeps its class there (subclasses.py);
- an operation that receives an emulated tensor and a CPU tensor with at least one dimension
  raises the ``RuntimeError`` CUDA raises; ``.numpy()`` and ``pin_memory()`` of an emulated tensor
  raise CUDA's errors;
- the autograd engine's entry points hold each gradient to its own tensor's device, as CUDA's
  engine does (gradients.py); TorchScript results are placed where the graph computed them
  (script.py), or the call is not emulated where the graph cannot be followed;
- ``CUDA_VISIBLE_DEVICES`` is read once, at the first CUDA query or tensor: when it hides device 0,
  there is no GPU, and every CUDA call is torch's own, as on a machine without one (machine.py).

What differs from a GPU, by design: the device's random numbers come from a generator of its own
(rng.py) that runs the CPU's algorithm, so they are other values than a GPU's; kernels run
synchronously; ``torch.compile`` returns the model as it is. Autocast on the device computes in its
dtype on the CPU's autocast kernels; memory statistics follow the caching allocator (memory.py);
a CPU build plays a CUDA build (build.py). What emulation does not model at all (CUDA graphs, NVML
queries, more than one GPU, autocast of an op with no CPU kernel in that dtype, a ``__torch_dispatch__``
subclass on the device) raises
``EmulationUnsupportedError`` (``not emulated: ...``); the harness reports a run that meets it as
not emulated.

Supported torch releases: SUPPORTED (releases.py, 2.4 to 2.14); ``Emulation()`` refuses any other
with UnsupportedTorchError. Which private torch names each release has: names_table.py, written by
tools/emulation_names_table.py; a name some supported release lacks is patched with
``optional=True`` (tests/test_emulation_names.py holds the code to the table).
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

import torch

from . import build, cuda_api, gradients, legacy, rng, script, storage, subclasses
from .machine import EmulationUnsupportedError, Machine
from .memory import Memory
from .patches import Patches
from .releases import SUPPORTED, UnsupportedTorchError, refusal
from .tensor import Dispatcher, EmulationMode

__all__ = ["SUPPORTED", "Emulation", "EmulationUnsupportedError", "UnsupportedTorchError", "install"]

COMPILE_NOTE = "torch.compile not applied"


class Emulation:
    """One installation: ``machine`` says what the program did with the device."""

    def __init__(self, visible: bool | None = None, random_stream: str = "device") -> None:
        """``visible``: whether the device is there regardless of ``CUDA_VISIBLE_DEVICES`` (False:
        no CUDA at all, torch's own behaviour on this machine). ``random_stream``: ``device``, the
        emulated GPU draws from a generator of its own as a GPU does; ``host``, from the CPU's
        (see rng.py). A torch outside SUPPORTED raises UnsupportedTorchError: the private parts
        of torch that emulation replaces were checked in those releases only (names_table.py)."""
        refused = refusal(torch.__version__)
        if refused is not None:
            raise UnsupportedTorchError(refused)
        self.machine = Machine(visible)
        self._patches = Patches()
        self._default = legacy.LegacyDefault()
        generators = rng.generator_class(self.machine)
        random = rng.DeviceRandom(random_stream, generators.device_default())
        self.dispatcher = Dispatcher(self.machine, self._default, random, Memory())
        self.dispatcher.generator_class = generators
        self._mode = EmulationMode(self.dispatcher)

    @property
    def notes(self) -> list[str]:
        """What the report should say about the run: where emulation is not a GPU's equal."""
        found = set(self.machine.notes)
        if self.dispatcher.random.drawn and self.dispatcher.random.own_stream:
            found.add(rng.NOTE)
        return sorted(found)

    @property
    def tensor_class(self) -> type:
        return self.dispatcher.cls

    def install(self) -> Emulation:
        cuda_api.install(self._patches, self.machine, self.dispatcher)
        legacy.install(self._patches, self.machine, self.dispatcher, self._default)
        storage.install(self._patches, self.machine)
        gradients.install(self._patches, self.dispatcher)
        script.install(self._patches, self.dispatcher)
        build.install(self._patches, self.machine)
        dispatcher = self.dispatcher
        subclasses.install(self._patches, dispatcher.subclasses, dispatcher.is_emulated, lambda: dispatcher.inside)
        self._install_compile()
        self._install_threads()
        self._install_module_moves()
        self._install_variable()
        self._install_parameter()
        self._install_custom_functions()
        self._install_saved_tensors()
        self._install_module_backward_hooks()
        self._install_record_stream()
        self._mode.__enter__()
        return self

    def uninstall(self) -> None:
        self._mode.__exit__(None, None, None)
        self._patches.restore()

    def __enter__(self) -> Emulation:
        return self.install()

    def __exit__(self, *exc_info: object) -> None:
        self.uninstall()

    def _install_module_moves(self) -> None:
        """``Module.to()``/``.cuda()`` keep each parameter object (the optimizer holds them) and
        assign the moved data to it, as on a GPU; the parameter (and its gradient) then changes
        class to say where its data went: emulated after ``.cuda()``, plain after ``.cpu()``."""
        original_apply = torch.nn.Module._apply
        dispatcher = self.dispatcher

        def _apply(module: torch.nn.Module, fn: Any, recurse: bool = True) -> Any:
            moved: dict[int, bool] = {}

            def tracking(tensor: torch.Tensor) -> Any:
                result = fn(tensor)
                moved[id(tensor)] = dispatcher.is_emulated(result)
                return result

            result = original_apply(module, tracking, recurse)
            for param in module._parameters.values():
                for tensor in (param, None if param is None else param.grad):
                    if tensor is not None and id(tensor) in moved:
                        dispatcher.relabel(tensor, moved[id(tensor)])
            return result

        self._patches.set(torch.nn.Module, "_apply", _apply)

    def _install_variable(self) -> None:
        """``Variable(t)`` (the pre-0.4 wrapper, still in old CUDA code) makes a tensor sharing
        ``t``'s data, on ``t``'s device; torch's constructor would hand back a plain one."""
        variable = torch.autograd.Variable
        original_new = variable.__new__
        dispatcher = self.dispatcher

        def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
            made = original_new(cls, *args, **kwargs)
            data = args[0] if args else kwargs.get("data")
            return dispatcher.wrap(made) if dispatcher.is_emulated(data) else made

        self._patches.set(variable, "__new__", staticmethod(__new__))

    def _install_parameter(self) -> None:
        """``nn.Parameter(t)`` of an emulated ``t`` is an emulated parameter: a ``Parameter`` by
        class and by its printing, as on a GPU (torch would hand back a flagged plain tensor).
        A program's subclass of ``Parameter`` made of a plain tensor is made as torch makes it of
        a plain CUDA tensor, with ``_make_subclass`` (torch/nn/parameter.py)."""
        parameter = torch.nn.Parameter
        original_new = parameter.__new__
        dispatcher = self.dispatcher

        def __new__(cls: type, data: Any = None, requires_grad: bool = True) -> Any:
            if not dispatcher.is_emulated(data):
                return original_new(cls, data, requires_grad)
            if cls is not parameter:
                if type(data) in (dispatcher.cls, dispatcher.parameter_cls):
                    return torch.Tensor._make_subclass(cls, data, requires_grad)
                return original_new(cls, data, requires_grad)
            made = data.detach().requires_grad_(requires_grad)
            dispatcher.relabel(made, emulated=False)
            made.__class__ = parameter
            dispatcher.relabel(made, emulated=True)
            return made

        self._patches.set(parameter, "__new__", staticmethod(__new__))

    def _install_custom_functions(self) -> None:
        """A custom ``autograd.Function``'s ``backward`` receives each gradient on the device of
        the output it belongs to, as the engine hands it over on a GPU (the engine itself runs on
        the CPU tensors inside), and runs as the program's code, under emulation. ``apply`` notes
        which outputs were on the device; the backward node (``BackwardCFunction``, which also
        carries module backward hooks) gives those gradients the device back."""
        function = torch.autograd.function
        # ``Function.apply`` is a classmethod up to torch 2.13 and a C classmethod descriptor from
        # 2.14 (``_C._FunctionBase.__dict__["apply"]``), which has no ``__func__``: both bind to
        # the subclass through ``__get__``, as attribute lookup does.
        original_apply = inspect.getattr_static(function.Function, "apply")
        original_backward = function.BackwardCFunction.apply
        dispatcher = self.dispatcher

        def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
            result = original_apply.__get__(None, cls)(*args, **kwargs)
            outputs = result if isinstance(result, tuple) else (result,)
            on_device = tuple(dispatcher.is_emulated(output) for output in outputs)
            if any(on_device):
                with dispatcher.raw():
                    node = next((o.grad_fn for o in outputs if isinstance(o, torch.Tensor) and o.grad_fn), None)
                if isinstance(node, function.BackwardCFunction):
                    node._devlint_on_device = on_device
            return result

        def backward(node: Any, *grads: Any) -> Any:
            on_device = getattr(node, "_devlint_on_device", ())
            if on_device:
                grads = tuple(
                    dispatcher.wrap(grad) if index < len(on_device) and on_device[index] and isinstance(grad, torch.Tensor) else grad
                    for index, grad in enumerate(grads)
                )
            if not dispatcher.inside:
                return original_backward(node, *grads)
            # The engine runs inside the dispatcher (``loss.backward()`` is a torch call): the
            # user's backward is the program's code again.
            with dispatcher.program():
                return original_backward(node, *grads)

        self._patches.set(function.Function, "apply", classmethod(apply))
        self._patches.set(function.BackwardCFunction, "apply", backward)

    def _install_saved_tensors(self) -> None:
        """``ctx.saved_tensors`` of a custom ``autograd.Function``: a tensor saved with
        ``save_for_backward`` that is also an output is kept as its data and rebuilt when
        unpacked, a plain CPU tensor inside; on a GPU it comes back on the device, as it was
        saved. ``save_for_backward`` notes which were on the device; reading them gives those the
        device back (the others come back as saved)."""
        function = torch.autograd.function
        original_save = function.FunctionCtx.save_for_backward
        # the C property of the backward node (torch._C._FunctionBase's), found on its base class
        saved = inspect.getattr_static(function.BackwardCFunction, "saved_tensors")
        dispatcher = self.dispatcher

        def save_for_backward(ctx: Any, *tensors: Any) -> None:
            ctx._devlint_saved_on_device = tuple(dispatcher.is_emulated(t) for t in tensors)
            original_save(ctx, *tensors)

        def saved_tensors(ctx: Any) -> Any:
            found = saved.__get__(ctx)
            on_device = getattr(ctx, "_devlint_saved_on_device", ())
            if not any(on_device):
                return found
            return tuple(
                dispatcher.wrap(t) if index < len(on_device) and on_device[index] and isinstance(t, torch.Tensor) else t
                for index, t in enumerate(found)
            )

        self._patches.set(function.FunctionCtx, "save_for_backward", save_for_backward)
        self._patches.set(function.BackwardCFunction, "saved_tensors", property(saved_tensors))

    def _install_module_backward_hooks(self) -> None:
        """``register_full_backward_hook`` and ``register_full_backward_pre_hook``: the hooks
        receive the gradients of the module's inputs and outputs on the devices of those inputs
        and outputs, and run as the program's code. ``BackwardHook`` notes the devices when the
        forward pass sets it up."""
        hooks = torch.utils.hooks.BackwardHook
        original_init, original_inputs, original_outputs = hooks.__init__, hooks.setup_input_hook, hooks.setup_output_hook
        dispatcher = self.dispatcher

        def placed(flags: tuple[bool, ...], grads: Any) -> Any:
            if not isinstance(grads, tuple):
                return grads
            return tuple(
                dispatcher.wrap(grad) if index < len(flags) and flags[index] and isinstance(grad, torch.Tensor) else grad
                for index, grad in enumerate(grads)
            )

        def as_program(call: Any) -> Any:
            if not dispatcher.inside:
                return call()
            with dispatcher.program():
                return call()

        def __init__(hook: Any, module: Any, user_hooks: list, user_pre_hooks: list) -> None:
            def full(user: Any) -> Any:
                def call(module: Any, grad_input: Any, grad_output: Any) -> Any:
                    inputs = placed(getattr(hook, "_devlint_inputs", ()), grad_input)
                    outputs = placed(getattr(hook, "_devlint_outputs", ()), grad_output)
                    return as_program(lambda: user(module, inputs, outputs))

                return call

            def pre(user: Any) -> Any:
                def call(module: Any, grad_output: Any) -> Any:
                    outputs = placed(getattr(hook, "_devlint_outputs", ()), grad_output)
                    return as_program(lambda: user(module, outputs))

                return call

            original_init(hook, module, [full(h) for h in user_hooks], [pre(h) for h in user_pre_hooks])

        def setup_input_hook(hook: Any, args: Any) -> Any:
            hook._devlint_inputs = tuple(dispatcher.is_emulated(arg) for arg in args)
            return original_inputs(hook, args)

        def setup_output_hook(hook: Any, args: Any) -> Any:
            outputs = args if isinstance(args, tuple) else (args,)
            hook._devlint_outputs = tuple(dispatcher.is_emulated(arg) for arg in outputs)
            return original_outputs(hook, args)

        self._patches.set(hooks, "__init__", __init__)
        self._patches.set(hooks, "setup_input_hook", setup_input_hook)
        self._patches.set(hooks, "setup_output_hook", setup_output_hook)

    def _install_record_stream(self) -> None:
        """``t.record_stream(s)`` of an emulated tensor: nothing to hold back, every kernel has
        finished. torch's method parses its arguments before any torch-function handling, and an
        emulated stream is no ``torch.Stream``, so the method itself is replaced."""
        original = torch.Tensor.record_stream
        dispatcher = self.dispatcher

        def record_stream(tensor: torch.Tensor, stream: Any) -> None:
            if not dispatcher.is_emulated(tensor):
                original(tensor, stream)

        self._patches.set(torch.Tensor, "record_stream", record_stream)

    def _install_compile(self) -> None:
        """``torch.compile`` returns what it is given: the compiler would trace the emulated device
        into real CUDA kernels. Under emulation, the CPU run included, programs run eagerly."""
        machine = self.machine

        def compile(model: Any = None, **options: Any) -> Any:
            machine.notes.add(COMPILE_NOTE)
            return model if model is not None else (lambda given: given)

        self._patches.set(torch, "compile", compile)

    def _install_threads(self) -> None:
        """New threads (a DataLoader's pinning thread) run under emulation too: the mode that
        catches ``device="cuda"`` is per thread."""
        original_run = threading.Thread.run
        dispatcher = self.dispatcher

        def run(thread: threading.Thread) -> None:
            with EmulationMode(dispatcher):
                original_run(thread)

        self._patches.set(threading.Thread, "run", run)


def install() -> Emulation:
    return Emulation().install()
