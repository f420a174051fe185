"""The data-flow facts behind DEV301-DEV304, and the behaviour of DEV202/DEV302/DEV303/DEV501 that
the rules' own VALID/INVALID examples do not pin down (fix rounds with other rules, argument
layout, guard forms, signature compatibility)."""

from __future__ import annotations

import inspect

import libcst as cst
import pytest

from devlint.engine.context import FileContext
from devlint.engine.lint import fix_text, lint_text
from devlint.engine.walk import walk
from devlint.registry import rule_by_code
from devlint.rulekit.value_flow import FlowRule

DEV101, DEV202, DEV301, DEV302, DEV303, DEV304, DEV501 = (
    rule_by_code(code) for code in ("DEV101", "DEV202", "DEV301", "DEV302", "DEV303", "DEV304", "DEV501")
)
LOADER = "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(data)\n"


class _Probe(FlowRule):
    """Records what the flow knows about the argument of every ``probe(...)`` call."""

    code = "TEST"
    name = "probe"
    triggers = ("probe",)

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.seen: list[str | None] = []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            found = self.flow.value(node.args[0].value)
            self.seen.append(found.kind.value if found is not None else None)


def probe(code: str) -> list[str | None]:
    ctx = FileContext("probe.py", code, cst.parse_module(code))
    rule = _Probe(ctx)
    walk(ctx, [rule])
    return rule.seen


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # batches: loops, enumerate/tqdm, unpacking, indexing, next(iter(...)), dict iteration
        (LOADER + "for x, y in loader:\n    probe(x); probe(y[0]); probe(x.float())\n", ["batch", "batch", None]),
        (LOADER + "for i, (x, y) in enumerate(tqdm(loader)):\n    probe(i); probe(y)\n", [None, "batch"]),
        (LOADER + "for batch in loader:\n    a, b = batch\n    probe(a); probe(batch.text)\n", ["batch", "batch"]),
        (LOADER + "first = next(iter(loader))\nprobe(first)\n", ["batch"]),
        (LOADER + "for b in loader:\n    probe({k: probe(v) for k, v in b.items()})\n", [None, "batch"]),
        ("def f(val_loader):\n    for x in val_loader:\n        probe(x)\n", ["batch"]),
        ("for x in items:\n    probe(x)\n", [None]),
        # a rebinding drops the fact; moving makes it a device value
        (LOADER + "for x, y in loader:\n    x = x.to(device)\n    probe(x)\n    x = load()\n    probe(x)\n", ["device", None]),
        # device values and what keeps them there
        ("import torch\nm = Net().to(device)\nprobe(m(x)); probe(m(x).argmax(1)); probe(torch.sigmoid(m(x)))\n",
         ["device", "device", "device"]),
        ("import torch\nm = Net()\nm.cuda()\nprobe(m); probe(m(x))\n", ["moved-module", "device"]),
        # a torch module computes where its inputs are; an unknown function may not
        ("import torch\nm = Net().to(device)\nloss_fn = torch.nn.MSELoss()\nprobe(loss_fn(m(x), y)); probe(post(m(x)))\n",
         ["device", None]),
        ("import torch\nt = torch.ones(2, device=device)\nprobe(t + 1); probe(-t); probe(t.T); probe(t.shape)\n",
         ["device", "device", "device", None]),
        ("import torch\nt = torch.ones(2, device='cpu')\nprobe(t); probe(torch.ones(2).to(torch.float16))\n", [None, None]),
        ("import torch\nt = x.to('cuda').cpu()\nprobe(t); probe(x.to(other_tensor)); probe(x.to(rank))\n", [None, None, None]),
        ('import torch\ncpu = torch.device("cpu")\nprobe(x.to(cpu)); probe(x.to(cpu).to(torch.float64))\n', [None, None]),
        # a local class with its own to() is no tensor
        ("class Box:\n    def to(self, d):\n        return self\n\nprobe(Box().to(device))\n", [None]),
        # a copy to the host without waiting
        ("import torch\nh = x.to('cpu', non_blocking=True)\nprobe(h)\nprobe(x.to('cpu', non_blocking=flag))\n",
         ["pending", None]),
    ],
)
def test_flow_facts(code: str, expected: list[str | None]) -> None:
    assert probe(code) == expected


