"""DEV102 cuda-call-with-index: `.cuda(0)`, `.cuda(args.gpu)`, `.cuda(device=1)`."""

from __future__ import annotations

import libcst as cst

from devlint.astutil import (
    arg,
    code_in_place,
    delegates_to_own_method,
    forwards_own_parameter,
    keyword,
    method_call,
    names_in,
    positional,
    receiver_is_foreign,
    with_args,
)
from devlint.context import Site
from devlint.devices import device_value
from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Rule
from devlint.semantic import Binding, dotted_name, string_value

HEADER = "import torch\n"
DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
# `device_id=` is the keyword of torch < 0.4; it still appears in old code.
_DEVICE_KEYWORDS = ("device", "device_id")
# Tensor.cuda(device, non_blocking, memory_format): what the later positionals mean in `.to(...)`.
_LATER_POSITIONALS = ("non_blocking", "memory_format")
_SHOWN_LIMIT = 30
_TIGHT_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


class CudaCallWithIndex(Rule):
    code = "DEV102"
    name = "cuda-call-with-index"
    what = "Flags `.cuda(...)` given a device: `.cuda(0)`, `.cuda(args.gpu)`, `.cuda(device=1)`, `.cuda(cuda0)`."
    why = (
        "`.cuda(N)` ties the code to a CUDA machine with at least N+1 GPUs: it fails on a laptop, in "
        "CPU-only CI and on other accelerators. Choosing the GPU belongs to the launcher "
        "(`CUDA_VISIBLE_DEVICES`, `torchrun`) or to one `device` chosen at start-up; "
        "`.to(device)` then runs everywhere."
    )
    example = "model = Net().cuda(0)\nx = x.cuda(args.gpu, non_blocking=True)"
    use_instead = (
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "model = Net().to(device)\nx = x.to(device, non_blocking=True)"
    )
    fix_availability = "unsafe"
    fix_note = (
        "Unsafe: `.to(device)` drops the index, so on a machine with several GPUs the code may use "
        "another GPU than before (and `.cuda(None)` vs `.to(None)` differ). `non_blocking` and "
        "`memory_format` are kept. Safe when the argument is a variable already bound to a device "
        "(`.cuda(device)` after `device = torch.device(...)`): `.to(device)` is then the same call."
    )
    triggers = ("cuda",)

    VALID = (
        # a class implementing cuda() itself passes its caller's device on (as nn.Module.cuda does)
        "import torch\n\nclass Holder(torch.nn.Module):\n    def cuda(self, device=None):\n"
        "        return self._apply(lambda t: t.cuda(device))\n",
        # no index: DEV101's business
        "import torch\nx = torch.ones(3).cuda()\nx = x.cuda(non_blocking=True)\n",
        # already device-agnostic
        "import torch\nx = torch.ones(3).to(device)\n",
        # a class with its own cuda() that is no nn.Module
        "class Pool:\n    def cuda(self, i):\n        return self\n\npool = Pool()\npool.cuda(0)\n",
        # a module subclass implementing cuda(device) itself
        "import torch\n\nclass Net(torch.nn.Module):\n    def cuda(self, device=None):\n        return super().cuda(device)\n",
        # numba's cuda module, not a tensor method
        "from numba import cuda\ncuda.select_device(0)\n",
        "import numba\nnumba.cuda(0)\n",
        # strings, comments and docstrings
        '"""Call x.cuda(0) first."""\n# model.cuda(1)\nhint = "x.cuda(args.gpu)"\n',
        # torch.cuda API calls with an index are not tensor moves
        "import torch\nname = torch.cuda.get_device_name(0)\n",
        # unpacked arguments: cannot tell what they hold
        "import torch\ny = x.cuda(*spec)\n",
    )
    INVALID = (
        Invalid(
            "import torch\nmodel = Net().cuda(0)\n",
            HEADER + DEVICE + "model = Net().to(device)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nx = x.cuda(args.gpu, non_blocking=True)\n",
            HEADER + DEVICE + "x = x.to(device, non_blocking=True)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nmodule.cuda(device=1)\nold.cuda(device_id=0)\n",
            HEADER + DEVICE + "module.to(device)\nold.to(device)\n",
            unsafe=True,
            count=2,
        ),
        # the later positionals of Tensor.cuda become keywords of .to
        Invalid(
            "import torch\ny = x.cuda(0, True)\n",
            HEADER + DEVICE + "y = x.to(device, non_blocking=True)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch as t\nys = [y.cuda(rank) for y in xs]\ncast = lambda v: v.cuda(1)\n",
            "import torch as t\n" + HEADER + DEVICE + "ys = [y.to(device) for y in xs]\ncast = lambda v: v.to(device)\n",
            unsafe=True,
            count=2,
        ),
        # guarded code is still reported; on a CPU-only run the branch still does not run
        Invalid(
            "import torch\nif args.cuda:\n    model.cuda(args.gpu)\n",
            HEADER + DEVICE + "if args.cuda:\n    model.to(device)\n",
            unsafe=True,
        ),
        # an index-bound device variable in scope: the fix reuses the device the code chose
        Invalid(
            'import torch\ncuda0 = torch.device("cuda:0")\nx = torch.ones(2).cuda(cuda0)\n',
            'import torch\ncuda0 = torch.device("cuda:0")\nx = torch.ones(2).to(cuda0)\n',
        ),
        # the argument is a device variable: `.to(device)` is the same call, so the fix is safe
        Invalid(
            'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "model = Net().cuda(device)\n",
            'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "model = Net().to(device)\n",
        ),
        Invalid(
            "import torch\n\ndef step(x, dev: torch.device):\n    return x.cuda(dev, non_blocking=True)\n",
            "import torch\n\ndef step(x, dev: torch.device):\n    return x.to(dev, non_blocking=True)\n",
        ),
        # `.cuda(None)` is `.cuda()`: the DEV101 fix applies, and it is safe
        Invalid(
            "import torch\nx = torch.ones(2).cuda(None)\n",
            HEADER + DEVICE + "x = torch.ones(2).to(device)\n",
        ),
        # `device` may be None here (`.cuda(None)` is the current GPU, `.to(None)` a no-op): unsafe
        Invalid(
            "import torch\n\ndef step(x, device=None):\n    return x.cuda(device)\n",
            "import torch\n\ndef step(x, device=None):\n    return x.to(device)\n",
            unsafe=True,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        attribute = method_call(node, "cuda")
        if attribute is None or any(a.star for a in node.args):
            return
        given = self._device_argument(node)
        if given is None:
            return
        site = self.ctx.site(node)
        if delegates_to_own_method(site, attribute.value, "cuda") or receiver_is_foreign(self.ctx, attribute.value, site, "cuda"):
            return
        if forwards_own_parameter(site, given.value, "cuda"):
            return
        shown = self.ctx.module.code_for_node(given.value)
        if len(shown) > _SHOWN_LIMIT or "\n" in shown:
            shown = "..."
        message = f"`.cuda({shown})` hardcodes a CUDA device; use `.to(device)`"
        self.report(node, message, fix=lambda site: self._fix(node, attribute, given, site), start=attribute.attr)

    @staticmethod
    def _device_argument(node: cst.Call) -> cst.Arg | None:
        plain = positional(node)
        if plain:
            return plain[0]
        return next((k for name in _DEVICE_KEYWORDS if (k := keyword(node, name)) is not None), None)

    def _fix(self, node: cst.Call, attribute: cst.Attribute, given: cst.Arg, site: Site) -> FixPlan | None:
        rest: list[cst.Arg] = []
        later = iter(_LATER_POSITIONALS)
        for a in node.args:
            if a is given or (a.keyword is not None and a.keyword.value in _DEVICE_KEYWORDS):
                continue
            if a.keyword is None:
                name = next(later, None)
                if name is None:
                    return None
                a = a.with_changes(keyword=cst.Name(name), equal=_TIGHT_EQUAL)
            rest.append(a)
        value = given.value
        if isinstance(value, cst.Name) and value.value == "None":
            device = self.ctx.device(site, avoid=names_in(attribute.value))
            new = self._to_call(node, given, arg(device.expr).value, rest)
            return FixPlan(f"Replace `.cuda(None)` with `.to({device.expr})`", [self._replace(node, new)], "safe", device=device)
        if self._is_device_variable(value, site):
            shown = self.ctx.module.code_for_node(value)
            new = self._to_call(node, given, value, rest)
            return FixPlan(f"Replace `.cuda({shown})` with `.to({shown})`", [self._replace(node, new)], "safe")
        device = self.ctx.device(site, avoid=names_in(attribute.value))
        return FixPlan(
            f"Replace `.cuda(...)` with `.to({device.expr})` (the device index is dropped)",
            [self._replace(node, self._to_call(node, given, arg(device.expr).value, rest))],
            "unsafe",
            device=device,
        )

    def _replace(self, node: cst.Call, new: cst.Call) -> Replace:
        return Replace(node, code_in_place(self.ctx, node, new))

    @staticmethod
    def _to_call(node: cst.Call, given: cst.Arg, device: cst.BaseExpression, rest: list[cst.Arg]) -> cst.Call:
        """``.to(device, *rest)``; when the device argument came first, the layout (line breaks,
        trailing comma) of the original arguments is kept."""
        first = given.with_changes(value=device, keyword=None, equal=cst.MaybeSentinel.DEFAULT)
        if node.args[0] is given and len(rest) == len(node.args) - 1:
            return node.with_changes(func=node.func.with_changes(attr=cst.Name("to")), args=[first, *rest])
        return with_args(node, "to", [first.with_changes(comma=cst.MaybeSentinel.DEFAULT), *rest])

    def _is_device_variable(self, value: cst.BaseExpression, site: Site) -> bool:
        """A name (or ``obj.attr``) every visible binding of which is a device that is not None."""
        name = dotted_name(value)
        if name is None or string_value(value) is not None:
            return False
        bindings = self.ctx.model.visible_bindings(name, site.scope, site.order)
        return bool(bindings) and all(self._binds_device(b) for b in bindings)

    def _binds_device(self, binding: Binding) -> bool:
        model = self.ctx.model
        if binding.kind == "param":
            annotation = binding.annotation
            if annotation is not None and (
                model.qualname(annotation) == "torch.device" or string_value(annotation) == "torch.device"
            ):
                return True
            # a default alone proves nothing: a caller may pass None, and `.to(None)` stays put
            return False
        return binding.kind == "assign" and device_value(model, binding.value) is not None
