"""Fix truth across rules (issue 11): where the inserted definition goes, when a fix that relies
on it stops being safe, which name new code uses for torch, and what a fix must leave alone."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from devlint.engine.lint import fix_text, lint_text
from devlint.registry import all_rules
from devlint.settings import FixSettings

RULES = list(all_rules())
# A project older than torch.get_device_module (first observed in 2.4): a call that fails without
# CUDA gets the CUDA check around it.
BEFORE_DEVICE_MODULE = FixSettings(torch_version=(2, 3))


def fixed(source: str, unsafe: bool = False, settings: FixSettings = FixSettings()) -> str:
    return fix_text(textwrap.dedent(source), "truth.py", RULES, settings, unsafe=unsafe).text


def applicability(source: str, settings: FixSettings = FixSettings()) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for finding in lint_text(textwrap.dedent(source), "truth.py", RULES, settings):
        found.setdefault(finding.code, set()).add(finding.fix.applicability if finding.fix else "none")
    return found


def test_the_definition_goes_after_a_visible_devices_setting_before_the_first_use() -> None:
    text = fixed(
        """\
        import os
        import torch
        os.environ.update({"CUDA_VISIBLE_DEVICES": "0"})
        model = torch.nn.Linear(2, 2).cuda()
        """
    )
    lines = text.splitlines()
    assert lines.index('os.environ.update({"CUDA_VISIBLE_DEVICES": "0"})') < next(
        i for i, line in enumerate(lines) if line.startswith("device = ")
    )


def test_a_setting_the_definition_would_run_before_makes_its_fixes_unsafe() -> None:
    source = """\
    import os
    import torch


    def main(gpu):
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu
        return torch.ones(2).cuda()
    """
    assert applicability(source)["DEV101"] == {"unsafe"}
    (finding,) = [f for f in lint_text(textwrap.dedent(source), "t.py", RULES) if f.code == "DEV101"]
    assert "line 6 sets CUDA_VISIBLE_DEVICES" in finding.fix.message
    # A device the program already has needs no definition, and stays safe.
    assert applicability(source.replace("def main(gpu):", "def main(gpu, device: torch.device):"))["DEV101"] == {"safe"}


def test_reading_visible_devices_is_no_setting() -> None:
    source = """\
    import os
    import torch


    def visible():
        \"\"\"The GPUs that CUDA_VISIBLE_DEVICES shows.\"\"\"
        return os.environ.get("CUDA_VISIBLE_DEVICES", "")


    def run():
        return torch.ones(2).cuda()
    """
    assert applicability(source)["DEV101"] == {"safe"}
    setting = source.replace('return os.environ.get("CUDA_VISIBLE_DEVICES", "")', 'os.environ.pop("CUDA_VISIBLE_DEVICES")')
    (finding,) = [f for f in lint_text(textwrap.dedent(setting), "t.py", RULES) if f.code == "DEV101"]
    # the reason names the line that writes the variable, not the docstring above it
    assert finding.fix.applicability == "unsafe" and "line 7 sets CUDA_VISIBLE_DEVICES" in finding.fix.message


def test_a_docstring_mentioning_the_environment_is_no_setting() -> None:
    text = fixed(
        '''\
        import torch
        """Set CUDA_VISIBLE_DEVICES via os.environ before running."""
        x = torch.ones(1).cuda()
        '''
    )
    assert text.splitlines()[2].startswith("device = ")  # after a blank line, as isort leaves it


def test_torch_imported_in_a_try_block_is_not_imported_again() -> None:
    text = fixed(
        """\
        try:
            import torch
        except ImportError:
            raise SystemExit("install torch")
        x = torch.zeros(2).cuda()
        """
    )
    assert text.count("import torch") == 1
    assert text.splitlines()[5].startswith("device = torch.device(")


def test_a_module_that_works_without_torch_gets_no_safe_definition() -> None:
    """`except ImportError: torch = None` keeps the module importable where torch is missing; a
    module-level `device = torch.device(...)` would raise there, so its fixes are unsafe."""
    source = """\
    try:
        import torch
    except ImportError:
        torch = None


    def to_gpu(x):
        return x.cuda()
    """
    (finding,) = lint_text(textwrap.dedent(source), "t.py", RULES)
    assert finding.fix.applicability == "unsafe" and "imported inside `try:` at line 1" in finding.fix.message
    # a handler that gives up (raise, sys.exit) makes torch required: the definition is safe
    required = source.replace("torch = None", 'raise SystemExit("needs torch")')
    assert applicability(required)["DEV101"] == {"safe"}


def test_a_later_import_of_torch_is_where_the_definition_goes() -> None:
    text = fixed(
        """\
        import math


        def to_gpu(x):
            return x.cuda()


        import torch
        print(to_gpu(torch.ones(1)))
        """
    )
    assert text.count("import torch") == 1
    assert text.index("import torch") < text.index("device = ") < text.index("print(")


def test_new_code_uses_the_name_the_file_imports_torch_under() -> None:
    text = fixed(
        """\
        import torch as th
        state = th.load("ckpt.pt")
        x = th.cuda.FloatTensor(2, 2)
        """
    )
    assert "import torch\n" not in text and "torch." not in text.replace("import torch as th", "")
    assert 'map_location=None if th.cuda.is_available() else lambda storage, location:' in text
    assert "device = th.device(" in text


def test_renaming_torch_leaves_strings_alone() -> None:
    from devlint.engine.torch_imports import renamed_torch

    assert renamed_torch('f("torch.pt", torch.float32)  # torch.x', "th") == 'f("torch.pt", th.float32)  # torch.x'


@pytest.mark.parametrize(
    "source",
    [
        # a storage: its `to` takes the device as a keyword only
        "import torch\ns = weights.untyped_storage().cuda()\n",
        "import torch\n\ndef move(storage):\n    return storage.cuda()\n",
    ],
)
def test_storages_are_reported_without_a_fix(source: str) -> None:
    assert applicability(source) == {"DEV101": {"none"}}


def test_a_device_value_a_validator_receives_is_not_rewritten() -> None:
    source = """\
    import torch


    def require_cpu(device):
        if device.type != "cpu":
            raise ValueError("Device should be CPU")


    try:
        require_cpu(torch.device("cuda"))
    except ValueError:
        print("rejected")
    """
    assert applicability(source) == {}


def test_every_fixed_truth_program_compiles_and_a_second_fix_changes_nothing() -> None:
    from pathlib import Path

    pairs = Path(__file__).resolve().parent.parent / "fixtures" / "pairs"
    for before in sorted(pairs.glob("truth_*.py")):
        if before.name.endswith((".fixed.py", ".unsafe.py")):
            continue
        for unsafe in (False, True):
            once = fix_text(before.read_text(), before.name, RULES, unsafe=unsafe).text
            compile(once, before.name, "exec")
            assert fix_text(once, before.name, RULES, unsafe=unsafe).text == once, before.name


def test_a_cpu_checkpoint_stays_on_the_cpu_after_the_fix(tmp_path) -> None:
    """DEV402's rewrite keeps torch's default where CUDA is available; here (no GPU), the CPU
    branch runs: CPU tensors come back on the CPU and `.numpy()` works."""
    program = fixed(
        """\
        import torch
        torch.save({"x": torch.arange(3.0)}, "blob.pt")
        data = torch.load("blob.pt")
        print(data["x"].numpy().sum())
        """
    )
    (tmp_path / "p.py").write_text(program)
    run = subprocess.run([sys.executable, "p.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "3.0"


def test_map_location_moves_only_gpu_storages_and_only_without_cuda(tmp_path) -> None:
    """DEV402's map_location on this CPU-only machine: a checkpoint written on (emulated) CUDA
    loads onto the CPU, where the original fails; for any other location it answers None, torch's
    default, so an MPS checkpoint stays on an Apple GPU and a CPU one on the CPU. Under emulated
    CUDA the expression is None: torch's default itself."""
    torch = pytest.importorskip("torch")
    from devlint.rules.load_without_map_location import MAP_LOCATION

    from devlint.verify.child.emulation import Emulation

    with Emulation(visible=True):
        torch.save({"gpu": torch.ones(2, device="cuda"), "cpu": torch.zeros(2)}, tmp_path / "c.pt")
    assert not torch.cuda.is_available()
    with pytest.raises(RuntimeError, match="CUDA device"):
        torch.load(tmp_path / "c.pt")
    map_location = eval(MAP_LOCATION, {"torch": torch})
    assert callable(map_location)  # no CUDA here: the function; with CUDA the expression is None
    restored = torch.load(tmp_path / "c.pt", map_location=map_location, weights_only=True)
    assert {k: (v.device.type, v.tolist()) for k, v in restored.items()} == {"gpu": ("cpu", [1.0, 1.0]), "cpu": ("cpu", [0.0, 0.0])}
    storage = torch.UntypedStorage(4)
    assert map_location(storage, "cuda:1") is storage
    assert map_location(storage, "mps") is None and map_location(storage, "cpu") is None
    with Emulation(visible=True):
        assert eval(MAP_LOCATION, {"torch": torch}) is None


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_renaming_torch_follows_any_line_ending(newline: str) -> None:
    from devlint.engine.torch_imports import renamed_torch

    code = newline.join(["torch.set_default_dtype(torch.float32)", 'torch.set_default_device("cuda")'])
    assert renamed_torch(code, "t") == code.replace("torch.", "t.")


