"""DEV102-DEV105, DEV201, DEV401 beyond their own examples: spans, messages, fix safety, settings."""

from __future__ import annotations

import libcst as cst
import pytest

from devlint.analysis.devices import ACCELERATOR_EXPRESSION
from devlint.engine.lint import fix_text, lint_text
from devlint.findings import Finding
from devlint.registry import rule_by_code
from devlint.settings import FixSettings

# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


def lint(code: str, text: str, settings: FixSettings = FixSettings()) -> list[Finding]:
    return lint_text(text, "t.py", [rule_by_code(code)], settings)


def fix(code: str, text: str, unsafe: bool = False, settings: FixSettings = FixSettings()) -> str:
    return fix_text(text, "t.py", [rule_by_code(code)], settings, unsafe=unsafe).text


def span(finding: Finding) -> tuple[int, int, int, int]:
    start, end = finding.location, finding.end_location
    return start.row, start.column, end.row, end.column


# -- DEV102 -------------------------------------------------------------------------------------


def test_dev102_span_starts_at_the_method_and_names_the_index() -> None:
    (finding,) = lint("DEV102", "import torch\ny = x.float().cuda(args.gpu)\n")
    assert span(finding) == (2, 15, 2, 29)
    assert "`.cuda(args.gpu)`" in finding.message
    assert finding.fix is not None and finding.fix.applicability == "unsafe"


_IMAGENET = (
    "import argparse\nimport torch\nimport torch.multiprocessing as mp\n\nparser = argparse.ArgumentParser()\n"
    "parser.add_argument('--gpu', default=None, type=int)\n\n\ndef main():\n    args = parser.parse_args()\n"
    "    if args.multiprocessing_distributed:\n        {start}\n    else:\n        main_worker(args.gpu, 1, args)\n\n\n"
    "def main_worker(gpu, ngpus_per_node, args):\n    {bind}\n    if args.gpu is not None:\n"
    "        model.cuda(args.gpu)\n    train(loader, model, args)\n\n\n"
    "def train(loader, model, args):\n    for images, target in loader:\n        images = images.cuda(args.gpu, non_blocking=True)\n"
)


@pytest.mark.parametrize(
    ("start", "bind", "safe"),
    [
        # moco(-v3), pytorch/examples' ImageNet: spawn passes each process its index, an int
        ("mp.spawn(main_worker, nprocs=2, args=(2, args))", "args.gpu = gpu", True),
        ("torch.multiprocessing.spawn(main_worker, args=(2, args))", "args.gpu = gpu", True),
        # started some other way, a value that is no int, or the second parameter
        ("threading.Thread(target=main_worker, args=(0, 2, args)).start()", "args.gpu = gpu", False),
        ("mp.spawn(main_worker, nprocs=2, args=(2, args))", "args.gpu = str(gpu)", False),
        ("mp.spawn(main_worker, nprocs=2, args=(2, args))", "args.gpu = ngpus_per_node", False),
    ],
)
def test_dev102_an_option_set_from_a_spawned_workers_index_is_an_int(start: str, bind: str, safe: bool) -> None:
    text = _IMAGENET.format(start=start, bind=bind)
    findings = lint("DEV102", text)
    assert len(findings) == 2
    assert {f.fix.applicability for f in findings if f.fix} == {"safe" if safe else "unsafe"}


def test_dev102_long_arguments_are_elided_in_the_message() -> None:
    (finding,) = lint("DEV102", "import torch\ny = x.cuda(config.training.devices[local_rank_of_this_process])\n")
    assert "`.cuda(...)`" in finding.message


@pytest.mark.parametrize(
    "binding",
    [
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
        'device = "cuda:1"',
        "device = other.device",
    ],
)
def test_dev102_argument_bound_to_a_device_is_a_safe_fix(binding: str) -> None:
    (finding,) = lint("DEV102", f"import torch\n{binding}\nx = x.cuda(device)\n")
    assert finding.fix is not None and finding.fix.applicability == "safe"