@pytest.mark.parametrize(
    "code",
    [
        LOADER + "for x, y in loader:\n    x = x.cuda()\n",
        LOADER + "for x, y in loader:\n    x = x.cuda(non_blocking=False)\n",
    ],
)
@pytest.mark.parametrize("order", [(DEV101, DEV301), (DEV301, DEV101)])
def test_cuda_call_on_a_batch_converges_whatever_the_rule_order(code: str, order) -> None:
    fixed = fix_text(code, "train.py", list(order)).text
    wanted = "non_blocking=True)" if "False" not in code else "non_blocking=False)"
    assert f"x = x.to(device, {wanted}\n" in fixed
    assert fix_text(fixed, "train.py", list(order)).text == fixed
    assert lint_text(fixed, "train.py", list(order)) == []


@pytest.mark.parametrize(
    ("code", "flagged"),
    [
        (LOADER + "for x in loader:\n    x = x.to('cpu')\n", False),
        (LOADER + "for x in loader:\n    x = x.to(device='cpu')\n", False),
        (LOADER + "for x in loader:\n    x = x.to(dtype=torch.half)\n", False),
        (LOADER + "for x in loader:\n    x = x.to(y.dtype)\n", False),
        (LOADER + "for x in loader:\n    v = x.to(device).tolist()\n", False),
        (LOADER + "for x in loader:\n    v = x.to(device, torch.half, True)\n", False),
        (LOADER + "for x in loader:\n    v = x.to(**opts)\n", False),
        (LOADER + "for x in loader:\n    v = x.to(torch.device('cuda', 0))\n", True),
        (LOADER + "for x in loader:\n    v = x.to(args.device)\n", True),
        (LOADER + "for x in loader:\n    v = x.cuda(0)\n", True),
    ],
)
def test_blocking_copy_is_only_about_host_to_device_copies(code: str, flagged: bool) -> None:
    assert bool(lint_text(code, "train.py", [DEV301])) is flagged


def test_pin_memory_follows_a_loader_into_a_function_of_the_file() -> None:
    head = "import torch\nfrom torch.utils.data import DataLoader\n\n"
    body = "def fit(model, *, train_loader, device):\n    for x, y in train_loader:\n        x = x.to(device)\n\n"
    call = "train = DataLoader(ds)\nfit(net, train_loader=train, device=device)\n"
    assert [f.code for f in lint_text(head + body + call, "t.py", [DEV302])] == ["DEV302"]
    # the same name defined twice: which one runs is unknown
    twice = body + "def fit(model, *, train_loader, device):\n    pass\n\n"
    assert lint_text(head + twice + call, "t.py", [DEV302]) == []
    # a method of that name is another function
    method = "class Trainer:\n" + "".join("    " + line + "\n" for line in body.splitlines())
    assert lint_text(head + method + call, "t.py", [DEV302]) == []


_CACHE = "        cache = torch.load(path) if os.path.exists(path) else None\n"


