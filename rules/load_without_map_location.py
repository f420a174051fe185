"""DEV402 load-without-map-location: `torch.load(...)` without `map_location`."""

from __future__ import annotations

import libcst as cst

from devlint.astutil import append_arg, arg, code_in_place, imported_qualname, keyword, positional
from devlint.context import Site
from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Rule, Word

HEAD = "import torch\n"
# torch's own default for every storage (`None`), except a GPU storage where CUDA is missing:
# that one stays on the CPU, where torch deserialised it.
MAP_LOCATION = 'lambda storage, location: storage if location.startswith("cuda") and not torch.cuda.is_available() else None'


class LoadWithoutMapLocation(Rule):
    code = "DEV402"
    name = "load-without-map-location"
    what = "Flags `torch.load(...)` without `map_location`."
    why = (
        "`torch.load` puts every tensor back on the device it was saved from. A checkpoint "
        "written on a GPU then fails to load on a machine without one (`Attempting to deserialize "
        "object on a CUDA device but torch.cuda.is_available() is False`), and on a multi-GPU "
        "machine every process loads onto `cuda:0`."
    )
    example = 'state = torch.load("checkpoint.pt")'
    use_instead = (
        'state = torch.load("checkpoint.pt", map_location=lambda storage, location: '
        'storage if location.startswith("cuda") and not torch.cuda.is_available() else None)'
    )
    fix_availability = "safe"
    fix_note = (
        "Safe: adds `map_location=lambda storage, location: storage if location.startswith(\"cuda\") "
        "and not torch.cuda.is_available() else None`. torch calls the function with each storage, "
        "already read onto the CPU, and its saved location (`\"cpu\"`, `\"cuda:1\"`, `\"mps\"`...); "
        "`None` means torch's default: the storage goes back where it was saved. So on a CUDA "
        "machine every storage is restored exactly as before, CPU tensors on the CPU and GPU tensors "
        "on their GPU; so is a checkpoint saved on Apple's MPS or another accelerator on a machine "
        "that has it. Only a GPU storage on a machine without CUDA, where the original fails "
        "(`Attempting to deserialize object on a CUDA device`), stays on the CPU instead. The device "
        "in scope is deliberately not used: `map_location=device` would also move a checkpoint "
        "saved from CPU tensors (a dataset, metrics, a model saved before `.to(device)`) onto the "
        "GPU, where `.numpy()`, `pin_memory` or a CPU model then fail; nor is `\"cpu\"` without "
        "CUDA, which would also move MPS storages off an Apple GPU. For the same reason a checkpoint "
        "saved from `cuda:0` still loads onto `cuda:0` in every process of a multi-GPU run, as "
        "before: give `map_location` yourself where that matters."
    )
    # `torch.load` and `from torch import load [as x]` spell `load` as a whole identifier.
    triggers = (Word("load"),)

    VALID = (
        # map_location built from a device
        HEAD + 'state = torch.load("ckpt.pt", map_location=device)\n',
        HEAD + 'state = torch.load(path, map_location=lambda storage, loc: storage)\n',
        HEAD + 'state = torch.load(path, "cpu")\n',
        HEAD + "state = torch.load(path, map_location={'cuda:1': 'cuda:0'})\n",
        HEAD + "state = torch.load(**options)\n",
        # other loads
        "import numpy as np\nimport json\narr = np.load('a.npy')\ncfg = json.load(f)\nmodel.load(path)\n",
        HEAD + "module = torch.jit.load('model.pt')\n",
        # near-misses of the trigger: no `load` identifier at all
        "from typing import overload\nimport torch\nstate = torch.load_state_dict(path)\npayload = download(url)\n",
    )
    INVALID = (
        Invalid(
            HEAD + 'state = torch.load("checkpoint.pt")\n',
            HEAD + 'state = torch.load("checkpoint.pt", map_location=lambda storage, location: storage if location.startswith("cuda") and not torch.cuda.is_available() else None)\n',
        ),
        # a device in scope is not used: a checkpoint of CPU tensors must stay on the CPU
        Invalid(
            HEAD + "def restore(model, path, device):\n"
            "    model.load_state_dict(torch.load(path, weights_only=True))\n",
            HEAD + "def restore(model, path, device):\n"
            '    model.load_state_dict(torch.load(path, weights_only=True, map_location=lambda storage, location: storage if location.startswith("cuda") and not torch.cuda.is_available() else None))\n',
        ),
        # through aliases; the availability check says `th.` as the file does
        Invalid(
            "import torch as th\nfrom torch import load as load_checkpoint\n"
            "a = th.load(path)\nb = load_checkpoint(path)\n",
            "import torch as th\nfrom torch import load as load_checkpoint\n"
            'a = th.load(path, map_location=lambda storage, location: storage if location.startswith("cuda") and not th.cuda.is_available() else None)\n'
            'b = load_checkpoint(path, map_location=lambda storage, location: storage if location.startswith("cuda") and not th.cuda.is_available() else None)\n',
            count=2,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if imported_qualname(self.ctx.model, node.func, frozenset({"load"})) != "torch.load":
            return
        if keyword(node, "map_location") is not None or len(positional(node)) >= 2:
            return
        if any(a.star for a in node.args):
            return
        self.report(
            node,
            "`torch.load` without `map_location` restores tensors on the device they were saved from",
            fix=lambda site: self._fix(node, site),
        )

    def _fix(self, node: cst.Call, site: Site) -> FixPlan:
        new = append_arg(node, arg(MAP_LOCATION, "map_location"))
        return FixPlan(
            f"Add `map_location={MAP_LOCATION}`",
            [Replace(node, code_in_place(self.ctx, node, new))],
            "safe",
            needs_torch=True,
        )