@pytest.mark.parametrize(
    "text",
    [
        # a device that a later branch may replace by an int
        'import torch\ndevice = torch.device("cuda")\nif multi:\n    device = 1\n\ndef f(x):\n    return x.cuda(device)\n',
        # bound after the call
        'import torch\nx = x.cuda(device)\ndevice = torch.device("cuda")\n',
    ],
)
def test_dev102_argument_not_surely_a_device_stays_unsafe(text: str) -> None:
    (finding,) = lint("DEV102", text)
    assert finding.fix is not None and finding.fix.applicability == "unsafe"


def test_dev102_an_int_variable_keeps_its_gpu_safely() -> None:
    (finding,) = lint("DEV102", "import torch\ngpu = 0\nx = x.cuda(gpu)\n")
    assert finding.fix is not None and finding.fix.applicability == "safe"
    assert fix("DEV102", "import torch\ngpu = 0\nx = x.cuda(gpu)\n").endswith(
        'x = x.to(torch.device("cuda", gpu) if torch.cuda.is_available() else torch.device("cpu"))\n'
    )


def test_dev102_module_level_device_seen_from_a_function_is_safe() -> None:
    text = 'import torch\ndev = torch.device("cuda" if ok else "cpu")\n\ndef f(x):\n    return x.cuda(dev)\n'
    assert fix("DEV102", text) == text.replace("x.cuda(dev)", "x.to(dev)")


def test_dev102_memory_format_positional_becomes_a_keyword() -> None:
    text = "import torch\ny = x.cuda(0, False, torch.channels_last)\n"
    fixed = fix("DEV102", text)
    assert fixed.endswith(
        'y = x.to("cuda:0" if torch.cuda.is_available() else "cpu", non_blocking=False, memory_format=torch.channels_last)\n'
    )


def test_dev102_fix_keeps_a_multi_line_argument_layout() -> None:
    text = "import torch\ny = x.cuda(\n    rank,\n    True,\n)\n"
    assert fix("DEV102", text, unsafe=True).endswith(
        'y = x.to(\n    torch.device("cuda", rank) if torch.cuda.is_available() else torch.device("cpu"),\n'
        "    non_blocking=True,\n)\n"
    )


# -- DEV103 -------------------------------------------------------------------------------------


def test_dev103_device_call_uses_the_configured_expression() -> None:
    settings = FixSettings(device_expression="accelerator", torch_version=(2, 6))
    text = 'import torch\ndevice = torch.device("cuda")\n'
    assert fix("DEV103", text, settings=settings) == f"import torch\ndevice = {ACCELERATOR_EXPRESSION}\n"


_CURRENT = "torch.accelerator.current_accelerator().type"


