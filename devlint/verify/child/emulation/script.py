"""TorchScript on the emulated device: a scripted or traced function's results where CUDA puts them.

The TorchScript interpreter is C++: it runs a graph's ATen ops on the CPU data under emulated
tensors and returns plain tensors, which would say ``cpu``. On a GPU it runs the same ops through
the dispatcher on the inputs' device, and an ATen op's results are on the device of its tensor
operands, except where the op names a device (``to(device)``, a factory's ``device=``), moves
(``cpu()``) or makes tensors from nothing (a factory without a device: the CPU on a GPU too).

So before each call of a ``ScriptFunction`` or ``ScriptMethod`` its graph (inlined) is followed
value by value from what the call gives it (each tensor argument and each tensor attribute of the
module: on the device or not): a result computed from the device is on the device, one computed
only from host tensors is a host tensor, as on a GPU. Where the graph does what that cannot settle
the run stops with ``not emulated: TorchScript on the device (...)`` rather than differ silently:
a device named inside the graph (a traced graph records the CPU that emulation ran on for
``"cuda"``), a device or ``is_cuda`` read (the interpreter would read ``cpu``), a CUDA op, a move
off the device mixed with device operands, a tensor constant with dimensions, a Python or opaque
call inside the graph, and a host-tensor copy that a trace may have recorded for ``.cuda()``.
Until the program has put a tensor on the device, calls run as they are: nothing is on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .machine import EmulationUnsupportedError
from .patches import Patches
from .tensor import Dispatcher, tensors_in

DEVICE, HOST, SCALAR, CONSTANT, ABSENT = "device", "host", "host scalar", "constant", "no device"
Label = frozenset
NONE: Label = frozenset()

# Ops that read the device or print a tensor: the interpreter would answer for the CPU.
_DEVICE_READS = frozenset(
    {"prim::is_cuda", "prim::is_cpu", "aten::get_device", "aten::is_pinned", "aten::pin_memory", "prim::Print"}
    | {"aten::warn", "prim::is_xpu", "prim::is_mps", "prim::is_meta"}
)
# Text made from a tensor (its printing says where it is): fine only in the message of an
# exception, which is raised on a GPU too (the text differs in its ``device=`` only).
_TEXT = frozenset({"aten::str", "aten::format", "aten::__str__", "aten::__repr__", "aten::add", "aten::join"})
# Ops that may take operands on two devices on CUDA (indices, copies): the result is where the
# first operand is.
_CROSS_DEVICE = frozenset(
    {"aten::index", "aten::index_put", "aten::index_put_", "aten::_index_put_impl_", "aten::copy_"}
    | {"aten::expand_as", "aten::view_as", "aten::reshape_as", "aten::result_type"}
)
# Ops whose results include host tensors on CUDA too (batch sizes, lengths, a shape).
_HOST_RESULTS = frozenset({"aten::_pack_padded_sequence", "aten::_pad_packed_sequence", "aten::_shape_as_tensor"})
# Graph structure: the outputs hold what the inputs held.
_STRUCTURE = frozenset(
    {"prim::ListConstruct", "prim::ListUnpack", "prim::TupleConstruct", "prim::TupleUnpack", "prim::TupleIndex"}
    | {"prim::TupleSlice", "prim::DictConstruct", "prim::unchecked_cast", "prim::data", "aten::__getitem__"}
    | {"aten::append", "aten::list", "aten::dict", "aten::values", "aten::detach", "prim::ListIndex"}
    | {"aten::extend", "aten::insert", "aten::_set_item"}
)
# Of those, the ones that add to the list or dict given first.
_MUTATIONS = frozenset({"aten::append", "aten::extend", "aten::insert", "aten::_set_item"})
# Opaque inside the graph: Python, calls not inlined, other threads.
_OPAQUE = frozenset({"prim::PythonOp", "prim::CallFunction", "prim::CallMethod", "prim::fork", "aten::wait"})


Graphs = dict[int, tuple[Any, Any]]  # id of a function -> (the function, its inlined graph)


def install(patches: Patches, dispatcher: Dispatcher) -> None:
    graphs: Graphs = {}
    function_call = torch.jit.ScriptFunction.__call__
    method_call = torch._C.ScriptMethod.__call__
    patches.set(torch.jit.ScriptFunction, "__call__", _placing(function_call, dispatcher, graphs))
    patches.set(torch._C.ScriptMethod, "__call__", _placing(method_call, dispatcher, graphs))
    patches.set(torch.jit, "trace", _refusing(torch.jit.trace))
    patches.set(torch.jit, "trace_module", _refusing(torch.jit.trace_module))


def _refusing(trace: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.jit.trace`` runs the traced function once to check it and reports what went wrong
    as its own ``TracingCheckError``: a refusal there is the run's refusal."""

    def traced(*args: Any, **kwargs: Any) -> Any:
        try:
            return trace(*args, **kwargs)
        except Exception as error:
            if isinstance(error.__cause__, EmulationUnsupportedError):
                raise error.__cause__ from None
            raise

    return traced


