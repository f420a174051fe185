"""DEV403 data-parallel: `nn.DataParallel`."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.semantic import dotted_name
from devlint.rule import Invalid, Rule
from devlint.rulekit.calls import imported_qualname
from devlint.torchfacts.names import DATA_PARALLEL

# The modules DataParallel is imported from.
_MODULES = frozenset(name.rpartition(".")[0] for name in DATA_PARALLEL)
MESSAGE = (
    "`nn.DataParallel` is single-process and slower than `DistributedDataParallel`, which PyTorch "
    "recommends instead (one process per device, launched with torchrun)"
)


class DataParallelUse(Rule):
    code = "DEV403"
    name = "data-parallel"
    what = "Flags `nn.DataParallel` (`torch.nn.parallel.DataParallel`), called or imported by name."
    why = (
        "DataParallel runs one Python process that copies the model to every GPU on each forward "
        "pass and gathers the outputs on the first one; the GIL and those copies make it slower "
        "than DistributedDataParallel even on a single machine, the first GPU carries more memory "
        "than the others, and it does not support Apple MPS. PyTorch recommends "
        "DistributedDataParallel, one process per device, which also runs on CPUs (Gloo) and "
        "scales past one machine."
    )
    example = "model = nn.DataParallel(model).cuda()"
    use_instead = (
        "# torchrun --nproc-per-node=N train.py\n"
        "dist.init_process_group()\nmodel = DistributedDataParallel(model.to(device))"
    )
    fix_availability = "none"
    fix_note = (
        "Moving to DistributedDataParallel changes how the script is launched "
        "(one process per device), how data is sharded (`DistributedSampler`) and how results "
        "are reduced."
    )
    triggers = ("DataParallel",)

    VALID = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel\n"
        "model = DistributedDataParallel(model, device_ids=[rank])\n",
        # unwrapping code that only checks the type
        "import torch.nn as nn\nnet = model.module if isinstance(model, nn.DataParallel) else model\n",
        # a class of another library with that name
        "from mylib import DataParallel\nrunner = DataParallel(jobs)\n",
        '"""Wrap in nn.DataParallel(model) for multiple GPUs."""\n# nn.DataParallel(model)\n',
    )
    INVALID = (
        Invalid("import torch.nn as nn\nmodel = nn.DataParallel(model)\n"),
        Invalid("import torch\nif torch.cuda.device_count() > 1:\n    net = torch.nn.parallel.DataParallel(net, device_ids=[0, 1])\n"),
        # the import and each use
        Invalid("from torch.nn import DataParallel as DP\nmodel = DP(model)\n", count=2),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if imported_qualname(self.ctx.model, node.func, frozenset({"DataParallel"})) in DATA_PARALLEL:
            self.report(node, MESSAGE)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        if dotted_name(node.module) not in _MODULES:
            return
        for alias in node.names:
            if dotted_name(alias.name) == "DataParallel":
                self.report(alias, MESSAGE)
