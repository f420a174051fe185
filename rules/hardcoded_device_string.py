"""DEV103 hardcoded-device-string: `"cuda"` / `"cuda:N"` given as a device."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import libcst as cst

from devlint.analysis.devices import checks_cuda_available, device_expression, is_guarded_device_choice
from devlint.analysis.semantic import dotted_name, string_value
from devlint.analysis.tree import children
from devlint.fixes import FixPlan, Replace
from devlint.rule import FixFactory, Invalid, Rule, Site
from devlint.rulekit.accelerator import (
    ACCELERATOR,
    AVAILABLE,
    accelerator_choice,
    accelerator_form,
    accelerator_fstring,
    index_choice,
)
from devlint.rulekit.calls import keyword, names_in, positional, receiver_is_foreign
from devlint.rulekit.device_params import callee_signature, param_reaches, reaching_arguments
from devlint.torchfacts.names import (
    DEVICE_KEYWORDS,
    DEVICE_METHODS,
    DEVICE_PARAM_NAMES,
    MOVES,
    POSITIONAL_DEVICE_FUNCTIONS,
    PROCESS_GROUP_BACKEND,
    PROCESS_GROUP_DEVICE_ID,
)

HEADER = "import torch\n"
# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
EXPRESSION = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")'
GUARD = " if torch.cuda.is_available() else "
# Literals a device value may sit in on its way to the call that receives it.
_CONTAINERS = (cst.Element, cst.List, cst.Tuple, cst.Set, cst.DictElement, cst.Dict, cst.StarredElement)
# `[torch.device("cuda", i) for i in ids]` holds its devices the way a list display does.
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp)
# Where an `a if b else c` replacement needs no parentheses.
_LOOSE_PARENTS = (
    cst.Arg, cst.Assign, cst.AnnAssign, cst.Element, cst.Return, cst.Param, cst.DictElement, cst.WithItem, cst.Lambda,
)


@dataclass(frozen=True)
class _Literal:
    """A CUDA device literal: the string (or f-string) node and whether it names a GPU index."""

    node: cst.BaseExpression
    indexed: bool


def cuda_literal(node: cst.CSTNode) -> _Literal | None:
    """``"cuda"``, ``"cuda:1"``, ``f"cuda:{rank}"``, or a GPU index formatted into ``"cuda:"``
    another way: ``"cuda:%d" % rank``, ``"cuda:" + str(rank)``, ``"cuda:{}".format(rank)``."""
    if _formatted(node):
        assert isinstance(node, cst.BaseExpression)
        return _Literal(node, True)
    value = string_value(node)
    if value is not None:
        # spelled out in the source, as the "cuda" trigger of the textual prefilter requires
        if (value == "cuda" or value.startswith("cuda:")) and "cuda" in _source(node):
            assert isinstance(node, cst.BaseExpression)
            return _Literal(node, value != "cuda")
        return None
    if isinstance(node, cst.FormattedString) and node.parts:
        first = node.parts[0]
        if isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda:"):
            return _Literal(node, True)
    return None


def _formatted(node: cst.CSTNode) -> bool:
    """``"cuda:%d" % i``, ``"cuda:" + str(i)`` or ``"cuda:{}".format(i)``: a string spelled in the
    source that starts with ``cuda:`` and gets its index from the program."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Modulo, cst.Add)):
        text, literal = string_value(node.left), node.left
        if isinstance(node.operator, cst.Modulo) and (text is None or "%" not in text):
            return False
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format":
        text, literal = string_value(node.func.value), node.func.value
        if text is None or "{" not in text:
            return False
    else:
        return False
    return text is not None and text.startswith("cuda:") and "cuda" in _source(literal)