@pytest.mark.parametrize(
    ("default", "device"),
    [('"cpu"', "torch_device"), ('"cuda:1"', "torch_device"), ("None", "torch_device"), ('"cuda"', "device")],
)
def test_an_argparse_device_is_reused_only_where_its_default_is_the_gpu_cuda_means(default: str, device: str) -> None:
    """`.cuda()` goes to the GPU whatever `--device` says: reusing `args.device` with
    `default="cpu"` would move the program's GPU work onto the CPU."""
    text = fixed(
        f"""\
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--device", default={default})
        args = parser.parse_args()
        device = args.device
        stats = torch.randn(4).to(device)
        weights = torch.randn(4).cuda()
        """
    )
    assert f"weights = torch.randn(4).to({device})" in text


@pytest.mark.parametrize(
    ("call", "device"),
    [
        ('predict(net, x, torch.device("cpu"))', "torch_device"),
        ('predict(net, x, device="cpu")', "torch_device"),
        ('runner.predict(net, x, "cpu")', "torch_device"),
        ('predict(net, x, torch.device("cuda"))', "device"),
    ],
)
def test_a_device_parameter_a_caller_gives_the_cpu_is_not_the_gpu_cuda_means(call: str, device: str) -> None:
    text = fixed(
        f"""\
        import torch


        def predict(model, data, device):
            return model(data.cuda()).to(device)


        {call}
        """
    )
    assert f"return model(data.to({device})).to(device)" in text


