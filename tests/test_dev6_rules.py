"""The DEV6 rules as a family: which fix each torch-version gets, what they leave alone, who owns
a GPU selection (DEV202 or DEV601), DEV604 and the device definitions fixes insert, and coverage
of PyTorch's own TEST_DEVICE_BIAS lint."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from devlint.analysis.devices import ACCELERATOR_EXPRESSION, DEFAULT_EXPRESSION
from devlint.cli import main
from devlint.engine.lint import fix_text, lint_text
from devlint.registry import all_rules, select_rules
from devlint.rulekit.accelerator import ACCELERATOR, ACCELERATOR_INDEX, ACCELERATOR_MEMORY, AMP_DEVICE_ARGUMENT, GET_DEVICE_MODULE
from devlint.run.config import Overrides, Resolver
from devlint.settings import FixSettings

ALL = list(all_rules())
HEAD = "import torch\n"
PAIRS = Path(__file__).resolve().parent.parent / "fixtures" / "pairs"


def _fix_text(source: str, version: tuple[int, int], unsafe: bool = False) -> str | None:
    """The one DEV601-DEV603 finding's fix applied, or None when it has no fix at ``version`` (or,
    below 2.6 for a call that already runs without CUDA, no finding)."""
    settings = FixSettings(torch_version=version)
    findings = [f for f in lint_text(source, "x.py", ALL, settings) if f.code in ("DEV601", "DEV602", "DEV603")]
    assert len(findings) == (1 if version >= ACCELERATOR else len(findings[:1])), findings
    if not findings or findings[0].fix is None or (findings[0].fix.applicability == "unsafe" and not unsafe):
        return None
    return fix_text(source, "x.py", select_rules([findings[0].code]), settings, unsafe=unsafe).text


# (code, the version from which it has a fix, the fixed statement at that version)
VERSION_TABLE = [
    ("torch.cuda.synchronize()", GET_DEVICE_MODULE, "torch.get_device_module(device).synchronize()"),
    ("torch.cuda.synchronize()", ACCELERATOR, "if torch.accelerator.is_available():\n    torch.accelerator.synchronize()"),
    ("n = torch.cuda.device_count()", ACCELERATOR, "n = torch.accelerator.device_count()"),
    ("s = torch.cuda.current_stream()", GET_DEVICE_MODULE, "s = torch.get_device_module(device).current_stream()"),
    ("i = torch.cuda.current_device()", ACCELERATOR_INDEX, "i = torch.accelerator.current_device_index()"),
    ("torch.cuda.empty_cache()", ACCELERATOR_MEMORY, "if torch.accelerator.is_available():\n    torch.accelerator.empty_cache()"),
    (
        "m = torch.cuda.max_memory_reserved(device)",
        ACCELERATOR_MEMORY,
        "m = torch.accelerator.max_memory_reserved(device) if torch.accelerator.is_available() else 0",
    ),
    ("s = torch.amp.GradScaler()", AMP_DEVICE_ARGUMENT, 's = torch.amp.GradScaler(device.type, enabled=device.type != "cpu")'),
    # issue 22 item 7
    ("e = torch.cuda.Event()", GET_DEVICE_MODULE, "e = torch.get_device_module(device).Event()"),
    ("e = torch.cuda.Event(enable_timing=True)", (2, 4), "e = torch.Event(enable_timing=True)"),
    (
        "if torch.cuda.is_available():\n    free, total = torch.cuda.mem_get_info()",
        (2, 10),
        "if torch.cuda.is_available():\n    free, total = torch.accelerator.get_memory_info()",
    ),
]


@pytest.mark.parametrize(("code", "since", "fixed"), VERSION_TABLE, ids=[f"{c}@{v}" for c, v, _ in VERSION_TABLE])
def test_a_fix_appears_from_the_torch_version_that_has_its_api(code: str, since: tuple[int, int], fixed: str) -> None:
    source = HEAD + 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n' + code + "\n"
    before = (since[0], since[1] - 1)
    after = _fix_text(source, since, unsafe=True)
    assert after is not None and after.endswith(fixed + "\n"), after
    # one release earlier the same code gets another fix, or none
    earlier = _fix_text(source, before, unsafe=True)
    assert earlier is None or not earlier.endswith(fixed + "\n")


def test_mem_get_info_and_timing_events_have_no_safe_fix_at_any_version() -> None:
    # both still need an accelerator after the fix (no CPU free/total pair, no CPU timing event)
    for code in ("free, total = torch.cuda.mem_get_info()", "start = torch.cuda.Event(enable_timing=True)"):
        assert _fix_text(HEAD + code + "\n", (2, 13)) is None
        assert _fix_text(HEAD + code + "\n", (2, 13), unsafe=True) is not None


def test_cuda_out_of_memory_error_is_reported_from_the_torch_that_has_the_generic_name() -> None:
    source = HEAD + "try:\n    pass\nexcept torch.cuda.OutOfMemoryError:\n    pass\n"
    # torch 2.4.1 has torch.OutOfMemoryError (tools/torch_releases.py observed it); 2.3 is older
    assert [f.code for f in lint_text(source, "x.py", ALL, FixSettings(torch_version=(2, 3)))] == []
    assert _fix_text(source, (2, 4)) == source.replace("torch.cuda.OutOfMemoryError", "torch.OutOfMemoryError")


def test_device_queries_and_lone_seeds_have_no_safe_fix() -> None:
    for code in ("name = torch.cuda.get_device_name(0)", "torch.cuda.manual_seed_all(0)"):
        assert _fix_text(HEAD + code + "\n", (2, 13)) is None
    assert _fix_text(HEAD + "torch.cuda.manual_seed_all(0)\n", (2, 13), unsafe=True) == HEAD + "torch.manual_seed(0)\n"
    # beside torch.manual_seed of another seed, or with a draw between, the CUDA seed is no repeat
    for code in ("torch.manual_seed(1)\ntorch.cuda.manual_seed_all(0)", "torch.manual_seed(0)\nx = torch.rand(1)\ntorch.cuda.manual_seed_all(0)"):
        assert _fix_text(HEAD + code + "\n", (2, 13)) is None


@pytest.mark.parametrize(
    ("between", "safe"),
    [
        # reads of the generators' states draw nothing (torch/cuda/random.py: `get_state()`)
        (["states = torch.cuda.get_rng_state_all()"], True),
        (["torch.cuda.get_rng_state()", "a = b = torch.random.get_rng_state()"], True),
        # a new value of the seed is another seed; a draw moves the CPU generator on; an unpacking
        # target is no plain read
        (["seed = torch.cuda.get_rng_state_all()"], False),
        (["noise = torch.rand(1)"], False),
        (["cpu, = [torch.get_rng_state()]"], False),
    ],
)
def test_a_guarded_seed_passes_over_reads_of_rng_state_before_it(between: list[str], safe: bool) -> None:
    """peft's `temp_seed`: `torch.random.manual_seed(seed)`, then under a CUDA check the CUDA
    states are saved and CUDA is seeded again with the same seed."""
    body = "".join(f"        {line}\n" for line in between)
    code = HEAD + "def temp_seed(seed):\n    torch.random.manual_seed(seed)\n    if torch.cuda.is_available():\n" + body
    fixed = _fix_text(code + "        torch.cuda.manual_seed_all(seed)\n", (2, 13))
    assert (fixed == code + "        torch.manual_seed(seed)\n") is safe, fixed

@pytest.mark.parametrize(
    ("code", "safe"),
    [
        ("if torch.cuda.is_available():\n    i = torch.cuda.current_device()\n", True),
        ("if not torch.cuda.is_available():\n    raise SystemExit\ni = torch.cuda.current_device()\n", True),
        ("@skipIf(not torch.cuda.is_available(), 'GPU')\ndef test_index():\n    assert torch.cuda.current_device() == 0\n", True),
        ("i = torch.cuda.current_device()\n", False),
        ("if flag:\n    i = torch.cuda.current_device()\n", False),
        ("if not torch.cuda.is_available():\n    i = torch.cuda.current_device()\n", False),
    ],
)
def test_current_device_index_is_safe_where_only_a_gpu_reaches_it(code: str, safe: bool) -> None:
    """Where the call runs only with a GPU, both calls give the current CUDA device on CUDA and
    neither runs without one; elsewhere the new call still raises without an accelerator."""
    fixed = _fix_text(HEAD + code, (2, 13))
    expected = HEAD + code.replace("torch.cuda.current_device()", "torch.accelerator.current_device_index()")
    assert (fixed == expected) is safe, fixed
    assert _fix_text(HEAD + code, (2, 13), unsafe=True) == expected


def test_current_device_inside_cuda_code_gets_no_fix() -> None:
    """peft's `torch.device("cuda", torch.cuda.current_device())`: rewriting the index alone would
    build a CUDA device numbered by another accelerator's index."""
    for code in ('d = torch.device("cuda", torch.cuda.current_device())\n', 'd = torch.device("cuda", index=torch.cuda.current_device())\n'):
        (finding,) = [f for f in lint_text(HEAD + code, "x.py", ALL, FixSettings(torch_version=(2, 13))) if f.code == "DEV601"]
        assert finding.fix is None and "the device around it names CUDA as well" in finding.message
    assert _fix_text(HEAD + 'd = torch.device("xla", torch.cuda.current_device())\n', (2, 13), unsafe=True) is not None
    # nor inside another torch.cuda call (flash-attention's layer_norm.py): the line stays CUDA's
    code = "n = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count\n"
    index = [f for f in lint_text(HEAD + code, "x.py", ALL, FixSettings(torch_version=(2, 13))) if "current_device" in f.message]
    assert [(f.fix, "the call around it is CUDA's as well" in f.message) for f in index] == [(None, True)]


