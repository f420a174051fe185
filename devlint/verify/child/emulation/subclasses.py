"""A program's own tensor subclasses on the emulated device: their class, their ``__torch_function__``.

On a GPU a subclass keeps its class through every call. torch calls the subclass's
``__torch_function__`` after the modes (torch/overrides.py, ``handle_torch_function``; the C++
parser does the same), subclasses before their bases, plain tensors never; the default one
(``Tensor.__torch_function__``, torch/_tensor.py) runs the call with subclasses disabled and turns
each tensor result into the class with ``as_subclass(cls)`` (``_convert``). Emulation keeps that
order: its mode hands a call that has a program's subclass among its tensors to those classes'
``__torch_function__`` (``overloaded``, ``dispatch``), with the mode back in place so that their
inner calls are emulated, and with the ``types`` a GPU gives (emulation leaves its own plain class
out, as torch leaves out a plain CUDA tensor). In a thread the mode does not reach, a class on the
device sends the call to emulation's handler, which does the same.

Where a tensor is is its class: an emulated instance of a program's class ``T`` is of ``T`` on the
device, a class made once per installation that derives from emulation's mark (the device
properties) and from ``T``, named as ``T``. So ``isinstance(x, T)``, ``T``'s methods, attributes
and ``__torch_function__`` (and ``super()`` in it, which finds ``Tensor``'s after ``T``) are the
program's. torch makes subclass instances in three calls that no ``__torch_function__`` sees
(``as_subclass``, ``Tensor._make_subclass``, ``Tensor.__new__`` of a tensor, all in
``get_ignored_functions``): ``install`` replaces them so that what they make is on the device
exactly when their data is. Making the class on the device runs ``T.__init_subclass__``, once.

Not composable, and refused: a subclass with ``__torch_dispatch__``. Its handler runs at ATen's
dispatcher, below the torch-function layer emulation works in, so what it computes from an
emulated tensor would be a CPU tensor.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

import torch

from .machine import EmulationUnsupportedError
from .patches import Patches

# torch's constructors read these arguments as data, never as overloaded tensors (their C++
# parsers type them ``PyObject*``): how many leading arguments are dispatched on (``self``).
_DATA_ARGUMENTS = {
    "tensor": 0,
    "as_tensor": 0,
    "asarray": 0,
    "new_tensor": 1,
    "sparse_coo_tensor": 0,
    "sparse_csr_tensor": 0,
    "sparse_csc_tensor": 0,
    "sparse_bsr_tensor": 0,
    "sparse_bsc_tensor": 0,
    "sparse_compressed_tensor": 0,
}


def _values(value: Any) -> Iterator[Any]:
    """The leaves of the call's arguments, as torch's parser sees them (sequences flattened)."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _values(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _values(item)
    else:
        yield value


def _dispatches(kind: type) -> bool:
    """Whether torch's dispatch hands calls to ``kind`` (its ``__torch_function__`` is not disabled)."""
    return getattr(kind, "__torch_function__", None) is not torch._C._disabled_torch_function_impl