@pytest.mark.parametrize(
    ("option", "choice", "device"),
    [
        ('"--cuda", action="store_true"', '"cuda" if args.cuda else "cpu"', "torch_device"),
        ('"--no-cuda", action="store_true"', '"cuda" if not args.no_cuda else "cpu"', "device"),
        ('"--cpu", action="store_false", dest="gpu"', '"cuda" if args.gpu else "cpu"', "device"),
        ('"--gpu", type=int, default=0', '"cuda" if args.gpu else "cpu"', "torch_device"),
    ],
)
def test_a_device_chosen_by_a_flag_is_reused_only_where_the_flag_defaults_to_the_gpu(
    option: str, choice: str, device: str
) -> None:
    text = fixed(
        f"""\
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument({option})
        args = parser.parse_args()
        device = torch.device({choice})
        data = torch.randn(4, 3).to(device)
        model = torch.nn.Linear(3, 2).cuda()
        """
    )
    assert f"model = torch.nn.Linear(3, 2).to({device})" in text


GPU_OPTION = """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=None)
args = parser.parse_args()
x = torch.ones(2).cuda(args.gpu)
"""


def test_an_int_option_is_as_safe_an_index_as_a_literal() -> None:
    assert applicability(GPU_OPTION)["DEV102"] == {"safe"}
    # the program giving `args.gpu` a value of unknown type (a worker's parameter) makes it unknown
    assert applicability(GPU_OPTION + "def worker(gpu):\n    args.gpu = gpu\n")["DEV102"] == {"unsafe"}
    assert applicability(GPU_OPTION + "args.gpu = 1\n")["DEV102"] == {"safe"}
    # several values, or no conversion, make it no index
    assert applicability(GPU_OPTION.replace("default=None", 'nargs="+"'))["DEV102"] == {"unsafe"}
    assert applicability(GPU_OPTION.replace("type=int", "type=str"))["DEV102"] == {"unsafe"}
    assert applicability(GPU_OPTION.replace("default=None", 'default="cuda:0"'))["DEV102"] == {"unsafe"}


