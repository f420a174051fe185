"""DEV605 unknown-device-api: a device-generic API that does not exist, or not yet in `torch-version`."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.semantic import dotted_name
from devlint.analysis.version_guards import branches
from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Rule, Word
from devlint.torchfacts.device_api_table import ACCELERATOR, DEVICE_MODULE
from devlint.torchfacts.names import DEVICE_API_CLASSES, DEVICE_API_MODULES
from devlint.torchfacts.version import TorchVersion, shown

HEAD = "import torch\n"

# What exists for a name that does not: (the form to use, a rewrite of the attribute that keeps
# the call's arguments, or None where the form needs more than a new name).
_INSTEAD: dict[str, tuple[str, str | None]] = {
    "torch.accelerator.manual_seed": ("`torch.manual_seed(...)`, which seeds the CPU and every device", "torch.manual_seed"),
    "torch.accelerator.manual_seed_all": ("`torch.manual_seed(...)`, which seeds the CPU and every device", "torch.manual_seed"),
    "torch.accelerator.seed": ("`torch.seed()`", "torch.seed"),
    "torch.accelerator.get_device_name": (
        "`torch.get_device_module(device).get_device_name(...)` (CUDA, XPU) or `torch.cuda.get_device_name(...)`", None,
    ),
    "torch.accelerator.get_device_properties": (
        "`torch.get_device_module(device).get_device_properties(...)` (CUDA, XPU) or `torch.cuda.get_device_properties(...)`", None,
    ),
    "torch.accelerator.mem_get_info": ("`torch.accelerator.get_memory_info(...)` (torch 2.10)", "torch.accelerator.get_memory_info"),
    "torch.accelerator.current_device": ("`torch.accelerator.current_device_index()` (torch 2.6)", "torch.accelerator.current_device_index"),
    "torch.accelerator.set_device": ("`torch.accelerator.set_device_index(...)` (torch 2.6)", "torch.accelerator.set_device_index"),
    "torch.accelerator.Stream": ("`torch.Stream`", "torch.Stream"),
    "torch.accelerator.Event": ("`torch.Event`", "torch.Event"),
    "torch.amp.GradScaler": ("`torch.cuda.amp.GradScaler(...)`, the form torch < 2.3 has", None),
}
# A newer name and the older spelling of the same function, for a torch-version between the two.
_OLDER: dict[str, str] = {
    "torch.accelerator.current_device_index": "torch.accelerator.current_device_idx",
    "torch.accelerator.set_device_index": "torch.accelerator.set_device_idx",
}
_PROBES = ("AttributeError", "ImportError", "ModuleNotFoundError", "Exception", "BaseException")


class UnknownDeviceApi(Rule):
    code = "DEV605"
    name = "unknown-device-api"
    what = (
        "Flags attributes of the device-generic namespaces that do not exist, or not yet in the project's "
        "`torch-version`: `torch.accelerator.X`, `torch.amp.X`, `torch.Stream.X` / `torch.Event.X`, "
        "`torch.get_device_module(...).X`, as attributes and in `from ... import`."
    )
    why = (
        "Moving code from `torch.cuda` by hand, it is natural to write `torch.accelerator.get_device_name()` or "
        "`torch.accelerator.manual_seed_all(0)`: neither exists, and the code raises `AttributeError` only when "
        "that line runs, often on a machine nobody tested. The namespace also grows release by release "
        "(`torch.accelerator` arrived in 2.6, its memory functions in 2.9, `get_memory_info` in 2.10): code that "
        "uses a newer name fails on the oldest torch the project supports."
    )
    example = "torch.accelerator.manual_seed_all(0)\nname = torch.accelerator.get_device_name(0)"
    use_instead = "torch.manual_seed(0)\nname = torch.get_device_module(device).get_device_name(0)"
    fix_availability = "sometimes"
    fix_note = (
        "Where a name does not exist and one that does means the same, the fix writes it, unsafe since the "
        "original raised `AttributeError` there (`torch.accelerator.manual_seed_all(s)` -> `torch.manual_seed(s)`, "
        "`torch.accelerator.current_device()` -> `current_device_index()` from torch-version 2.6). Where a name "
        "exists but is newer than `torch-version` and an older spelling of it exists, the fix writes that, "
        "safe (torch 2.6 has both `current_device_idx` and `current_device_index`, so none at present). Otherwise the message says what exists "
        "(`torch.get_device_module(device).get_device_name`) or which torch the name needs. Code under a guard "
        "for that torch (`if hasattr(torch.accelerator, ...)`, a version check, `try`/`except AttributeError`) "
        "is not flagged. The table is generated from PyTorch's sources by tools/device_api_table.py."
    )
    # Every finding names one of the namespaces (a use, an import or an alias), as a whole
    # identifier: `torch.amp`, `from torch import Stream` (not `sample`, `CUDAStream`).
    triggers = (Word("accelerator"), Word("amp"), Word("Stream"), Word("Event"), Word("get_device_module"))

    VALID = (
        HEAD + "scaler = torch.amp.GradScaler(device.type)\nwith torch.amp.autocast(device.type):\n    pass\n",
        # the body of a check for the torch that has it
        HEAD + "if TORCH_VERSION >= (2, 9):\n    torch.accelerator.empty_cache()\n",
        HEAD + "s = torch.Stream()\ns.synchronize()\ntorch.get_device_module(device).synchronize()\n",
        # guarded for the torch that has it
        HEAD + 'if hasattr(torch.accelerator, "get_memory_info"):\n    free, total = torch.accelerator.get_memory_info()\n',
        HEAD + "try:\n    torch.accelerator.manual_seed_all(0)\nexcept AttributeError:\n    torch.manual_seed(0)\n",
        # another library's accelerator
        "from accelerate import Accelerator\naccelerator = Accelerator()\naccelerator.get_device_name()\n",
        # strings, comments and docstrings
        '"""torch.accelerator.get_device_name() does not exist."""\n# torch.accelerator.manual_seed_all(0)\n',
    )
    INVALID = (
        Invalid(
            HEAD + "torch.accelerator.manual_seed_all(0)\n",
            HEAD + "torch.manual_seed(0)\n",
            unsafe=True,
            torch_version=(2, 9),
        ),
        Invalid(HEAD + "name = torch.accelerator.get_device_name(0)\n", torch_version=(2, 9)),
        Invalid("from torch.accelerator import get_device_name\n", torch_version=(2, 9)),
        # exists, but only from 2.10
        Invalid(HEAD + "free, total = torch.accelerator.get_memory_info()\n", torch_version=(2, 9)),
        Invalid(HEAD + "torch.amp.GradScaler(device.type)\n", torch_version=(2, 2)),
        Invalid(HEAD + "torch.get_device_module(device).manual_seed_everything(0)\n"),
        Invalid(HEAD + "e = torch.Event()\ntorch.Event.record_stream(e)\n"),
    )

    def visit_Attribute(self, node: cst.Attribute) -> None:
        owner = node.value
        if isinstance(owner, cst.Call) and self.ctx.model.qualname(owner.func) == "torch.get_device_module":
            name = node.attr.value
            if not name.startswith("_") and name not in DEVICE_MODULE:
                self._missing(node, f"torch.get_device_module(...).{name}", "no device module (torch.cpu, torch.cuda, torch.mps, torch.xpu, torch.mtia) has it")
            return
        qualname = self.ctx.model.qualname(node)
        if qualname is not None:
            self._check(node, qualname, node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module)
        if module not in DEVICE_API_MODULES:
            return
        for alias in node.names:
            name = dotted_name(alias.name)
            if name is not None:
                self._check(alias, f"{module}.{name}", None)

    def _check(self, node: cst.CSTNode, qualname: str, attribute: cst.Attribute | None) -> None:
        namespace, _, name = qualname.rpartition(".")
        if not name or name.startswith("_"):
            return
        if namespace in DEVICE_API_CLASSES:
            if name not in DEVICE_API_CLASSES[namespace]:
                self._missing(node, qualname, f"`{namespace}` has no `{name}`")
            return
        table = DEVICE_API_MODULES.get(namespace)
        if table is None:
            return
        if name not in table:
            self._missing(node, qualname, f"`{namespace}` has no `{name}`", attribute)
            return
        since = table[name]
        if since is not None and since > self.ctx.settings.torch_version and not self._guarded(node):
            self._too_new(node, qualname, since, attribute)

    def _missing(self, node: cst.CSTNode, qualname: str, why: str, attribute: cst.Attribute | None = None) -> None:
        if self._guarded(node):
            return
        instead, rewrite = _INSTEAD.get(qualname, (None, None))
        advice = f"; use {instead}" if instead else ""
        fix = None
        if rewrite is not None and attribute is not None:
            fix = lambda site: self._rewrite(attribute, rewrite, "unsafe", " (unsafe: the original raised AttributeError)")  # noqa: E731
        self.report(node, f"`{qualname}` does not exist: {why}, and the code raises `AttributeError`{advice}", fix=fix)

    def _too_new(self, node: cst.CSTNode, qualname: str, since: TorchVersion, attribute: cst.Attribute | None) -> None:
        older = _OLDER.get(qualname)
        older_since = ACCELERATOR.get(older.rpartition(".")[2]) if older else None
        fix = None
        advice = f"exists from torch {shown(since)}; `torch-version` is {shown(self.ctx.settings.torch_version)}"
        if older is not None and older_since is not None and older_since <= self.ctx.settings.torch_version and attribute is not None:
            advice += f": use `{older}`, its older spelling"
            fix = lambda site: self._rewrite(attribute, older, "safe", "")  # noqa: E731
        else:
            instead = _INSTEAD.get(qualname, (None, None))[0]
            advice += f": use {instead}" if instead else ", where the code fails with `AttributeError`"
        self.report(node, f"`{qualname}` {advice}", fix=fix)

    def _rewrite(self, attribute: cst.Attribute, new: str, applicability: str, caveat: str) -> FixPlan:
        return FixPlan(f"Use `{new}`{caveat}", [Replace(attribute, new)], applicability, needs_torch=True)  # type: ignore[arg-type]

    def _guarded(self, node: cst.CSTNode) -> bool:
        """Code that runs only where the name exists: under `try`/`except AttributeError`, in the
        body of a `hasattr` check or of a check for a newer torch (whose else branch is older)."""
        child = node
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, cst.Try) and child is ancestor.body:
                if any(self._catches_probe(handler.type) for handler in ancestor.handlers):
                    return True
            if isinstance(ancestor, (cst.If, cst.IfExp)) and child is ancestor.body:
                if "hasattr" in self.ctx.code(ancestor.test) or branches(ancestor.test, self.ctx)[1] is not None:
                    return True
            child = ancestor
        return False

    @staticmethod
    def _catches_probe(kind: cst.BaseExpression | None) -> bool:
        if kind is None:
            return True
        if isinstance(kind, cst.Tuple):
            return any(UnknownDeviceApi._catches_probe(element.value) for element in kind.elements)
        name = dotted_name(kind)
        return name is not None and name.split(".")[-1] in _PROBES