class Subclasses:
    """Which class a tensor has on the device and off it, and the calls its own class handles."""

    def __init__(self, mark: type, plain: type, parameter: type, handle: Callable[[Any, tuple, Any], Any]) -> None:
        """``mark``: the base of every emulated class; ``plain``, ``parameter``: emulation's
        classes of ``torch.Tensor`` and ``nn.Parameter`` on the device; ``handle``: emulation's
        handler of a torch call, for threads that emulation's mode does not reach."""
        self._mark = mark
        self._handle = handle
        self._on = {torch.Tensor: plain, torch.nn.Parameter: parameter}
        self._off = {plain: torch.Tensor, parameter: torch.nn.Parameter}
        self._made: dict[type, type] = {}
        # per class: whether torch's dispatch would hand a call to it (a program's class with a
        # __torch_function__); asked for every tensor of every call
        self._overloads: dict[type, bool] = {}
        # classes that neither take calls nor dispatch below (torch's, emulation's): most calls
        # have only these, and are told so by one set lookup per tensor
        self._ordinary: set[type] = {torch.Tensor, torch.nn.Parameter, plain, parameter}

    def is_program_class(self, kind: type) -> bool:
        """A class of the program's (or of a library's, on the device or off it), not torch's
        nor emulation's."""
        kind = self._off.get(kind, kind)
        if issubclass(kind, self._mark) or kind in self._on:
            return False
        return kind.__module__.split(".")[0] != "torch"

    def on_device(self, kind: type) -> type:
        """The class of a tensor of ``kind`` on the device. torch's own subclasses other than
        ``Parameter`` become emulation's plain class, as before subclasses were modelled."""
        if kind in self._on:
            return self._on[kind]
        if issubclass(kind, self._mark):
            return kind
        if not self.is_program_class(kind):
            return self._on[torch.nn.Parameter if issubclass(kind, torch.nn.Parameter) else torch.Tensor]
        made = self._made.get(kind)
        if made is None:
            self.refuse_dispatch(kind)
            # the metaclass of the program's class makes it (a Parameter subclass has its own)
            namespace: dict[str, Any] = {"__slots__": (), "__module__": kind.__module__}
            if _dispatches(kind):
                # as emulation's plain class: a call that no mode took (a thread the mode does not
                # reach) comes to the handler, which hands it to the program's class (``handler``)
                namespace["__torch_function__"] = classmethod(
                    lambda cls, func, types, args=(), kwargs=None: self._handle(func, args, kwargs)
                )
            made = type(kind)(kind.__name__, (self._mark, kind), namespace)
            made.__qualname__ = kind.__qualname__
            self._made[kind] = made
            self._off[made] = kind
        return made

    def off_device(self, kind: type) -> type:
        """The class of a tensor of ``kind`` (perhaps a class on the device) off it."""
        return self._off.get(kind, kind)

    def placed(self, kind: type, emulated: bool) -> type:
        """The class that ``as_subclass(kind)`` and its kin make of data on the device
        (``emulated``) or off it; torch's own subclasses are left as they are."""
        if emulated:
            return self.on_device(kind) if issubclass(kind, self._mark) or kind in self._on or self.is_program_class(kind) else kind
        return self.off_device(kind)

    def dispatches_below(self, kind: type) -> bool:
        """A program's class with a ``__torch_dispatch__`` of its own."""
        return self.is_program_class(kind) and getattr(kind, "__torch_dispatch__", None) is not torch.Tensor.__torch_dispatch__

    def refuse_dispatch(self, kind: type) -> None:
        if self.dispatches_below(kind):
            raise EmulationUnsupportedError(
                f"a tensor subclass with __torch_dispatch__ on the device ({kind.__module__}.{kind.__qualname__}): "
                "its handler runs below the torch-function layer that emulation works in"
            )

    def ordinary(self, tensors: list[torch.Tensor]) -> bool:
        """No tensor of the call is of a class that takes calls or dispatches below."""
        found = True
        for tensor in tensors:
            kind = type(tensor)
            if kind not in self._ordinary:
                if self._overloads_calls(kind) or self.dispatches_below(kind):
                    found = False
                else:
                    self._ordinary.add(kind)
        return found

    def _overloads_calls(self, kind: type) -> bool:
        known = self._overloads.get(kind)
        if known is None:
            known = self._overloads[kind] = self.is_program_class(kind) and _dispatches(kind)
        return known

    def overloaded(self, func: Any, args: tuple, tensors: list[torch.Tensor]) -> list[Any]:
        """Of the call's ``tensors`` (its positional ``args`` and keywords flattened), the
        program's subclass instances whose ``__torch_function__`` torch would call, in torch's
        order: one per class, a subclass before its base, otherwise left to right
        (torch/overrides.py, ``_get_overloaded_args``)."""
        leading = _DATA_ARGUMENTS.get(getattr(func, "__name__", ""))
        if leading is not None:
            tensors = [value for value in _values(args[:leading]) if isinstance(value, torch.Tensor)]
        found: list[Any] = []
        for value in tensors:
            kind = type(value)
            if not self._overloads_calls(kind) or any(type(other) is kind for other in found):
                continue
            index = next((i for i, other in enumerate(found) if issubclass(kind, type(other))), len(found))
            found.insert(index, value)
        return found

    def handler(self, arg: Any) -> Callable[..., Any]:
        """The ``__torch_function__`` of ``arg``'s program class (past the one a class on the
        device has in front), bound as torch binds it: through the instance (a classmethod to
        the instance's class, whose ``super()`` then finds ``Tensor``'s after the program's)."""
        found = inspect.getattr_static(self.off_device(type(arg)), "__torch_function__")
        return found.__get__(arg, type(arg)) if hasattr(found, "__get__") else found

    def dispatch(self, func: Any, overloaded: list[Any], args: tuple, kwargs: dict) -> Any:
        """Hand the call to each overloaded argument's ``__torch_function__`` until one
        implements it, as torch does after the modes (the caller puts emulation's mode back)."""
        types = tuple(type(arg) for arg in overloaded)
        for arg in overloaded:
            result = self.handler(arg)(func, types, args, kwargs)
            if result is not NotImplemented:
                return result
        raise _no_implementation(func, types)