@pytest.mark.parametrize(
    ("code", "text", "found", "fixed"),
    [
        (
            "DEV103",
            'import torch\ny = x.to("cuda:1")\nz = x.to("cuda:0")\nw = torch.device("cuda:1")\n',
            {2: "safe", 3: "safe", 4: "safe"},
            f'import torch\ny = x.to(f"{{{_CURRENT}}}:1" if torch.accelerator.is_available() else "cpu")\n'
            f'z = x.to(f"{{{_CURRENT}}}:0" if torch.accelerator.is_available() else "cpu")\n'
            f'w = torch.device(f"{{{_CURRENT}}}:1" if torch.accelerator.is_available() else "cpu")\n',
        ),
        (
            "DEV103",
            'import torch\ny = x.to(f"cuda:{rank}")\n',
            {2: "safe"},
            f'import torch\ny = x.to(f"{{{_CURRENT}}}:{{rank}}" if torch.accelerator.is_available() else "cpu")\n',
        ),
        (
            "DEV603",
            'import torch\ntorch.distributed.init_process_group("nccl")\nm = torch.distributed.init_device_mesh("cuda", (2,))\n',
            {2: "safe", 3: "safe"},
            "import torch\ntorch.distributed.init_process_group(torch.distributed.get_default_backend_for_device("
            'torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"))\n'
            f'm = torch.distributed.init_device_mesh({_CURRENT} if torch.accelerator.is_available() else "cpu", (2,))\n',
        ),
        (
            "DEV102",
            "import torch\ny = x.cuda(1)\nz = x.cuda(0)\n",
            {2: "safe", 3: "safe"},
            f'import torch\ny = x.to(f"{{{_CURRENT}}}:1" if torch.accelerator.is_available() else "cpu")\n'
            f'z = x.to(f"{{{_CURRENT}}}:0" if torch.accelerator.is_available() else "cpu")\n',
        ),
        # an index the program chooses is built on the accelerator too, not on a CUDA check beside it
        (
            "DEV102",
            "import torch\n\ndef place(x, rank: int):\n    return x.cuda(rank)\n",
            {4: "safe"},
            "import torch\n\ndef place(x, rank: int):\n"
            f'    return x.to(torch.device({_CURRENT}, rank) if torch.accelerator.is_available() else torch.device("cpu"))\n',
        ),
        (
            "DEV103",
            'import torch\n\ndef place(x, rank):\n    return x.to(torch.device("cuda", rank))\n',
            {4: "safe"},
            "import torch\n\ndef place(x, rank):\n"
            f'    return x.to(torch.device({_CURRENT}, rank) if torch.accelerator.is_available() else torch.device("cpu"))\n',
        ),
    ],
)
def test_a_kept_gpu_index_with_dev604_selected_leaves_nothing_dev604_flags(
    code: str, text: str, found: dict[int, str], fixed: str
) -> None:
    """With DEV604 selected, a GPU index is kept in DEV604's own form, safe at any index for DEV102's
    `.cuda(1)` and DEV103's `"cuda:1"`, unlike DEV604's own fix (Apple's MPS has one device): their
    originals ask for CUDA unguarded and so failed on MPS already."""
    settings = FixSettings(device_expression="accelerator", torch_version=(2, 9))
    rules = [rule_by_code(code), rule_by_code("DEV604")]
    assert {f.location.row: f.fix.applicability for f in lint_text(text, "t.py", rules, settings)} == found
    assert fix_text(text, "t.py", rules, settings).text == fixed
    for unsafe in (False, True):
        again = fix_text(text, "t.py", rules, settings, unsafe=unsafe).text
        assert [f for f in lint_text(again, "t.py", rules, settings) if f.code == "DEV604"] == [], unsafe
    # unsafe fixing rewrites every index in that form
    assert "cuda" not in fix_text(text, "t.py", rules, settings, unsafe=True).text.replace("import torch\n", "")


def test_dev103_conditional_expression_is_parenthesised_where_needed() -> None:
    settings = FixSettings(device_expression="accelerator", torch_version=(2, 6))
    text = 'import torch\nx = x.to(torch.device("cuda") if fast else slow)\n'
    assert fix("DEV103", text, settings=settings) == f"import torch\nx = x.to(({ACCELERATOR_EXPRESSION}) if fast else slow)\n"


def test_dev103_string_span_is_the_literal() -> None:
    (finding,) = lint("DEV103", 'import torch\nx = torch.zeros(2, device="cuda:1")\n')
    assert span(finding) == (2, 27, 2, 35)
    assert '"cuda:1"' in finding.message


def test_dev103_indexed_string_keeps_its_gpu_even_with_a_device_in_scope() -> None:
    text = 'import torch\n\ndef f(x, device: torch.device):\n    return x.to("cuda:1"), x.to("cuda")\n'
    findings = lint("DEV103", text)
    assert [f.fix.applicability for f in findings if f.fix] == ["safe", "safe"]
    assert fix("DEV103", text).endswith('return x.to("cuda:1" if torch.cuda.is_available() else "cpu"), x.to(device)\n')


def test_dev103_variable_used_only_through_device_keyword_of_any_call() -> None:
    text = 'import torch\ndev = "cuda"\nrun(model, device=dev)\n'
    (finding,) = lint("DEV103", text)
    assert "`dev` is set to" in finding.message
    # `run` is no torch call: it may only look at the device, so there is no fix
    assert finding.fix is None
    assert fix("DEV103", text, unsafe=True) == text


def test_dev103_guard_keeps_the_quote_style_and_adds_torch() -> None:
    text = "def load(path, map_location='cuda:0'):\n    return torch.load(path, map_location=map_location)\n"
    assert fix("DEV103", text) == (
        "import torch\ndef load(path, map_location='cuda:0' if torch.cuda.is_available() else 'cpu'):\n"
        "    return torch.load(path, map_location=map_location)\n"
    )