def _placing(original: Callable[..., Any], dispatcher: Dispatcher, graphs: Graphs) -> Callable[..., Any]:
    def __call__(function: Any, *args: Any, **kwargs: Any) -> Any:
        if not dispatcher.machine.initialized:
            return original(function, *args, **kwargs)  # no tensor is on the device yet
        try:
            placing, known = _follow(function, args, kwargs, dispatcher, graphs)
        except EmulationUnsupportedError:
            raise
        except Exception as error:  # noqa: BLE001 - a graph this module cannot read is not emulated
            raise _refuse(f"a graph emulation cannot follow: {type(error).__name__}: {error}") from error
        return _place(dispatcher, original(function, *args, **kwargs), placing, known)

    return __call__


def _follow(function: Any, args: tuple, kwargs: dict, dispatcher: Dispatcher, graphs: Graphs) -> tuple[list[Any], tuple]:
    """The labels of the graph's outputs for this call (see _Flow), and the tensors the graph was
    given (arguments, attributes): a result that is one of them is not changed in place."""
    cached = graphs.get(id(function))
    if cached is None or cached[0] is not function:
        # the inlined graph is built anew at each read; the function is kept so its id stays its own
        cached = graphs[id(function)] = (function, function.inlined_graph)
    graph = cached[1]
    owner = getattr(function, "owner", None)  # a method's module
    names = [argument.name for argument in function.schema.arguments][1 if owner is not None else 0 :]
    given = _bind(names, args, kwargs)
    flow = _Flow(dispatcher)
    inputs = list(graph.inputs())
    if owner is not None:
        flow.objects[inputs[0].unique()] = owner
        inputs = inputs[1:]
    for value, name in zip(inputs, names):
        flow.labels[value.unique()] = flow.label_of(given.get(name), _is_device(value))
    return flow.run(graph), (*tensors_in((args, kwargs)), *flow.attributes)


def _bind(names: list[str], args: tuple, kwargs: dict) -> dict[str, Any]:
    given = dict(zip(names, args))
    given.update({name: value for name, value in kwargs.items() if name in names})
    return given


def _refuse(what: str) -> EmulationUnsupportedError:
    return EmulationUnsupportedError(f"TorchScript on the device ({what})")