@pytest.mark.parametrize(
    ("value", "source"),
    [
        ("args.device", "the `--device` option"),
        ("sys.argv[1]", "`sys.argv`"),
        ("chosen", "`sys.argv`"),
        ("str(gpu)", "the parameter `gpu`"),
    ],
)
def test_visible_devices_from_the_programs_own_argument_get_no_fix(value: str, source: str) -> None:
    text = textwrap.dedent(
        f"""\
        import argparse, os, sys
        parser = argparse.ArgumentParser()
        parser.add_argument("--device", default="0")
        args = parser.parse_args()
        chosen = sys.argv[-1]


        def pin(gpu):
            os.environ["CUDA_VISIBLE_DEVICES"] = {value}
        """
    )
    (finding,) = lint_text(text, "t.py", RULES)
    assert finding.fix is None and f"the program's own argument ({source})" in finding.message


def test_visible_devices_from_a_constant_keep_the_unsafe_fix() -> None:
    source = 'import os\nGPU = "1"\nos.environ["CUDA_VISIBLE_DEVICES"] = GPU\n'
    assert applicability(source)["DEV201"] == {"unsafe"}


LAZY = """\
import json


def train():
    import torch
    return torch.nn.Linear(2, 2).cuda()


def helper(x):
    return x.cuda()
"""


def test_torch_imported_only_in_a_function_gets_its_definition_there() -> None:
    """The module ran without torch: new code goes after the function's own import, and a fix
    that needs a module-level `import torch` is unsafe and says why."""
    text = fixed(LAZY)
    assert text.splitlines()[:6] == [
        "import json", "", "", "def train():", "    import torch",
        '    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
    ]
    assert "x.cuda()" in text and text.count("import torch") == 1
    helper = [f for f in lint_text(textwrap.dedent(LAZY), "t.py", RULES) if f.location.row == 10]
    assert helper[0].fix.applicability == "unsafe" and "imports torch only inside functions (line 5)" in helper[0].fix.message
    # a module that imports torch at its top level as well keeps the one module-level definition
    eager = fixed("import torch\n" + LAZY)
    assert eager.splitlines()[3].startswith("device = ") and eager.count("device = ") == 1
    assert fixed(LAZY) == fixed(fixed(LAZY))


def test_forward_reuses_the_inputs_device_for_a_tensor_built_from_its_shape() -> None:
    """README: inside `forward(self, x)` that treats `x` as a tensor, `.cuda()` becomes
    `.to(x.device)`; a tensor built from `x.shape` holds none of `x`'s data (issue 22 item 12)."""
    source = """\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(3))

        def forward(self, x):
            mask = torch.ones(x.shape[0], x.size(1)).cuda()
            return x * self.w * mask
    """
    text = fixed(source)
    assert "mask = torch.ones(x.shape[0], x.size(1)).to(x.device)" in text and "device = " not in text
    # `x`'s own data moved: where `x` is now is not where it goes
    moved = fixed(source.replace("torch.ones(x.shape[0], x.size(1)).cuda()", "x.float().cuda()"))
    assert "x.float().to(device)" in moved