def test_dev103_a_default_the_function_places_nothing_with_gets_no_fix() -> None:
    text = "def autocast_dtype(device: str = 'cuda'):\n    return 'float16' if device == 'cuda' else 'bfloat16'\n"
    (finding,) = lint("DEV103", text)
    assert finding.fix is None


def test_dev103_a_gradscaler_device_is_a_device_type_not_a_placement() -> None:
    # Without CUDA, GradScaler("cuda") is off while GradScaler("cpu") is on: fp16 gradients
    # then fail to unscale, and a state dict the original wrote no longer loads.
    text = (
        "import torch\n\nclass NativeScaler:\n    def __init__(self, device='cuda'):\n"
        "        self._scaler = torch.amp.GradScaler(device=device)\n"
    )
    (finding,) = lint("DEV103", text)
    # no rewrite of the default keeps the scaler off without CUDA: reported without a fix
    assert finding.fix is None


def test_dev103_a_device_default_is_judged_by_the_function_that_has_it() -> None:
    text = (
        "import torch\n\ndef validate(model, loader, device=torch.device('cuda')):\n"
        "    for x in loader:\n        yield model(x.to(device=device))\n\n"
        "def describe(device=torch.device('cuda')):\n    return str(device)\n"
    )
    assert {f.location.row: f.fix and f.fix.applicability for f in lint("DEV103", text)} == {3: "safe", 7: None}
    assert fix("DEV103", text).splitlines()[2] == (
        'def validate(model, loader, device=torch.device("cuda" if torch.cuda.is_available() else "cpu")):'
    )


def test_dev103_a_default_kept_on_self_is_judged_by_the_methods_placing_with_it() -> None:
    text = (
        "import torch\n\nclass RandomErasing:\n    def __init__(self, p=0.5, device='cuda'):\n"
        "        self.p = p\n        self.device = device\n\n    def __call__(self, x):\n"
        "        return x + torch.randn(1, 3, device=self.device)\n\n"
        "class Report:\n    def __init__(self, device='cuda'):\n        self.device = device\n\n"
        "    def name(self):\n        return str(self.device)\n"
    )
    assert {f.location.row: f.fix and f.fix.applicability for f in lint("DEV103", text)} == {4: "safe", 12: None}


def test_dev103_device_values_that_place_nothing_get_no_fix() -> None:
    text = (
        "import torch\n\ndef parallel_devices(ids):\n    return [torch.device('cuda', i) for i in ids]\n\n"
        "flops = peak_flops(device=torch.device('cuda'))\nseen = torch.device('cuda')\nassert seen.type == 'cuda'\n"
        "exported = torch.device('cuda')\nplaced = torch.device('cuda')\nx = x.to(placed)\n"
    )
    fixes = {f.location.row: f.fix and f.fix.applicability for f in lint("DEV103", text)}
    # returned, given to code that may only inspect it, read but never placed with: no fix (that
    # code would see the CPU without CUDA, where it ran before); bound for other modules (never
    # read here) or placed with: safe
    assert fixes == {4: None, 6: None, 7: None, 9: "safe", 10: "safe"}


def test_dev103_availability_branch_exempts_only_the_selection() -> None:
    text = (
        "import torch\nif torch.cuda.is_available():\n"
        '    device = torch.device("cuda")\n'
        '    x = x.to("cuda")\n'
    )
    (finding,) = lint("DEV103", text)
    assert finding.location.row == 4


def test_dev103_or_condition_is_no_availability_guard() -> None:
    text = 'import torch\nif force or torch.cuda.is_available():\n    device = torch.device("cuda")\n'
    assert len(lint("DEV103", text)) == 1


# -- DEV104 -------------------------------------------------------------------------------------


def test_dev104_a_call_is_one_finding_spanning_the_call() -> None:
    (finding,) = lint("DEV104", "import torch\nx = torch.cuda.FloatTensor(2, 3)\n")
    assert span(finding) == (2, 5, 2, 33)


def test_dev104_ambiguous_argument_says_why_there_is_no_fix() -> None:
    (finding,) = lint("DEV104", "import torch\nx = torch.cuda.FloatTensor(values)\n")
    assert finding.fix is None
    assert "size or data" in finding.message