class _Flow:
    """Where each tensor value of a graph is: a set of DEVICE, HOST (on the host, any shape),
    SCALAR (a host tensor without dimensions, which CUDA ops take with device operands) and
    CONSTANT (a tensor the graph holds: where it came from is not recorded). Device values carry
    the label of the tensor they were read from."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.labels: dict[int, Label] = {}
        self.objects: dict[int, Any] = {}
        self.elements: dict[int, list[Label]] = {}
        self.attributes: list[torch.Tensor] = []

    def label_of(self, value: Any, device: bool = False) -> Label:
        """The label of a value the call gives the graph (an argument, a module attribute);
        ``device``: the graph takes it as a device."""
        if device:
            if value is None:
                return frozenset({ABSENT})
            if torch.device(value).type != "cpu":
                raise _refuse(f"a device given to a scripted or traced function: {value}")
            return frozenset({HOST})
        found: set[str] = set()
        for tensor in tensors_in(value):
            if self.dispatcher.is_emulated(tensor):
                found.add(DEVICE)
            else:
                found.add(SCALAR if tensor.dim() == 0 and tensor.device.type == "cpu" else HOST)
        return frozenset(found)

    def run(self, graph: Any) -> list[Any]:
        """Each graph output's label (a list of labels for a tuple the graph builds)."""
        self.block(graph.nodes())
        return [self.elements.get(value.unique(), self.get(value)) for value in graph.outputs()]

    def get(self, value: Any) -> Label:
        return self.labels.get(value.unique(), NONE)

    def block(self, nodes: Any) -> None:
        for node in nodes:
            self.node(node)

    def node(self, node: Any) -> None:
        kind = node.kind()
        inputs, outputs = list(node.inputs()), list(node.outputs())
        held = frozenset().union(*(self.get(value) for value in inputs))
        if kind in _OPAQUE:
            raise _refuse(f"{kind} inside a scripted or traced function")
        if any(_is_device(value) and DEVICE in self.get(value) for value in inputs) and not (
            kind.startswith("aten::") and any(_bears_tensor(value) for value in outputs)
        ):
            # only an op that makes or moves tensors may take the device (`device=x.device`);
            # anything else would see the CPU (`x.device.type == "cpu"` branches the other way)
            raise _refuse(f"{kind} reads the device of a tensor on the device")
        if kind == "prim::If":
            self._branches(node, outputs)
        elif kind == "prim::Loop":
            self._loop(node, inputs, outputs)
        elif kind == "prim::GetAttr":
            self._attribute(node, inputs[0], outputs[0])
        elif kind == "prim::Constant":
            self._constant(outputs[0])
        elif kind == "prim::device":
            # of a tensor computed from None (a branch that never runs): no device either
            self.labels[outputs[0].unique()] = held or frozenset({ABSENT})
        elif kind in _DEVICE_READS:
            if DEVICE in held:
                raise _refuse(f"{kind} of a tensor on the device reads the CPU it runs on")
        elif kind in _TEXT and _is_text(outputs[0]):
            self.labels[outputs[0].unique()] = held  # a device tensor's text, followed
        elif kind == "prim::RaiseException":
            pass  # its message may print a device tensor: the program fails on a GPU too
        elif any(_is_text(value) and DEVICE in self.get(value) for value in inputs):
            raise _refuse(f"{kind} of a device tensor's text (printed for the CPU it runs on)")
        elif kind == "prim::Uninitialized":
            pass  # a value of a branch that raises: it never reaches a use
        elif kind in _STRUCTURE:
            self._structure(kind, inputs, outputs, held)
        elif kind == "prim::NumToTensor":
            self._set(outputs, frozenset({SCALAR}))
        elif kind.startswith("aten::"):
            self._op(kind, inputs, outputs, held)
        elif any(_bears_tensor(value) or _is_device(value) for value in outputs):
            raise _refuse(f"{kind} inside a scripted or traced function")
        # else: a prim op that answers about a tensor without its device (dtype, shape, isinstance)

    def _set(self, values: list[Any], label: Label) -> None:
        for value in values:
            if _bears_tensor(value) or _is_device(value):
                self.labels[value.unique()] = label

    def _structure(self, kind: str, inputs: list[Any], outputs: list[Any], held: Label) -> None:
        if kind == "prim::TupleConstruct":
            self.elements[outputs[0].unique()] = [self.get(value) for value in inputs]
        if kind in _MUTATIONS:
            self.labels[inputs[0].unique()] = held  # the list now holds the new items too
        self._set(outputs, held)

    def _branches(self, node: Any, outputs: list[Any]) -> None:
        found = [NONE] * len(outputs)
        for block in node.blocks():
            self.block(block.nodes())
            found = [have | self.get(value) for have, value in zip(found, block.outputs())]
        for value, label in zip(outputs, found):
            self.labels[value.unique()] = label

    def _loop(self, node: Any, inputs: list[Any], outputs: list[Any]) -> None:
        # (trip count, condition, carried...); the body: (iteration, carried...) -> (condition, carried...)
        body = next(iter(node.blocks()))
        carried = [self.get(value) for value in inputs[2:]]
        while True:
            for value, label in zip(list(body.inputs())[1:], carried):
                self.labels[value.unique()] = label
            before = dict(self.labels)
            self.block(body.nodes())
            after = [have | self.get(value) for have, value in zip(carried, list(body.outputs())[1:])]
            # again until nothing changes: the body may also add to a list made before the loop
            if after == carried and self.labels == before:
                break
            carried = after
        for value, label in zip(outputs, carried):
            self.labels[value.unique()] = label

    def _attribute(self, node: Any, owner_value: Any, output: Any) -> None:
        owner = self.objects.get(owner_value.unique())
        if owner is None:
            raise _refuse("an attribute of an object the call cannot see")
        found = owner.getattr(node.s("name"))
        self.attributes.extend(tensors_in(found))
        if _bears_tensor(output) or _is_device(output):
            self.labels[output.unique()] = self.label_of(found, _is_device(output))
        else:
            self.objects[output.unique()] = found

    def _constant(self, output: Any) -> None:
        if _is_device(output):
            # a traced graph records the device that ran, the CPU under emulation
            raise _refuse("a device named inside a scripted or traced function")
        elif _bears_tensor(output):
            value = output.toIValue()
            if any(tensor.dim() > 0 for tensor in tensors_in(value)):
                raise _refuse("a tensor constant inside a scripted or traced function")
            self.labels[output.unique()] = frozenset({CONSTANT})

    def _op(self, kind: str, inputs: list[Any], outputs: list[Any], held: Label) -> None:
        if kind == "aten::cuda" or kind.startswith("aten::_cudnn") or kind.startswith("aten::cudnn"):
            raise _refuse(f"{kind}")
        given = [self.get(value) for value in inputs if _is_device(value)]
        if not all(given):
            raise _refuse(f"a device {kind} takes from where emulation cannot follow")
        devices = [label - {ABSENT} for label in given if label - {ABSENT}]
        tensors = [self.get(value) for value in inputs if _bears_tensor(value)]
        operands = frozenset().union(*tensors) if tensors else NONE
        if kind in _HOST_RESULTS:
            if DEVICE in operands:
                raise _refuse(f"{kind} on the device")
            result = frozenset({HOST})
        elif kind == "aten::cpu":
            result = frozenset({HOST})
        elif devices:
            result = frozenset().union(*devices) - {SCALAR, CONSTANT} or frozenset({HOST})
        elif kind in ("aten::to", "aten::type_as") and len(tensors) > 1:
            result = tensors[1]  # to(other), type_as(other): the other tensor's device
        elif kind in _CROSS_DEVICE and tensors:
            if kind != "aten::copy_" and DEVICE in operands and tensors[0] and DEVICE not in tensors[0]:
                # indices on the device for a host tensor: CUDA refuses
                raise _refuse(f"{kind} of a host tensor with operands on the device")
            result = tensors[0]
        elif not tensors:
            result = frozenset({HOST})  # a factory without a device: the CPU, on a GPU too
        elif not operands:
            result = NONE  # computed from None (an Optional argument not given): never runs
        elif DEVICE in operands:
            if HOST in operands:
                raise _refuse(f"{kind} of tensors on the device and on the host")
            result = frozenset({DEVICE})
        elif kind == "aten::to" and HOST in operands:
            # a trace of `.cuda()` under emulation records the CPU copy it ran
            raise _refuse("a copy of a host tensor that a trace may have recorded for a move to the device")
        else:
            result = frozenset({HOST})
        self._set(outputs, result)