GENERIC = [
    # the accelerator API, guarded
    "if torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n    torch.accelerator.empty_cache()\n"
    "    used = torch.accelerator.memory_allocated()\n    idx = torch.accelerator.current_device_index()\n",
    "n = torch.accelerator.device_count()\nacc = torch.accelerator.current_accelerator()\n",
    # autocast and scaling with the device type of the device in use
    "def step(model, x, acc: torch.device):\n    with torch.autocast(device_type=acc.type, dtype=torch.bfloat16):\n"
    "        return model(x)\n",
    'scaler = torch.amp.GradScaler(device.type, enabled=device.type != "cpu")\n',
    # the device module of the device in use
    "def sync(acc):\n    mod = torch.get_device_module(acc)\n    mod.synchronize()\n    s = mod.Stream()\n"
    "    with mod.stream(s):\n        pass\n",
    # the accelerator device definition
    "device = " + ACCELERATOR_EXPRESSION + "\nx = torch.ones(2, device=device)\n",
    # other backends' own modules are not CUDA
    "if torch.xpu.is_available():\n    torch.xpu.synchronize()\n    torch.xpu.empty_cache()\n",
]


@pytest.mark.parametrize("code", GENERIC)
def test_accelerator_generic_code_raises_no_finding(code: str) -> None:
    """None but DEV605's, and that only where `torch-version` predates the API the code uses."""
    for version in ((2, 4), (2, 9), (2, 13)):
        found = lint_text(HEAD + code, "generic.py", ALL, FixSettings(torch_version=version))
        assert [f for f in found if f.code != "DEV605"] == []
        for finding in found:
            since = re.search(r"exists from torch 2\.(\d+);", finding.message)
            assert since is not None and int(since.group(1)) > version[1], finding.message
    assert lint_text(HEAD + code, "generic.py", ALL, FixSettings(torch_version=(2, 13))) == []


