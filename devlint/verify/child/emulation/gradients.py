"""The autograd engine's entry points on the emulated device.

The engine runs on the CPU data under emulated tensors (the dispatcher calls it in ``raw``), so
what it checks and where its results live must be said here, as CUDA's engine does it:

- ``torch.autograd.grad``, ``Tensor.backward`` and ``torch.autograd.backward`` take outputs and
  inputs on any devices: the engine (``validate_outputs``, torch/csrc/autograd/engine.cpp) holds
  each gradient to its *own* tensor's metadata, never one tensor to another. A root gradient
  (``grad_outputs``, ``gradient``) on another device than its output is "invalid gradient at
  index i - expected device ... but got ...", unless it has no dimension (the engine moves it);
  each input's gradient comes back on that input's device.
- ``torch._C._functions.UndefinedGrad()(t)`` (the node ``torch.autograd.gradcheck`` wraps each
  output in to test undefined output gradients) is C++ end to end: ``UndefinedGrad::apply``
  (torch/csrc/autograd/functions/basic_ops.cpp) returns a clone of ``t``, on ``t``'s device.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from .patches import Patches
from .tensor import Dispatcher


def install(patches: Patches, dispatcher: Dispatcher) -> None:
    for func in (torch.autograd.grad, torch.autograd.backward, torch.Tensor.backward):
        dispatcher.add_special(func, _engine_call(dispatcher, func))
    original = torch._C._functions.UndefinedGrad

    def UndefinedGrad() -> Callable[..., Any]:  # noqa: N802 - torch's name for it
        node = original()

        def apply(*tensors: Any) -> Any:
            result = node(*tensors)
            return dispatcher.wrap(result) if any(dispatcher.is_emulated(t) for t in tensors) else result

        return apply

    patches.set(torch._C._functions, "UndefinedGrad", UndefinedGrad)


def _engine_call(dispatcher: Dispatcher, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` (one of the engine's entry points) as the dispatcher runs it: the root gradients
    checked against their outputs, the engine run on the CPU data, each input's gradient on the
    device of its input."""
    signature = inspect.signature(func)
    roots, gradients = ("self", "gradient") if func is torch.Tensor.backward else _ROOT_NAMES[func.__name__]

    def call(*args: Any, **kwargs: Any) -> Any:
        given = signature.bind(*args, **kwargs).arguments
        batched = bool(given.get("is_grads_batched", False))
        _check_roots(dispatcher, _sequence(given.get(roots)), _sequence(given.get(gradients)), batched)
        with dispatcher.raw():
            result = func(*args, **kwargs)
        if func is not torch.autograd.grad:
            return result
        inputs = _sequence(given.get("inputs"))
        # A GradientEdge input (no tensor to ask) keeps the rule for any call: on the device when
        # the call had a tensor there.
        any_emulated = any(dispatcher.is_emulated(t) for t in (*_sequence(given.get(roots)), *inputs))
        return tuple(
            _place(dispatcher, gradient, dispatcher.is_emulated(given) if isinstance(given, torch.Tensor) else any_emulated)
            for gradient, given in zip(result, inputs)
        )

    return call


# The parameter names of each entry point's outputs and their gradients.
_ROOT_NAMES = {"grad": ("outputs", "grad_outputs"), "backward": ("tensors", "grad_tensors")}


def _place(dispatcher: Dispatcher, gradient: Any, on_device: bool) -> Any:
    if on_device and isinstance(gradient, torch.Tensor):
        return dispatcher.wrap(gradient)
    return gradient


def _sequence(value: Any) -> tuple:
    if value is None:
        return ()
    if isinstance(value, torch.Tensor) or not isinstance(value, (list, tuple)):
        return (value,)
    return tuple(value)


def _check_roots(dispatcher: Dispatcher, outputs: tuple, grads: tuple, batched: bool) -> None:
    """The engine's check of the root gradients: each on its output's device, unless it has no
    dimension. A gradient of another shape is left to torch (``_make_grads`` refuses it first)."""
    for index, (output, grad) in enumerate(zip(outputs, grads)):
        if not isinstance(output, torch.Tensor) or not isinstance(grad, torch.Tensor):
            continue
        on_device = dispatcher.is_emulated(output)
        if on_device == dispatcher.is_emulated(grad):
            continue
        with dispatcher.raw():
            shape = grad.shape[1:] if batched else grad.shape
            same_shape = shape == output.shape
        if same_shape and len(shape) > 0:
            expected, got = (_where(dispatcher, t) for t in (output, grad))
            raise RuntimeError(f"invalid gradient at index {index} - expected device {expected} but got {got}")


def _where(dispatcher: Dispatcher, tensor: torch.Tensor) -> str:
    return "cuda:0" if dispatcher.is_emulated(tensor) else str(tensor.device)