def test_the_device_of_a_tensor_the_scope_moves_to_cuda_is_not_where_cuda_goes() -> None:
    """Found in torchao's tests: `original = t.device; t = t.to("cuda")` became `t.to(original)`,
    a move to where `t` already was (verify: the fixed program never used the GPU)."""
    source = textwrap.dedent(
        """\
        import torch


        def roundtrip(t):
            original_device = t.device
            t = t.to("cuda")
            return t.to(original_device)


        def forward_batch(batch, model):
            device = batch.device
            return model.cuda()(batch)
        """
    )
    result = fixed(source)
    assert "t = t.to(torch_device)" in result
    assert "t.to(original_device)" in result.split("t = t.to(torch_device)")[1]
    # A device read from a tensor the scope does not move stays the program's device.
    assert "return model.to(device)(batch)" in result


@pytest.mark.parametrize(
    "test",
    ['device == "gpu"', 'device != "cpu_only"', 'device in ("gpu", "cpu")', '"GPU" == device'],
)
def test_a_name_compared_with_a_word_that_is_no_device_holds_no_device(test: str) -> None:
    """Found in fairseq's tests: `if device == "gpu": batch = batch.cuda()` became
    `batch.to(device)`, which is `.to("gpu")`: a RuntimeError on CUDA."""
    source = _moved_when(test)
    result = fixed(source)
    assert "batch = batch.to(torch_device)" in result
    assert applicability(source)["DEV101"] == {"safe"}


@pytest.mark.parametrize(
    "test", ['device == "cuda"', 'device == "cuda:1"', 'device in ("cpu", "mps")', 'device == "mlu"', 'device.type == "gpu"']
)
def test_a_name_compared_with_device_strings_is_still_a_device(test: str) -> None:
    assert "batch = batch.to(device)" in fixed(_moved_when(test))


def _moved_when(test: str) -> str:
    return f"""\
        import torch


        def sample(device: str):
            batch = torch.zeros(2)
            if {test}:
                batch = batch.cuda()
            return batch
        """


def test_a_function_that_binds_torch_itself_gets_no_module_level_import() -> None:
    # `torch` is the function's own (returned by a loader): the guard's `torch.` reads it, as the
    # call it guards did, so nothing is added at the top and the fix stays safe.
    source = """\
        def load_modules():
            import torch
            return torch, None


        def bench():
            torch, _ = load_modules()
            torch.cuda.synchronize()
        """
    text = fixed(source, settings=BEFORE_DEVICE_MODULE)
    assert text.count("import torch") == 1
    assert "    if torch.cuda.is_available():\n        torch.cuda.synchronize()\n" in text
    assert applicability(source, BEFORE_DEVICE_MODULE) == {"DEV601": {"safe"}}


def test_a_function_that_reads_the_module_torch_still_gets_the_import() -> None:
    # near miss: `bench` has no `torch` of its own, and the module binds none at its top level
    source = """\
        def load_modules():
            import torch
            return torch


        def bench(torch_module):
            torch.cuda.synchronize()
        """
    assert applicability(source) == {"DEV601": {"unsafe"}}
    assert fixed(source, unsafe=True).startswith("import torch\n")


def test_a_device_the_program_binds_with_walrus_in_a_comprehension_is_reused() -> None:
    """`:=` in a comprehension binds in the enclosing function, where the flow analysis finds it,
    while the semantic model records it in the comprehension's scope: the device names a fix may
    reuse are not narrowed by the function's own bindings alone."""
    text = fixed(
        """\
        import torch


        def run(xs):
            d = "cpu"
            picked = [(d := torch.device("cuda")) for _ in xs]
            return torch.ones(1).cuda(), picked
        """,
        unsafe=True,
    )
    assert "return torch.ones(1).to(d), picked" in text