SELECTIONS = [
    # (code, the rule that reports the selection)
    ("torch.cuda.set_device(0)", "DEV202"),  # a literal index pins every process to one GPU
    ("torch.cuda.set_device(rank)", "DEV202"),  # unguarded: fails without CUDA
    ("if torch.cuda.is_available():\n    torch.cuda.set_device('cuda:1')", "DEV202"),
    ("if torch.cuda.is_available():\n    torch.cuda.set_device(rank)", "DEV601"),  # guarded, from the launcher
    ("if device.type == 'cuda':\n    torch.cuda.set_device(device)", "DEV601"),
    ("with torch.cuda.device(1):\n    pass", "DEV202"),
    ("with torch.cuda.device(rank):\n    pass", "DEV202"),
    ("if x.is_cuda:\n    with torch.cuda.device(x.device):\n        pass", "DEV601"),
    ("def f(rank):\n    if not torch.cuda.is_available():\n        return\n    with torch.cuda.device(rank):\n        pass", "DEV601"),
]


@pytest.mark.parametrize(("code", "owner"), SELECTIONS)
def test_each_gpu_selection_is_reported_by_exactly_one_rule(code: str, owner: str) -> None:
    findings = lint_text(HEAD + code + "\n", "select.py", select_rules(["DEV202", "DEV601"]), FixSettings(torch_version=(2, 13)))
    selections = [f for f in findings if "set_device" in f.message or "torch.cuda.device" in f.message]
    assert [f.code for f in selections] == [owner]


