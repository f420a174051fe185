"""DEV401 loss-not-on-device: a loss module holding a weight tensor, never moved to the device."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import libcst as cst

from devlint.analysis.devices import device_value
from devlint.analysis.semantic import dotted_name
from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Site
from devlint.rulekit.calls import code_in_place, keyword, method_call, positional
from devlint.rulekit.value_flow import FlowRule, Kind
from devlint.torchfacts.names import LOSS_TENSOR_ARGUMENTS, MOVES

HEADER = "import torch\n"
# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
# How far a weight is followed through variables (`w = torch.tensor(...)`, `weights = w.float()`).
_DEPTH = 3


class Placement(Enum):
    HOST = "host"
    DEVICE = "device"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class _Candidate:
    name: str
    call: cst.Call
    argument: str
    site: Site


class LossNotOnDevice(FlowRule):
    code = "DEV401"
    name = "loss-not-on-device"
    what = (
        "Flags a loss module built with a tensor argument (`weight=`, `pos_weight=`) on the CPU, such "
        "as `nn.CrossEntropyLoss(weight=torch.tensor([...]))`, that is never moved to the device in "
        "a file that moves other things there."
    )
    why = (
        "A loss keeps its `weight` / `pos_weight` as a buffer where it was created: on the CPU. Once "
        "the model and batches are on a GPU, the first loss call fails with \"Expected all tensors to "
        "be on the same device\". It works on a CPU-only machine, so the bug hides until the script "
        "meets a GPU."
    )
    example = (
        "model = Net().to(device)\n"
        "criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 3.0]))"
    )
    use_instead = (
        "model = Net().to(device)\n"
        "criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 3.0])).to(device)"
    )
    fix_availability = "sometimes"
    fix_note = (
        "Appends `.to(device)` to the constructor; on the CPU that does nothing, on a GPU it "
        "moves the weights where the inputs are. Silent when the loss is moved anywhere in the file "
        "(`criterion.to(...)`, `criterion.cuda()`), when it is a submodule of an `nn.Module` (it moves "
        "with the model), when the weight is created on the device, and when where the weight "
        "lives cannot be told (a parameter, another module's attribute). Safe only where the file "
        "calls the loss with a value on the device (the moved model's output, a batch moved there): "
        "a loss that is only computed on host values (after `.cpu()`) or not called here at all may "
        "be meant for the CPU, where moving its weight is what would break it, so the fix is unsafe there."
    )
    triggers = ("Loss",)

    VALID = (
        # moved later, in any spelling
        "import torch\nfrom torch import nn\nw = torch.tensor([1.0, 2.0])\ncrit = nn.CrossEntropyLoss(weight=w)\n"
        "crit.to(device)\nmodel = model.to(device)\n",
        "import torch\nimport torch.nn as nn\ncrit = nn.BCEWithLogitsLoss(pos_weight=torch.ones(3))\n"
        "crit = crit.cuda()\nx = x.cuda()\n",
        # moved at construction, or weights created on the device
        "import torch\nfrom torch import nn\ncrit = nn.NLLLoss(torch.ones(3)).to(device)\nx = x.to(device)\n",
        "import torch\nfrom torch import nn\nw = torch.ones(3, device=device)\ncrit = nn.NLLLoss(weight=w)\n"
        "x = x.to(device)\n",
        "import torch\nfrom torch import nn\ncrit = nn.NLLLoss(weight=torch.tensor([1.0, 2.0]).cuda())\nx = x.cuda()\n",
        # no tensor arguments
        "import torch\nfrom torch import nn\ncrit = nn.CrossEntropyLoss(weight=None, label_smoothing=0.1)\n"
        "mm = nn.MultiMarginLoss(1, 0.5)\nx = x.to(device)\n",
        # nothing in the file moves to a device: a CPU script
        "import torch\nfrom torch import nn\ncrit = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0]))\n"
        "x = x.to(torch.float64)\n",
        # a submodule of an nn.Module moves with the model
        "import torch\nfrom torch import nn\n\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.crit = nn.CrossEntropyLoss(weight=torch.ones(2))\n\n"
        "net = Net().to(device)\n",
        # where the weight lives is unknown here
        "import torch\nfrom torch import nn\n\ndef make(weights):\n    crit = nn.CrossEntropyLoss(weight=weights)\n"
        "    return crit\n\nx = x.to(device)\n",
        # strings, comments and docstrings
        '"""crit = nn.CrossEntropyLoss(weight=torch.ones(2))"""\n# nn.BCELoss(torch.ones(2))\nx = x.cuda()\n',
    )
    INVALID = (
        # the loss meets the moved model's output: safe
        Invalid(
            "import torch\nfrom torch import nn\nmodel = Net().cuda()\n"
            "criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 3.0]))\nloss = criterion(model(x), y)\n",
            "import torch\nfrom torch import nn\n" + DEVICE + "model = Net().cuda()\n"
            "criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 3.0])).to(device)\nloss = criterion(model(x), y)\n",
        ),
        # a weight variable, an alias of the class, a positional weight
        Invalid(
            "import torch\nfrom torch.nn import NLLLoss as NLL\nweights = torch.from_numpy(counts).float()\n"
            "loss_fn = NLL(weights)\nx = x.cuda()\nprint(loss_fn(x, y))\n",
            "import torch\nfrom torch.nn import NLLLoss as NLL\n" + DEVICE
            + "weights = torch.from_numpy(counts).float()\nloss_fn = NLL(weights).to(device)\nx = x.cuda()\nprint(loss_fn(x, y))\n",
        ),
        Invalid(
            "import torch\nimport torch.nn as nn\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "crit = nn.BCEWithLogitsLoss(pos_weight=torch.full((4,), 2.0))\nmodel.to(device)\n"
            "for x, y in loader:\n    loss = crit(model(x.to(device)), y.to(device))\n",
            "import torch\nimport torch.nn as nn\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "crit = nn.BCEWithLogitsLoss(pos_weight=torch.full((4,), 2.0)).to(device)\nmodel.to(device)\n"
            "for x, y in loader:\n    loss = crit(model(x.to(device)), y.to(device))\n",
        ),
        # nothing here shows the loss meeting device values (it may be computed on the CPU, or
        # elsewhere): the fix is unsafe
        Invalid(
            "import torch\n\nclass Trainer:\n    def __init__(self, model, dev: torch.device):\n"
            "        self.model = model.to(dev)\n"
            "        self.crit = torch.nn.MultiMarginLoss(weight=torch.ones(5).cpu())\n",
            "import torch\n\nclass Trainer:\n    def __init__(self, model, dev: torch.device):\n"
            "        self.model = model.to(dev)\n"
            "        self.crit = torch.nn.MultiMarginLoss(weight=torch.ones(5).cpu()).to(dev)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nmodel = nn.Linear(3, 2).cuda()\n"
            "criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0]))\n"
            "out = model(x.cuda()).detach().cpu()\nprint(criterion(out, y))\n",
            "import torch\nfrom torch import nn\n" + DEVICE + "model = nn.Linear(3, 2).cuda()\n"
            "criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0])).to(device)\n"
            "out = model(x.cuda()).detach().cpu()\nprint(criterion(out, y))\n",
            unsafe=True,
        ),
        # guarded code is still reported; the fix does nothing on a CPU-only run
        Invalid(
            "import torch\nif args.weighted:\n    crit = torch.nn.BCELoss(torch.tensor([0.2, 0.8]))\n"
            "model.cuda()\nloss = crit(model(batch), target)\n",
            HEADER + DEVICE + "if args.weighted:\n    crit = torch.nn.BCELoss(torch.tensor([0.2, 0.8])).to(device)\n"
            "model.cuda()\nloss = crit(model(batch), target)\n",
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._candidates: list[_Candidate] = []
        self._moved: set[str] = set()
        self._file_moves = False
        # names of losses called with a value known to be on the device (devlint.rulekit.value_flow)
        self._called_on_device: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        for method in MOVES:
            attribute = method_call(node, method)
            if attribute is not None and self._moves_to_device(node, method):
                self._file_moves = True
                name = dotted_name(attribute.value)
                if name is not None:
                    self._moved.add(name)
        callee = dotted_name(node.func)
        if callee is not None and any(self._on_device(a.value) for a in node.args):
            self._called_on_device.add(callee)
        self._maybe_candidate(node)

    def _on_device(self, value: cst.BaseExpression) -> bool:
        found = self.flow.value(value)
        return found is not None and found.kind is Kind.DEVICE

    def finish(self) -> None:
        if not self._file_moves:
            return
        for candidate in self._candidates:
            if candidate.name in self._moved:
                continue
            # reported where the walk met it: its scope is where the loss is built
            self.report(
                candidate.call,
                f"`{candidate.name}` keeps its `{candidate.argument}` tensor on the CPU and is never moved "
                "to the device; on a GPU the loss fails with a device mismatch",
                fix=lambda _site, c=candidate: self._fix(c),
                site=candidate.site,
            )

    # -- candidates ------------------------------------------------------------------------------

    def _maybe_candidate(self, node: cst.Call) -> None:
        model = self.ctx.model
        names = model.qualnames(node.func)
        if len(names) != 1:
            return
        qualname = names.pop()
        loss = qualname.rsplit(".", 1)[-1]
        if not qualname.startswith("torch.nn.") or loss not in LOSS_TENSOR_ARGUMENTS:
            return
        name = self._bound_name(node)
        if name is None:
            return
        site = self.ctx.site(node)
        plain = positional(node)
        for index, argument in LOSS_TENSOR_ARGUMENTS[loss].items():
            given = keyword(node, argument) or (plain[index] if index < len(plain) else None)
            if given is not None and self._placement(given.value, site, _DEPTH) is Placement.HOST:
                self._candidates.append(_Candidate(name, node, argument, site))
                return

    def _bound_name(self, node: cst.Call) -> str | None:
        """The variable or attribute the new loss is assigned to, unless it is a Module's submodule."""
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            target = parent.targets[0].target
        elif isinstance(parent, cst.AnnAssign):
            target = parent.target
        else:
            return None
        name = dotted_name(target)
        if name is None:
            return None
        if name.startswith("self.") and self._in_module_class():
            return None
        return name

    def _in_module_class(self) -> bool:
        scope = self.ctx.model.scope
        while scope is not None and scope.kind != "class":
            scope = scope.parent
        return scope is not None and self.ctx.model.is_module_like_class(scope.name)

    def _placement(self, value: cst.BaseExpression, site: Site, depth: int) -> Placement:
        """Where a tensor expression lives, as far as this file tells."""
        model = self.ctx.model
        if isinstance(value, cst.Call):
            device = keyword(value, "device")
            if device is not None:
                return Placement.HOST if device_value(model, device.value) is False else Placement.DEVICE
            if isinstance(value.func, cst.Attribute) and model.qualname(value.func) is None:
                method = value.func.attr.value
                if method == "cpu":
                    return Placement.HOST
                if method in MOVES:
                    return Placement.HOST if self._moves_to_cpu(value) else Placement.DEVICE
                return self._placement(value.func.value, site, depth)
            qualname = model.qualname(value.func) or ""
            if qualname.startswith("torch.cuda."):
                return Placement.DEVICE
            return Placement.HOST if qualname.startswith("torch.") else Placement.UNKNOWN
        if isinstance(value, cst.BinaryOperation):
            # `counts.sum() / counts`: a result lives where its tensor operands live
            sides = {self._placement(value.left, site, depth), self._placement(value.right, site, depth)}
            for place in (Placement.DEVICE, Placement.HOST):
                if place in sides:
                    return place
            return Placement.UNKNOWN
        name = dotted_name(value)
        if name is None or depth == 0:
            return Placement.UNKNOWN
        bindings = model.visible_bindings(name, site.scope, site.order)
        places = {
            self._placement(b.value, site, depth - 1) if b.kind == "assign" and b.value is not None else Placement.UNKNOWN
            for b in bindings
        }
        return places.pop() if len(places) == 1 else Placement.UNKNOWN

    def _moves_to_device(self, node: cst.Call, method: str) -> bool:
        if method == "cuda":
            return True
        if keyword(node, "device") is not None:
            return not self._moves_to_cpu(node)
        plain = positional(node)
        if not plain:
            return False
        first = self.ctx.model.qualname(plain[0].value) or ""
        # `.to(torch.float64)` changes the dtype only
        return not (first.startswith("torch.") and first != "torch.device") and not self._moves_to_cpu(node)

    def _moves_to_cpu(self, node: cst.Call) -> bool:
        if method_call(node, "cuda") is not None:
            return False
        given = keyword(node, "device") or (positional(node)[:1] or [None])[0]
        return given is not None and device_value(self.ctx.model, given.value) is False

    # -- fix -------------------------------------------------------------------------------------

    def _fix(self, candidate: _Candidate) -> FixPlan:
        device = self.ctx.device(candidate.site)
        code = code_in_place(self.ctx, candidate.call, candidate.call)
        if candidate.name in self._called_on_device:
            return FixPlan(
                f"Append `.to({device.expr})` to the loss",
                [Replace(candidate.call, f"{code}.to({device.expr})")],
                "safe",
                device=device,
            )
        # Nothing here shows the loss meeting device values: it may be computed on the CPU
        # (after `.cpu()`), where moving its weight would be what breaks it.
        return FixPlan(
            f"Append `.to({device.expr})` to the loss (unsafe: no call here shows it computed on the device)",
            [Replace(candidate.call, f"{code}.to({device.expr})")],
            "unsafe",
            device=device,
        )