def _no_implementation(func: Any, types: tuple[type, ...]) -> TypeError:
    """torch's error when every ``__torch_function__`` declined the call."""
    name = torch.overrides.resolve_name(func) or getattr(func, "__name__", repr(func))
    if inspect.isfunction(func):  # torch's Python functions: torch/overrides.py, handle_torch_function
        return TypeError(f"no implementation found for '{name}' on types that implement __torch_function__: {list(types)}")
    # its C++ bindings: torch/csrc/utils/python_arg_parser.cpp, handle_torch_function_no_python_arg_parser
    listed = "".join(f"  - tensor subclass {kind}\n" for kind in types)
    return TypeError(
        f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers returned NotImplemented:\n\n{listed}\n"
        "For more information, try re-running with TORCH_LOGS=not_implemented"
    )


def install(patches: Patches, subclasses: Subclasses, is_emulated: Callable[[Any], bool], inside: Callable[[], bool]) -> None:
    """``as_subclass``, ``Tensor._make_subclass`` and ``Tensor.__new__`` of a tensor make the
    class on the device of data on the device, and the program's class of data off it. While
    emulation runs torch itself (``inside``) they are torch's own."""
    as_subclass = torch.Tensor.as_subclass
    make_subclass = torch.Tensor._make_subclass
    new = torch.Tensor.__new__

    def placed(kind: type, data: Any) -> type:
        return kind if inside() else subclasses.placed(kind, is_emulated(data))

    # Each takes any arguments: torch._dynamo checks the signature of a replaced ``_make_subclass``
    # or ``__new__`` against its own stand-in when it is imported, and accepts ``*args, **kwargs``.
    def as_subclass_(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 2 and not kwargs:
            return as_subclass(args[0], placed(args[1], args[0]))
        return as_subclass(*args, **kwargs)

    def make_subclass_(*args: Any, **kwargs: Any) -> Any:
        if len(args) >= 2:
            args = (placed(args[0], args[1]), *args[1:])
        return make_subclass(*args, **kwargs)

    def new_(*args: Any, **kwargs: Any) -> Any:
        # ``Tensor(other)``: an alias of ``other`` (torch/csrc/utils/tensor_new.cpp, the base constructor)
        if len(args) == 2 and not kwargs and isinstance(args[1], torch.Tensor):
            args = (placed(args[0], args[1]), args[1])
        return new(*args, **kwargs)

    patches.set(torch.Tensor, "as_subclass", as_subclass_)
    patches.set(torch.Tensor, "_make_subclass", staticmethod(make_subclass_))
    patches.set(torch.Tensor, "__new__", staticmethod(new_))