def _bears_tensor(value: Any) -> bool:
    return "TensorType" in _kinds(value.type())


def _is_text(value: Any) -> bool:
    return value.type().kind() == "StringType"


def _is_device(value: Any) -> bool:
    return "DeviceObjType" in _kinds(value.type())


def _kinds(kind: Any) -> set[str]:
    found = {kind.kind()}
    if found & {"ClassType", "InterfaceType"}:
        return found  # a module or object: its attributes are read with prim::GetAttr
    for contained in kind.containedTypes():
        found |= _kinds(contained)
    return found


def _place(dispatcher: Dispatcher, result: Any, labels: list[Any], known: tuple) -> Any:
    """The call's result with each tensor where its label says."""
    label = labels[0] if len(labels) == 1 else labels
    return _placed(dispatcher, result, label, known)


def _placed(dispatcher: Dispatcher, value: Any, label: Any, known: tuple) -> Any:
    if isinstance(label, list):
        if isinstance(value, tuple) and len(value) == len(label):
            return tuple(_placed(dispatcher, item, part, known) for item, part in zip(value, label))
        label = frozenset().union(*label) if label else NONE
    if not any(True for _ in tensors_in(value)):
        if isinstance(value, str) and DEVICE in label:
            raise _refuse("a device tensor's text as a result (printed for the CPU it runs on)")
        return value
    if DEVICE not in label:
        if CONSTANT in label:
            raise _refuse("a tensor constant as a result")
        return _copied_off(dispatcher, value)
    if label != frozenset({DEVICE}):
        raise _refuse("a result that may be on the device or on the host")
    return _wrapped(dispatcher, value, known)


def _wrapped(dispatcher: Dispatcher, value: Any, known: tuple) -> Any:
    if isinstance(value, dict):
        return {key: _wrapped(dispatcher, item, known) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_wrapped(dispatcher, item, known) for item in value)
    # a host tensor the graph was given (`host.to(x.device)` returns it) stays the caller's
    return dispatcher.wrap(value, known) if isinstance(value, torch.Tensor) else value


def _copied_off(dispatcher: Dispatcher, value: Any) -> Any:
    """A host result that is a device tensor itself: ``aten::cpu`` of a CPU tensor returns it,
    where CUDA's copies it off the device."""
    if isinstance(value, dict):
        return {key: _copied_off(dispatcher, item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copied_off(dispatcher, item) for item in value)
    if not dispatcher.is_emulated(value):
        return value
    with dispatcher.raw():
        return value.to("cpu", copy=True).as_subclass(torch.Tensor)
