"""Code that changes which GPUs torch sees, or the default device.

The inserted device definition asks torch whether CUDA is available, which fixes the visible GPUs
for the rest of the run: placement (devlint.engine.placement) puts it after such settings, and
calls its fixes unsafe where a setting runs only after it."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.semantic import string_value
from devlint.analysis.tree import descendants
from devlint.torchfacts.names import VISIBLE_DEVICES

# Names whose use changes which GPUs torch sees, or the default device.
_GPU_SETTINGS = ("environ", "putenv", "set_default_device", "set_default_tensor_type")


def may_change_gpu_environment(text: str) -> bool:
    """The file ``text`` names something that touches the environment or the default device:
    read once per file, not once per statement asked (``changes_gpu_environment``)."""
    return any(word in text for word in _GPU_SETTINGS)


def changes_gpu_environment(stmt: cst.CSTNode) -> bool:
    """``stmt`` touches the environment or the default device in code (not in a docstring)."""
    return any(isinstance(node, cst.Name) and node.value in _GPU_SETTINGS for node in descendants(stmt))


def visible_devices_set_after(module: cst.Module, text: str, after: int) -> cst.CSTNode | None:
    """Code setting CUDA_VISIBLE_DEVICES that runs after top-level statement ``after`` (later
    at top level, or inside a function): a definition placed there would run first."""
    if VISIBLE_DEVICES not in text:
        return None
    for i, stmt in enumerate(module.body):
        if i <= after and not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        setting = next((node for node in descendants(stmt) if _sets_visible_devices(node)), None)
        if setting is not None:
            return setting
    return None


def _sets_visible_devices(node: cst.CSTNode) -> bool:
    """``node`` writes CUDA_VISIBLE_DEVICES: `environ[...] = v` (also `+=`, `del`), or
    `environ.update(...)`, `.setdefault(...)`, `.pop(...)`, `putenv(...)` naming it. Reading it
    (`os.environ.get(...)`, a comparison) changes nothing."""
    if isinstance(node, (cst.Assign, cst.AugAssign, cst.Del)):
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        return any(_is_visible_devices_slot(t) for target in targets for t in descendants(target))
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if name not in ("update", "setdefault", "pop", "putenv"):
        return False
    named = any(a.keyword is not None and a.keyword.value == VISIBLE_DEVICES for a in node.args)
    given = any(
        string_value(n) == VISIBLE_DEVICES for a in node.args for n in descendants(a.value) if isinstance(n, cst.SimpleString)
    )
    return named or given


def _is_visible_devices_slot(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Subscript)
        and len(node.slice) == 1
        and isinstance(node.slice[0].slice, cst.Index)
        and string_value(node.slice[0].slice.value) == VISIBLE_DEVICES
    )
