"""DEV402 load-without-map-location: `torch.load(...)` without `map_location`."""

from __future__ import annotations

import libcst as cst

from devlint.fixes import FixPlan, HelperRef, Replace
from devlint.rule import Invalid, Rule, RuleContext, Site, Word
from devlint.rulekit.calls import append_arg, arg, code_in_place, imported_qualname, keyword, positional

HEAD = "import torch\n"
# Where CUDA is available, `None`: torch's own default, exactly. Without CUDA, a GPU storage stays
# on the CPU, where torch deserialised it, and every other storage goes where it was saved.
MAP_LOCATION = 'None if torch.cuda.is_available() else lambda storage, location: storage if location.startswith("cuda") else None'
# torch takes no function as map_location for tensor subclasses (DTensor) and XLA tensors: in a
# file that uses them, the CPU as a string instead.
MAP_LOCATION_PLAIN = 'None if torch.cuda.is_available() else "cpu"'
_NO_FUNCTION = ("torch_xla", "DTensor", "distributed.tensor", "distributed._tensor")
# A file with more than one such load gets the expression once, in a function each load calls.
# Called where the expression stood, it asks torch at the same moment: the same value.
HELPER = "_map_location"


def _helper(name: str) -> str:
    return (
        f"def {name}():\n"
        '    """torch.load\'s default with CUDA; without CUDA, GPU tensors load onto the CPU."""\n'
        # an expression, not an `if` guard: whether CUDA storages can be restored is CUDA's own
        # question, which DEV604 rightly leaves alone in this form
        "    return None if torch.cuda.is_available() else (\n"
        '        lambda storage, location: storage if location.startswith("cuda") else None\n'
        "    )"
    )