@pytest.mark.parametrize(
    ("init", "getitem", "after", "reason"),
    [
        # peft's FunsdDataset: a cache read with torch.load, items built from lists on the host
        (_CACHE + "        self.ids = torch.tensor([f.ids for f in cache], dtype=torch.long)\n", "return (self.ids[i],)", "", None),
        (_CACHE + "        self.x = torch.from_numpy(np.zeros(3))\n", "return self.x[i].to(torch.float32), self.x.shape[0]", "", None),
        (_CACHE + "        self.x = cache.cpu()\n", "return self.x[i].to(dtype=torch.long)", "", None),
        ("        self.x = torch.load(path, map_location='cpu')\n        self.y = torch.load(path)\n", "return self.x[i]", "", None),
        (_CACHE + "        self.x = torch.zeros(3)\n", "out = {}\n        out['x'] = self.x[i]\n        return out", "", None),
        # what torch.load restored, a move, a device= argument, or what cannot be traced
        ("        self.x = torch.load(path)\n", "return self.x[i]", "", "`D.__getitem__` may return what `torch.load` restored"),
        (_CACHE + "        self.x = cache\n", "return [v for v in self.x][i]", "", "`D.__getitem__` may return what `torch.load` restored"),
        (_CACHE + "        self.x = torch.zeros(3)\n", "return self.x[i].to(self.device)", "", "`D.__getitem__` may return data put on a device"),
        (_CACHE + "        self.x = torch.zeros(3, device=d)\n", "return self.x[i]", "", "`D.__getitem__` may return data put on a device"),
        (_CACHE + "        self.x = torch.Tensor.cuda(torch.zeros(3))\n", "return self.x[i]", "", "`D.__getitem__` may return data put on a device"),
        (_CACHE + "        self.x = torch.zeros(3)\n", "out = []\n        out.append(self.x[i].cuda())\n        return out", "", "`D.__getitem__` may return data put on a device"),
        (_CACHE + "        self.x = x\n", "return self.x[i]", "", "`D` may put data on a device"),
        # a container that escapes, an attribute set outside the class, another way to the items
        (_CACHE + "        self.rows = []\n        fill(self.rows)\n", "return self.rows[i]", "", "`D` may put data on a device"),
        (_CACHE + "        self.x = torch.zeros(3)\n", "return self.x[i]", "ds.x = cache\n", "`D` may put data on a device"),
        (_CACHE + "        self.x = torch.zeros(3)\n", "return self.x[i]\n\n    def __getitems__(self, idx):\n        return [self.x[i] for i in idx]", "", "`D` may put data on a device"),
    ],
)
def test_pin_memory_reads_what_a_local_dataset_returns(init: str, getitem: str, after: str, reason: str | None) -> None:
    """DataLoader pins each tensor of a batch, and a tensor off the CPU cannot be pinned: the fix is
    safe where every value the dataset's `__getitem__` returns is built on the host."""
    code = (
        "import os\nimport numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
        f"class D(Dataset):\n    def __init__(self, path, x=None, d=None):\n{init}\n"
        f"    def __getitem__(self, i):\n        {getitem}\n\n\nds = D(p)\n{after}loader = DataLoader(ds)\n"
        "for b in loader:\n    b = b.to(device)\n"
    )
    (finding,) = lint_text(code, "t.py", [DEV302])
    assert finding.fix is not None
    assert (finding.fix.applicability, finding.fix.message) == (
        ("safe", "Add `pin_memory=torch.cuda.is_available()`")
        if reason is None
        else ("unsafe", f"Add `pin_memory=torch.cuda.is_available()` (unsafe: {reason}, and device tensors cannot be pinned)")
    )


def test_a_long_returned_expression_is_not_followed_to_its_end() -> None:
    """Past a depth the dataset's items count as not known to be on the host: no RecursionError
    (which would refuse the whole file) on a chain of hundreds of operators."""
    code = (
        "import torch\nfrom torch.utils.data import DataLoader, Dataset\n\n\nclass D(Dataset):\n"
        "    def __init__(self, p):\n        self.c = torch.load(p)\n        self.x = torch.zeros(3)\n\n"
        "    def __getitem__(self, i):\n        return self.x[i]" + " + 1" * 300 + "\n\n\n"
        "for b in DataLoader(D(p)):\n    b = b.to(device)\n"
    )
    (finding,) = lint_text(code, "t.py", [DEV302])
    assert finding.fix is not None and "`D` may put data on a device" in finding.fix.message
    assert lint_text(code.replace(" + 1" * 300, " + 1" * 20), "t.py", [DEV302])[0].fix.applicability == "safe"


def test_appended_argument_keeps_layout_and_comments() -> None:
    code = (
        "import torch\nfrom torch.utils.data import DataLoader\n\ndef main(ds, device):\n"
        "    loader = DataLoader(\n        ds,  # the data\n        batch_size=4  # small\n    )\n"
        "    for x in loader:\n        x = x.to(device)\n"
    )
    fixed = fix_text(code, "t.py", [DEV302]).text
    assert fixed == code.replace(
        "        batch_size=4  # small\n",
        "        batch_size=4,\n        pin_memory=torch.cuda.is_available()  # small\n",
    )
    cst.parse_module(fixed)


@pytest.mark.parametrize(
    ("code", "flagged"),
    [
        # a synchronize inside a function only waits when the function runs
        ("import torch\nh = x.to('cpu', non_blocking=True)\ndef later():\n    torch.cuda.synchronize()\n"
         "print(h)\n", True),
        # a module-level copy read inside a function: when that runs is unknown
        ("import torch\nh = x.to('cpu', non_blocking=True)\ndef show():\n    print(h)\n", False),
        # one finding per copy, however often it is read
        ("import torch\nh = x.to('cpu', non_blocking=True)\nprint(h)\nprint(h.item())\n", True),
        # writes, attributes and keyword names are no reads
        ("import torch\nh = x.to('cpu', non_blocking=True)\nh[0] = 1\nobj.h = 2\nf(h=3)\n", False),
        ("import torch\nh = x.to('cpu', non_blocking=True)\nev.wait()\nprint(h)\n", False),
    ],
)
def test_non_blocking_read_before_synchronize(code: str, flagged: bool) -> None:
    findings = lint_text(code, "t.py", [DEV303])
    assert len(findings) == (1 if flagged else 0)


