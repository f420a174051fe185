"""DEV202 hardcoded-device-selection: `torch.cuda.set_device(N)`, `with torch.cuda.device(N)`."""

from __future__ import annotations

import libcst as cst

from devlint.rule import Invalid, Rule
from devlint.rulekit.calls import imported_qualname
from devlint.rulekit.device_checks import hardcoded_gpu_index, under_device_check

HEAD = "import torch\n"
_SET_DEVICE = "torch.cuda.set_device"
_DEVICE_CONTEXT = "torch.cuda.device"
_LAST_NAMES = frozenset({"set_device", "device"})


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
        if hardcoded_gpu_index(self.ctx, node):
            reason = "pins a GPU index written into the code"
        elif under_device_check(self.ctx, place):
            return
        else:
            reason = "selects a CUDA GPU without a device check and fails without one"
        self.report(node, f"{what} {reason}; choose the device once and take the GPU from the launcher (`LOCAL_RANK`)")