class HardcodedDeviceString(Rule):
    code = "DEV103"
    name = "hardcoded-device-string"
    what = (
        'Flags `"cuda"` / `"cuda:N"` given as a device: `torch.device("cuda")`, `device="cuda"` in torch '
        'factories and layers, `.to("cuda")`, `map_location="cuda"`, device parameter defaults, '
        "variables set to such a string and then used as a device, and such a string given to (or the "
        "default of) a parameter of the program's own function that the function places tensors with "
        '(`load_state_dict(path, location="cuda")` where `location` reaches `torch.load(map_location=...)`).'
    )
    why = (
        'A literal `"cuda"` device fails with "Torch not compiled with CUDA enabled" or "no CUDA GPUs '
        'are available" on a laptop, in CPU-only CI, or on Apple, Intel and AMD accelerators. Choose '
        "the device once (`cuda` when available, else the CPU) and pass that around. The guarded "
        '`"cuda" if torch.cuda.is_available() else "cpu"` idiom is never reported, nor device *type* '
        'arguments such as `torch.autocast("cuda")`.'
    )
    example = (
        'device = torch.device("cuda")\nmask = torch.ones(3, device="cuda")\nx = x.to("cuda:0")\n\n'
        'def build(device="cuda"):\n    ...'
    )
    use_instead = (
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "mask = torch.ones(3, device=device)\nx = x.to(device)\n\n"
        'def build(device="cuda" if torch.cuda.is_available() else "cpu"):\n    ...'
    )
    fix_availability = "safe"
    fix_note = (
        "Each form keeps the device a CUDA machine used and falls back to the CPU only where CUDA is "
        "missing. That is safe where tensors are placed with the device (directly, through the "
        "variable it is bound to, or through the parameter it is the default of, also kept on "
        "`self`). A device that is only returned, compared, printed or handed to other code gets no "
        "fix: that code (a mock's expectation, a device-to-backend table, a CUDA-only accelerator "
        "class) would see the CPU without CUDA where it ran before. GradScaler's `device` counts as "
        'no placement: a scaler for "cuda" is off without CUDA, one for "cpu" is on. '
        '`torch.device("cuda")` becomes the configured device expression '
        "(by default `torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")`). A plain "
        '`"cuda"` given as a device in a call becomes the device already in scope or the one '
        'module-level `device` the fix inserts: `"cuda"` and that device are both the current GPU on a '
        'CUDA machine, as with DEV101. A GPU index is kept: `"cuda:1"` and `f"cuda:{rank}"` become '
        '`"cuda:1" if torch.cuda.is_available() else "cpu"`, `torch.device("cuda", i)` becomes '
        '`torch.device("cuda", i) if torch.cuda.is_available() else torch.device("cpu")`; with DEV604 '
        'selected, a literal index takes its form (`f"{torch.accelerator.current_accelerator().type}:1" '
        'if torch.accelerator.is_available() else "cpu"`), and so does `f"cuda:{rank}"`, and '
        '`torch.device("cuda", i)` becomes `torch.device(torch.accelerator.current_accelerator().type, i) if '
        'torch.accelerator.is_available() else torch.device("cpu")`: the check and accelerator of the '
        "inserted `device` definition, so the model and its data meet on any accelerator. That is safe at "
        "any index, unlike DEV604's fix: the original asks for CUDA unguarded, so an accelerator that lacks "
        "the index (MPS has one device) failed before as after, where DEV604's original chose the CPU. A parameter "
        "default or variable keeps its string type the same way, so comparisons such as "
        '`device == "cuda"` keep working. A variable is reported only when the file uses it as a device '
        '(`.to(name)`, `device=name`, `torch.device(name)`). `device = torch.device("cuda")` inside '
        "`if torch.cuda.is_available():` is the statement form of the guarded idiom and is not reported. "
        "No fix inside an f-string's replacement field, where the new quotes could end the string. "
        "A command-line option's default (`add_argument(\"--device\", default=\"cuda\")`) is guarded "
        "the same way; unsafe where the function building the parser returns it (`get_args_parser()`): "
        "the default is now chosen where the parser is built and parsed, and a launcher (submitit's, "
        "in DeiT and ConvNeXt) may do that on a machine without a GPU and run the job on one. "
        "The device a process group is bound to (`init_process_group(..., device_id=torch.device(\"cuda:0\"))`, "
        "`new_group`) becomes `torch.device(\"cuda:0\") if torch.cuda.is_available() else None` (with DEV604 "
        "selected, the accelerator's device of that index under `torch.accelerator.is_available()`; "
        "`torch.device(\"cuda\", i)` then gets no fix): every "
        'release rejects a CPU device there ("must be an accelerator with an index"), None binds none. '
        "The program's own functions: a parameter (of any name) *reaches a device sink* where the "
        "function gives it unchanged, or as `torch.device(name)`, to `.to()`, `torch.device()`, "
        "`torch.load`'s `map_location`, another torch call's `device=`, safetensors' `load_file` or "
        "`safe_open` `device=`, or to such a parameter of another of the module's functions "
        "(`self.m(...)` for a method); a parameter the function rebinds reaches nothing. A CUDA string "
        "given to such a parameter, in the file or, where the function is imported from another module "
        "of the project (ControlNet's `from cldm.model import load_state_dict`), read from that module, "
        'becomes `"cuda" if torch.cuda.is_available() else "cpu"` (DEV604\'s form where it is selected), '
        "and so does the parameter's own CUDA default: a string still, exact on CUDA. Only functions "
        "defined at module level (or methods of module-level classes) are followed; of another module, "
        "only the function itself, not the functions it calls in turn."
    )
    triggers = ("cuda",)
    quiet_where_cuda_is_known = True

    VALID = (
        # the guarded idiom, in every spelling
        'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
        'import torch\ndevice = "cuda:0" if args.cuda else "cpu"\nx = x.to(device)\n',
        'import torch\ndevice = torch.device("cuda") if use_gpu else torch.device("cpu")\n',
        'import torch\nx = torch.zeros(3, device="cuda" if torch.cuda.is_available() else "cpu")\n',
        # the statement form of the guarded idiom
        'import torch\nif torch.cuda.is_available():\n    device = torch.device("cuda")\nelse:\n'
        '    device = torch.device("cpu")\n',
        'import torch\nuse_cuda = torch.cuda.is_available()\ndevice = "cpu"\nif use_cuda and not args.cpu:\n'
        '    device = "cuda:0"\nmodel.to(device)\n',
        # device *types*, not devices (DEV501's fix writes these)
        'import torch\nwith torch.autocast("cuda"), torch.autocast(device_type="cuda"):\n    pass\n',
        'import torch\nscaler = torch.amp.GradScaler("cuda")\nwith torch.amp.autocast("cuda", dtype=torch.float16):\n    pass\n',
        # strings given to other libraries
        'from lightning import Trainer\ntrainer = Trainer(accelerator="cuda")\npipe = pipeline("x", device="cuda")\n',
        # comparisons and other uses of the word
        'import torch\nif x.device.type == "cuda" or x.device == torch.device("cuda"):\n    pass\nbackend = "cuda"\n',
        # a CPU device, other devices
        'import torch\nx = torch.ones(2, device="cpu").to("meta")\ncpu = torch.device("cpu")\n',
        # strings, comments and docstrings
        '"""Pass device="cuda" or call x.to("cuda")."""\n# torch.device("cuda")\nhelp_text = \'.to("cuda")\'\n',
        # devices listed only where CUDA is available
        "import torch\ndevices = [torch.device('cpu'), torch.device('cuda:0')] if torch.cuda.is_available() else [torch.device('cpu')]\n",
        # a device handed to other code as data: a validator, a mock, a parametrize list, a key
        'import torch\nrequire_cpu(torch.device("cuda"))\nmodule.to.assert_called_with(torch.device("cuda", 2))\n'
        'cases = pytest.mark.parametrize("device", [torch.device("cuda:0"), torch.device("cpu")])\n'
        'flops = {torch.device("cuda"): 1e12}\n',
        'import pytest\nimport torch\nmany = pytest.mark.parametrize("devices", [[torch.device("cuda", i) for i in range(8)]])\n',
        # a device given to a test double is what the test expects, not where data goes
        'from unittest import mock\nimport torch\nmodule = mock.MagicMock()\nmodule.to(torch.device("cuda", 2))\n',
        # an instance attribute no tensor is placed with, another object's attribute
        'import torch\n\nclass Build:\n    def __init__(self, config):\n        self.backend = "cuda"\n'
        '        config.device = "cuda"\n        print(self.backend)\n',
        # the program's own functions that only look at the string, or rebind it first, or
        # another program's function
        "import torch\n\n\ndef describe(path, location='cuda'):\n    print(path, location)\n"
        "    return location == 'cuda'\n\n\ndef load(path, location='cpu'):\n    location = location.split(':')[0]\n"
        "    return torch.load(path, map_location=location)\n\n\n"
        "describe('m.pt', 'cuda')\nstate = load('m.pt', location='cuda')\nother = hub.load_state_dict('m.pt', location='cuda')\n",
        # other command-line options
        'import argparse\np = argparse.ArgumentParser()\np.add_argument("--backend", default="cuda")\n'
        'p.add_argument("--device", default="cpu")\n',
        # the CUDA half of device-generic code: a tensor or device known to be on CUDA
        'import torch\n\ndef with_index(device):\n    if device.type != "cuda" or device.index is not None:\n'
        '        return device\n    return torch.device(f"cuda:{torch.cuda.current_device()}")\n',
        'import torch\n\ndef scale(x):\n    if x.is_cuda:\n        return x * torch.ones(1, device="cuda")\n    return x\n',
        # torch.cuda's own APIs take CUDA devices by design
        'import torch\nused = torch.cuda.memory_allocated(device="cuda:0")\n',
        # a variable that is never used as a device
        'import torch\nbackend = "cuda"\nprint(backend)\n',
        # a parameter whose name says it is a device type
        'def run(device_type="cuda"):\n    pass\n',
        # a local class with its own to()
        'class Box:\n    def to(self, where):\n        return where\n\nBox().to("cuda")\n',
        # formatted strings that are no CUDA device string, or not given as a device
        'import torch\nd = torch.device("%s:%d" % (kind, gpu))\ne = torch.device(kind + ":" + str(gpu))\n'
        'f = torch.device("{}:{}".format(kind, gpu))\nprint("cuda:%d" % gpu)\nname = "cuda:" + str(gpu)\n',
        'import torch\nlabel = torch.device("cuda:0 %s" if gpu else "cpu")\ng = "cuda:{}".upper()\n',
    )
    INVALID = (
        # an autograd Function's static `forward(ctx, ...)`: its second parameter is no module's
        # input, whose device the new tensor would follow (apex passed an int there)
        Invalid(
            HEADER + "\nclass Pad(torch.autograd.Function):\n    @staticmethod\n"
            '    def forward(ctx, size, x):\n        return torch.empty([size - 1], device="cuda")\n',
            HEADER + DEVICE + "\n\nclass Pad(torch.autograd.Function):\n    @staticmethod\n"
            "    def forward(ctx, size, x):\n        return torch.empty([size - 1], device=device)\n",
        ),
        # a class attribute read as `self.name` and handed to other code (a test's strategy whose
        # memory query is mocked) is a value: no fix; placed with as `self.name`, it is fixed
        Invalid(
            HEADER + "\nclass TestOffload:\n    target = torch.device(\"cuda:0\")\n\n"
            "    def test_pick(self):\n        assert choose(execution_device=self.target) is None\n",
        ),
        Invalid(
            HEADER + "\nclass TestMove:\n    target = torch.device(\"cuda:0\")\n\n"
            "    def test_move(self):\n        assert x.to(self.target).is_cuda\n",
            HEADER + "\nclass TestMove:\n    target = torch.device(\"cuda:0\" if torch.cuda.is_available() else \"cpu\")\n\n"
            "    def test_move(self):\n        assert x.to(self.target).is_cuda\n",
        ),
        # the device a process group is bound to: none without CUDA, as a CPU device is rejected there
        Invalid(
            HEADER + 'import torch.distributed as dist\ndist.init_process_group("gloo", device_id=torch.device(f"cuda:{rank}"))\n',
            HEADER + 'import torch.distributed as dist\n'
            'dist.init_process_group("gloo", device_id=torch.device(f"cuda:{rank}") if torch.cuda.is_available() else None)\n',
        ),
        # a GPU index formatted into the string with %, + or .format, as with an f-string
        Invalid(
            'import torch\nmodel.to(torch.device("cuda:%d" % gpu))\nx = x.to(torch.device("cuda:" + str(gpu)))\n'
            "y = torch.zeros(2, device=torch.device('cuda:{}'.format(gpu)))\n",
            'import torch\nmodel.to(torch.device("cuda:%d" % gpu if torch.cuda.is_available() else "cpu"))\n'
            'x = x.to(torch.device("cuda:" + str(gpu) if torch.cuda.is_available() else "cpu"))\n'
            "y = torch.zeros(2, device=torch.device('cuda:{}'.format(gpu) if torch.cuda.is_available() else 'cpu'))\n",
            count=3,
        ),
        Invalid(
            'import torch\nx = x.to("cuda:%d" % args.gpu)\n',
            'import torch\nx = x.to("cuda:%d" % args.gpu if torch.cuda.is_available() else "cpu")\n',
        ),
        Invalid(
            'import torch\ndevice = torch.device("cuda")\n',
            "import torch\ndevice = " + EXPRESSION + "\n",
        ),
        # a device kept on the instance, placed with by the class
        Invalid(
            'import torch\n\nclass Trainer:\n    def __init__(self, net):\n        self.device = "cuda"\n'
            "        self.net = net.to(self.device)\n",
            'import torch\n\nclass Trainer:\n    def __init__(self, net):\n'
            '        self.device = "cuda" if torch.cuda.is_available() else "cpu"\n        self.net = net.to(self.device)\n',
        ),
        # a GPU index is kept where CUDA is available
        Invalid(
            'import torch\ncuda1 = torch.device("cuda", 1)\n',
            'import torch\ncuda1 = torch.device("cuda", 1) if torch.cuda.is_available() else torch.device("cpu")\n',
        ),
        Invalid(
            'import torch as t\ngpus = [t.device("cuda:0"), t.device("cuda", i)]\n',
            'import torch as t\ngpus = [t.device("cuda:0" if t.cuda.is_available() else "cpu"), '
            't.device("cuda", i) if t.cuda.is_available() else t.device("cpu")]\n',
            count=2,
        ),
        # a device value that places nothing (an attribute read here, a value returned): reported,
        # no fix, since the code reading it would see the CPU without CUDA where it ran before
        Invalid('import torch\nshards = [torch.device("cuda", i).index + 1 for i in ids]\n', unsafe=True),
        Invalid('import torch\n\ndef parallel_devices(ids):\n    return [torch.device("cuda", i) for i in ids]\n', unsafe=True),
        # under `if args.cuda:` (not an availability check) it is still reported
        Invalid(
            'import torch\nif args.cuda:\n    device = torch.device("cuda")\n',
            "import torch\nif args.cuda:\n    device = " + EXPRESSION + "\n",
        ),
        # a device in scope: safe
        Invalid(
            'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            'mask = torch.ones(3, device="cuda")\nx = x.to("cuda", non_blocking=True)\n',
            'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "mask = torch.ones(3, device=device)\nx = x.to(device, non_blocking=True)\n",
            count=2,
        ),
        Invalid(
            "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
            '        return x * torch.ones(3, device="cuda")\n',
            "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
            "        return x * torch.ones(3, device=x.device)\n",
        ),
        # no device in scope: one inserted definition, the current GPU as "cuda" was
        Invalid(
            'from torch import nn, zeros\nlayer = nn.Linear(2, 2, device="cuda")\nz = zeros(2).to(device="cuda")\n',
            "from torch import nn, zeros\nimport torch\n" + DEVICE
            + "layer = nn.Linear(2, 2, device=device)\nz = zeros(2).to(device=device)\n",
            count=2,
        ),
        Invalid(
            'import torch\nstate = torch.load("m.pt", map_location="cuda:0")\ntorch.set_default_device("cuda")\n',
            "import torch\n" + DEVICE + 'state = torch.load("m.pt", map_location="cuda:0" if torch.cuda.is_available() else "cpu")\n'
            "torch.set_default_device(device)\n",
            count=2,
        ),
        Invalid(
            'import torch\nys = [y.to(f"cuda:{rank}") for y in xs]\nmove = lambda t: t.new_zeros(2, device="cuda")\n',
            HEADER + DEVICE + 'ys = [y.to(f"cuda:{rank}" if torch.cuda.is_available() else "cpu") for y in xs]\n'
            "move = lambda t: t.new_zeros(2, device=device)\n",
            count=2,
        ),
        # parameter defaults keep their type: the same string on CUDA, "cpu" without it
        Invalid(
            "import torch\n\ndef build(n, device='cuda'):\n    return torch.zeros(n, device=device)\n",
            "import torch\n\ndef build(n, device='cuda' if torch.cuda.is_available() else 'cpu'):\n"
            "    return torch.zeros(n, device=device)\n",
        ),
        Invalid(
            'def build(n, *, map_location="cuda:1", dev: str = "cuda"):\n    return load(p, map_location=map_location).to(dev)\n',
            'import torch\ndef build(n, *, map_location="cuda:1" if torch.cuda.is_available() else "cpu", '
            'dev: str = "cuda" if torch.cuda.is_available() else "cpu"):\n    return load(p, map_location=map_location).to(dev)\n',
            count=2,
        ),
        # a parser returned by the function that builds it (DeiT's `get_args_parser()`) is built
        # by other code too: a launcher may parse it on a machine without a GPU and ship the result
        Invalid(
            "import argparse\n\n\ndef get_args_parser():\n    parser = argparse.ArgumentParser('train', add_help=False)\n"
            "    parser.add_argument('--device', default='cuda')\n    return parser\n",
            "import argparse\nimport torch\n\n\ndef get_args_parser():\n    parser = argparse.ArgumentParser('train', add_help=False)\n"
            "    parser.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')\n    return parser\n",
            unsafe=True,
        ),
        # a command-line option whose default is the GPU
        Invalid(
            'import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument("--device", default="cuda", help="cuda or cpu")\n',
            'import argparse\nimport torch\nparser = argparse.ArgumentParser()\n'
            'parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cuda or cpu")\n',
        ),
        # a string given to the program's own function that places tensors with it (ControlNet's
        # cldm/model.py), in the file or imported from the project
        Invalid(
            "import os\nimport torch\n\n\ndef load_state_dict(ckpt_path, location='cpu'):\n"
            "    if os.path.splitext(ckpt_path)[1] == '.safetensors':\n        import safetensors.torch\n"
            "        return safetensors.torch.load_file(ckpt_path, device=location)\n"
            "    return torch.load(ckpt_path, map_location=torch.device(location))\n\n\n"
            "state = load_state_dict('./models/control_sd15_canny.pth', location='cuda')\n",
            "import os\nimport torch\n\n\ndef load_state_dict(ckpt_path, location='cpu'):\n"
            "    if os.path.splitext(ckpt_path)[1] == '.safetensors':\n        import safetensors.torch\n"
            "        return safetensors.torch.load_file(ckpt_path, device=location)\n"
            "    return torch.load(ckpt_path, map_location=torch.device(location))\n\n\n"
            "state = load_state_dict('./models/control_sd15_canny.pth', location='cuda' if torch.cuda.is_available() else 'cpu')\n",
        ),
        Invalid(
            "from cldm.model import load_state_dict\nimport cldm.model as cm\n\n"
            "model.load_state_dict(load_state_dict('./models/control_sd15_canny.pth', location='cuda'))\n"
            'extra = cm.load_state_dict("extra.pth", "cuda:1")\n',
            "from cldm.model import load_state_dict\nimport cldm.model as cm\nimport torch\n\n"
            "model.load_state_dict(load_state_dict('./models/control_sd15_canny.pth', "
            "location='cuda' if torch.cuda.is_available() else 'cpu'))\n"
            'extra = cm.load_state_dict("extra.pth", "cuda:1" if torch.cuda.is_available() else "cpu")\n',
            count=2,
            imported_functions=(
                ("load_state_dict", "import torch\ndef load_state_dict(ckpt_path, location='cpu'):\n"
                 "    return torch.load(ckpt_path, map_location=torch.device(location))\n"),
                ("cm.load_state_dict", "import torch\ndef load_state_dict(ckpt_path, location='cpu'):\n"
                 "    return torch.load(ckpt_path, map_location=torch.device(location))\n"),
            ),
        ),
        # through another of the module's functions, a method, and a default of any name
        Invalid(
            "import torch\n\n\ndef restore(path, where):\n    return torch.load(path, map_location=where)\n\n\n"
            "class Runner:\n    def __init__(self, net, target='cuda'):\n        self.net = self.place(net, target)\n\n"
            "    def place(self, net, to):\n        return net.to(to)\n\n    def resume(self, path):\n"
            "        return restore(path, 'cuda:0'), self.place(self.net, \"cuda\")\n",
            "import torch\n\n\ndef restore(path, where):\n    return torch.load(path, map_location=where)\n\n\n"
            "class Runner:\n    def __init__(self, net, target='cuda' if torch.cuda.is_available() else 'cpu'):\n"
            "        self.net = self.place(net, target)\n\n"
            "    def place(self, net, to):\n        return net.to(to)\n\n    def resume(self, path):\n"
            "        return restore(path, 'cuda:0' if torch.cuda.is_available() else 'cpu'), "
            "self.place(self.net, \"cuda\" if torch.cuda.is_available() else \"cpu\")\n",
            count=3,
        ),
        # a variable holding a device string, used as a device
        Invalid(
            'import torch\nDEVICE = "cuda:0"\nmodel = model.to(DEVICE)\n',
            'import torch\nDEVICE = "cuda:0" if torch.cuda.is_available() else "cpu"\nmodel = model.to(DEVICE)\n',
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # (name, literal, site) of each variable set to a CUDA string; reported if used as a device
        self._variables: list[tuple[str, _Literal, Site]] = []
        self._used_as_device: set[str] = set()
        # names (and `obj.attr`s) that tensors are placed with, for the safety of device values
        self._placed: set[str] = set()

    # -- the walk ------------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        qualname = self.ctx.model.qualname(node.func)
        if qualname == "torch.device":
            self._device_call(node)
            return
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "add_argument":
            self._device_option(node)
            return
        receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        torch_call = (
            qualname is not None
            and qualname.startswith("torch.")
            and not qualname.startswith("torch.cuda.")
            # GradScaler's `device` is a device type ("cuda"), which DEV603 looks after
            and not qualname.endswith("GradScaler")
        )
        device_method = receiver is not None and method in DEVICE_METHODS and qualname is None
        # only a method's receiver can be a local class with its own `to`
        owner = receiver if device_method else None
        plain = positional(node)
        if plain and (qualname in POSITIONAL_DEVICE_FUNCTIONS or (device_method and method == "to")):
            self._note_use(plain[0].value)
            self._note_placement(plain[0].value)
            self._string_argument(plain[0].value, owner)
        for name in DEVICE_KEYWORDS:
            given = keyword(node, name)
            if given is None:
                continue
            self._note_use(given.value)
            if torch_call or device_method:
                self._note_placement(given.value)
            if (torch_call or device_method) and (name == "device" or qualname is not None):
                self._string_argument(given.value, owner)
        if method == "cuda" and plain:
            self._note_use(plain[0].value)
            self._note_placement(plain[0].value)
        if not (torch_call or device_method) and (qualname is None or not qualname.startswith("torch.")):
            self._own_function_call(node)

    def _own_function_call(self, node: cst.Call) -> None:
        """`load_state_dict(path, location="cuda")` where the program's own function gives
        `location` to `torch.load(map_location=...)`, `.to()`, `torch.device()` or safetensors'
        `device=` (devlint.analysis.device_params), in this file or in another module of the
        project that the file imports."""
        # Only a CUDA string given as an argument is looked up: the index of the functions is
        # built for files that give one, not for every call of every file.
        if not any(cuda_literal(arg.value) is not None for arg in node.args):
            return
        found = callee_signature(self.ctx, node)
        if found is None:
            return
        callee, signature = found
        for param, value in reaching_arguments(signature, node):
            literal = cuda_literal(value)
            if literal is None:
                continue
            self.report(
                value,
                f"{self._code(value)} given as `{param}` of `{callee}`, which places tensors with it, "
                "hardcodes the CUDA device; choose CUDA only when it is available",
                fix=lambda site, literal=literal: self._guard_fix(literal),
            )

    def visit_WithItem(self, node: cst.WithItem) -> None:
        # `with torch.device(d):` places every tensor made in the block
        item = node.item
        if isinstance(item, cst.Call) and self.ctx.model.qualname(item.func) == "torch.device":
            plain = positional(item)
            if plain:
                self._note_placement(plain[0].value)

    def visit_Param(self, node: cst.Param) -> None:
        if node.default is None:
            return
        literal = cuda_literal(node.default)
        if literal is None:
            return
        shown = f"{node.name.value}={self._code(literal.node)}"
        if self._is_device_param(node):
            self._report_default(literal, shown, lambda site: self._default_fix(literal))
        elif param_reaches(self.ctx, node):
            # a parameter of any name that the function places tensors with, perhaps through
            # another of the file's functions
            self._report_default(literal, shown, lambda site: self._guard_fix(literal))

    def _report_default(self, literal: _Literal, shown: str, fix: FixFactory) -> None:
        self.report(
            literal.node,
            f"the default `{shown}` hardcodes CUDA; default to the CUDA device only when it is available",
            fix=fix,
        )

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1:
            self._variable(node.targets[0].target, node.value, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._variable(node.target, node.value, node)

    def finish(self) -> None:
        for name, literal, site in self._variables:
            if name not in self._used_as_device:
                continue
            self.report(
                literal.node,
                f"`{name}` is set to {self._code(literal.node)} and used as a device; "
                "choose CUDA only when it is available",
                fix=lambda _site, name=name, literal=literal: self._variable_fix(name, literal),
                site=site,
            )

    def _variable_fix(self, name: str, literal: _Literal) -> FixPlan | None:
        """Safe where tensors are placed with the variable. Given only to code that may inspect
        it (`run(model, device=d)`), that code would see the CPU without CUDA: no fix."""
        return self._guard_fix(literal) if name in self._placed else None

    # -- what is reported ------------------------------------------------------------------------

    def _device_call(self, node: cst.Call) -> None:
        plain = positional(node)
        first = plain[0] if plain else keyword(node, "type")
        if first is not None:
            self._note_use(first.value)
        literal = cuda_literal(first.value) if first is not None else None
        if literal is None or self._exempt(node):
            return
        index = (plain[1] if len(plain) > 1 else None) or keyword(node, "index")
        indexed = literal.indexed or (index is not None and not _is_none(index.value))
        # inside an f-string the expression's quotes could end the string (before Python 3.12)
        in_fstring = any(isinstance(a, cst.FormattedStringExpression) for a in self.ctx.ancestors(node))
        self.report(
            node,
            f"`{self._shown(node)}` hardcodes the CUDA device; choose the device once, "
            "CUDA only when it is available",
            fix=None if in_fstring else (lambda site: self._device_call_fix(node, indexed)),
        )

    def _device_option(self, node: cst.Call) -> None:
        """`parser.add_argument("--device", default="cuda")`: a script that fails without a GPU
        unless the user passes `--device cpu`."""
        names = [string_value(a.value) or "" for a in positional(node)]
        default = keyword(node, "default")
        if default is None or not any(name.startswith("-") and "device" in name for name in names):
            return
        literal = cuda_literal(default.value)
        if literal is None:
            return
        shipped = self._parser_for_other_code(node)
        self._report_default(literal, f"{names[0]} {self._code(literal.node)}", lambda site: self._option_fix(literal, shipped))

    def _parser_for_other_code(self, call: cst.Call) -> bool:
        """The parser ``call`` adds to is returned by the function building it (DeiT's and
        ConvNeXt's ``get_args_parser()``): other code builds it too, and a launcher such as
        submitit's may build and parse it on a machine without a GPU, then run the job with those
        arguments on one. One scan of each such function for its returned names."""
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        if not isinstance(receiver, cst.Name):
            return False
        function = next((a for a in self.ctx.ancestors(call) if isinstance(a, cst.FunctionDef)), None)
        if function is None:
            return False
        returned = self.ctx.indexed(("names returned", id(function)), lambda: _returned_names(function))
        return receiver.value in returned

    def _option_fix(self, literal: _Literal, shipped: bool) -> FixPlan | None:
        plan = self._guard_fix(literal)
        if plan is None or not shipped:
            return plan
        return dataclasses.replace(
            plan,
            message=plan.message + " (unsafe: the default is now chosen where the parser is built and parsed; "
            "a launcher that does so on a machine without a GPU, as submitit's may, runs the job on the CPU)",
            applicability="unsafe",
        )

    def _string_argument(self, value: cst.BaseExpression, receiver: cst.BaseExpression | None) -> None:
        literal = cuda_literal(value)
        if literal is None:
            return
        site = self.ctx.site(value)
        if receiver is not None and receiver_is_foreign(self.ctx, receiver, site, "to"):
            return
        avoid = names_in(receiver) if receiver is not None else set()
        self.report(
            value,
            f"{self._code(value)} hardcodes the CUDA device; use a device chosen at start-up",
            fix=lambda site: self._argument_fix(literal, site, avoid),
        )

    def _variable(self, target: cst.BaseExpression, value: cst.BaseExpression, statement: cst.CSTNode) -> None:
        """`device = "cuda"`, or `self.device = "cuda"` in a method."""
        name = dotted_name(target)
        if name is None or not (isinstance(target, cst.Name) or (name.count(".") == 1 and name.startswith("self."))):
            return
        literal = cuda_literal(value)
        if literal is None or self._in_availability_branch(statement):
            return
        self._variables.append((name, literal, self.ctx.site(value)))

    def _note_use(self, value: cst.BaseExpression) -> None:
        name = dotted_name(value)
        if name is not None:
            self._used_as_device.add(name)

    def _note_placement(self, value: cst.BaseExpression) -> None:
        """A name (or ``obj.attr``) that tensors are placed with: `.to(d)`, `device=d` of a torch
        call, `map_location=d`, `.cuda(d)`, `with torch.device(d)`; `devices[i]` counts for
        `devices`."""
        while isinstance(value, cst.Subscript):
            value = value.value
        name = dotted_name(value)
        if name is not None:
            self._placed.add(name)

    def _value_use(self, node: cst.CSTNode) -> str:
        """How a device value is used: ``"placement"`` (tensors go there), ``"variable"`` (it is
        bound to a name, judged by the uses of that name), ``"default"`` (a parameter's default,
        judged by the function's uses of the parameter), or ``"value"`` (returned, kept in a
        collection, given as `device=` to code that may only inspect it), or ``"binding"`` (the
        device a process group is bound to, `init_process_group(device_id=...)`)."""
        current: cst.CSTNode = node
        parent = self.ctx.parent(node)
        while isinstance(parent, (*_CONTAINERS, cst.IfExp)) or (
            isinstance(parent, (cst.ListComp, cst.SetComp, cst.GeneratorExp)) and current is parent.elt
        ):
            current, parent = parent, self.ctx.parent(parent)
        if isinstance(parent, cst.WithItem):
            return "placement"
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and current is parent.value:
            return "variable"
        if isinstance(parent, cst.Param) and current is parent.default:
            return "default"
        if isinstance(parent, cst.Arg):
            call = self.ctx.parent(parent)
            if isinstance(call, cst.Call):
                qualname = self.ctx.model.qualname(call.func) or ""
                method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
                given_as = parent.keyword.value if parent.keyword is not None else None
                if given_as == PROCESS_GROUP_DEVICE_ID and qualname in PROCESS_GROUP_BACKEND and current is node:
                    return "binding"
                if (qualname.startswith("torch.") and not qualname.startswith("torch.cuda.")) or (
                    not qualname and method in (*DEVICE_METHODS, "cuda")
                ):
                    return "placement"
        return "value"

    def _placed_through(self, node: cst.CSTNode) -> bool:
        """The assignment holding ``node`` binds only names that tensors are placed with."""
        statement = self.ctx.parent(node)
        while statement is not None and not isinstance(statement, (cst.Assign, cst.AnnAssign)):
            statement = self.ctx.parent(statement)
        if isinstance(statement, cst.Assign):
            targets = [target.target for target in statement.targets]
        elif isinstance(statement, cst.AnnAssign):
            targets = [statement.target]
        else:
            return False
        names = [dotted_name(target) for target in targets]
        # a class attribute (diffusers' test `strategy_execution_device = torch.device("cuda:0")`)
        # is read as `self.name`
        owner = next((a for a in self.ctx.ancestors(statement) if isinstance(a, (cst.FunctionDef, cst.ClassDef, cst.Lambda))), None)
        in_class = isinstance(owner, cst.ClassDef)
        return all(
            name is not None and (name in self._placed or f"self.{name}" in self._placed or not self._used_elsewhere(name, in_class))
            for name in names
        )

    def _used_elsewhere(self, name: str, as_attribute: bool = False) -> bool:
        """The file mentions ``name`` beyond binding it. A module-level `device = ...` nothing in
        the file reads is for other modules to place tensors with; one this file reads but never
        places tensors with is a value (compared, printed, passed on). ``as_attribute``: a class
        attribute, read as `self.name` too."""
        last = name.rsplit(".", 1)[-1]
        mentions = self.ctx.indexed("words by a dot before them", lambda: _words(self.ctx.text))
        read = mentions[("." in name, last)] + (mentions[(True, last)] if as_attribute and "." not in name else 0)
        return read > 1

    def _places(self, node: cst.CSTNode) -> bool:
        """Tensors are placed with the device (also through the variable it is bound to, or the
        parameter it is the default of). A device value other code only looks at (returned,
        compared, a mock's expectation, a CUDA-only accelerator's answer) would tell that code
        the CPU without CUDA, where it ran before: such values get no fix."""
        use = self._value_use(node)
        if use == "placement" or (use == "variable" and self._placed_through(node)):
            return True
        return use == "default" and self._default_placed(node)

    # -- exemptions ------------------------------------------------------------------------------

    def _exempt(self, node: cst.Call) -> bool:
        """A `torch.device("cuda")` that is part of a guarded choice, a comparison, a torch.cuda
        call, or a value handed to code that does not place tensors with it."""
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.IfExp) and is_guarded_device_choice(self.ctx.model, parent):
            return True
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
            return True
        if isinstance(parent, cst.Arg):
            call = self.ctx.parent(parent)
            if isinstance(call, cst.Call) and (self.ctx.model.qualname(call.func) or "").startswith("torch.cuda."):
                return True
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and self._in_availability_branch(parent):
            return True
        if self._in_guarded_choice(node):
            return True
        return self._handed_over_as_a_value(node)

    def _in_guarded_choice(self, node: cst.CSTNode) -> bool:
        """The CUDA side of `[...cuda devices...] if torch.cuda.is_available() else [...]`: the
        guarded idiom, with a list or a tuple of devices."""
        child = node
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, cst.IfExp):
                site = self.ctx.site(ancestor)
                return child is ancestor.body and checks_cuda_available(self.ctx.model, ancestor.test, site.scope, site.order)
            if not isinstance(ancestor, _CONTAINERS):
                return False
            child = ancestor
        return False

    def _handed_over_as_a_value(self, node: cst.Call) -> bool:
        """`require_cpu(torch.device("cuda"))`, `mock.assert_called_with(torch.device("cuda", 2))`,
        a parametrize list, a dict key: the CUDA device is data for other code (a validator, a
        mock, a lookup), not where tensors go. Creating the device object needs no GPU, and a
        rewrite would change what that code sees on a machine without one."""
        current: cst.CSTNode = node
        parent = self.ctx.parent(node)
        while isinstance(parent, _CONTAINERS) or (isinstance(parent, _COMPREHENSIONS) and current is parent.elt):
            if isinstance(parent, cst.DictElement) and current is parent.key:
                return True
            current, parent = parent, self.ctx.parent(parent)
        if not isinstance(parent, cst.Arg):
            return False
        if parent.keyword is not None and ("device" in parent.keyword.value or parent.keyword.value == "map_location"):
            return False
        call = self.ctx.parent(parent)
        if not isinstance(call, cst.Call):
            return False
        qualname = self.ctx.model.qualname(call.func) or ""
        if qualname:
            return not qualname.startswith("torch.")
        if not isinstance(call.func, cst.Attribute) or call.func.attr.value not in (*DEVICE_METHODS, "cuda"):
            return True
        return receiver_is_foreign(self.ctx, call.func.value, self.ctx.site(call), call.func.attr.value)

    def _in_availability_branch(self, statement: cst.CSTNode) -> bool:
        """``statement`` runs only where torch sees a CUDA device (``if torch.cuda.is_available():``)."""
        site = self.ctx.site(statement)
        child: cst.CSTNode = statement
        for ancestor in self.ctx.ancestors(statement):
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(ancestor, cst.If) and child is ancestor.body:
                if checks_cuda_available(self.ctx.model, ancestor.test, site.scope, site.order):
                    return True
            child = ancestor
        return False

    def _is_device_param(self, node: cst.Param) -> bool:
        name = node.name.value
        if name in DEVICE_PARAM_NAMES or name.endswith("_device"):
            return True
        annotation = node.annotation.annotation if node.annotation is not None else None
        return annotation is not None and self.ctx.model.qualname(annotation) == "torch.device"

    # -- fixes -----------------------------------------------------------------------------------

    def _device_call_fix(self, node: cst.Call, indexed: bool) -> FixPlan | None:
        if self._value_use(node) == "binding":
            return self._binding_fix(node)
        if not self._places(node):
            return None
        if indexed:
            return self._indexed_device_call_fix(node)
        expression = device_expression(self.ctx.settings.device_expression)
        if not _is_atom(expression) and not isinstance(self.ctx.parent(node), _LOOSE_PARENTS):
            expression = f"({expression})"
        message = f"Replace `{self._shown(node)}` with `{expression}`"
        return FixPlan(message, [Replace(node, expression)], "safe", needs_torch=True)

    def _binding_fix(self, node: cst.Call) -> FixPlan | None:
        """`init_process_group(..., device_id=torch.device("cuda:0"))`: bound to that GPU where
        CUDA is available, to none elsewhere (None), as a CPU device is rejected there; with DEV604
        selected, to that index of the accelerator (its form of the literal, the same device on a
        CUDA machine)."""
        message = f"Bind the process group to `{self._shown(node)}` only where CUDA is available"
        if self.ctx.settings.device_expression != "accelerator":
            return FixPlan(message, [Replace(node, f"{self._code(node)}{GUARD}None")], "safe", needs_torch=True)
        plain = positional(node)
        literal = plain[0].value if len(node.args) == 1 and plain else None
        value = string_value(literal) if literal is not None else None
        device = accelerator_form(value, False, '"') if value is not None else None
        fstring = accelerator_fstring(literal) if literal is not None and device is None else None
        if fstring is not None:
            device = f"{self._code(node.func)}({self._code(fstring)})"
        if device is None:
            # `torch.device("cuda", rank)`: a CUDA check here would be a second notion of the device
            return None
        bound = f"{device} if {AVAILABLE} else None"
        return FixPlan(message, [Replace(node, bound)], "safe", needs_torch=True, requires=ACCELERATOR)

    def _indexed_device_call_fix(self, node: cst.Call) -> FixPlan:
        """Keep the GPU where CUDA is available: `torch.device("cuda:1")` becomes
        `torch.device("cuda:1" if torch.cuda.is_available() else "cpu")`, and
        `torch.device("cuda", i)` becomes `torch.device("cuda", i) if ... else torch.device("cpu")`."""
        plain = positional(node)
        literal = cuda_literal(plain[0].value) if len(node.args) == 1 and plain else None
        if literal is not None:
            return self._guard_fix(literal)
        callee = self._code(node.func)
        guarded = f"{self._code(node)}{GUARD}{callee}({_cpu_literal(plain[0].value if plain else node)})"
        requires = (0, 0)
        kind = plain[0].value if len(plain) == 2 and len(node.args) == 2 else None
        if kind is not None and string_value(kind) == "cuda" and self.ctx.settings.device_expression == "accelerator":
            # the inserted definition's check and accelerator: one notion of the device per file
            guarded, requires = index_choice(self.ctx, self._code(plain[1].value))
        if not isinstance(self.ctx.parent(node), _LOOSE_PARENTS):
            guarded = f"({guarded})"
        message = f"Replace `{self._shown(node)}` with `{guarded}`"
        return FixPlan(message, [Replace(node, guarded)], "safe", needs_torch=True, requires=requires)

    def _argument_fix(self, literal: _Literal, site: Site, avoid: set[str]) -> FixPlan:
        if literal.indexed:
            return self._guard_fix(literal)
        device = self.ctx.device(site, avoid=avoid)
        message = f"Replace {self._code(literal.node)} with `{device.expr}`"
        return FixPlan(message, [Replace(literal.node, device.expr)], "safe", device=device)

    def _default_fix(self, literal: _Literal) -> FixPlan | None:
        """A parameter default: safe where the function places tensors with the parameter. A
        function that only asks about its device (a dtype table, a capability query, a GradScaler,
        which is off for "cuda" without CUDA and on for "cpu") would answer otherwise: no fix."""
        return self._guard_fix(literal) if self._default_placed(literal.node) else None

    def _default_placed(self, node: cst.CSTNode) -> bool:
        """``node`` is (in) a parameter's default, and the function places tensors with that
        parameter."""
        param = next((a for a in self.ctx.ancestors(node) if isinstance(a, cst.Param)), None)
        if param is None:
            return False
        function = next((a for a in self.ctx.ancestors(param) if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)
        if function is None:
            return False
        if _places_with(function, param.name.value, self.ctx.model):
            return True
        # `def __init__(self, device="cuda"): self.device = device`, placed with by another method
        owner = self.ctx.parent(self.ctx.parent(function) or function)
        if not isinstance(function, cst.FunctionDef) or not isinstance(owner, cst.ClassDef):
            return False
        kept = _attributes_holding(function, param.name.value)
        methods = [m for m in owner.body.body if isinstance(m, cst.FunctionDef)]
        return any(_places_with(method, attribute, self.ctx.model) for method in methods for attribute in kept)

    def _guard_fix(self, literal: _Literal) -> FixPlan | None:
        text = self._code(literal.node)
        cpu = _cpu_literal(literal.node)
        value = string_value(literal.node)
        choice = (
            accelerator_choice(value, cpu[0])
            if self.ctx.settings.device_expression == "accelerator" and value is not None
            else None
        )
        # DEV604 is selected: its form of the choice, so that the fix leaves nothing it flags. Safe
        # at any index, unlike DEV604's fix: this original is unguarded, so on an accelerator that
        # lacks the index (MPS has one device) it already failed, asking for CUDA; DEV604's
        # original chose the CPU there and ran.
        if choice is not None:
            guarded = choice[0]
            return FixPlan(
                f"Replace {text} with `{guarded}`", [Replace(literal.node, guarded)], "safe",
                needs_torch=True, requires=ACCELERATOR,
            )
        fstring = accelerator_fstring(literal.node) if self.ctx.settings.device_expression == "accelerator" else None
        if fstring is None and self.ctx.settings.device_expression == "accelerator" and _formatted(literal.node):
            # a CUDA check here would be a second notion of the device beside the accelerator's
            return None
        if fstring is not None:
            guarded = f"{self._code(fstring)} if {AVAILABLE} else {cpu}"
            return FixPlan(
                f"Replace {text} with `{guarded}`", [Replace(literal.node, guarded)], "safe",
                needs_torch=True, requires=ACCELERATOR,
            )
        guarded = f"{text}{GUARD}{cpu}"
        return FixPlan(f"Replace {text} with `{guarded}`", [Replace(literal.node, guarded)], "safe", needs_torch=True)

    def _code(self, node: cst.CSTNode) -> str:
        return self.ctx.module.code_for_node(node)

    def _shown(self, node: cst.CSTNode) -> str:
        """Source for a one-line message: a call spread over lines is abbreviated."""
        code = self._code(node)
        return code if "\n" not in code else "torch.device(...)"


def _returned_names(function: cst.FunctionDef) -> frozenset[str]:
    """The names ``function`` returns as they are (``return parser``), nested functions' too."""
    stack: list[cst.CSTNode] = [function.body]
    names: set[str] = set()
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Return) and isinstance(node.value, cst.Name):
            names.add(node.value.value)
        stack.extend(children(node))
    return frozenset(names)


def _places_with(function: cst.FunctionDef | cst.Lambda, name: str, model) -> bool:
    """``function`` places tensors with ``name``: `.to(name)`, `.cuda(name)`, `device=name` or
    `map_location=name`, `torch.device(name)`, `with torch.device(name)`. GradScaler's `device`
    is a device type: a scaler made for "cuda" without CUDA is off, one made for "cpu" is on."""
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and not (model.qualname(node.func) or "").endswith("GradScaler"):
            plain = positional(node)
            method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
            given = [plain[0].value] if plain and (method in MOVES or model.qualname(node.func) in POSITIONAL_DEVICE_FUNCTIONS) else []
            given += [a.value for a in node.args if a.keyword is not None and a.keyword.value in DEVICE_KEYWORDS]
            if any(dotted_name(value) == name for value in given):
                return True
        stack.extend(children(node))
    return False


def _attributes_holding(function: cst.FunctionDef, name: str) -> set[str]:
    """``self.x`` for each `self.x = name` in ``function`` (its first parameter named `self`)."""
    params = function.params.params
    if not params or params[0].name.value != "self":
        return set()
    held: set[str] = set()
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == name:
            held.update(
                target for t in node.targets if (target := dotted_name(t.target)) is not None and target.startswith("self.")
            )
        stack.extend(children(node))
    return held


def _cpu_literal(node: cst.BaseExpression) -> str:
    """``"cpu"`` in the quote style of ``node`` (of its string, for a formatted one)."""
    if isinstance(node, cst.BinaryOperation):
        node = node.left
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        node = node.func.value
    if isinstance(node, cst.SimpleString):
        quote = node.quote
    elif isinstance(node, cst.FormattedString):
        quote = node.start.lstrip("fFrRbB")
    else:
        quote = '"'
    mark = quote[0]
    return f"{mark}cpu{mark}"


@lru_cache(maxsize=16)
def _is_atom(expression: str) -> bool:
    """A call, name or attribute: it binds tighter than any operator around it."""
    return isinstance(cst.parse_expression(expression), (cst.Call, cst.Name, cst.Attribute, cst.Subscript))


def _source(node: cst.CSTNode) -> str:
    """The source text of a (possibly implicitly concatenated) string literal."""
    if isinstance(node, cst.SimpleString):
        return node.value
    if isinstance(node, cst.ConcatenatedString):
        return _source(node.left) + " " + _source(node.right)
    return ""


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


_WORD = re.compile(r"\w+")


def _words(text: str) -> Counter[tuple[bool, str]]:
    """How often each word of ``text`` (a longest run of word characters) stands right after a
    dot (``x.name``) and elsewhere (``name``): one scan of the text for every name a rule asks about."""
    counts: Counter[tuple[bool, str]] = Counter()
    for match in _WORD.finditer(text):
        at = match.start()
        counts[(at > 0 and text[at - 1] == ".", match.group())] += 1
    return counts