def test_guarded_set_device_becomes_set_device_index_from_2_6() -> None:
    # torch 2.6.0 has torch.accelerator.set_device_index (tools/torch_releases.py observed it)
    source = HEAD + "if torch.cuda.is_available():\n    torch.cuda.set_device(device=rank)\n"
    assert ACCELERATOR_INDEX == (2, 6)
    assert _fix_text(source, (2, 5)) is None
    assert _fix_text(source, ACCELERATOR_INDEX) == HEAD + "if torch.cuda.is_available():\n    torch.accelerator.set_device_index(rank)\n"


# -- DEV604 and the device definitions fixes insert ------------------------------------------


def _settings(tmp_path: Path, toml: str) -> FixSettings:
    (tmp_path / "devlint.toml").write_text(toml)
    return Resolver().settings_for(tmp_path / "train.py").fix


def test_selecting_dev604_makes_inserted_definitions_use_the_accelerator(tmp_path: Path) -> None:
    assert _settings(tmp_path, 'extend-select = ["DEV604"]\ntorch-version = "2.6"\n').device_expression == "accelerator"
    # from 2.6 DEV604 is on by default; ignored, or below 2.6 where it reports nothing, the default stays
    assert _settings(tmp_path, 'torch-version = "2.6"\n').device_expression == "accelerator"
    assert _settings(tmp_path, 'torch-version = "2.6"\nignore = ["DEV604"]\n').device_expression == "default"
    assert _settings(tmp_path, 'extend-select = ["DEV604"]\ntorch-version = "2.5"\n').device_expression == "default"
    # an expression the user chose wins
    chosen = 'extend-select = ["DEV604"]\ntorch-version = "2.6"\ndevice-expression = "torch.device(\'cpu\')"\n'
    assert _settings(tmp_path, chosen).device_expression == "torch.device('cpu')"


def test_dev604_reports_nothing_below_2_6() -> None:
    source = HEAD + 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\nif torch.cuda.is_available():\n    pass\n'
    rule = select_rules(["DEV604"])
    assert lint_text(source, "x.py", rule, FixSettings(torch_version=(2, 5))) == []
    assert [f.code for f in lint_text(source, "x.py", rule, FixSettings(torch_version=ACCELERATOR))] == ["DEV604"] * 2


def test_fixing_with_dev604_selected_creates_no_new_finding(tmp_path: Path, capsys) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\nmodel = Net().cuda()\nx = torch.ones(2).to('cuda')\ntorch.cuda.synchronize()\n")
    flags = ["--extend-select", "DEV604", "--torch-version", "2.6", "--no-cache"]
    assert main(["fix", str(script), *flags]) == 0
    fixed = script.read_text()
    assert "device = " + ACCELERATOR_EXPRESSION + "\n" in fixed and DEFAULT_EXPRESSION not in fixed
    capsys.readouterr()
    assert main(["check", str(script), "--select", "ALL", "--torch-version", "2.6", "--no-cache"]) == 0


DEV5_DEV6_PAIRS = [p for p in sorted(PAIRS.glob("dev[56]0*.py")) if not p.name.endswith((".fixed.py", ".unsafe.py"))]


def _unfixable(findings) -> Counter:
    return Counter((f.code, f.message) for f in findings if f.fix is None)


@pytest.mark.parametrize("version", [(2, 4), (2, 6), (2, 9)])
@pytest.mark.parametrize("pair", DEV5_DEV6_PAIRS, ids=lambda p: p.stem)
def test_a_fix_never_produces_code_a_selected_rule_flags(pair: Path, version: tuple[int, int]) -> None:
    settings = Resolver(Overrides(select=("ALL",), torch_version=version)).settings_for(pair).fix
    text = pair.read_text()
    before = lint_text(text, pair.name, ALL, settings)
    result = fix_text(text, pair.name, ALL, settings, unsafe=True)
    # what remains is exactly what had no fix: nothing new, nothing fixable left
    assert all(f.fix is None for f in result.remaining)
    assert _unfixable(result.remaining) <= _unfixable(before)