def _helper_as_an_if(name: str) -> str:
    """``_helper`` as devlint wrote it until 2026-11-29: a file fixed then calls it still."""
    return (
        f"def {name}():\n"
        '    """torch.load\'s default with CUDA; without CUDA, GPU tensors load onto the CPU."""\n'
        "    if torch.cuda.is_available():\n"
        "        return None\n"
        '    return lambda storage, location: storage if location.startswith("cuda") else None'
    )


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
        'state = torch.load("checkpoint.pt", map_location=None if torch.cuda.is_available() else '
        'lambda storage, location: storage if location.startswith("cuda") else None)'
    )
    fix_availability = "safe"
    fix_note = (
        "Safe: adds `map_location=None if torch.cuda.is_available() else lambda storage, location: "
        "storage if location.startswith(\"cuda\") else None`. Where CUDA is available that is `None`, "
        "torch's default: every storage comes back where it was saved, CPU tensors on the CPU and GPU "
        "tensors on their GPU, exactly as before. Without CUDA, torch calls the function with each "
        "storage (already read onto the CPU) and its saved location: a GPU storage, where the original "
        "fails (`Attempting to deserialize object on a CUDA device`), stays on the CPU; for any other "
        "location `None` again means torch's default, so a checkpoint saved on Apple's MPS or another "
        "accelerator still loads there. torch accepts no function as `map_location` for tensor "
        "subclasses (DTensor) and XLA tensors, so in a file that uses them (`torch_xla`, `DTensor`, "
        "`torch.distributed.tensor`) the fix is `None if torch.cuda.is_available() else \"cpu\"`. "
        "A file with more than one such load gets the expression once, in a function `_map_location()` "
        "inserted after its imports, and each load says `map_location=_map_location()`: the call stands "
        "where the expression stood, so torch is asked at the same moment and answers the same, and a "
        "function defined at the top of the module is there before any load can run. A file that "
        "already has that function (an earlier fix wrote it) gets it for its next load too; a module "
        "that imports torch only inside functions keeps the expression in place, where that import "
        "reaches it. "
        "The device in scope is deliberately not used: `map_location=device` would also move a "
        "checkpoint saved from CPU tensors (a dataset, metrics, a model saved before `.to(device)`) "
        "onto the GPU, where `.numpy()`, `pin_memory` or a CPU model then fail. For the same reason a "
        "checkpoint saved from `cuda:0` still loads onto `cuda:0` in every process of a multi-GPU run, "
        "as before: give `map_location` yourself where that matters."
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
            HEAD + 'state = torch.load("checkpoint.pt", map_location=None if torch.cuda.is_available() else lambda storage, location: storage if location.startswith("cuda") else None)\n',
        ),
        # a device in scope is not used: a checkpoint of CPU tensors must stay on the CPU
        Invalid(
            HEAD + "def restore(model, path, device):\n"
            "    model.load_state_dict(torch.load(path, weights_only=True))\n",
            HEAD + "def restore(model, path, device):\n"
            '    model.load_state_dict(torch.load(path, weights_only=True, map_location=None if torch.cuda.is_available() else lambda storage, location: storage if location.startswith("cuda") else None))\n',
        ),
        # through aliases; the availability check says `th.` as the file does
        Invalid(
            "import torch as th\n\na = th.load(path)\n",
            "import torch as th\n\n"
            'a = th.load(path, map_location=None if th.cuda.is_available() else lambda storage, location: storage if location.startswith("cuda") else None)\n',
        ),
        # two loads in a file: one function holds the expression, each load calls it
        Invalid(
            "import torch as th\nfrom torch import load as load_checkpoint\n\n\n"
            "def restore(model, optimizer):\n"
            "    model.load_state_dict(th.load(args.model))\n"
            "    optimizer.load_state_dict(load_checkpoint(args.optimizer))\n",
            "import torch as th\nfrom torch import load as load_checkpoint\n\n\n"
            "def _map_location():\n"
            '    """torch.load\'s default with CUDA; without CUDA, GPU tensors load onto the CPU."""\n'
            "    return None if th.cuda.is_available() else (\n"
            '        lambda storage, location: storage if location.startswith("cuda") else None\n'
            "    )\n\n\n"
            "def restore(model, optimizer):\n"
            "    model.load_state_dict(th.load(args.model, map_location=_map_location()))\n"
            "    optimizer.load_state_dict(load_checkpoint(args.optimizer, map_location=_map_location()))\n",
            count=2,
        ),
        # loads at module level: the function comes after the imports; the name `_map_location` is taken
        Invalid(
            'import torch\n_map_location = "cpu"\nfirst = torch.load("a.pt")\nsecond = torch.load("b.pt")\n',
            "import torch\n\n\n"
            "def _torch_map_location():\n"
            '    """torch.load\'s default with CUDA; without CUDA, GPU tensors load onto the CPU."""\n'
            "    return None if torch.cuda.is_available() else (\n"
            '        lambda storage, location: storage if location.startswith("cuda") else None\n'
            "    )\n\n\n"
            '_map_location = "cpu"\n'
            'first = torch.load("a.pt", map_location=_torch_map_location())\n'
            'second = torch.load("b.pt", map_location=_torch_map_location())\n',
            count=2,
        ),
        # the file already has the function an earlier fix wrote (here as devlint wrote it before
        # 2026-11-29, as an `if`): a further load calls it too
        Invalid(
            "import torch\n\n\ndef _map_location():\n"
            '    """torch.load\'s default with CUDA; without CUDA, GPU tensors load onto the CPU."""\n'
            "    if torch.cuda.is_available():\n        return None\n"
            '    return lambda storage, location: storage if location.startswith("cuda") else None\n\n\n'
            'state = torch.load("new.pt")\n',
            "import torch\n\n\ndef _map_location():\n"
            '    """torch.load\'s default with CUDA; without CUDA, GPU tensors load onto the CPU."""\n'
            "    if torch.cuda.is_available():\n        return None\n"
            '    return lambda storage, location: storage if location.startswith("cuda") else None\n\n\n'
            'state = torch.load("new.pt", map_location=_map_location())\n',
        ),
        # torch imported only inside the function: the expression stays where that import reaches
        Invalid(
            "def restore(path, other):\n    import torch\n    return torch.load(path), torch.load(other)\n",
            "def restore(path, other):\n    import torch\n    return torch.load(path, map_location="
            'None if torch.cuda.is_available() else lambda storage, location: storage if location.startswith("cuda") else None), '
            'torch.load(other, map_location=None if torch.cuda.is_available() else lambda storage, location: storage if location.startswith("cuda") else None)\n',
            count=2,
        ),
        # torch takes no function as map_location for XLA tensors or DTensors: the CPU as a string
        Invalid(
            HEAD + "import torch_xla.core.xla_model as xm\nobj = torch.load(buffer)\n",
            HEAD + "import torch_xla.core.xla_model as xm\n"
            'obj = torch.load(buffer, map_location=None if torch.cuda.is_available() else "cpu")\n',
        ),
    )

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._loads = 0

    def visit_Call(self, node: cst.Call) -> None:
        if imported_qualname(self.ctx.model, node.func, frozenset({"load"})) != "torch.load":
            return
        if keyword(node, "map_location") is not None or len(positional(node)) >= 2:
            return
        if any(a.star for a in node.args):
            return
        self._loads += 1
        self.report(
            node,
            "`torch.load` without `map_location` restores tensors on the device they were saved from",
            fix=lambda site: self._fix(node, site),
        )

    def _fix(self, node: cst.Call, site: Site) -> FixPlan:
        if self.ctx.indexed("load: no helper function", lambda: any(word in self.ctx.text for word in _NO_FUNCTION)):
            return self._plan(node, MAP_LOCATION_PLAIN, None)
        helper = self.ctx.helper(HELPER, _helper, earlier=(_helper_as_an_if,))
        if helper is not None and helper.inserted and self._loads < 2:
            # one load: the expression in place reads better than a function for it
            helper = None
        return self._plan(node, MAP_LOCATION if helper is None else f"{helper.name}()", helper)

    def _plan(self, node: cst.Call, location: str, helper: HelperRef | None) -> FixPlan:
        new = append_arg(node, arg(location, "map_location"))
        return FixPlan(
            f"Add `map_location={location}`",
            [Replace(node, code_in_place(self.ctx, node, new))],
            "safe",
            helper=helper,
            needs_torch=True,
        )