@pytest.mark.parametrize(
    ("code", "flagged"),
    [
        ("if torch.cuda.is_available():\n    torch.cuda.set_device(rank)\n", False),
        ("if not torch.cuda.is_available():\n    pass\nelse:\n    torch.cuda.set_device(rank)\n", False),
        ("if device.type != 'cpu':\n    torch.cuda.set_device(rank)\n", False),
        ("if device.type == 'cpu':\n    pass\nelif ddp:\n    torch.cuda.set_device(rank)\n", False),
        ("if torch.cuda.device_count() > 1:\n    torch.cuda.set_device(rank)\n", False),
        ("assert torch.cuda.is_available()\ntorch.cuda.set_device(rank)\n", False),
        ("if not torch.cuda.is_available():\n    sys.exit(1)\ntorch.cuda.set_device(rank)\n", False),
        ("x = torch.cuda.set_device(rank) if torch.cuda.is_available() else None\n", False),
        ("if torch.cuda.is_available() or cpu_ok:\n    torch.cuda.set_device(rank)\n", True),
        ("if torch.cuda.device_count() >= 0:\n    torch.cuda.set_device(rank)\n", True),
        ("if not torch.cuda.is_available():\n    torch.cuda.set_device(rank)\n", True),
        ("if torch.cuda.is_available():\n    def f():\n        pass\ndef g():\n    torch.cuda.set_device(rank)\n", True),
        ("if torch.cuda.is_available():\n    torch.cuda.set_device(torch.device('cuda', 1))\n", True),
        ("if torch.cuda.is_available():\n    with torch.cuda.device(-1):\n        pass\n", True),
    ],
)
def test_device_selection_guards(code: str, flagged: bool) -> None:
    findings = lint_text("import sys\nimport torch\n" + code, "t.py", [DEV202])
    assert len(findings) == (1 if flagged else 0)


def test_amp_replacements_keep_every_argument_meaning() -> None:
    torch = pytest.importorskip("torch")
    from devlint.torchfacts.names import AUTOCAST, CUDA_AMP_AUTOCAST, CUDA_AMP_SCALER, SCALER

    def params(cls) -> list[str]:
        return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]

    # positional arguments are renamed after the signature they were written for
    assert tuple(params(torch.cuda.amp.autocast)) == CUDA_AMP_AUTOCAST.parameters
    assert tuple(params(torch.cuda.amp.GradScaler)) == CUDA_AMP_SCALER.parameters
    assert params(torch.amp.autocast) == [AUTOCAST.device_parameter, *AUTOCAST.parameters]
    assert params(torch.amp.GradScaler) == [SCALER.device_parameter, *SCALER.parameters]
    # every old keyword exists in the new signature
    assert set(CUDA_AMP_AUTOCAST.parameters) <= set(AUTOCAST.parameters)


def test_amp_fix_is_a_fixpoint_with_every_rule_active() -> None:
    from devlint.registry import all_rules

    code = (
        "import torch\nfrom torch.cuda.amp import autocast\n\n@autocast(True)\ndef f(x):\n"
        "    with torch.cuda.amp.autocast(enabled=False), autocast(False, torch.bfloat16, False):\n"
        "        return x\n"
    )
    rules = list(all_rules())
    # the autocasts given enabled=False are unsafe fixes (without CUDA they turn CPU autocast off)
    fixed = fix_text(code, "t.py", rules, unsafe=True).text
    assert "torch.cuda.amp.autocast" not in fixed and "@autocast" not in fixed
    assert "autocast(device.type, enabled=False, dtype=torch.bfloat16, cache_enabled=False)" in fixed
    assert fix_text(fixed, "t.py", rules, unsafe=True).text == fixed
    assert [f.code for f in lint_text(fixed, "t.py", rules)] == []


def test_numpy_fix_composes_with_the_cuda_call_fix() -> None:
    code = "import torch\nscores = model(x).cuda()\narr = scores.numpy()\n"
    fixed = fix_text(code, "t.py", [DEV101, DEV304]).text
    assert fixed.endswith("scores = model(x).to(device)\narr = scores.cpu().numpy()\n")