# -- PyTorch's TEST_DEVICE_BIAS lint (tools/linter/adapters/test_device_bias_linter.py) --------
# It flags, in GPU tests: a `device=` keyword whose string names a device type, `device=` given a
# `torch.device("cuda")` call, a `.cuda()` (`.xpu()`, `.mps()`) method call, `.to("cuda")`, and
# `with torch.device("cuda")`. Each CUDA pattern must be flagged by some devlint rule.
DEVICE_BIAS = [
    'x = torch.ones(2, device="cuda")',
    'x = torch.ones(2, device="cuda:0")',
    'x = torch.empty(3, device=torch.device("cuda"))',
    "x = torch.ones(2).cuda()",
    "model = model.cuda(0)",
    'x = torch.ones(2).to("cuda")',
    'x = torch.ones(2).to("cuda:1")',
    'with torch.device("cuda"):\n    x = torch.ones(2)',
]


@pytest.mark.parametrize("code", DEVICE_BIAS)
def test_every_cuda_pattern_of_test_device_bias_is_flagged(code: str) -> None:
    test = HEAD + "@requires_gpu()\ndef test_kernel():\n" + "".join("    " + line + "\n" for line in code.splitlines())
    assert lint_text(test, "test_kernel.py", select_rules(None)) != []


# -- below torch-version 2.6: what already runs without CUDA is not reported -------------------

RUNS_WITHOUT_CUDA = [
    "if torch.cuda.is_available():\n    torch.cuda.synchronize()\n",
    "if not torch.cuda.is_available():\n    raise SystemExit\ntorch.cuda.synchronize()\n",
    "if device.type == \"cuda\":\n    s = torch.cuda.Stream()\n    torch.cuda.reset_peak_memory_stats()\n",
    "n = torch.cuda.device_count()\n",
    "torch.cuda.empty_cache()\nprint(torch.cuda.max_memory_allocated(), torch.cuda.memory_stats())\n",
]
FAILS_WITHOUT_CUDA = [
    # (code, its fix below 2.5, None for none)
    ("torch.cuda.synchronize()  # wait\n", "if torch.cuda.is_available():\n    torch.cuda.synchronize()  # wait\n"),
    ("def f():\n    torch.cuda.reset_accumulated_memory_stats()\n",
     "def f():\n    if torch.cuda.is_available():\n        torch.cuda.reset_accumulated_memory_stats()\n"),
    ("s = torch.cuda.current_stream()\n", None),
    ("free, total = torch.cuda.mem_get_info()\n", None),
    ("x = torch.cuda.synchronize() or 1\n", None),
]


@pytest.mark.parametrize("code", RUNS_WITHOUT_CUDA)
def test_below_2_6_a_cuda_call_that_runs_without_cuda_is_not_reported(code: str) -> None:
    source = HEAD + code
    for version in ((2, 1), (2, 4), (2, 5)):
        assert [f.code for f in lint_text(source, "x.py", ALL, FixSettings(torch_version=version))] == [], version
    # from 2.6 the goal is accelerator-generic code: the same calls are reported
    found = {f.code for f in lint_text(source, "x.py", ALL, FixSettings(torch_version=ACCELERATOR))}
    assert found & {"DEV601", "DEV602"}, found


@pytest.mark.parametrize(("code", "fixed"), FAILS_WITHOUT_CUDA)
def test_below_2_6_a_cuda_call_that_fails_without_cuda_is_reported_and_guarded(code: str, fixed: str | None) -> None:
    source = HEAD + code
    # older than torch.get_device_module, first observed in 2.4
    settings = FixSettings(torch_version=(2, 3))
    findings = [f for f in lint_text(source, "x.py", ALL, settings) if f.code in ("DEV601", "DEV602")]
    assert len(findings) == 1, findings
    result = fix_text(source, "x.py", ALL, settings).text
    assert result == (source if fixed is None else HEAD + fixed)
    # the guarded call is what runs without CUDA: fixing again changes nothing
    assert fix_text(result, "x.py", ALL, settings).text == result
