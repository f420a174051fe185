"""DEV101 cuda-call: `.cuda()` without a device index."""

from __future__ import annotations

import libcst as cst

from devlint.fixes import FixPlan, Replace
from devlint.rule import FixFactory, Invalid, Report, Rule, Site
from devlint.rulekit.calls import (
    arg,
    delegates_to_own_method,
    duck_typed,
    foreign_after_all,
    is_storage,
    keyword,
    map_location_lambda,
    method_call,
    names_in,
    own_override,
    positional,
    prepend_arg,
    receiver_is_foreign,
)
from devlint.torchfacts.names import CUDA_DEVICE_KEYWORDS

HEADER = "import torch\n"
# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


class CudaCall(Rule):
    code = "DEV101"
    name = "cuda-call"
    what = "Flags `.cuda()` on a tensor, module or Variable, with or without `non_blocking=`."
    why = (
        "`.cuda()` only works on a machine with an NVIDIA GPU and a CUDA build of PyTorch. The same "
        "script fails on a laptop, in CPU-only CI, or on Apple, Intel or AMD accelerators. "
        "`.to(device)` with one `device` chosen at start-up runs everywhere and still uses the GPU "
        "when there is one."
    )
    example = "model = Net().cuda()\nx = x.cuda(non_blocking=True)"
    use_instead = (
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "model = Net().to(device)\nx = x.to(device, non_blocking=True)"
    )
    fix_availability = "safe"
    fix_note = (
        "Safe: on a CUDA machine the device is CUDA, so the program does what it did; without one "
        "it now runs on the CPU. The fix reuses a device already in scope (inside `forward(self, x)` "
        "that is `x.device`, unless the class places parts of itself outside `forward`: then the input "
        "may be on the CPU; nor for a value computed from `x`, which already is on `x.device`, where "
        "`.cuda()` moved it to the GPU, nor under a test of the program's own GPU flag, such as "
        "`if self.use_gpu:`), else inserts one module-level `device` definition after the imports. "
        "Unsafe on an instance of a local Module subclass with its own `cuda()` (`.to` skips it) or "
        "its own `to()` (`.to` runs it, `.cuda()` did not). No fix for `self.cuda()` inside the "
        "class's own `to()`: `self.to(...)` there would call that method again, without end."
    )
    triggers = ("cuda",)
    quiet_where_cuda_is_known = True
    # its fix reads the call, the device finder and the classes of the file (devlint.engine.reuse)
    reusable_fixes = True

    VALID = (
        # already device-agnostic
        "import torch\nx = torch.ones(3).to(device)\n",
        # an index picks a GPU: DEV102's business, not this rule's
        "import torch\nx = torch.ones(3).cuda(0)\n",
        "import torch\nmodel = Net().cuda(device_id=1)\n",
        # a class with its own cuda() that is no nn.Module
        "class Pool:\n    def cuda(self):\n        return self\n\npool = Pool()\npool.cuda()\n",
        # rebinding the name in the same statement does not make it a tensor
        "class Batch:\n    def cuda(self):\n        return self\n\nbatch = Batch()\nbatch = batch.cuda()\n",
        "class Pool:\n    def cuda(self):\n        return self\n\n    def warm(self):\n        return self.cuda()\n",
        # the class defined below the function that makes one: known when the function runs
        "def fill():\n    pool = Pool()\n    return pool.cuda()\n\n\nclass Pool:\n    def cuda(self):\n        return self\n",
        # a Module subclass implementing cuda() itself may call the parent's
        "import torch\n\nclass Net(torch.nn.Module):\n    def cuda(self, device=None):\n        return super().cuda()\n",
        # strings, comments and docstrings
        '"""Call x.cuda() first."""\n# model.cuda()\nhint = "use .cuda()"\n',
        # torch.cuda is a module, not a call of .cuda()
        "import torch\nok = torch.cuda.is_available()\n",
        # a module whose own cuda() is no tensor move, as bound at the call
        "from numba import cuda as gpu\nimport torch\n\ndef run():\n    return gpu.cuda()\n",
    )
    INVALID = (
        Invalid(
            "import torch\nmodel = Net().cuda()\n",
            HEADER + DEVICE + "model = Net().to(device)\n",
        ),
        Invalid(
            "import torch\n\ndef load(xs):\n    return torch.stack(xs).cuda().t()\n",
            "import torch\n" + DEVICE + "\n\ndef load(xs):\n    return torch.stack(xs).to(device).t()\n",
        ),
        Invalid(
            "import torch\nmodel.cuda()\n",
            HEADER + DEVICE + "model.to(device)\n",
        ),
        Invalid(
            "import torch\nfrom torch.autograd import Variable\nv = Variable(x).cuda(non_blocking=True)\n",
            "import torch\nfrom torch.autograd import Variable\n" + DEVICE
            + "v = Variable(x).to(device, non_blocking=True)\n",
        ),
        Invalid(
            "import torch\ncast = lambda t: t.cuda()\nys = [y.cuda() for y in xs]\n",
            HEADER + DEVICE + "cast = lambda t: t.to(device)\nys = [y.to(device) for y in xs]\n",
            count=2,
        ),
        # a device already in scope is reused, whatever its name
        Invalid(
            "import torch\n\ndef step(batch, dev: torch.device):\n    return batch.cuda()\n",
            "import torch\n\ndef step(batch, dev: torch.device):\n    return batch.to(dev)\n",
        ),
        # ... also inside a closure the function returns: it reads what reached its `def`
        Invalid(
            "import torch\n\ndef bench(n, device: str):\n    device = torch.device(device)\n\n"
            "    def run():\n        return torch.ones(n).cuda()\n\n    return run\n",
            "import torch\n\ndef bench(n, device: str):\n    device = torch.device(device)\n\n"
            "    def run():\n        return torch.ones(n).to(device)\n\n    return run\n",
        ),
        # ... but not where the function binds the name again after the `def`
        Invalid(
            "import torch\n\ndef bench(n, device: torch.device):\n    def run():\n        return torch.ones(n).cuda()\n\n"
            "    device = None\n    return run\n",
            "import torch\n" + DEVICE.replace("device =", "torch_device =")
            + "\n\ndef bench(n, device: torch.device):\n    def run():\n        return torch.ones(n).to(torch_device)\n\n"
            "    device = None\n    return run\n",
        ),
        # ... not a device named for what it holds, chosen by a flag: where some data goes, not
        # where `.cuda()` sends the batch
        Invalid(
            "import torch\n\ndef extract(model, batch, gather_on_cpu=False):\n"
            '    gather_device = torch.device("cpu") if gather_on_cpu else torch.device("cuda")\n'
            "    features = model(batch.cuda())\n    return features.to(gather_device)\n",
            "import torch\n" + DEVICE + "\n\ndef extract(model, batch, gather_on_cpu=False):\n"
            '    gather_device = torch.device("cpu") if gather_on_cpu else torch.device("cuda")\n'
            "    features = model(batch.to(device))\n    return features.to(gather_device)\n",
        ),
        # ... not one its annotation lets be None: `.to(None)` leaves the batch on the CPU
        Invalid(
            "import torch\nfrom typing import Optional\n\ndef step(batch, device: Optional[torch.device]):\n    return batch.cuda()\n",
            "import torch\nfrom typing import Optional\n"
            + DEVICE.replace("device =", "torch_device =")
            + "\n\ndef step(batch, device: Optional[torch.device]):\n    return batch.to(torch_device)\n",
        ),
        # inside forward the input's device is the one to follow
        Invalid(
            "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
            "        mask = torch.ones(3).cuda()\n        return x * mask\n",
            "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
            "        mask = torch.ones(3).to(x.device)\n        return x * mask\n",
        ),
        # ... also where `x` is rebound to what is computed from it: the value is still the input's
        Invalid(
            "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        x = self.conv(x)\n"
            "        x, _ = self.rnn(x.flatten(1))\n        mask = torch.ones(x.shape).cuda()\n        return x * mask\n",
            "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        x = self.conv(x)\n"
            "        x, _ = self.rnn(x.flatten(1))\n        mask = torch.ones(x.shape).to(x.device)\n        return x * mask\n",
        ),
        # ... nor for the input's own data moved: on its own device the move would do nothing,
        # where `.cuda()` took it to the GPU
        Invalid(
            "import torch\n\nclass L2(torch.nn.Module):\n    def forward(self, a, b):\n"
            "        dist = ((a - b) ** 2).mean(dim=1)\n        return dist.cuda()\n",
            HEADER + DEVICE + "\n\nclass L2(torch.nn.Module):\n    def forward(self, a, b):\n"
            "        dist = ((a - b) ** 2).mean(dim=1)\n        return dist.to(device)\n",
        ),
        # ... nor under the program's own GPU flag, which says where the value goes (lpips'
        # distances of CPU inputs came back on CUDA)
        Invalid(
            "import torch\n\nclass Score(torch.nn.Module):\n    def forward(self, a):\n"
            "        score = torch.tensor([1.0])\n        if self.use_gpu:\n            score = score.cuda()\n"
            "        return score * a.shape[0]\n",
            HEADER + DEVICE + "\n\nclass Score(torch.nn.Module):\n    def forward(self, a):\n"
            "        score = torch.tensor([1.0])\n        if self.use_gpu:\n            score = score.to(device)\n"
            "        return score * a.shape[0]\n",
        ),
        # ... but not where it is rebound to other data, or moved: `x` is then not where it came in
        Invalid(
            "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        x = self.cache[x.shape[0]]\n"
            "        return x * torch.ones(3).cuda()\n",
            HEADER + DEVICE + "\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        x = self.cache[x.shape[0]]\n"
            "        return x * torch.ones(3).to(device)\n",
        ),
        Invalid(
            "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        x = x.float().cpu()\n"
            "        return x * torch.ones(3).cuda()\n",
            HEADER + DEVICE + "\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        x = x.float().cpu()\n"
            "        return x * torch.ones(3).to(device)\n",
        ),
        # a module that places its own parts (a GPU head beside a CPU embedding): its input may be
        # on the CPU, so `.cuda()` follows the GPU, not the input
        Invalid(
            "import torch\n\nclass Hybrid(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.head = torch.nn.Linear(4, 1).cuda()\n\n    def forward(self, ids):\n"
            "        pooled = self.emb(ids).mean(1) / ids.shape[1]\n        return self.head(pooled.cuda())\n",
            HEADER + DEVICE + "\n\nclass Hybrid(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.head = torch.nn.Linear(4, 1).to(device)\n\n    def forward(self, ids):\n"
            "        pooled = self.emb(ids).mean(1) / ids.shape[1]\n        return self.head(pooled.to(device))\n",
            count=2,
        ),
        # only `from torch import ...`: `import torch` is added for the device definition
        Invalid(
            "from torch import nn, ones\nnet = nn.Linear(2, 2).cuda()\n",
            "from torch import nn, ones\nimport torch\n" + DEVICE + "net = nn.Linear(2, 2).to(device)\n",
        ),
        # `device` means something else here: the definition takes another name
        Invalid(
            'import torch\ndevice = "gpu-0"\nx = torch.zeros(2).cuda()\n',
            'import torch\n\ntorch_device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            'device = "gpu-0"\nx = torch.zeros(2).to(torch_device)\n',
        ),
        # a call laid out one argument a line keeps its layout and the block's indentation
        Invalid(
            "import torch\n\ndef f(x):\n    if x is not None:\n        return x.cuda(\n"
            "            non_blocking=True,\n        )\n",
            "import torch\n" + DEVICE + "\n\ndef f(x):\n    if x is not None:\n        return x.to(\n"
            "            device,\n            non_blocking=True,\n        )\n",
        ),
        # a custom class's own cuda() still moves real tensors inside: those calls are flagged
        Invalid(
            "import torch\n\nclass Batch:\n    def cuda(self):\n        return Batch(self.x.cuda())\n",
            "import torch\n" + DEVICE + "\n\nclass Batch:\n    def cuda(self):\n        return Batch(self.x.to(device))\n",
        ),
        # a device pinned to one GPU is not reused: `.cuda()` means the current GPU
        Invalid(
            'import torch\nsecond = torch.device("cuda:1")\nx = torch.ones(1).cuda()\n',
            "import torch\n" + DEVICE + 'second = torch.device("cuda:1")\nx = torch.ones(1).to(device)\n',
        ),
        # parentheses around the call stay as they are, comments inside them too
        Invalid(
            "import torch\nx = (torch.ones(1).cuda())\ny = (\n    torch.zeros(2).cuda()  # keep\n)\n",
            HEADER + DEVICE + "x = (torch.ones(1).to(device))\ny = (\n    torch.zeros(2).to(device)  # keep\n)\n",
            count=2,
        ),
        # a storage mapped by torch.load: the whole lambda gives way to the device
        Invalid(
            "import torch\nstate = torch.load(path, map_location=lambda storage, loc: storage.cuda())\n",
            HEADER + DEVICE + "state = torch.load(path, map_location=device)\n",
        ),
        # any other storage: its `to` takes the device as a keyword only; reported, not fixed
        Invalid("import torch\nshared = weights.untyped_storage().cuda()\n"),
        # a name that is also an imported module, rebound to a tensor
        Invalid(
            "import torch\nimport json as data\n\ndef step(data):\n    return data.cuda()\n\n"
            "for data in loader:\n    data = data.cuda()\n",
            "import torch\nimport json as data\n" + DEVICE + "\n\ndef step(data):\n    return data.to(device)\n\n"
            "for data in loader:\n    data = data.to(device)\n",
            count=2,
        ),
        # a device chosen in both branches is the program's device, CPU branch and all
        Invalid(
            "import torch\nif args.accel and torch.accelerator.is_available():\n"
            "    device = torch.accelerator.current_accelerator()\nelse:\n    device = torch.device('cpu')\n"
            "model = torch.load(path).cuda()\n",
            "import torch\nif args.accel and torch.accelerator.is_available():\n"
            "    device = torch.accelerator.current_accelerator()\nelse:\n    device = torch.device('cpu')\n"
            "model = torch.load(path).to(device)\n",
        ),
        # a device bound in one branch only is not reused where the other branch flows
        Invalid(
            "import torch\n\ndef to_home(x, obj):\n    if isinstance(obj, torch.Tensor):\n        home = obj.device\n"
            "    return x.cuda()\n",
            HEADER + DEVICE + "\n\ndef to_home(x, obj):\n    if isinstance(obj, torch.Tensor):\n        home = obj.device\n"
            "    return x.to(device)\n",
        ),
        # a Module subclass with its own cuda(): `.to` would skip it, so the fix is unsafe
        Invalid(
            "import torch\n\nclass Anchored(torch.nn.Module):\n    def cuda(self, device=None):\n"
            "        self.anchors = self.anchors.cuda(device)\n        return super().cuda(device)\n\n"
            "model = Anchored().cuda()\n",
            HEADER + DEVICE.replace("device =", "torch_device =") + "\n\nclass Anchored(torch.nn.Module):\n    def cuda(self, device=None):\n"
            "        self.anchors = self.anchors.cuda(device)\n        return super().cuda(device)\n\n"
            "model = Anchored().to(torch_device)\n",
            unsafe=True,
        ),
        # a Module subclass with its own to(): `.cuda()` never ran it, the fix would
        Invalid(
            "import torch\n\nclass Tracked(torch.nn.Module):\n    def to(self, *args, **kwargs):\n"
            "        self.moves += 1\n        return super().to(*args, **kwargs)\n\n"
            "model = Tracked().cuda()\n",
            HEADER + DEVICE + "\n\nclass Tracked(torch.nn.Module):\n    def to(self, *args, **kwargs):\n"
            "        self.moves += 1\n        return super().to(*args, **kwargs)\n\n"
            "model = Tracked().to(device)\n",
            unsafe=True,
        ),
        # `self.cuda()` inside the class's own to(): `self.to(...)` there would call that very
        # method again, without end; reported, not fixed
        Invalid(
            "import torch\n\nclass Util(torch.nn.Module):\n    def to(self, device):\n"
            "        if \"cuda\" in str(device):\n            return self.cuda()\n        return self.cpu()\n",
            unsafe=True,
        ),
        # duck typing: the object has a cuda() but maybe no to(); reported, not fixed
        Invalid("import torch\n\ndef move(obj):\n    if hasattr(obj, 'cuda'):\n        return obj.cuda()\n    return obj\n"),
        Invalid("import torch\n\ndef move(obj):\n    try:\n        return obj.cuda()\n    except (TypeError, AttributeError):\n        return obj\n"),
        # guarded code is still reported; the fix keeps what a CPU-only run does
        Invalid(
            "import torch\nif torch.cuda.is_available():\n    model.cuda()\n",
            HEADER + DEVICE + "if torch.cuda.is_available():\n    model.to(device)\n",
        ),
    )

    def withdraws(self, report: Report) -> bool:
        return foreign_after_all(self.ctx, report.node, report.site, "cuda")

    def visit_Call(self, node: cst.Call) -> None:
        attribute = method_call(node, "cuda")
        # `device=` or torch 0.3's `device_id=` picks a GPU: DEV102's finding, whose fix keeps it.
        if attribute is None or positional(node) or any(keyword(node, name) is not None for name in CUDA_DEVICE_KEYWORDS):
            return
        if any(arg.star for arg in node.args):
            return
        site = self.ctx.site(node)
        if delegates_to_own_method(site, attribute.value, "cuda") or receiver_is_foreign(self.ctx, attribute.value, site, "cuda"):
            return
        message = "`.cuda()` hardcodes the CUDA device; use `.to(device)`"
        self.report(node, message, fix=self._fix_factory(node, attribute), start=attribute.attr, lead=_dot_lead(attribute))

    def _fix_factory(self, node: cst.Call, attribute: cst.Attribute) -> FixFactory | None:
        loader = map_location_lambda(self.ctx, node)
        if loader is not None:
            return lambda site: self._map_location_fix(loader, site)
        if is_storage(attribute.value):
            # A storage's `to` takes the device as a keyword only, and not in every torch version.
            return None
        if duck_typed(self.ctx, node, attribute.value, "cuda"):
            return None
        if isinstance(attribute.value, cst.Name) and delegates_to_own_method(self.ctx.site(node), attribute.value, "to"):
            # `self.cuda()` inside the class's own `to`: `self.to(...)` there calls that method again
            return None
        return lambda site: self._fix(node, attribute, site)

    def _fix(self, node: cst.Call, attribute: cst.Attribute, site: Site) -> FixPlan:
        device = self.ctx.device(site, avoid=names_in(attribute.value))
        renamed = node.with_changes(func=attribute.with_changes(attr=cst.Name("to")))
        new = prepend_arg(renamed, arg(device.expr))
        override = own_override(self.ctx, attribute.value, site, "cuda")
        if override is not None:
            message = f"Replace `.cuda()` with `.to({device.expr})` (unsafe: `.to` skips `{override}.cuda`)"
            return FixPlan(message, [Replace(node, new)], "unsafe", device=device)
        override = own_override(self.ctx, attribute.value, site, "to")
        if override is not None:
            message = f"Replace `.cuda()` with `.to({device.expr})` (unsafe: it runs `{override}.to`, which `.cuda()` did not)"
            return FixPlan(message, [Replace(node, new)], "unsafe", device=device)
        return FixPlan(f"Replace `.cuda()` with `.to({device.expr})`", [Replace(node, new)], "safe", device=device)

    def _map_location_fix(self, loader: cst.Lambda, site: Site) -> FixPlan:
        """`map_location=lambda storage, loc: storage.cuda()` loads every storage onto the current
        GPU; `map_location=<device>` does the same (torch restores onto `str(device)`, and "cuda"
        means the current GPU), and onto the CPU where there is no GPU."""
        device = self.ctx.device(site, avoid=names_in(loader))
        return FixPlan(f"Replace the `map_location` lambda with `{device.expr}`", [Replace(loader, device.expr)], "safe", device=device)


def _dot_lead(attribute: cst.Attribute) -> int:
    """How far before `cuda` the finding starts: at the dot, as the message quotes `.cuda()`,
    when the dot stands on the line of `cuda` (only whitespace without a line break between)."""
    after = attribute.dot.whitespace_after if isinstance(attribute.dot, cst.Dot) else None
    if isinstance(after, cst.SimpleWhitespace) and "\n" not in after.value and "\r" not in after.value:
        return len(".") + len(after.value)
    return 0
