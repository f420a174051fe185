"""DEV601/DEV602 through a name that holds the CUDA module (issue 22): ``m =
torch.get_device_module("cuda")`` or ``m = torch.cuda``, then ``m.synchronize()``. Reported as the
direct call is, only where every binding of the name that reaches the call is that module and one
reaches it on every path (devlint.analysis.reaching); the gate lets such files through."""

from __future__ import annotations

import pytest

from devlint.engine.lint import fix_text, lint_text
from devlint.registry import rule_by_code
from devlint.settings import FixSettings

RULES = [rule_by_code("DEV601"), rule_by_code("DEV602")]
AT_2_9 = FixSettings(torch_version=(2, 9), device_expression="accelerator")

REPORTED = [
    'import torch\nm = torch.get_device_module("cuda")\nm.synchronize()\n',
    'import torch\nm = torch.get_device_module(torch.device("cuda:0"))\nm.synchronize()\n',
    "import torch\nm = torch.cuda\nm.synchronize()\n",
    "from torch import cuda\nm = cuda\nm.synchronize()\n",
    "import torch\nm = torch.cuda.memory\nm.reset_peak_memory_stats()\n",
    # a local, and a module-level name read in a function that runs later
    'import torch\ndef f():\n    m = torch.get_device_module("cuda")\n    m.synchronize()\n',
    'import torch\nm = torch.get_device_module("cuda")\ndef f():\n    m.synchronize()\n',
    # the same module on both paths
    'import torch\nif x:\n    m = torch.cuda\nelse:\n    m = torch.get_device_module("cuda")\nm.synchronize()\n',
]

SILENT = [
    # rebound on some path, or to another device's module
    'import torch\nm = torch.get_device_module("cuda")\nif x:\n    m = torch.cpu\nm.synchronize()\n',
    'import torch\nm = torch.get_device_module("cpu")\nm.synchronize()\n',
    "import torch\nm = torch.get_device_module(device)\nm.synchronize()\n",
    # maybe unbound, a parameter, a loop target, a rebinding in a loop
    "import torch\nif x:\n    m = torch.cuda\nm.synchronize()\n",
    "import torch\ndef f(m=torch.cuda):\n    m.synchronize()\n",
    "import torch\nfor m in (torch.cuda, torch.cpu):\n    m.synchronize()\n",
    "import torch\nm = torch.cuda\nwhile x:\n    m.synchronize()\n    m = torch.cpu\n",
    # a function may rebind it
    "import torch\nm = torch.cuda\ndef cpu():\n    global m\n    m = torch.cpu\ndef f():\n    m.synchronize()\n",
    # another library's module
    "from numba import cuda\nm = cuda\nm.synchronize()\n",
]


@pytest.mark.parametrize("text", REPORTED)
def test_a_name_that_holds_the_cuda_module_on_every_path_is_reported(text: str) -> None:
    for gate in (True, False):
        assert [f.location.row for f in lint_text(text, "m.py", RULES, gate=gate)] == [text.count("\n")]


@pytest.mark.parametrize("text", SILENT)
def test_a_name_that_may_hold_something_else_is_left_alone(text: str) -> None:
    assert lint_text(text, "m.py", RULES, gate=False) == []


def test_the_fixes_are_those_of_the_direct_call() -> None:
    text = 'import torch\ngpu = torch.get_device_module("cuda")\ngpu.synchronize()\nused = gpu.memory_allocated()\n'
    assert fix_text(text, "m.py", RULES, FixSettings(torch_version=(2, 3))).text == (
        'import torch\ngpu = torch.get_device_module("cuda")\nif torch.cuda.is_available():\n    gpu.synchronize()\n'
        "used = gpu.memory_allocated()\n"
    )
    assert fix_text(text, "m.py", RULES, AT_2_9).text == (
        'import torch\ngpu = torch.get_device_module("cuda")\nif torch.accelerator.is_available():\n'
        "    torch.accelerator.synchronize()\n"
        "used = torch.accelerator.memory_allocated() if torch.accelerator.is_available() else 0\n"
    )