def test_dev104_name_bound_to_a_list_is_still_ambiguous_but_one_bound_to_an_int_is_a_size() -> None:
    text = "import torch\nn = 4\nsize = n * 2\nx = torch.cuda.FloatTensor(size)\n"
    assert fix("DEV104", text).endswith("x = torch.empty(size, dtype=torch.float32, device=device)\n")


def test_dev104_alias_under_a_flag_is_unsafe() -> None:
    text = "import torch\nT = torch.cuda.FloatTensor if args.cuda else torch.FloatTensor\nx = T(3)\n"
    findings = lint("DEV104", text)
    assert [f.fix.applicability if f.fix else None for f in findings] == [None, "unsafe"]


def test_dev104_alias_of_different_dtypes_has_no_fix() -> None:
    text = "import torch\nT = torch.cuda.FloatTensor if cuda else torch.DoubleTensor\nx = T(3)\n"
    findings = lint("DEV104", text)
    assert len(findings) == 2 and all(f.fix is None for f in findings)


def test_dev104_isinstance_message() -> None:
    (finding,) = lint("DEV104", "import torch as t\nok = isinstance(x, t.cuda.LongTensor)\n")
    assert finding.fix is None
    assert "x.dtype == torch.int64" in finding.message


def test_dev104_each_imported_name_is_reported() -> None:
    findings = lint("DEV104", "from torch.cuda import FloatTensor, LongTensor, Stream\n")
    assert [f.location.column for f in findings] == [24, 37]


def test_dev104_type_with_dtype_keyword() -> None:
    text = "import torch\ny = x.type(dtype=torch.cuda.ByteTensor)\n"
    assert fix("DEV104", text) == "import torch\n" + DEVICE + "y = x.to(device=device, dtype=torch.uint8)\n"


# -- DEV105 -------------------------------------------------------------------------------------


def test_dev105_keeps_crlf_and_indentation() -> None:
    text = "import torch\r\nif gpu:\r\n\ttorch.set_default_tensor_type('torch.cuda.FloatTensor')\r\n"
    expected = (
        "import torch\r\n" + DEVICE.replace("\n", "\r\n") + "if gpu:\r\n"
        "\ttorch.set_default_dtype(torch.float32)\r\n\ttorch.set_default_device(device)\r\n"
    )
    assert fix("DEV105", text) == expected


def test_dev105_integer_types_have_no_fix() -> None:
    (finding,) = lint("DEV105", "import torch\ntorch.set_default_tensor_type(torch.cuda.LongTensor)\n")
    assert finding.fix is None


def test_dev105_names_the_imported_code_that_may_make_cpu_tensors() -> None:
    text = (
        "import torch\nimport cv2\nimport os\nfrom data import VOC\nfrom ssd import build_ssd\nimport tqdm\n"
        "torch.set_default_tensor_type('torch.cuda.FloatTensor')\n"
    )
    (finding,) = lint("DEV105", text)
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert "code the file imports (`cv2`, `data`, `ssd` and others) may call `torch.Tensor(...)`" in finding.fix.message


def test_dev105_a_cpu_type_does_not_move_without_the_cuda_type_it_pairs_with() -> None:
    # apex's RNN test: without --unsafe-fixes neither call changes (the CPU type's fix alone
    # would leave a CPU default device in force over the CUDA type that follows)
    text = (
        "import torch\n\ndef packed():\n    torch.set_default_tensor_type(torch.FloatTensor)\n"
        "    lengths = torch.Tensor([3, 2])\n    torch.set_default_tensor_type(torch.cuda.FloatTensor)\n"
    )
    assert fix("DEV105", text) == text
    assert [finding.fix.applicability for finding in lint("DEV105", text) if finding.fix is not None] == ["unsafe", "unsafe"]


# -- DEV201 -------------------------------------------------------------------------------------


def test_dev201_message_is_stronger_after_import_torch() -> None:
    before = 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\nimport torch\n'
    after = 'import os\nimport torch\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'
    (early,) = lint("DEV201", before)
    (late,) = lint("DEV201", after)
    assert "already imported" not in early.message
    assert "already imported" in late.message


