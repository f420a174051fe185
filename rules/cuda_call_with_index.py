"""DEV102 cuda-call-with-index: `.cuda(0)`, `.cuda(args.gpu)`, `.cuda(device=1)`."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from devlint.analysis.devices import always_a_device, guarded_index, index_kind, reach_of
from devlint.analysis.semantic import dotted_name, string_value
from devlint.findings import Applicability
from devlint.fixes import DeviceRef, FixPlan, Replace
from devlint.rule import Invalid, Report, Rule, Site
from devlint.rulekit.accelerator import accelerator_choice, index_choice
from devlint.rulekit.calls import (
    arg,
    closed,
    code_in_place,
    delegates_to_own_method,
    duck_typed,
    foreign_after_all,
    forwards_own_parameter,
    in_slots,
    is_storage,
    keyword,
    map_location_lambda,
    method_call,
    names_in,
    own_override,
    positional,
    receiver_is_foreign,
    with_args,
)
from devlint.torchfacts.names import CUDA_DEVICE_KEYWORDS

HEADER = "import torch\n"
# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
QUOTE = '"'
# Tensor.cuda(device, non_blocking, memory_format): what the later positionals mean in `.to(...)`.
_LATER_POSITIONALS = ("non_blocking", "memory_format")
_SHOWN_LIMIT = 30
_TIGHT_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


# A worker that sets `args.gpu` from its first parameter (the pattern of pytorch/examples' ImageNet
# script and its descendants), started by `{start}`; `.cuda(args.gpu)` in it as `{call}`.
SPAWNED = (
    "import argparse\nimport torch\nimport torch.multiprocessing as mp\nparser = argparse.ArgumentParser()\n"
    "parser.add_argument('--gpu', type=int, default=None)\n\n\ndef main_worker(gpu, args):\n    args.gpu = gpu\n"
    "    {call}\n\n\nargs = parser.parse_args()\nmain_worker(args.gpu, args)\n{start}\n"
)


@dataclass(frozen=True)
class _Target:
    """Where `.cuda(...)` puts the data, and how surely the rewrite keeps it there."""

    expression: cst.BaseExpression
    shown: str
    applicability: Applicability
    caveat: str = ""
    device: DeviceRef | None = None
    needs_torch: bool = False
    requires: tuple[int, int] = (0, 0)


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
    example = "model = Net().cuda(0)\nx = x.cuda(args.gpu, non_blocking=True)\ny = y.cuda(bias.get_device())"
    use_instead = (
        'model = Net().to("cuda:0" if torch.cuda.is_available() else "cpu")\n'
        'x = x.to(torch.device("cuda", args.gpu) if torch.cuda.is_available() else torch.device("cpu"), non_blocking=True)\n'
        "y = y.to(bias.device)\n\n"
        "# or, better, let the launcher pick the GPU (CUDA_VISIBLE_DEVICES, torchrun) and use one device:\n"
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\nmodel = Net().to(device)'
    )
    fix_availability = "sometimes"
    fix_note = (
        "The fix keeps the GPU the call names, and only falls back to the CPU where CUDA is missing. "
        "Safe: a literal index (`.cuda(1)` becomes `.to(\"cuda:1\" if torch.cuda.is_available() else \"cpu\")`, the "
        "same GPU), an argument that is an index or None on every path (an int literal, `int(...)`, "
        "`dist.get_rank()`, `torch.cuda.current_device()`, `t.device.index`, arithmetic of those, a `range` loop variable, "
        "a parameter annotated `int`, an argparse option declared only with `type=int` and an int or None default "
        "(`args.gpu` after `add_argument(\"--gpu\", type=int, default=None)`) that the file assigns nothing else "
        "but ints (the first parameter of a worker that is only called with ints or the option itself, or "
        "started by `torch.multiprocessing.spawn`, which passes the process index, counts); it becomes `torch.device(\"cuda\", i) if ... else torch.device(\"cpu\")`, "
        "and `torch.device(\"cuda\", None)` is the current GPU as `.cuda(None)` is), a variable bound to a "
        "device on every path (`.to(d)` is the same call as `.cuda(d)`; not a parameter that a call in the file gives None "
        "or the CPU, that a test's `pytest.mark.parametrize` may give None, or that its annotation lets be None), `t.get_device()` or `t.device` "
        "(`.to(t.device)`: the GPU holding `t`; a CPU `t` gives -1, which `.cuda()` rejects), a CUDA device written "
        "as a string or `torch.device(...)` of one (`.cuda(\"cuda:1\")`, `.cuda(torch.device(\"cuda\", 1))` become "
        "`.to(...)` of the same, whose literal DEV103 then gives its CPU side). `torch.device(k)` of one argument "
        "is the GPU `.cuda(k)` names and is judged as `k` (another `torch.device(...)` gets no fix). Unsafe: an "
        "argument of unknown type gets the index form, which raises a TypeError if it is neither an "
        "index nor None; an argument named like a device (`device`, `dev`, `*_device`) becomes "
        "`.to(arg)`, which differs when it is None (`.cuda(None)` is the current GPU, `.to(None)` a "
        "no-op). With DEV604 selected a literal index takes its accelerator form "
        "(`f\"{torch.accelerator.current_accelerator().type}:1\" if torch.accelerator.is_available() else \"cpu\"`), "
        "safe at any index, unlike DEV604's own fix: `.cuda(1)` asks for CUDA unguarded, so an "
        "accelerator that lacks the index (MPS has one device) failed before as after. So does an index "
        "the program chooses: `.cuda(args.gpu)` becomes `.to(torch.device(torch.accelerator.current_accelerator().type, "
        "args.gpu) if torch.accelerator.is_available() else torch.device(\"cpu\"))`, the check and accelerator of "
        "the inserted `device` definition, so a model moved with `.cuda(args.gpu)` and batches moved with "
        "`.cuda()` meet on any accelerator (below torch-version 2.6 both ask `torch.cuda.is_available()`). `non_blocking` and `memory_format` are kept. No fix "
        "for `self.cuda(i)` inside the class's own `to()`: `self.to(...)` there would call that method "
        "again, without end."
    )
    triggers = ("cuda",)
    quiet_where_cuda_is_known = True
    # its fix reads the call, the device finder, argparse options, attribute assignments and the
    # classes of the file (devlint.engine.reuse)
    reusable_fixes = True

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
        # the same class below the function that makes one
        "def fill():\n    pool = Pool()\n    return pool.cuda(0)\n\n\nclass Pool:\n    def cuda(self, i):\n        return self\n",
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
        # a device written as a string or a `torch.device(...)` of one is where `.to()` puts the
        # data too (DEV103 then gives the literal its CPU side); `torch.device(k)` of one argument
        # is the GPU of index `k`, judged as `.cuda(k)` would be (SlowFast's `torch.device(self.gpu_id)`
        # once became `torch.device("cuda", torch.device(self.gpu_id))`, a TypeError)
        Invalid(
            'import torch\na = x.cuda("cuda:1")\nb = x.cuda(torch.device("cuda", 1))\n',
            'import torch\na = x.to("cuda:1")\nb = x.to(torch.device("cuda", 1))\n',
            count=2,
        ),
        Invalid(
            "import torch\n\ndef run(self, x):\n    return x.cuda(device=torch.device(self.gpu_id), non_blocking=True)\n",
            "import torch\n\ndef run(self, x):\n"
            '    return x.to(torch.device("cuda", self.gpu_id) if torch.cuda.is_available() else torch.device("cpu"), non_blocking=True)\n',
            unsafe=True,
        ),
        # an option argparse converts with type=int is an int or None on every path, as a literal is
        Invalid(
            "import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--gpu', type=int, default=None)\nargs = parser.parse_args()\nx = torch.ones(2).cuda(args.gpu)\n",
            "import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--gpu', type=int, default=None)\nargs = parser.parse_args()\n"
            'x = torch.ones(2).to(torch.device("cuda", args.gpu) if torch.cuda.is_available() else torch.device("cpu"))\n',
        ),
        # ... also where the program sets it to the first parameter of a worker that is only called
        # with the option itself or started by torch.multiprocessing.spawn (which passes an int)
        Invalid(
            SPAWNED.format(call="x = torch.ones(2).cuda(args.gpu)", start="mp.spawn(main_worker, nprocs=2, args=(args,))"),
            SPAWNED.format(
                call='x = torch.ones(2).to(torch.device("cuda", args.gpu) if torch.cuda.is_available() else torch.device("cpu"))',
                start="mp.spawn(main_worker, nprocs=2, args=(args,))",
            ),
        ),
        # ... but not where the worker is started in another way, or given something else
        Invalid(
            SPAWNED.format(call="x = torch.ones(2).cuda(args.gpu)", start="pool.map(main_worker, ranks)"),
            SPAWNED.format(
                call='x = torch.ones(2).to(torch.device("cuda", args.gpu) if torch.cuda.is_available() else torch.device("cpu"))',
                start="pool.map(main_worker, ranks)",
            ),
            unsafe=True,
        ),
        Invalid(
            SPAWNED.format(call="x = torch.ones(2).cuda(args.gpu)", start='main_worker("0", args)'),
            SPAWNED.format(
                call='x = torch.ones(2).to(torch.device("cuda", args.gpu) if torch.cuda.is_available() else torch.device("cpu"))',
                start='main_worker("0", args)',
            ),
            unsafe=True,
        ),
        # without type=int the option is a string: unsafe
        Invalid(
            "import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--gpu', default=None)\nargs = parser.parse_args()\nx = torch.ones(2).cuda(args.gpu)\n",
            "import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--gpu', default=None)\nargs = parser.parse_args()\n"
            'x = torch.ones(2).to(torch.device("cuda", args.gpu) if torch.cuda.is_available() else torch.device("cpu"))\n',
            unsafe=True,
        ),
        # a device parameter that a test's parametrization gives None: `.cuda(None)` is the
        # current GPU, `.to(None)` a no-op
        Invalid(
            "import pytest\nimport torch\n\n@pytest.mark.parametrize(\"device\", [None, torch.device(\"cuda\", 0)])\n"
            "def test_move(device):\n    return torch.ones(2).cuda(device)\n",
            "import pytest\nimport torch\n\n@pytest.mark.parametrize(\"device\", [None, torch.device(\"cuda\", 0)])\n"
            "def test_move(device):\n    return torch.ones(2).to(device)\n",
            unsafe=True,
        ),
        # ... which, given devices only, it is not
        Invalid(
            "import pytest\nimport torch\n\n@pytest.mark.parametrize(\"n, device\", [(1, \"cuda:0\"), pytest.param(2, \"cuda:1\")])\n"
            "def test_move(n, device):\n    return torch.ones(n).cuda(device)\n",
            "import pytest\nimport torch\n\n@pytest.mark.parametrize(\"n, device\", [(1, \"cuda:0\"), pytest.param(2, \"cuda:1\")])\n"
            "def test_move(n, device):\n    return torch.ones(n).to(device)\n",
        ),
        # an int literal in any spelling names a GPU by its value
        Invalid(
            "import torch\ny = x.cuda(0x1)\n",
            'import torch\ny = x.to("cuda:1" if torch.cuda.is_available() else "cpu")\n',
        ),
        # a literal index is kept where CUDA is available: safe
        Invalid(
            "import torch\nmodel = Net().cuda(0)\n",
            'import torch\nmodel = Net().to("cuda:0" if torch.cuda.is_available() else "cpu")\n',
        ),
        # an argument of unknown type: the index is kept, unsafe (a TypeError if it is no index)
        Invalid(
            "import torch\nx = x.cuda(args.gpu, non_blocking=True)\n",
            'import torch\nx = x.to(torch.device("cuda", args.gpu) if torch.cuda.is_available() else torch.device("cpu"), non_blocking=True)\n',
            unsafe=True,
        ),
        Invalid(
            "import torch\nmodule.cuda(device=1)\nold.cuda(device_id=0)\n",
            'import torch\nmodule.to("cuda:1" if torch.cuda.is_available() else "cpu")\n'
            'old.to("cuda:0" if torch.cuda.is_available() else "cpu")\n',
            count=2,
        ),
        # a device keyword after another argument moves to the front; the call keeps its layout,
        # less a trailing comma before the `)`
        Invalid(
            "import torch\nx = x.cuda(\n    non_blocking=True,\n    device=0\n)\ny = y.cuda(non_blocking=True, device=0, )\n",
            'import torch\nx = x.to(\n    "cuda:0" if torch.cuda.is_available() else "cpu",\n    non_blocking=True\n)\n'
            'y = y.to("cuda:0" if torch.cuda.is_available() else "cpu", non_blocking=True)\n',
            count=2,
        ),
        # the later positionals of Tensor.cuda become keywords of .to
        Invalid(
            "import torch\ny = x.cuda(0, True)\n",
            'import torch\ny = x.to("cuda:0" if torch.cuda.is_available() else "cpu", non_blocking=True)\n',
        ),
        # an index on every path: a rank, a range variable, an int parameter
        Invalid(
            "import torch\nimport torch.distributed as dist\n\n"
            "def spread(xs, first: int):\n    rank = dist.get_rank() % torch.cuda.device_count()\n"
            "    ys = [y.cuda(rank) for y in xs]\n    for i in range(2):\n        xs[i] = xs[i].cuda(i)\n"
            "    return ys, xs[0].cuda(first)\n",
            "import torch\nimport torch.distributed as dist\n\n"
            "def spread(xs, first: int):\n    rank = dist.get_rank() % torch.cuda.device_count()\n"
            '    ys = [y.to(torch.device("cuda", rank) if torch.cuda.is_available() else torch.device("cpu")) for y in xs]\n'
            "    for i in range(2):\n"
            '        xs[i] = xs[i].to(torch.device("cuda", i) if torch.cuda.is_available() else torch.device("cpu"))\n'
            '    return ys, xs[0].to(torch.device("cuda", first) if torch.cuda.is_available() else torch.device("cpu"))\n',
            count=3,
        ),
        # `import torch as t` only: the new code says `t.`
        Invalid(
            "import torch as t\ncast = lambda v: v.cuda(1)\n",
            'import torch as t\ncast = lambda v: v.to("cuda:1" if t.cuda.is_available() else "cpu")\n',
        ),
        # the index of another tensor's device (None on the CPU, which `torch.device("cuda", None)`
        # takes as the current GPU, as `.cuda(None)` does): the index form is exact
        Invalid(
            "import torch\n\ndef noise_like(imgs):\n    return torch.randn(4).cuda(imgs.device.index)\n",
            "import torch\n\ndef noise_like(imgs):\n"
            '    return torch.randn(4).to(torch.device("cuda", imgs.device.index) if torch.cuda.is_available() else torch.device("cpu"))\n',
        ),
        # torch.load's map_location lambda gives way to the device it names
        Invalid(
            "import torch\nstate = torch.load(path, map_location=lambda storage, loc: storage.cuda(args.gpu))\n",
            'import torch\nstate = torch.load(path, map_location=torch.device("cuda", args.gpu) if torch.cuda.is_available() else torch.device("cpu"))\n',
            unsafe=True,
        ),
        # `self.cuda(0)` inside the class's own to(): `self.to(...)` there would call that very
        # method again, without end; reported, not fixed
        Invalid(
            "import torch\n\nclass Util(torch.nn.Module):\n    def to(self, device):\n"
            "        if \"cuda\" in str(device):\n            return self.cuda(0)\n        return self.cpu()\n",
            unsafe=True,
        ),
        # the GPU another tensor is on
        Invalid(
            "import torch\n\ndef scale(y, bias):\n    return y.cuda(bias.get_device()) * bias\n",
            "import torch\n\ndef scale(y, bias):\n    return y.to(bias.device) * bias\n",
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
        # a device wherever it is bound: `.to(home)` is the same call (unbound, both raise alike)
        Invalid(
            "import torch\n\ndef step(x, obj):\n    if isinstance(obj, torch.Tensor):\n        home = obj.device\n"
            "    return x.cuda(home)\n",
            "import torch\n\ndef step(x, obj):\n    if isinstance(obj, torch.Tensor):\n        home = obj.device\n"
            "    return x.to(home)\n",
        ),
        # a device on one path, an index on another: unknown, the index form, unsafe
        Invalid(
            "import torch\n\ndef step(x, obj, gpu):\n    where = obj.device if obj is not None else gpu\n"
            "    return x.cuda(where)\n",
            "import torch\n\ndef step(x, obj, gpu):\n    where = obj.device if obj is not None else gpu\n"
            '    return x.to(torch.device("cuda", where) if torch.cuda.is_available() else torch.device("cpu"))\n',
            unsafe=True,
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

    def withdraws(self, report: Report) -> bool:
        return foreign_after_all(self.ctx, report.node, report.site, "cuda")

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
        return next((k for name in CUDA_DEVICE_KEYWORDS if (k := keyword(node, name)) is not None), None)

    def _fix(self, node: cst.Call, attribute: cst.Attribute, given: cst.Arg, site: Site) -> FixPlan | None:
        target = self._target(given.value, attribute, site)
        if target is None:
            return None
        loader = map_location_lambda(self.ctx, node)
        if loader is not None:
            # `map_location=lambda storage, loc: storage.cuda(i)`: torch.load restores onto a
            # device given as map_location exactly as the lambda did.
            replace = Replace(loader, self.ctx.module.code_for_node(target.expression))
            return FixPlan(
                f"Replace the `map_location` lambda with `{target.shown}`{target.caveat}",
                [replace], target.applicability, device=target.device, needs_torch=target.needs_torch,
                requires=target.requires,
            )
        if is_storage(attribute.value) or duck_typed(self.ctx, node, attribute.value, "cuda"):
            return None  # a storage's `to` takes the device as a keyword only; a duck may have no `to`
        if isinstance(attribute.value, cst.Name) and delegates_to_own_method(site, attribute.value, "to"):
            return None  # `self.cuda(i)` inside the class's own `to`: `self.to(...)` there calls that method again
        rest: list[cst.Arg] = []
        later = iter(_LATER_POSITIONALS)
        for a in node.args:
            if a is given or (a.keyword is not None and a.keyword.value in CUDA_DEVICE_KEYWORDS):
                continue
            if a.keyword is None:
                name = next(later, None)
                if name is None:
                    return None
                a = a.with_changes(keyword=cst.Name(name), equal=_TIGHT_EQUAL)
            rest.append(a)
        new = self._to_call(node, given, target.expression, rest)
        shown = self.ctx.module.code_for_node(given.value)
        applicability, caveat = target.applicability, target.caveat
        override = own_override(self.ctx, attribute.value, site, "cuda")
        if override is not None:
            applicability, caveat = "unsafe", f" (unsafe: `.to` skips `{override}.cuda`)"
        override = own_override(self.ctx, attribute.value, site, "to")
        if override is not None:
            applicability, caveat = "unsafe", f" (unsafe: it runs `{override}.to`, which `.cuda()` did not)"
        return FixPlan(
            f"Replace `.cuda({shown})` with `.to({target.shown})`{caveat}",
            [self._replace(node, new)], applicability, device=target.device, needs_torch=target.needs_torch,
            requires=target.requires,
        )

    def _target(self, value: cst.BaseExpression, attribute: cst.Attribute, site: Site) -> _Target | None:
        """Where `.cuda(value)` puts the data, as an expression `.to()` (or map_location) takes;
        None where no expression of the file can say it."""
        if _cuda_device_literal(value) or (self._is_device_call(value) and _cuda_device_literal(value.args[0].value)):  # type: ignore[attr-defined]
            # `"cuda:1"`, `torch.device("cuda", 1)`: `.to()` puts the data on that very device, and
            # DEV103 then gives the literal its CPU side
            return _Target(value, self.ctx.module.code_for_node(value), "safe")
        if self._is_device_call(value):
            assert isinstance(value, cst.Call)
            if len(value.args) != 1 or value.args[0].keyword is not None or value.args[0].star:
                return None
            # `torch.device(k)` is the GPU `.cuda(k)` means (an index, or a device that stays itself)
            return self._target(value.args[0].value, attribute, site)
        if isinstance(value, cst.Name) and value.value == "None":
            device = self.ctx.device(site, avoid=names_in(attribute.value))
            return _Target(arg(device.expr).value, device.expr, "safe", device=device)
        owner = _device_of(value)
        if owner is not None:
            # `t.get_device()` is the index of the GPU holding `t` (-1, which `.cuda()` rejects, on the CPU)
            where = cst.Attribute(value=owner, attr=cst.Name("device"))
            return _Target(where, self.ctx.module.code_for_node(where), "safe")
        shown = self.ctx.module.code_for_node(value)
        if self._is_device_variable(value, site):
            return _Target(value, shown, "safe")
        kind = index_kind(self.ctx, value, site)
        if kind == "device":
            return _Target(value, shown, "unsafe", " (`.cuda(None)` is the current GPU, `.to(None)` a no-op)")
        if isinstance(value, cst.Integer):
            # `0x1` and `1_0` are ints too, but no part of a device string
            index = str(value.evaluated_value)
            if self.ctx.settings.device_expression == "accelerator":
                # DEV604 is selected: its form of the choice, so that the fix leaves nothing it flags.
                # Safe at any index, unlike DEV604's fix: `.cuda(i)` asks for CUDA unguarded, so on an
                # accelerator that lacks the index (MPS has one device) it already failed; DEV604's
                # original chose the CPU there and ran.
                choice = accelerator_choice(f"cuda:{index}", QUOTE)
                assert choice is not None  # a decimal index always has that form
                guarded = choice[0]
                return _Target(arg(guarded).value, guarded, "safe", needs_torch=True)
            guarded = guarded_index(index, literal=True)
            return _Target(arg(guarded).value, guarded, "safe", needs_torch=True)
        # the definition's own check and accelerator, so that the model and its data meet
        guarded, requires = index_choice(self.ctx, shown)
        if kind == "int":
            return _Target(arg(guarded).value, guarded, "safe", needs_torch=True, requires=requires)
        caveat = f" (unless `{shown}` is not a GPU index or None)"
        return _Target(arg(guarded).value, guarded, "unsafe", caveat, needs_torch=True, requires=requires)

    def _replace(self, node: cst.Call, new: cst.Call) -> Replace:
        return Replace(node, code_in_place(self.ctx, node, new))

    @staticmethod
    def _to_call(node: cst.Call, given: cst.Arg, device: cst.BaseExpression, rest: list[cst.Arg]) -> cst.Call:
        """``.to(device, *rest)``; when only the device argument moved to the front, the layout
        (line breaks, trailing comma) of the original arguments is kept."""
        first = given.with_changes(value=device, keyword=None, equal=cst.MaybeSentinel.DEFAULT)
        if len(rest) == len(node.args) - 1:
            return closed(node.with_changes(func=node.func.with_changes(attr=cst.Name("to")), args=in_slots(node, [first, *rest])))
        return with_args(node, "to", [first.with_changes(comma=cst.MaybeSentinel.DEFAULT), *rest])

    def _is_device_call(self, value: cst.BaseExpression) -> bool:
        """``torch.device(...)`` with arguments, whatever name torch goes by."""
        return isinstance(value, cst.Call) and bool(value.args) and self.ctx.model.qualname(value.func) == "torch.device"

    def _is_device_variable(self, value: cst.BaseExpression, site: Site) -> bool:
        """A name (or ``obj.attr``) that holds a device on every path where it is bound at the site
        (devlint.analysis.reaching): `.cuda(d)` and `.to(d)` are then the same call, wherever `d` points (and
        where `d` is unbound both raise the same NameError)."""
        name = dotted_name(value)
        if name is None:
            return False
        found = reach_of(name, site.scope, site.node, self.ctx.flows)
        if found is None or not always_a_device(self.ctx.model, found[1], where_bound=True):
            return False
        # a parameter some call gives None: `.cuda(None)` is the current GPU, `.to(None)` a no-op
        return not (found[1] is not None and found[1].params and self.ctx.given_no_gpu(found[0], name))


def _cuda_device_literal(value: cst.BaseExpression) -> bool:
    """``"cuda"`` or ``"cuda:N"`` as written."""
    text = string_value(value)
    return text is not None and (text == "cuda" or (text.startswith("cuda:") and text[5:].isdigit()))


def _device_of(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """``t`` in ``.cuda(t.get_device())`` and ``.cuda(t.device)``: the argument names where ``t`` is."""
    if isinstance(value, cst.Call) and not value.args:
        attribute = method_call(value, "get_device")
        return attribute.value if attribute is not None else None
    if isinstance(value, cst.Attribute) and value.attr.value == "device":
        return value.value
    return None
