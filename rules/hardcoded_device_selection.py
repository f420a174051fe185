"""DEV202 hardcoded-device-selection: `torch.cuda.set_device(N)`, `with torch.cuda.device(N)`."""

from __future__ import annotations

import libcst as cst

from devlint.astutil import imported_qualname, keyword, positional
from devlint.context import FileContext
from devlint.rule import Invalid, Rule
from devlint.semantic import dotted_name, string_value

HEAD = "import torch\n"
_SET_DEVICE = "torch.cuda.set_device"
_DEVICE_CONTEXT = "torch.cuda.device"
_LAST_NAMES = frozenset({"set_device", "device"})
_EXITS = (cst.Return, cst.Raise, cst.Continue, cst.Break)
_EXIT_CALLS = ("sys.exit", "exit", "quit", "os._exit")


def _availability_call(ctx: FileContext, node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.Call):
        return False
    qual = ctx.model.qualname(node.func) or ""
    return qual.startswith("torch.") and qual.endswith(".is_available")


def device_present_if(ctx: FileContext, test: cst.BaseExpression, depth: int = 0) -> bool | None:
    """True: ``test`` holds only where torch has a GPU (``torch.cuda.is_available()``,
    ``torch.cuda.device_count() > 0``, ``device.type == "cuda"``, ``x.is_cuda``, a name bound to
    one of those, an ``and`` with one); False: it fails wherever there is one
    (``not torch.cuda.is_available()``, ``device.type == "cpu"``); None: it tells nothing."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = device_present_if(ctx, test.expression, depth)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        sides = [device_present_if(ctx, test.left, depth), device_present_if(ctx, test.right, depth)]
        if isinstance(test.operator, cst.And):
            return True if True in sides else None
        return False if False in sides else (True if sides == [True, True] else None)
    if _availability_call(ctx, test):
        return True
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        return True
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        return _comparison(ctx, test.left, test.comparisons[0])
    if isinstance(test, cst.Name) and depth == 0:
        # `use_cuda = torch.cuda.is_available()` ... `if use_cuda:`
        for _, binding in ctx.model.lookup(test.value, ctx.model.scope):
            if binding.order < ctx.tracker.order and binding.kind == "assign" and binding.value is not None:
                return device_present_if(ctx, binding.value, depth + 1)
            return None
    return None


def _comparison(ctx: FileContext, left: cst.BaseExpression, target: cst.ComparisonTarget) -> bool | None:
    operator, right = target.operator, target.comparator
    if isinstance(left, cst.Call) and (ctx.model.qualname(left.func) or "").endswith(".device_count"):
        bound = right.value if isinstance(right, cst.Integer) else None
        if isinstance(operator, cst.GreaterThan) and bound is not None:
            return True
        if isinstance(operator, cst.GreaterThanEqual) and bound not in (None, "0"):
            return True
        return None
    if not (isinstance(left, cst.Attribute) and left.attr.value == "type"):
        return None
    kind = string_value(right)
    if kind is None or not isinstance(operator, (cst.Equal, cst.NotEqual)):
        return None
    equal = isinstance(operator, cst.Equal)
    if kind == "cuda":
        return equal
    if kind == "cpu":
        return not equal
    return None


def _exits(block: cst.BaseSuite) -> bool:
    """The block always leaves: it ends in return/raise/continue/break or ``sys.exit()``."""
    if isinstance(block, cst.SimpleStatementSuite):
        last = block.body[-1] if block.body else None
    else:
        statement = block.body[-1] if block.body else None
        last = statement.body[-1] if isinstance(statement, cst.SimpleStatementLine) and statement.body else None
    if isinstance(last, _EXITS):
        return True
    return isinstance(last, cst.Expr) and isinstance(last.value, cst.Call) and dotted_name(last.value.func) in _EXIT_CALLS


def under_device_check(ctx: FileContext, node: cst.CSTNode) -> bool:
    """``node`` runs only where torch has a GPU: in the body of ``if <check>:``, the ``else`` of
    ``if <no GPU>:``, either side of the matching conditional expression, or after an
    ``assert <check>`` / ``if <no GPU>: return`` (raise, ``sys.exit()``) earlier in the same block."""
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.If, cst.IfExp)) and child is not ancestor.test:
            # the body runs where the test holds; `else`/`elif` where it fails
            present = device_present_if(ctx, ancestor.test)
            if present is not None and present == (child is ancestor.body):
                return True
        if isinstance(ancestor, (cst.IndentedBlock, cst.Module)) and _checked_earlier(ctx, ancestor, child):
            return True
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        child = ancestor
    return False


def _checked_earlier(ctx: FileContext, block: cst.IndentedBlock | cst.Module, statement: cst.CSTNode) -> bool:
    for earlier in block.body:
        if earlier is statement:
            return False
        if isinstance(earlier, cst.If) and device_present_if(ctx, earlier.test) is False and _exits(earlier.body):
            return True
        if isinstance(earlier, cst.SimpleStatementLine):
            for small in earlier.body:
                if isinstance(small, cst.Assert) and device_present_if(ctx, small.test) is True:
                    return True
    return False


def _hardcoded_index(ctx: FileContext, node: cst.Call) -> bool:
    """The GPU is written into the code: an integer, a ``"cuda:N"`` string, ``torch.device("cuda", N)``."""
    given = keyword(node, "device")
    args = positional(node)
    value = given.value if given is not None else args[0].value if args else None
    if isinstance(value, cst.Integer):
        return True
    if isinstance(value, cst.UnaryOperation) and isinstance(value.expression, cst.Integer):
        return True
    text = string_value(value) if value is not None else None
    if text is not None:
        return text.startswith("cuda")
    if isinstance(value, cst.Call) and ctx.model.qualname(value.func) == "torch.device":
        return any(_literal(a.value) for a in value.args)
    return False


def _literal(value: cst.BaseExpression) -> bool:
    return isinstance(value, (cst.Integer, cst.SimpleString)) and (
        not isinstance(value, cst.SimpleString) or ":" in (string_value(value) or "")
    )


class HardcodedDeviceSelection(Rule):
    code = "DEV202"
    name = "hardcoded-device-selection"
    what = "Flags `torch.cuda.set_device(...)` and `with torch.cuda.device(...)` that pick a GPU in code."
    why = (
        "Both fail on a machine without a CUDA GPU, and a GPU index written into the code ignores "
        "how the job was launched: every process of a multi-GPU run lands on the same card, and "
        "`CUDA_VISIBLE_DEVICES` renumbers the cards anyway. Choose the device once "
        "(`torch.device(...)`) and pass it around; under torchrun take the GPU from `LOCAL_RANK`."
    )
    example = "torch.cuda.set_device(0)\nwith torch.cuda.device(1):\n    x = torch.ones(3, device=\"cuda\")"
    use_instead = (
        'local_rank = int(os.environ.get("LOCAL_RANK", 0))\n'
        "if torch.cuda.is_available():\n    torch.cuda.set_device(local_rank)\n"
        'device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")'
    )
    fix_availability = "none"
    fix_note = (
        "Which GPU a process should use depends on how it is launched. "
        "Precision line: a selection is left alone when it runs only where a GPU exists (inside "
        "`if torch.cuda.is_available():`, `if device.type == \"cuda\":`, the `else` of a CPU check, "
        "after `assert torch.cuda.is_available()` or an early return when there is none) and the "
        "GPU comes from a variable (a rank, `LOCAL_RANK`, a device object). A literal index is "
        "flagged even under a check, since it pins every process to one GPU; anything unguarded "
        "is flagged, since it fails without CUDA."
    )
    triggers = ("cuda",)

    VALID = (
        # DDP: the GPU comes from the rank, under a device check
        HEAD + "import os\nlocal_rank = int(os.environ['LOCAL_RANK'])\n"
        "if torch.cuda.is_available():\n    torch.cuda.set_device(local_rank)\n",
        HEAD + "def setup(rank, device):\n    if device.type == 'cuda':\n        torch.cuda.set_device(rank)\n",
        HEAD + "def setup(args):\n    if not torch.cuda.is_available():\n        return torch.device('cpu')\n"
        "    torch.cuda.set_device(args.local_rank)\n    return torch.device('cuda', args.local_rank)\n",
        HEAD + "use_cuda = torch.cuda.is_available()\nif use_cuda and world_size > 1:\n"
        "    torch.cuda.set_device(rank)\n",
        HEAD + "def run(x):\n    if x.device.type == 'cpu':\n        return x\n    else:\n"
        "        with torch.cuda.device(x.device):\n            return x * 2\n",
        # other torch.cuda calls under a guard are not device selection
        HEAD + "if torch.cuda.is_available():\n    torch.cuda.manual_seed_all(0)\n    print(torch.cuda.get_device_name())\n",
        # strings such as accelerator="cuda" passed to other libraries
        "import lightning\ntrainer = lightning.Trainer(accelerator='cuda', devices=1)\n",
        # a device object from another library
        "from numba import cuda\ncuda.select_device(0)\nwith cuda.gpus[0]:\n    pass\n",
    )
    INVALID = (
        Invalid(HEAD + "torch.cuda.set_device(0)\n"),
        Invalid(HEAD + "with torch.cuda.device(1):\n    x = torch.ones(3)\n"),
        # DDP setup without a device check fails on a CPU-only machine
        Invalid(HEAD + "import os\ntorch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"),
        # a literal index under a check still pins every process to one GPU
        Invalid(HEAD + "if torch.cuda.is_available():\n    torch.cuda.set_device('cuda:1')\n"),
        Invalid("from torch.cuda import set_device\nfrom torch import cuda as tc\nset_device(rank)\n"
                "with tc.device(dev):\n    pass\n", count=2),
        # the wrong branch of a check
        Invalid(HEAD + "if device.type == 'cpu':\n    torch.cuda.set_device(rank)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if imported_qualname(self.ctx.model, node.func, _LAST_NAMES) == _SET_DEVICE:
            self._check(node, node, "`torch.cuda.set_device(...)`")

    def visit_WithItem(self, node: cst.WithItem) -> None:
        item = node.item
        if isinstance(item, cst.Call) and imported_qualname(self.ctx.model, item.func, _LAST_NAMES) == _DEVICE_CONTEXT:
            # the item's own parent link is only made after this hook: ask about the WithItem
            self._check(item, node, "`with torch.cuda.device(...)`")

    def _check(self, node: cst.Call, place: cst.CSTNode, what: str) -> None:
        if _hardcoded_index(self.ctx, node):
            reason = "pins a GPU index written into the code"
        elif under_device_check(self.ctx, place):
            return
        else:
            reason = "selects a CUDA GPU without a device check and fails without one"
        self.report(node, f"{what} {reason}; choose the device once and take the GPU from the launcher (`LOCAL_RANK`)")
