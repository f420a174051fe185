"""The fixed program with its device turned into ``meta``, for the device-mixing proof.

verify computes the fix itself with ``torch.device("meta")`` as the expression of the device a
fix inserts. A fix may instead reuse a device the program already chooses, typically
``device = torch.device("cuda" if torch.cuda.is_available() else "cpu")``: on a machine without a
GPU that is the CPU, every tensor would stay there, and a device mix could never show. So the
device choices of the program are rewritten too: every conditional expression with a CUDA device
(``"cuda"``, ``"cuda:N"``, ``torch.device("cuda", ...)``, ``torch.accelerator.current_accelerator()``)
on one side becomes ``meta``. Device *types* are left alone: arguments of ``autocast`` and
``GradScaler``, ``device_type=`` and names such as ``device_type`` or ``backend``; there a type
taken from the device (``device.type``) becomes ``"cuda"``, the type meta stands in for.

Nothing else changes: ``torch.cuda.is_available()`` is not patched (that would send the program
down its CUDA branches and break whatever else it checks). A program that picks its device some
other way (``torch.device(args.device)``) is not redirected; the harness notices that no tensor
ever reached ``meta`` and reports the meta run as not applicable, never as a pass.
"""

from __future__ import annotations

import libcst as cst

from devlint.devices import is_cuda_string
from devlint.semantic import dotted_name, string_value

META_EXPRESSION = 'torch.device("meta")'
_DEVICE_TYPE_CALLS = ("autocast", "GradScaler")
_DEVICE_TYPE_WORDS = ("type", "backend")


def to_meta(text: str) -> str:
    """``text`` (which parses) with its conditional CUDA device choices replaced by meta."""
    module = cst.parse_module(text)
    return module.visit(_ToMeta()).code


def _callee(call: cst.Call) -> str:
    name = dotted_name(call.func) or ""
    return name.rsplit(".", 1)[-1]


def _cuda_side(node: cst.BaseExpression) -> bool:
    if is_cuda_string(string_value(node)):
        return True
    if isinstance(node, cst.Call):
        callee = _callee(node)
        if callee == "current_accelerator":
            return True
        if callee == "device" and node.args and is_cuda_string(string_value(node.args[0].value)):
            return True
    return False


def _meta_like(side: cst.BaseExpression) -> cst.BaseExpression:
    """``"meta"`` in the form of the CUDA side it replaces."""
    if isinstance(side, cst.Call) and _callee(side) == "device":
        return side.with_changes(args=[cst.Arg(cst.SimpleString('"meta"'))])
    if isinstance(side, cst.Call):
        root = (dotted_name(side.func) or "torch").split(".")[0]
        return cst.parse_expression(f'{root}.device("meta")')
    return cst.SimpleString('"meta"')


class _ToMeta(cst.CSTTransformer):
    def __init__(self) -> None:
        super().__init__()
        self._device_type_depth = 0

    def _enter(self, is_device_type: bool) -> None:
        self._device_type_depth += is_device_type

    def _leave(self, is_device_type: bool) -> None:
        self._device_type_depth -= is_device_type

    def visit_Call(self, node: cst.Call) -> None:
        self._enter(_callee(node) in _DEVICE_TYPE_CALLS)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        self._leave(_callee(original_node) in _DEVICE_TYPE_CALLS)
        return updated_node

    def visit_Arg(self, node: cst.Arg) -> None:
        self._enter(_names_device_type(node.keyword))

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        self._leave(_names_device_type(original_node.keyword))
        return updated_node

    def visit_Assign(self, node: cst.Assign) -> None:
        self._enter(any(_names_device_type(target.target) for target in node.targets))

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        self._leave(any(_names_device_type(target.target) for target in original_node.targets))
        return updated_node

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        # The meta device stands in for CUDA: a device type taken from it (`device.type`, as the
        # DEV501/DEV603 fixes write it) reads "cuda", which autocast accepts and meta is not.
        if self._device_type_depth and original_node.attr.value == "type":
            return cst.SimpleString('"cuda"').with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
        return updated_node

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        if self._device_type_depth:
            return updated_node
        for side in (original_node.body, original_node.orelse):
            if _cuda_side(side):
                return _meta_like(side).with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
        return updated_node


def _names_device_type(node: cst.CSTNode | None) -> bool:
    if node is None:
        return False
    name = dotted_name(node) if not isinstance(node, cst.Name) else node.value
    last = (name or "").rsplit(".", 1)[-1].lower()
    return any(word in last for word in _DEVICE_TYPE_WORDS)