def test_dev201_span_is_the_whole_assignment() -> None:
    (finding,) = lint("DEV201", 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"  # one GPU\n')
    assert span(finding) == (2, 1, 2, 41)


def test_dev201_fix_message_says_why_it_is_unsafe() -> None:
    (finding,) = lint("DEV201", 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n')
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert finding.fix.message == (
        'Replace with `os.environ.setdefault("CUDA_VISIBLE_DEVICES", "0")` (unsafe: a value the launcher set now wins)'
    )


def test_dev201_os_imported_under_another_name_for_environ() -> None:
    text = 'from os import environ as env\nenv["CUDA_VISIBLE_DEVICES"] = "2"\n'
    assert fix("DEV201", text, unsafe=True) == 'from os import environ as env\nenv.setdefault("CUDA_VISIBLE_DEVICES", "2")\n'


_CVD = 'os.environ["CUDA_VISIBLE_DEVICES"]'


@pytest.mark.parametrize(
    ("text", "source"),
    [
        # the value that reaches the assignment, not every value the name ever held
        (f"import os, sys\ng = sys.argv[1]\ng = '0'\n{_CVD} = g\n", None),
        (f"import os\n\ndef setup(rank):\n    r = rank\n    r = 3\n    {_CVD} = str(r)\n", None),
        (f"import os, sys\ng = '0'\nif len(sys.argv) > 1:\n    g = sys.argv[1]\n{_CVD} = g\n", "`sys.argv`"),
        # a function runs after the module's code below it: the value bound there reaches
        (f"import os, sys\n\ndef later():\n    {_CVD} = GPUS\n\nGPUS = sys.argv[1]\n", "`sys.argv`"),
        # bound in the loop's previous iteration
        (f"import os\n\ndef loop(gpu):\n    g = '0'\n    for _ in range(2):\n        {_CVD} = g\n        g = gpu\n", "the parameter `gpu`"),
        # a class body runs in place: its latest binding above
        (f"import os, sys\n\nclass Job:\n    gpu = sys.argv[1]\n    {_CVD} = gpu\n", "`sys.argv`"),
        (f"import os, sys\n\nclass Job:\n    gpu = sys.argv[1]\n    gpu = '0'\n    {_CVD} = gpu\n", None),
        # of two branches, the later assignment names the source
        (
            (
                "import argparse, os, sys\np = argparse.ArgumentParser()\np.add_argument('--gpus')\nargs = p.parse_args()\n"
                f"if sys.argv:\n    g = sys.argv[1]\nelse:\n    g = args.gpus\n{_CVD} = g\n"
            ),
            "the `--gpus` option",
        ),
        # followed three assignments deep
        (f"import os\n\ndef f(a):\n    b = a\n    c = b\n    d = c\n    {_CVD} = d\n", "the parameter `a`"),
        (f"import os\n\ndef f(a):\n    b = a\n    c = b\n    d = c\n    e = d\n    {_CVD} = e\n", None),
    ],
)
def test_dev201_names_the_program_input_that_reaches_the_assignment(text: str, source: str | None) -> None:
    (finding,) = lint("DEV201", text)
    if source is None:
        assert "program's own argument" not in finding.message
        assert finding.fix is not None
    else:
        assert f"program's own argument ({source})" in finding.message
        assert finding.fix is None


@pytest.mark.parametrize(
    ("text", "fixed"),
    [
        (f"import os\nfor gpu in ('0', '1'):\n    {_CVD} = gpu\n", False),
        (f"import os\nwhile jobs:\n    {_CVD} = str(jobs.pop())\n", False),
        # the same string every time: `setdefault` keeps what the assignment would have set
        (f"import os\nfor job in jobs:\n    {_CVD} = '0'\n", True),
        # a loop's `else` and a function defined in a loop run their own way
        (f"import os\nfor job in jobs:\n    pass\nelse:\n    {_CVD} = job\n", True),
        (f"import os\nfor job in jobs:\n    def run():\n        x = '0'\n        {_CVD} = x + '1'\n", True),
    ],
)
def test_dev201_no_fix_where_a_loop_assigns_a_value_that_may_change(text: str, fixed: bool) -> None:
    (finding,) = lint("DEV201", text)
    assert (finding.fix is not None) is fixed
    assert ("would keep the first value" in finding.message) is not fixed


def test_dev201_no_fix_for_a_restore_after_the_function_set_the_variable() -> None:
    # The variable is in the environment by then: `setdefault` would leave the context's value.
    text = (
        "import os\n\ndef scoped(gpus):\n    saved = os.environ.get('CUDA_VISIBLE_DEVICES', '')\n"
        f"    {_CVD} = '0'\n    try:\n        yield\n    finally:\n        {_CVD} = saved\n"
    )
    first, restore = lint("DEV201", text)
    assert first.fix is not None
    assert restore.fix is None
    # another function's assignment does not count
    other = f"import os\n\ndef a():\n    {_CVD} = '0'\n\ndef b():\n    {_CVD} = '1'\n"
    assert all(finding.fix is not None for finding in lint("DEV201", other))
    # nor is the next assignment fixed in a second round, after the first became `setdefault`
    twice = f"import os\n{_CVD} = '0'\n{_CVD} = '1'\n"
    assert fix("DEV201", twice, unsafe=True) == (
        "import os\nos.environ.setdefault(\"CUDA_VISIBLE_DEVICES\", '0')\n" + f"{_CVD} = '1'\n"
    )


# -- DEV401 -------------------------------------------------------------------------------------


def test_dev401_fix_uses_the_device_in_scope_where_the_loss_is_built() -> None:
    text = (
        "import torch\n\ndef build(model, dev: torch.device):\n"
        "    crit = torch.nn.CrossEntropyLoss(weight=torch.ones(3))\n"
        "    return model.to(dev), crit\n"
    )
    (finding,) = lint("DEV401", text)
    assert span(finding) == (4, 12, 4, 59)
    assert "`crit`" in finding.message and "`weight`" in finding.message
    # returned, never called here: the fix is offered, but as unsafe
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert "crit = torch.nn.CrossEntropyLoss(weight=torch.ones(3)).to(dev)\n" in fix("DEV401", text, unsafe=True)


def test_dev401_positional_pos_weight_of_bce_with_logits() -> None:
    text = "import torch\nx = x.cuda()\nbce = torch.nn.BCEWithLogitsLoss(None, None, None, 'mean', torch.ones(2))\n"
    (finding,) = lint("DEV401", text)
    assert "`pos_weight`" in finding.message


def test_dev401_moved_through_an_attribute() -> None:
    text = (
        "import torch\n\nclass Trainer:\n    def __init__(self):\n"
        "        self.crit = torch.nn.NLLLoss(weight=torch.ones(3))\n\n"
        "    def setup(self, device):\n        self.crit.to(device)\n"
    )
    assert lint("DEV401", text) == []


def test_every_fix_here_leaves_parseable_code() -> None:
    """All six rules on one file at once, applied with unsafe fixes, twice."""
    text = (
        "import os\nimport torch\nfrom torch import nn\nfrom torch.cuda import FloatTensor as CF\n"
        'os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'
        "torch.set_default_tensor_type('torch.cuda.FloatTensor')\n"
        "w = torch.ones(3)\ncrit = nn.CrossEntropyLoss(weight=w)\n"
        'x = CF(3).cuda(0).to("cuda:0")\ny = torch.zeros(2, device="cuda").type(torch.cuda.HalfTensor)\n'
    )
    rules = [rule_by_code(code) for code in ("DEV102", "DEV103", "DEV104", "DEV105", "DEV201", "DEV401")]
    once = fix_text(text, "t.py", rules, unsafe=True)
    cst.parse_module(once.text)
    assert fix_text(once.text, "t.py", rules, unsafe=True).text == once.text
    # the import (reported, never fixed itself) goes with the fix that leaves it unused
    assert once.remaining == [] and "FloatTensor as CF" not in once.text
    # later rounds see `device=device` inside a receiver and still reuse that one definition
    assert once.text.count("torch.device(") == 1


def test_dev103_device_call_inside_an_f_string_is_not_rewritten() -> None:
    (finding,) = lint("DEV103", "import torch\nprint(f\"{torch.device('cuda')}\")\n")
    assert finding.fix is None


def test_a_device_bound_only_under_a_module_level_if_is_not_reused() -> None:
    text = (
        "import torch\nif torch.cuda.is_available():\n    gpu = torch.device('cuda:0')\n"
        "gen = torch.Generator(device='cuda')\n"
    )
    assert fix("DEV103", text, unsafe=True).endswith("gen = torch.Generator(device=device)\n")


@pytest.mark.parametrize(
    "flag",
    ["torch.cuda.is_available()", "True if torch.cuda.is_available() else False", "torch.cuda.device_count() > 0"],
)
def test_dev104_alias_chosen_by_an_availability_flag_is_safe(flag: str) -> None:
    text = f"import torch\ncuda = {flag}\nT = torch.cuda.FloatTensor if cuda else torch.FloatTensor\nx = T(3)\n"
    findings = lint("DEV104", text)
    assert [f.fix.applicability if f.fix else None for f in findings] == [None, "safe"]


@pytest.mark.parametrize(
    ("code", "text"),
    [
        ("DEV103", 'import torch\nx = x.to("\\x63uda")\ny = torch.zeros(2, device="cu" "da")\n'),
        ("DEV104", 'import torch\ny = x.type("torch.\\x63uda.FloatTensor")\n'),
        ("DEV201", 'import os\nos.environ["CUDA_" "VISIBLE_DEVICES"] = "0"\nos.putenv("\\x43UDA_VISIBLE_DEVICES", "1")\n'),
    ],
)
def test_literals_the_prefilter_cannot_see_are_not_findings(code: str, text: str) -> None:
    """The textual triggers must stay sound: a finding needs its trigger spelled out in the file."""
    rule = rule_by_code(code)
    assert not any(trigger in text for trigger in rule.triggers)
    assert lint_text(text, "t.py", [rule], prefilter=False) == []


def test_fixes_inside_blocks_keep_the_indentation_of_continuation_lines() -> None:
    text = (
        "import torch\n\ndef build(model):\n    if model:\n"
        "        crit = torch.nn.CrossEntropyLoss(\n            weight=torch.ones(3),\n        )\n"
        "        model.cuda()\n        w = torch.cuda.FloatTensor(\n            [1.0,\n             2.0])\n"
        "    return crit, w\n"
    )
    rules = [rule_by_code("DEV104"), rule_by_code("DEV401")]
    fixed = fix_text(text, "t.py", rules, unsafe=True).text
    assert "        crit = torch.nn.CrossEntropyLoss(\n            weight=torch.ones(3),\n        ).to(device)\n" in fixed
    assert "        w = torch.tensor([1.0,\n             2.0], dtype=torch.float32, device=device)\n" in fixed


def test_a_formatted_cuda_string_gets_no_cuda_only_guard_beside_the_accelerator() -> None:
    # With the accelerator as the device, a CUDA-only check would be a second device notion in the
    # program: the formatted string is flagged without a fix (the f-string form has its own).
    code = 'import torch\nmodel.to(torch.device("cuda:%d" % gpu))\nx.to(f"cuda:{gpu}")\n'
    accelerator = FixSettings(device_expression="accelerator", torch_version=(2, 9))
    found = lint_text(code, "a.py", [rule_by_code("DEV103")], accelerator)
    assert [f.location.row for f in found] == [2, 3]
    assert found[0].fix is None and found[1].fix is not None
    assert "torch.accelerator" in found[1].fix.edits[0].content
    cuda = lint_text(code, "a.py", [rule_by_code("DEV103")], FixSettings(torch_version=(2, 9)))
    assert all(f.fix is not None for f in cuda)


# -- DEV603 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operator", "said"),
    [("==", "now holds for CUDA tensors"), ("!=", "now no longer holds for CUDA tensors")],
)
def test_dev603_a_device_comparison_fix_says_which_way_it_turns(operator: str, said: str) -> None:
    """`x.device == torch.device("cuda")` held for no CUDA tensor (their devices carry an index):
    `.type ==` makes it hold for each; `!=` held for every one, and its fix for none (latent
    diffusion's `register_buffer`, which moved every CUDA buffer, now moves none of them)."""
    (finding,) = lint("DEV603", f'import torch\nif x.device {operator} torch.device("cuda"):\n    pass\n')
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert f"(unsafe: on a CUDA machine the comparison {said})" in finding.fix.message
