"""DEV601 cuda-runtime-api: `torch.cuda` runtime calls that have a device-generic equivalent."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, RuleContext, Site
from devlint.rulekit.accelerator import (
    ACCELERATOR,
    ACCELERATOR_INDEX,
    GET_DEVICE_MODULE,
    Guarded,
    call_text,
    cuda_function,
    device_module,
    guards_cuda_code,
    never_an_index,
    positional_device,
    sole_statement,
    surely_no_index,
)
from devlint.analysis.devices import always_a_device, is_guarded_device_choice, reach_of
from devlint.analysis.semantic import string_value
from devlint.analysis.tree import children
from devlint.rulekit.calls import names_in
from devlint.rulekit.cuda_choices import WholeChoiceRule
from devlint.rulekit.before_accelerator import cuda_guard_fix, runs_without_cuda_before_accelerator
from devlint.rulekit.device_checks import hardcoded_gpu_index, under_device_check
from devlint.rulekit.siblings import siblings
from devlint.torchfacts.api_versions import SINCE
from devlint.torchfacts.names import (
    CUDA_DEVICE_QUERIES, CUDA_ONLY_CALLS, CUDA_RUNTIME_API, CUDA_SEED_API, DEVICE_KEYWORDS, RNG_STATE_READS, SEEDING_CALLS, TORCH_SEEDS,
)

# Every torch.cuda function this rule reports.
_REPORTED = CUDA_RUNTIME_API | CUDA_SEED_API | CUDA_ONLY_CALLS
# torch.Event, the device-generic event (its options are keywords only)
EVENT = SINCE["torch.Event"]
# torch.cuda.Event's positional parameters, in order, that torch.Event also takes
_EVENT_OPTIONS = ("enable_timing", "blocking", "interprocess")

HEAD = "import torch\n"
# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


class CudaRuntimeApi(WholeChoiceRule):
    code = "DEV601"
    name = "cuda-runtime-api"
    what = (
        "Flags `torch.cuda.synchronize()`, `device_count()`, `current_device()`, `current_stream()`, "
        "`torch.cuda.stream(s)`, `torch.cuda.Stream()`, `torch.cuda.Event(...)`, and a GPU selection "
        "under a device check (`torch.cuda.set_device(rank)`, `with torch.cuda.device(rank)`) that "
        "the hardcoded-device-selection rule leaves alone: calls that have a device-generic equivalent. "
        "Also `torch.cuda.manual_seed(s)` / `manual_seed_all(s)` (CUDA's generators only), and "
        "`torch.cuda.get_device_name()`, `get_device_properties()`, `get_device_capability()` and "
        "`ipc_collect()` outside a GPU check (they raise without CUDA). `torch.get_device_module(\"cuda\")` (or of "
        "`torch.device(\"cuda\")`) is `torch.cuda` itself: its calls are reported alike, also through a "
        "name bound to it (or to `torch.cuda`) on every path to the call."
    )
    why = (
        "These calls only know CUDA: on Apple MPS, Intel XPU or Ascend NPU they fail or do the wrong "
        "thing, and several fail on a CPU-only machine too (`torch.cuda.synchronize()`: \"Torch not "
        'compiled with CUDA enabled"). `torch.accelerator` (torch 2.6+) and '
        "`torch.get_device_module(device)` reach whatever accelerator the program runs on."
    )
    example = (
        "torch.cuda.synchronize()\nn_gpus = torch.cuda.device_count()\n"
        "buf = torch.empty(4, device=torch.cuda.current_device())\nside = torch.cuda.Stream()"
    )
    use_instead = (
        "if torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n"
        "n_gpus = torch.accelerator.device_count()\nbuf = torch.empty(4, device=device)\n"
        "side = torch.get_device_module(device).Stream()"
    )
    fix_availability = "sometimes"
    fix_note = (
        "Each fix does on a CUDA machine exactly what the original did and runs without an "
        "accelerator. Below torch-version 2.6 (no torch.accelerator) a call that already runs without "
        "CUDA, under a GPU check or by itself (`device_count()` says 0), is not reported; a bare "
        "`torch.cuda.synchronize()` statement gets `if torch.cuda.is_available():` around it with "
        "torch-version 2.3 or older. `synchronize()`: with torch-version >= 2.6 `if torch.accelerator.is_available(): "
        "torch.accelerator.synchronize()` (the accelerator of a CUDA machine is CUDA; the guard skips "
        "what would raise \"Cannot access accelerator device when none is available\" on the CPU; an "
        "enclosing GPU check makes the guard unneeded); with 2.4 "
        "`torch.get_device_module(device).synchronize()`, `torch.cpu.synchronize()` on the CPU, a "
        "no-op. `device_count()`: `torch.accelerator.device_count()` (2.6), the same count on CUDA and "
        "0 without an accelerator, as before (`torch.cpu.device_count()` would say 1); no fix where "
        "the count decides whether CUDA code runs (`if torch.cuda.device_count() > 1: x.to(\"cuda:1\")`, "
        "also through a name it is kept in: `n = torch.cuda.device_count()`, then `if n > 0: torch.cuda.set_device(...)`, "
        "or the bound of a loop over CUDA code (`for i in range(n): torch.cuda.mem_get_info(i)`), "
        "`@skipUnless(torch.cuda.device_count() >= 2, \"needs two CUDA GPUs\")`). "
        "`current_device()` given as a device (`device=`, `map_location=`, `.to()`, the `\"device\"` of a dict "
        "the file hands to calls as `**keywords`): the device in "
        "scope, which on CUDA means the current GPU too; elsewhere `torch.accelerator.current_device_index()` "
        "(2.6), unsafe: without an accelerator it still raises, as the original did, since no index "
        "is right there (`torch.cpu.current_device()` returns the string \"cpu\"); safe where the call "
        "is reached only with a GPU (under a GPU check, in a test skipped without one). `current_stream()`, "
        "`stream(s)`, `Stream()`: `torch.get_device_module(device)` (2.4), whose `torch.cpu` "
        "stand-ins run on the CPU; `current_stream(d)` and `synchronize(d)` given a device (`x.device`, a name "
        "bound to devices) take that device's module. `torch.get_device_module` raises on an int index, which `.to(0)` and the `torch.cuda` calls take: where the device in scope may hold one (a parameter neither annotated as a device or string, nor given one as its default, nor read as a device, `device.type`; a name bound to anything but a device or a string) the fix is unsafe. `Event(...)` and a `Stream` with arguments: no fix (the CPU events "
        "have no timing, and `torch.cpu.Stream` takes no device), nor for a stream call whose arguments hold "
        "a `torch.cuda` call no fix rewrites (`stream(torch.cuda.default_stream())`: the rewritten call "
        "would still need CUDA), or whose `.cuda_stream` handle is read (CUDA's own; torch.cpu.Stream has none), or that a tensor's "
        "`record_stream(...)` is given (it rejects torch.cpu's stream, no torch.Stream: \"unknown parameter type\"), or that is compared with "
        "such a call (`current_stream() == torch.cuda.default_stream()`). Under a GPU check, "
        "`set_device(rank)` becomes `torch.accelerator.set_device_index(rank)` (2.6); `with "
        "torch.cuda.device(rank)` is reported only (`torch.accelerator.device_index`, 2.8, takes an "
        "int, not a device). Versions from each release's own sources (tools/torch_releases.py observes them; torch.cpu "
        "since 2.1); CPU behaviour checked in tests/test_dev6_semantics.py. A call chosen by a CUDA "
        "check in its own expression (`torch.cuda.Stream() if torch.cuda.is_available() else None`, "
        "`torch.cuda.is_available() and torch.cuda.synchronize()`) is fixed together with the check, "
        "which becomes `torch.accelerator.is_available()` (2.6): on a CUDA machine both hold and the "
        "accelerator is CUDA, without an accelerator neither does, so the line keeps its choice and no "
        "CUDA-only test is left on it; where the test asks more of CUDA (`device_count() > 1`) or the "
        "other side still names CUDA, no fix (nor for `current_device()` so chosen: pass the device in "
        "use). Consecutive statements that get a guard share one `if`. "
        "`Event()` with no argument: `torch.get_device_module(device).Event()` (2.4), torch.cuda.Event "
        "on CUDA and torch.cpu.Event, whose record/wait/query/synchronize run, on the CPU; a timing "
        "event (`enable_timing=True`, ...): `torch.Event(enable_timing=True)` (2.4), unsafe: without an "
        "accelerator its `record()` raises (\"cpu backend doesn't support events\"), as the original "
        "failed to be made, and it is no `torch.cuda.Event` (`isinstance`, `.cuda_event`). "
        "`manual_seed(s)` / `manual_seed_all(s)` are queued and never run without CUDA; "
        "`torch.manual_seed(s)` seeds every device too (it calls `torch.cuda.manual_seed_all`), so beside "
        "a `torch.manual_seed` of the same seed, among seeding statements only, the CUDA call is removed "
        "(safe); where it opens the body of `if torch.cuda.is_available():` right after such a run of "
        "seeding statements, it becomes `torch.manual_seed(s)`, safe: the CPU generator already has "
        "that seed and nothing drew since, so reseeding it changes nothing (reads of a generator's state, "
        "`states = torch.cuda.get_rng_state_all()`, draw nothing and may stand between, before the CUDA "
        "call); elsewhere it becomes "
        "`torch.manual_seed(s)`, unsafe: that reseeds the CPU generator as "
        "well, changing the CPU's random numbers on every machine. `torch.accelerator` has no seeding "
        "function. `get_device_name()`, `get_device_properties()`, `get_device_capability()`: reported "
        "only, outside a GPU check (or a test whose decorator skips it without a GPU): no accelerator-generic query exists (`torch.accelerator."
        "get_device_capability()` returns the supported dtypes, not (major, minor); `torch.cpu` has none); "
        "`ipc_collect()`, which frees what CUDA IPC shared, likewise (it starts CUDA first)."
    )
    triggers = ("cuda",)
    advice_since = ACCELERATOR

    VALID = (
        # accelerator-generic code
        HEAD + "if torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n"
        "    n = torch.accelerator.device_count()\n",
        HEAD + "def sync(acc: torch.device):\n    torch.get_device_module(acc).synchronize()\n",
        # DEV202 owns a hardcoded or unguarded selection
        HEAD + "torch.cuda.set_device(0)\nwith torch.cuda.device(rank):\n    pass\n",
        # device queries under a GPU check
        HEAD + "if torch.cuda.is_available():\n    name = torch.cuda.get_device_name()\n    torch.cuda.ipc_collect()\n",
        HEAD + 'name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"\n',
        HEAD + "def describe(device):\n    if device.type != \"cuda\":\n        return \"cpu\"\n"
        "    return torch.cuda.get_device_capability(device)\n",
        # the program's own device string says CUDA (`torch.device` never equals a string)
        HEAD + 'def describe(device: str):\n    if device == "cuda" and torch.version.hip:\n'
        '        return torch.cuda.get_device_properties(0).gcnArchName\n    return "cpu"\n',
        HEAD + "import unittest\n\n\nclass T(unittest.TestCase):\n"
        "    @unittest.skipUnless(torch.cuda.is_available(), \"needs a GPU\")\n"
        "    def test_name(self):\n        self.assertTrue(torch.cuda.get_device_name())\n",
        # other torch.cuda calls are not this rule's
        HEAD + "torch.cuda.seed_all()\nstate = torch.cuda.get_rng_state_all()\n",
        # another object's manual_seed, a local `torch` that is not torch
        HEAD + "gen = torch.Generator()\ngen.manual_seed(0)\nrng.cuda.manual_seed_all(0)\n",
        "def f(torch):\n    torch.cuda.manual_seed_all(0)\n    return torch.cuda.get_device_name()\n",
        # another library's cuda module
        "from numba import cuda\ncuda.synchronize()\nn = cuda.device_count()\n",
        # the module of another device, or of a device only known at run time
        HEAD + 'torch.get_device_module("cpu").synchronize()\ntorch.get_device_module(device).synchronize()\n'
        'torch.get_device_module(torch.device("mps")).synchronize()\ntorch.get_device_module().synchronize()\n',
        # a name that holds the CUDA module on some paths only, or that a function may rebind
        HEAD + 'def step(cpu):\n    mod = torch.get_device_module("cuda")\n    if cpu:\n        mod = torch.cpu\n'
        "    mod.synchronize()\n"
        'gpu = torch.cuda\ndef to_cpu():\n    global gpu\n    gpu = torch.cpu\ndef wait():\n    gpu.synchronize()\n',
        # a reference, not a call
        HEAD + "assert isinstance(s, torch.cuda.Stream)\n",
        # the whole choice moved already
        HEAD + "s = torch.get_device_module(device).Stream() if torch.accelerator.is_available() else None\n",
        # below torch-version 2.6 (the default 2.4): what already runs without CUDA has nothing to move to
        HEAD + "n = torch.cuda.device_count()\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n"
        "    s = torch.cuda.Stream()\n",
    )
    INVALID = (
        # torch-version 2.3: get_device_module needs 2.4 (the default), accelerator 2.6; what
        # fails without CUDA gets the CUDA check around it (on CUDA it runs as before)
        Invalid(HEAD + "torch.cuda.synchronize()\n", HEAD + "if torch.cuda.is_available():\n    torch.cuda.synchronize()\n", torch_version=(2, 3)),
        # a call chosen by a CUDA check in its expression: fixed with the check, from torch-version
        # 2.6 (the same choice on a CUDA machine, and on one without an accelerator)
        Invalid(
            HEAD + "def side(device: torch.device):\n    torch.cuda.is_available() and torch.cuda.synchronize()\n"
            "    ev = None if not torch.cuda.is_available() else torch.cuda.Event()\n"
            "    return torch.cuda.Stream() if torch.cuda.is_available() else None\n",
            HEAD + "def side(device: torch.device):\n    torch.accelerator.is_available() and torch.accelerator.synchronize()\n"
            "    ev = None if not torch.accelerator.is_available() else torch.get_device_module(device).Event()\n"
            "    return torch.get_device_module(device).Stream() if torch.accelerator.is_available() else None\n",
            count=3,
            torch_version=ACCELERATOR,
        ),
        Invalid(
            HEAD + "start = torch.cuda.Event(enable_timing=True) if torch.cuda.is_available() and timing else None\n",
            HEAD + "start = torch.Event(enable_timing=True) if torch.accelerator.is_available() and timing else None\n",
            unsafe=True,
            torch_version=ACCELERATOR,
        ),
        # no fix where the check cannot move with it: a test that asks more of CUDA, the other side
        # naming CUDA (below torch-version 2.6 a call under a GPU check is not reported at all)
        Invalid(HEAD + "s = torch.cuda.Stream() if torch.cuda.device_count() > 0 else None\n", count=2, torch_version=ACCELERATOR),
        Invalid(
            HEAD + "s = torch.cuda.Stream() if torch.cuda.is_available() else torch.cuda.default_stream()\n",
            torch_version=ACCELERATOR,
        ),
        # a guard block right before or after with the same test takes the statement in; one with
        # a comment on its header line, or that leaves, does not
        Invalid(
            HEAD + "if torch.cuda.is_available():\n    torch.cuda.reset_peak_memory_stats()\ntorch.cuda.synchronize()\n",
            HEAD + "if torch.cuda.is_available():\n    torch.cuda.reset_peak_memory_stats()\n    torch.cuda.synchronize()\n", torch_version=(2, 3),
        ),
        Invalid(
            HEAD + "torch.cuda.synchronize()\nif torch.cuda.is_available():\n    torch.cuda.reset_peak_memory_stats()\n",
            HEAD + "if torch.cuda.is_available():\n    torch.cuda.synchronize()\n    torch.cuda.reset_peak_memory_stats()\n", torch_version=(2, 3),
        ),
        Invalid(
            HEAD + "torch.cuda.synchronize()\nif torch.cuda.is_available():  # GPU only\n    torch.cuda.reset_peak_memory_stats()\n"
            "def step():\n    if torch.cuda.is_available():\n        return 1\n    torch.cuda.synchronize()\n",
            HEAD + "if torch.cuda.is_available():\n    torch.cuda.synchronize()\nif torch.cuda.is_available():  # GPU only\n"
            "    torch.cuda.reset_peak_memory_stats()\ndef step():\n    if torch.cuda.is_available():\n        return 1\n"
            "    if torch.cuda.is_available():\n        torch.cuda.synchronize()\n",
            count=2, torch_version=(2, 3),
        ),
        Invalid(HEAD + "s = torch.cuda.current_stream()\n", torch_version=(2, 3)),
        # torch.get_device_module("cuda") is torch.cuda itself
        Invalid(
            HEAD + 'torch.get_device_module("cuda").synchronize()\n',
            HEAD + 'if torch.cuda.is_available():\n    torch.get_device_module("cuda").synchronize()\n', torch_version=(2, 3),
        ),
        # ... also through a name that holds it (or torch.cuda) on every path to the call
        Invalid(
            HEAD + 'gpu = torch.get_device_module("cuda")\ngpu.synchronize()\n'
            "def step():\n    cuda = torch.cuda\n    cuda.synchronize()\n",
            HEAD + 'gpu = torch.get_device_module("cuda")\nif torch.cuda.is_available():\n    gpu.synchronize()\n'
            "def step():\n    cuda = torch.cuda\n    if torch.cuda.is_available():\n        cuda.synchronize()\n",
            count=2, torch_version=(2, 3),
        ),
        Invalid(
            HEAD + 'torch.get_device_module(torch.device("cuda")).synchronize()\n'
            'n = torch.get_device_module(device="cuda:0").device_count()\n',
            HEAD + "if torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n"
            "n = torch.accelerator.device_count()\n",
            count=2,
            torch_version=ACCELERATOR,
        ),
        Invalid(HEAD + 'if torch.cuda.device_count() > 1:\n    x = x.to("cuda:1")\n', torch_version=ACCELERATOR),
        # ... or bounding a loop over CUDA code, directly or through a name (stable-dreamfusion)
        Invalid(
            HEAD + "num = torch.cuda.device_count()\nfor i in range(num):\n    free, total = torch.cuda.mem_get_info(i)\n",
            torch_version=ACCELERATOR,
        ),
        # ... also kept in a name first (Megatron-DeepSpeed's initialize.py)
        Invalid(
            HEAD + "def init(rank):\n    device_count = torch.cuda.device_count()\n    if device_count > 0:\n"
            "        torch.cuda.set_device(rank % device_count)\n",
            torch_version=ACCELERATOR,
        ),
        # a current-device index given as a device: the device in scope
        Invalid(
            HEAD + "buf = torch.empty(4, device=torch.cuda.current_device())\nx = x.to(torch.cuda.current_device())\n",
            HEAD + DEVICE + "buf = torch.empty(4, device=device)\nx = x.to(device)\n",
            count=2,
        ),
        # ... also the "device" of a dict the file gives calls as keywords (mamba's
        # `factory_kwargs`): one device for the layers and the parameters beside them
        Invalid(
            HEAD + 'kwargs = {"device": torch.cuda.current_device(), "dtype": dtype}\n'
            "proj = torch.nn.Linear(4, 4, **kwargs)\nD = torch.ones(4, device=torch.cuda.current_device())\n",
            HEAD + DEVICE + 'kwargs = {"device": device, "dtype": dtype}\n'
            "proj = torch.nn.Linear(4, 4, **kwargs)\nD = torch.ones(4, device=device)\n",
            count=2,
        ),
        Invalid(HEAD + 'print(f"gpu {torch.cuda.current_device()}")\n'),
        # a dict nobody hands over as keywords may use its "device" as the index it is
        Invalid(HEAD + 'config = {"device": torch.cuda.current_device()}\nprint(config["device"] + 1)\n', unsafe=True),
        # rewriting the call alone would leave the line CUDA-only: no fix
        Invalid(HEAD + 'where = f"cuda:{torch.cuda.current_device()}"\n', unsafe=True),
        Invalid(HEAD + 'where = torch.device("cuda", torch.cuda.current_device())\n', unsafe=True, torch_version=ACCELERATOR_INDEX),
        Invalid(HEAD + 'n = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count\n', unsafe=True, count=2, torch_version=ACCELERATOR_INDEX),
        Invalid(
            HEAD + 'where = torch.cuda.current_device() if torch.cuda.is_available() else "cpu"\n',
            unsafe=True,
            torch_version=ACCELERATOR,
        ),
        # `device != "cpu"` always holds for a `torch.device` (it never equals a string): no GPU check
        Invalid(HEAD + 'def describe(device):\n    if device != "cpu":\n        return torch.cuda.get_device_name()\n'),
        # before torch 2.4 there is no torch.Event; an option torch.Event lacks: no fix
        Invalid(HEAD + "e = torch.cuda.Event(enable_timing=True)\n", torch_version=(2, 3)),
        Invalid(HEAD + "e = torch.cuda.Event(True, external=True)\n"),
        Invalid(HEAD + "done = torch.cuda.Event()\n", torch_version=(2, 3)),
        # seeding: beside torch.manual_seed of the same seed it is redundant (safe removal)
        Invalid(
            HEAD + "import random\nimport numpy as np\n\n\ndef seed_everything(seed):\n    random.seed(seed)\n"
            "    torch.manual_seed(seed)\n    np.random.seed(seed)\n    torch.cuda.manual_seed_all(seed)\n"
            "    torch.cuda.manual_seed(seed)  # current GPU\n",
            HEAD + "import random\nimport numpy as np\n\n\ndef seed_everything(seed):\n    random.seed(seed)\n"
            "    torch.manual_seed(seed)\n    np.random.seed(seed)\n",
            count=2,
        ),
        # alone, torch.manual_seed would reseed the CPU too: unsafe
        Invalid(
            HEAD + "if torch.cuda.is_available():\n    torch.cuda.manual_seed_all(args.seed)\n",
            HEAD + "if torch.cuda.is_available():\n    torch.manual_seed(args.seed)\n",
            unsafe=True,
            torch_version=ACCELERATOR,
        ),
        # the common idiom: under a GPU check right after torch.manual_seed of the same seed, the
        # CPU generator already has that seed, so torch.manual_seed there changes nothing: safe
        Invalid(
            HEAD + "\n\ndef set_seed(seed):\n    torch.manual_seed(seed)\n    if torch.cuda.is_available():\n"
            "        torch.cuda.manual_seed_all(seed)\n    elif torch.xpu.is_available():\n        torch.xpu.manual_seed_all(seed)\n",
            HEAD + "\n\ndef set_seed(seed):\n    torch.manual_seed(seed)\n    if torch.cuda.is_available():\n"
            "        torch.manual_seed(seed)\n    elif torch.xpu.is_available():\n        torch.xpu.manual_seed_all(seed)\n",
            torch_version=ACCELERATOR,
        ),
        # reads of a generator's state draw nothing: before the call, they do not break the run
        Invalid(
            HEAD + "\n\ndef temp_seed(seed):\n    cpu_state = torch.random.get_rng_state()\n    torch.random.manual_seed(seed)\n"
            "    if torch.cuda.is_available():\n        cuda_states = torch.cuda.get_rng_state_all()\n"
            "        torch.cuda.manual_seed_all(seed)\n    return cpu_state\n",
            HEAD + "\n\ndef temp_seed(seed):\n    cpu_state = torch.random.get_rng_state()\n    torch.random.manual_seed(seed)\n"
            "    if torch.cuda.is_available():\n        cuda_states = torch.cuda.get_rng_state_all()\n"
            "        torch.manual_seed(seed)\n    return cpu_state\n",
            torch_version=ACCELERATOR,
        ),
        # ... but a draw before the call does, and a read after it would see the call's seed
        Invalid(
            HEAD + "torch.manual_seed(0)\nif torch.cuda.is_available():\n    noise = torch.randn(2)\n    torch.cuda.manual_seed_all(0)\n",
            HEAD + "torch.manual_seed(0)\nif torch.cuda.is_available():\n    noise = torch.randn(2)\n    torch.manual_seed(0)\n",
            unsafe=True,
            torch_version=ACCELERATOR,
        ),
        Invalid(
            HEAD + "torch.cuda.manual_seed_all(0)\nstates = torch.cuda.get_rng_state_all()\ntorch.manual_seed(0)\n",
            HEAD + "torch.manual_seed(0)\nstates = torch.cuda.get_rng_state_all()\ntorch.manual_seed(0)\n",
            unsafe=True,
        ),
        # ... but not after a draw, another seed, or in an `elif` (its `if` test ran first)
        Invalid(
            HEAD + "torch.manual_seed(0)\nx = torch.rand(2)\nif torch.cuda.is_available():\n    torch.cuda.manual_seed_all(0)\n",
            HEAD + "torch.manual_seed(0)\nx = torch.rand(2)\nif torch.cuda.is_available():\n    torch.manual_seed(0)\n",
            unsafe=True,
            torch_version=ACCELERATOR,
        ),
        Invalid(
            HEAD + "torch.manual_seed(0)\nif torch.cuda.is_available():\n    torch.cuda.manual_seed_all(1)\n",
            HEAD + "torch.manual_seed(0)\nif torch.cuda.is_available():\n    torch.manual_seed(1)\n",
            unsafe=True,
            torch_version=ACCELERATOR,
        ),
        Invalid(
            HEAD + "torch.manual_seed(0)\nif flag:\n    pass\nelif torch.cuda.is_available():\n    torch.cuda.manual_seed_all(0)\n",
            HEAD + "torch.manual_seed(0)\nif flag:\n    pass\nelif torch.cuda.is_available():\n    torch.manual_seed(0)\n",
            unsafe=True,
            torch_version=ACCELERATOR,
        ),
        Invalid(
            HEAD + "torch.manual_seed(1)\nx = torch.rand(2)\ntorch.cuda.manual_seed(1)\n",
            HEAD + "torch.manual_seed(1)\nx = torch.rand(2)\ntorch.manual_seed(1)\n",
            unsafe=True,
        ),
        # device queries outside a GPU check raise without CUDA: reported only
        Invalid(
            HEAD + 'print("gpu:", torch.cuda.get_device_name(0))\nmajor, minor = torch.cuda.get_device_capability()\n'
            "mem = torch.cuda.get_device_properties(0).total_memory\n",
            count=3,
        ),
        # ... and so does `ipc_collect()`, which starts CUDA first (Restormer's test scripts)
        Invalid(HEAD + "torch.cuda.ipc_collect()\n"),
        Invalid(HEAD + "if torch.cuda.is_available():\n    with torch.cuda.device(rank):\n        pass\n", torch_version=ACCELERATOR),
        # torch-version 2.6: torch.accelerator, guarded where it needs an accelerator
        Invalid(
            HEAD + "def timed(fn):\n    torch.cuda.synchronize()\n    n = torch.cuda.device_count()\n"
            "    if torch.cuda.is_available():\n        torch.cuda.synchronize(device=0)\n    return fn(), n\n",
            HEAD + "def timed(fn):\n    if torch.accelerator.is_available():\n        torch.accelerator.synchronize()\n"
            "    n = torch.accelerator.device_count()\n"
            "    if torch.cuda.is_available():\n        torch.accelerator.synchronize(0)\n    return fn(), n\n",
            count=3,
            torch_version=ACCELERATOR,
        ),
        # torch-version 2.4: an event that only orders work: the device module's (torch.cpu's runs on the CPU)
        Invalid(
            HEAD + "def step(device: torch.device):\n    done = torch.cuda.Event()\n    done.record()\n    done.synchronize()\n",
            HEAD + "def step(device: torch.device):\n    done = torch.get_device_module(device).Event()\n"
            "    done.record()\n    done.synchronize()\n",
            torch_version=GET_DEVICE_MODULE,
        ),
        # a timing event: torch.Event (2.4), unsafe: recording still needs an accelerator
        Invalid(
            HEAD + "start, end = torch.cuda.Event(True), torch.cuda.Event(enable_timing=True)\n",
            HEAD + "start, end = torch.Event(enable_timing=True), torch.Event(enable_timing=True)\n",
            unsafe=True,
            count=2,
            torch_version=EVENT,
        ),
        # torch-version 2.4: the device module of the device in scope
        Invalid(
            HEAD + "def overlap(model, x, device: torch.device):\n    side = torch.cuda.Stream()\n"
            "    with torch.cuda.stream(side):\n        y = model(x)\n    torch.cuda.current_stream().wait_stream(side)\n"
            "    torch.cuda.synchronize()\n    return y\n",
            HEAD + "def overlap(model, x, device: torch.device):\n    side = torch.get_device_module(device).Stream()\n"
            "    with torch.get_device_module(device).stream(side):\n        y = model(x)\n"
            "    torch.get_device_module(device).current_stream().wait_stream(side)\n"
            "    torch.get_device_module(device).synchronize()\n    return y\n",
            count=4,
            torch_version=GET_DEVICE_MODULE,
        ),
        # a call given a device takes that device's module: no second device beside it
        Invalid(
            HEAD + "def wait(x):\n    return torch.cuda.current_stream(x.device)\n",
            HEAD + "def wait(x):\n    return torch.get_device_module(x.device).current_stream(x.device)\n",
            torch_version=GET_DEVICE_MODULE,
        ),
        # ... not `self.device`, which may hold an int index that get_device_module rejects
        Invalid(
            HEAD + "class Worker:\n    def wait(self):\n        torch.cuda.synchronize(self.device)\n",
            HEAD + DEVICE + "\n\nclass Worker:\n    def wait(self):\n        torch.get_device_module(device).synchronize(self.device)\n",
            torch_version=GET_DEVICE_MODULE,
        ),
        # a parameter may hold an int index (`.to(0)` takes one; get_device_module raises on it):
        # unsafe, unless annotated as a device or string, given one by default, or read as a device
        Invalid(
            HEAD + "def run(model, x, device):\n    y = model(x.to(device))\n    torch.cuda.synchronize()\n    return y\n",
            HEAD + "def run(model, x, device):\n    y = model(x.to(device))\n"
            "    torch.get_device_module(device).synchronize()\n    return y\n",
            unsafe=True,
            torch_version=GET_DEVICE_MODULE,
        ),
        Invalid(
            HEAD + "def run(model, x, device):\n    kind = device.type\n    torch.cuda.synchronize()\n    return kind\n",
            HEAD + "def run(model, x, device):\n    kind = device.type\n    torch.get_device_module(device).synchronize()\n"
            "    return kind\n",
            torch_version=GET_DEVICE_MODULE,
        ),
        # ... nor where the stream is compared with one that stays CUDA's
        Invalid(HEAD + "capturing = torch.cuda.current_stream() != torch.cuda.default_stream()\n", torch_version=GET_DEVICE_MODULE),
        # ... nor where CUDA's own stream handle is read (torch.cpu.Stream has no `cuda_stream`)
        Invalid(HEAD + "handle = torch.cuda.current_stream().cuda_stream\n", torch_version=GET_DEVICE_MODULE),
        # ... nor where a tensor records the stream: torch.cpu's stream is no torch.Stream, which
        # `record_stream` rejects (MiniGPT-4's prefetching loader)
        Invalid(HEAD + "batch.record_stream(torch.cuda.current_stream())\n", torch_version=GET_DEVICE_MODULE),
        # no fix where an argument stays CUDA-only: the rewritten call would still need CUDA
        Invalid(
            HEAD + "def settle(device: torch.device):\n    return torch.cuda.stream(torch.cuda.default_stream())\n",
            torch_version=GET_DEVICE_MODULE,
        ),
        # ... reached only where there is a GPU: safe; an early exit without one counts too
        Invalid(
            HEAD + 'if torch.cuda.is_available():\n    idx = str(torch.cuda.current_device())\n',
            HEAD + 'if torch.cuda.is_available():\n    idx = str(torch.accelerator.current_device_index())\n',
            torch_version=ACCELERATOR_INDEX,
        ),
        Invalid(
            HEAD + 'def arch():\n    if not torch.cuda.is_available():\n        raise RuntimeError("no GPU")\n'
            '    return torch.cuda.current_device()\n',
            HEAD + 'def arch():\n    if not torch.cuda.is_available():\n        raise RuntimeError("no GPU")\n'
            '    return torch.accelerator.current_device_index()\n',
            torch_version=ACCELERATOR_INDEX,
        ),
        # torch-version 2.6: an index that is no device; unsafe, it still needs an accelerator
        Invalid(
            HEAD + 'rank = torch.cuda.current_device()\nif torch.cuda.is_available():\n    torch.cuda.set_device(rank)\n',
            HEAD + 'rank = torch.accelerator.current_device_index()\nif torch.cuda.is_available():\n'
            "    torch.accelerator.set_device_index(rank)\n",
            unsafe=True,
            count=2,
            torch_version=ACCELERATOR_INDEX,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        name = cuda_function(self.ctx, node, _REPORTED)
        if name is None or any(a.star for a in node.args):
            return
        if runs_without_cuda_before_accelerator(self.ctx, node, name):
            return  # nothing generic to move to below torch-version 2.6, and it runs without CUDA
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(self, node)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        item = node.item
        if not isinstance(item, cst.Call) or cuda_function(self.ctx, item, frozenset({"device"})) is None:
            return
        # hardcoded or unguarded: DEV202 reports it (the item's own parent link comes after this hook)
        if hardcoded_gpu_index(self.ctx, item) or not under_device_check(self.ctx, node):
            return
        if runs_without_cuda_before_accelerator(self.ctx, node, None):
            return  # under its GPU check: it runs without CUDA, and below 2.6 has nothing to move to
        self.report(
            item,
            "`with torch.cuda.device(...)` only switches CUDA GPUs; with an int index use "
            "`torch.accelerator.device_index(i)` (torch >= 2.8)",
        )

    # -- one handler per function ------------------------------------------------------------

    def _synchronize(self, node: cst.Call) -> None:
        guarded = Guarded(node, under_device_check(self.ctx, node), "None")
        self.report(
            node,
            "`torch.cuda.synchronize()` fails without CUDA and ignores other accelerators; use "
            "`torch.accelerator.synchronize()` under `torch.accelerator.is_available()`",
            fix=lambda site: self._synchronize_fix(node, guarded, site),
        )

    def _synchronize_fix(self, node: cst.Call, guarded: Guarded, site: Site) -> FixPlan:
        if self.ctx.settings.torch_version >= ACCELERATOR:
            new = call_text(self.ctx, node, "torch.accelerator.synchronize", positional_device(node))
            return FixPlan(
                "Use `torch.accelerator.synchronize()` where an accelerator is available",
                [guarded.replace(self.ctx, new)],
                needs_torch=True,
                requires=ACCELERATOR,
            )
        if self.ctx.settings.torch_version < GET_DEVICE_MODULE:
            return cuda_guard_fix(self.ctx, node, "torch.cuda.synchronize()")
        return self._device_module_fix(node, "synchronize", site)

    def _device_count(self, node: cst.Call) -> None:
        # a count that decides whether CUDA code runs: counting other accelerators would run it there
        fixable = not guards_cuda_code(self.ctx, node)
        counted = self._count_name(node)
        self.report(
            node,
            "`torch.cuda.device_count()` counts CUDA GPUs only; use `torch.accelerator.device_count()`",
            fix=(
                lambda site: None
                if counted is not None and self._count_decides_cuda_code(counted)
                else FixPlan(
                    "Use `torch.accelerator.device_count()`",
                    [Replace(node, call_text(self.ctx, node, "torch.accelerator.device_count"))],
                    needs_torch=True,
                    requires=ACCELERATOR,
                )
            )
            if fixable
            else None,
        )

    def _count_name(self, node: cst.Call) -> str | None:
        """``n`` where the count is the whole value of ``n = torch.cuda.device_count()``."""
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            return parent.targets[0].target.value
        if isinstance(parent, cst.AnnAssign) and isinstance(parent.target, cst.Name):
            return parent.target.value
        return None

    def _count_decides_cuda_code(self, name: str) -> bool:
        """A name the count is kept in is read, somewhere in the file, by a test that decides
        whether CUDA code runs (Megatron's `device_count = torch.cuda.device_count()`, then
        `if device_count > 0: torch.cuda.set_device(...)`). Any read of the name counts, in any
        scope: no fix at worst where another function's own `n` is tested. Asked after the walk,
        once per name."""
        return self.ctx.indexed(
            ("count decides CUDA code", name),
            lambda: any(guards_cuda_code(self.ctx, read) for read in self.ctx.model.name_nodes(name)),
        )

    def _current_device(self, node: cst.Call) -> None:
        as_device = self._given_as_device(node)
        half = self._half_migration(node)
        if half:
            advice = f"{half}: pass the device in use instead"
        else:
            advice = "pass the device in use" if as_device else "use `torch.accelerator.current_device_index()`"
        fix = None if half else (lambda site: self._device_fix(node, site)) if as_device else self._index_fix(node)
        self.report(node, "`torch.cuda.current_device()` fails without CUDA and ignores other accelerators; " + advice, fix=fix)

    def _half_migration(self, node: cst.Call) -> str:
        """Why rewriting the call alone would leave its line CUDA-only for a second migration: the
        f-string, ``torch.device("cuda", ...)`` or ``torch.cuda`` call around it names CUDA (``f"cuda:{torch.cuda.current_device()}"``), or the test that
        chooses it does (``... if torch.cuda.is_available() else "cpu"``). "" when neither does."""
        child: cst.CSTNode = node
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, cst.FormattedString) and any(
                isinstance(part, cst.FormattedStringText) and "cuda" in part.value for part in ancestor.parts
            ):
                return "the string around it names CUDA as well"
            if isinstance(ancestor, cst.IfExp) and child is not ancestor.test and "cuda" in self.ctx.code(ancestor.test):
                return "the test that chooses it asks CUDA as well"
            outer = self.ctx.model.qualname(ancestor.func) if isinstance(ancestor, cst.Call) else None
            if outer == "torch.device" and ancestor.args and string_value(ancestor.args[0].value) == "cuda":
                # `torch.device("cuda", torch.cuda.current_device())`: on another accelerator the new
                # index would name a CUDA device of that number
                return "the device around it names CUDA as well"
            if outer is not None and outer.startswith("torch.cuda."):
                # `torch.cuda.get_device_properties(torch.cuda.current_device())`
                return "the call around it is CUDA's as well"
            if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                break
            child = ancestor
        return ""

    def _given_as_device(self, node: cst.Call) -> bool:
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.DictElement) and parent.value is node:
            return self._factory_keyword(parent)
        if not isinstance(parent, cst.Arg):
            return False
        if parent.keyword is not None:
            return parent.keyword.value in DEVICE_KEYWORDS
        call = self.ctx.parent(parent)
        return (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "to"
            and call.args[0] is parent
        )

    def _factory_keyword(self, element: cst.DictElement) -> bool:
        """`factory_kwargs = {"device": ..., "dtype": ...}`, a dict that the file hands to calls
        as keywords (`nn.Conv1d(..., **factory_kwargs)`): its "device" is a device keyword
        (mamba's block gets one device for its layers and its parameters)."""
        if string_value(element.key) not in DEVICE_KEYWORDS:
            return False
        mapping = self.ctx.parent(element)
        statement = self.ctx.parent(mapping) if isinstance(mapping, cst.Dict) else None
        if not isinstance(statement, cst.Assign) or len(statement.targets) != 1 or statement.value is not mapping:
            return False
        target = statement.targets[0].target
        return isinstance(target, cst.Name) and target.value in self.ctx.indexed("names given as keywords", self._splatted)

    def _splatted(self) -> frozenset[str]:
        """The names the file gives to calls as ``**name``: one walk of the module."""
        stack: list[cst.CSTNode] = [self.ctx.module]
        names: set[str] = set()
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Call):
                names.update(a.value.value for a in node.args if a.star == "**" and isinstance(a.value, cst.Name))
            stack.extend(children(node))
        return frozenset(names)

    def _device_fix(self, node: cst.Call, site: Site) -> FixPlan:
        device = self.ctx.device(site)
        return FixPlan(f"Use the device in scope, `{device.expr}`", [Replace(node, device.expr)], device=device)

    def _index_fix(self, node: cst.Call) -> Callable[[Site], FixPlan]:
        # Reached only where there is a GPU (under a GPU check, in a test skipped without one): on
        # CUDA both calls run cudaGetDevice after CUDA's lazy init, and without a GPU neither runs.
        # Elsewhere the new call still raises without an accelerator, as the original did.
        reached_with_gpu = under_device_check(self.ctx, node) or self._needs_a_gpu_to_run(node)

        def fix(site: Site) -> FixPlan:
            return FixPlan(
                "Use `torch.accelerator.current_device_index()`"
                + ("" if reached_with_gpu else " (still fails without an accelerator)"),
                [Replace(node, call_text(self.ctx, node, "torch.accelerator.current_device_index"))],
                "safe" if reached_with_gpu else "unsafe",
                needs_torch=True,
                requires=ACCELERATOR_INDEX,
            )

        return fix

    def _stream_api(self, node: cst.Call) -> None:
        name = cuda_function(self.ctx, node, CUDA_RUNTIME_API)
        assert name is not None
        kept = self._cuda_kept_in(node.args)
        message = f"`torch.cuda.{name}(...)` only knows CUDA streams; use `torch.get_device_module(device).{name}(...)`"
        if kept is not None:
            # `torch.get_device_module(device).stream(torch.cuda.default_stream())` would still
            # need CUDA to run, and say nothing more about it
            message += f" (no fix: `{kept}` in its arguments has no device-generic form)"
        elif self._handle_read(node):
            # `current_stream().cuda_stream`: CUDA's own handle, which no other device's stream has
            message += " (no fix: its `.cuda_stream` is CUDA's own)"
            kept = "cuda_stream"
        elif self._recorded(node):
            # `t.record_stream(torch.cuda.current_stream())`: torch.cpu's stream is no torch.Stream,
            # which record_stream rejects ("unknown parameter type", 2.4.1 and 2.13)
            message += " (no fix: `record_stream` takes no CPU stream)"
            kept = "record_stream"
        else:
            # `current_stream() == torch.cuda.default_stream()`: half a comparison moved still needs
            # CUDA, and compares one device's stream with another's
            kept = self._cuda_kept_in(self._compared_with(node))
            if kept is not None:
                message += f" (no fix: it is compared with `{kept}`, which has no device-generic form)"
        self.report(
            node,
            message,
            fix=(lambda site: self._device_module_fix(node, name, site)) if self._stream_fixable(node) and kept is None else None,
        )

    def _compared_with(self, node: cst.Call) -> list[cst.CSTNode]:
        """The other operands of the comparison ``node`` is one side of (none if it is not)."""
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.ComparisonTarget):
            comparison = self.ctx.parent(parent)
        elif isinstance(parent, cst.Comparison) and parent.left is node:
            comparison = parent
        else:
            return []
        if not isinstance(comparison, cst.Comparison):
            return []
        operands = [comparison.left, *(target.comparator for target in comparison.comparisons)]
        return [operand for operand in operands if operand is not node]

    def _recorded(self, node: cst.Call) -> bool:
        """``node`` is the stream given to a tensor's ``record_stream(...)``."""
        parent = self.ctx.parent(node)
        call = self.ctx.parent(parent) if isinstance(parent, cst.Arg) else None
        return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "record_stream"

    def _handle_read(self, node: cst.Call) -> bool:
        parent = self.ctx.parent(node)
        return isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value == "cuda_stream"

    def _stream_fixable(self, node: cst.Call) -> bool:
        """A stream call this rule rewrites: any but a ``Stream(...)`` given arguments
        (a priority or a stream of another device, which the device modules spell apart)."""
        return cuda_function(self.ctx, node, CUDA_RUNTIME_API) != "Stream" or not node.args

    def _cuda_kept_in(self, args: Sequence[cst.CSTNode]) -> str | None:
        """The first ``torch.cuda`` call in ``args`` (arguments or expressions) that no fix of this
        rule rewrites, as written (a stream call ``_stream_api`` fixes is rewritten with it)."""
        pending: list[cst.CSTNode] = list(args)
        while pending:
            current = pending.pop(0)
            if isinstance(current, cst.Call) and (self.ctx.model.qualname(current.func) or "").startswith("torch.cuda."):
                named = cuda_function(self.ctx, current, CUDA_RUNTIME_API)
                if _HANDLERS.get(named or "") is not CudaRuntimeApi._stream_api or not self._stream_fixable(current):
                    return self.ctx.code(current.func) + "()"
            pending.extend(children(current))
        return None

    def _device_module_fix(self, node: cst.Call, name: str, site: Site) -> FixPlan:
        given = self._device_given(node, site)
        if given is not None:
            # `current_stream(x.device)`: the module of the device the call names, not a second one
            module = f"torch.get_device_module({self.ctx.code(given)})"
            return FixPlan(
                f"Use `{module}.{name}(...)`",
                [Replace(node, call_text(self.ctx, node, f"{module}.{name}"))],
                needs_torch=True,
                requires=GET_DEVICE_MODULE,
            )
        module, device = device_module(self.ctx, site)
        if never_an_index(self.ctx, site, device):
            message, applicability = f"Use `{module}.{name}(...)`", "safe"
        else:
            message = f"Use `{module}.{name}(...)` (unsafe: `torch.get_device_module` raises if `{device.expr}` holds a GPU index)"
            applicability = "unsafe"
        return FixPlan(
            message,
            [Replace(node, call_text(self.ctx, node, f"{module}.{name}"))],
            applicability,
            device=device,
            needs_torch=True,
            requires=GET_DEVICE_MODULE,
        )

    def _device_given(self, node: cst.Call, site: Site) -> cst.BaseExpression | None:
        """The device a call's one argument names (``current_stream(d)``, ``synchronize(d)``),
        where it is surely a device: ``torch.get_device_module`` takes a device or a string,
        and raises on the int index these calls also take. (The other calls fixed here take a
        stream or options, never a device.)"""
        if len(node.args) != 1:
            return None
        given = node.args[0]
        if given.star or (given.keyword is not None and given.keyword.value != "device"):
            return None
        value = given.value
        if self._surely_a_device(value):
            return value
        if not isinstance(value, cst.Name):
            return None
        # a name bound only to such values on every path; a parameter may be given an int
        found = reach_of(value.value, site.scope, site.node, self.ctx.flows)
        reach = found[1] if found is not None else None
        if reach is None or reach.params or not always_a_device(self.ctx.model, reach, where_bound=True):
            return None
        return value if all(self._surely_a_device(bound) for bound in reach.values) else None

    def _surely_a_device(self, value: cst.BaseExpression) -> bool:
        """``torch.device(...)``, a choice of device strings, or a tensor's or stream's
        ``x.device`` (not ``self.device`` or an ``args.device`` option, which may hold an int)."""
        if isinstance(value, cst.Attribute):
            return surely_no_index(self.ctx, value)
        if isinstance(value, cst.Call):
            return self.ctx.model.qualname(value.func) == "torch.device"
        return is_guarded_device_choice(self.ctx.model, value)

    def _event(self, node: cst.Call) -> None:
        fix: Callable[[Site], FixPlan] | None = None
        if not node.args:
            fix = lambda site: self._device_module_fix(node, "Event", site)  # noqa: E731
        elif self._event_options(node) is not None:
            fix = lambda site: self._timing_event_fix(node)  # noqa: E731
        self.report(
            node,
            "`torch.cuda.Event(...)` fails without CUDA, and no CPU event keeps time; create events "
            "through `torch.get_device_module(device).Event` where an accelerator is available, or "
            "`torch.Event` (torch >= 2.4) for timing",
            fix=fix,
        )

    @staticmethod
    def _event_options(node: cst.Call) -> list[cst.Arg] | None:
        """The call's arguments as torch.Event's keywords, None where one has no counterpart."""
        options: list[cst.Arg] = []
        for position, argument in enumerate(node.args):
            if argument.keyword is None:
                if position >= len(_EVENT_OPTIONS):
                    return None
                argument = argument.with_changes(
                    keyword=cst.Name(_EVENT_OPTIONS[position]),
                    equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
                    ),
                )
            elif argument.keyword.value not in _EVENT_OPTIONS:
                return None
            options.append(argument)
        return options

    def _timing_event_fix(self, node: cst.Call) -> FixPlan:
        return FixPlan(
            "Use `torch.Event(...)` (recording it still needs an accelerator; it is no `torch.cuda.Event`)",
            [Replace(node, call_text(self.ctx, node, "torch.Event", self._event_options(node)))],
            "unsafe",
            needs_torch=True,
            requires=EVENT,
        )

    def _seed(self, node: cst.Call) -> None:
        name = cuda_function(self.ctx, node, CUDA_SEED_API)
        seed = node.args[0] if len(node.args) == 1 else None
        if seed is None or (seed.keyword is not None and seed.keyword.value != "seed"):
            self.report(node, f"`torch.cuda.{name}(...)` seeds CUDA only; use `torch.manual_seed(...)`")
            return
        statement = sole_statement(self.ctx, node)
        if statement is not None and self._seeded_beside(statement, seed.value):
            self.report(
                node,
                f"`torch.cuda.{name}(...)` seeds CUDA only, and the `torch.manual_seed` beside it already "
                "seeds every device: remove it",
                fix=lambda site: FixPlan(
                    "Remove it: `torch.manual_seed` beside it seeds every device with the same seed",
                    _line_removal(self.ctx, statement),
                ),
            )
            return
        given = [seed.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)]
        if statement is not None and self._seeded_before_check(statement, seed.value):
            # the CPU generator got this very seed just before, with no draw since: reseeding it is exact
            message, applicability = "Use `torch.manual_seed(...)` (the CPU generator already has this seed)", "safe"
        else:
            message, applicability = "Use `torch.manual_seed(...)` (it also reseeds the CPU generator)", "unsafe"
        self.report(
            node,
            f"`torch.cuda.{name}(...)` seeds CUDA only; use `torch.manual_seed(...)`, which seeds every "
            "device (and the CPU)",
            fix=lambda site: FixPlan(
                message,
                [Replace(node, call_text(self.ctx, node, "torch.manual_seed", given))],
                applicability,
                needs_torch=True,
            ),
        )

    def _seeded_beside(self, statement: cst.Expr, seed: cst.BaseExpression) -> bool:
        """A `torch.manual_seed` of the same seed among the seeding statements around ``statement``
        in its block (nothing else between them: no draw, no new value of the seed)."""
        line = self.ctx.parent(statement)
        block = self.ctx.parent(line)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)) or not _pure(seed):
            return False
        lines, here = siblings(self.ctx, block, line)
        return any(self._seeded_on_the_way(lines, here + step, step, seed) for step in (-1, 1))

    def _seeded_before_check(self, statement: cst.Expr, seed: cst.BaseExpression) -> bool:
        """``statement`` opens (after seeding calls only) the body of ``if torch.cuda.is_available():``,
        and the seeding statements just before that ``if`` hold a `torch.manual_seed` of the same seed:
        `torch.manual_seed(s)` there reseeds the CPU generator with the seed it already has."""
        line = self.ctx.parent(statement)
        body = self.ctx.parent(line)
        guard = self.ctx.parent(body)
        if not (isinstance(body, cst.IndentedBlock) and isinstance(guard, cst.If) and guard.body is body):
            return False
        outer = self.ctx.parent(guard)  # an `elif` has the `if` before it as its parent, no block
        if not isinstance(outer, (cst.IndentedBlock, cst.Module)) or not _pure(seed) or not self._availability(guard.test):
            return False
        lines = list(body.body)
        if not all(self._seeding(earlier) or self._reads_state(earlier, seed) for earlier in lines[: lines.index(line)]):
            return False
        around, at = siblings(self.ctx, outer, guard)
        return self._seeded_on_the_way(around, at - 1, -1, seed)

    def _seeded_on_the_way(self, lines: Sequence[cst.BaseStatement], index: int, step: int, seed: cst.BaseExpression) -> bool:
        """Walking ``lines`` from ``index`` by ``step`` through seeding calls only, one of them is
        `torch.manual_seed(seed)`. Walking back, reads of a generator's state may stand between: they
        run before the call the fix changes, so they read the same state either way."""
        wanted = self.ctx.code(seed)
        while 0 <= index < len(lines):
            call = _lone_call(lines[index])
            qual = self.ctx.model.qualname(call.func) if call is not None else None
            if call is not None and qual in TORCH_SEEDS and [self.ctx.code(a) for a in call.args] == [wanted]:
                return True
            if qual not in SEEDING_CALLS and not (step < 0 and self._reads_state(lines[index], seed)):
                return False
            index += step
        return False

    def _seeding(self, line: cst.BaseStatement) -> bool:
        call = _lone_call(line)
        return call is not None and self.ctx.model.qualname(call.func) in SEEDING_CALLS

    def _reads_state(self, line: cst.BaseStatement, seed: cst.BaseExpression) -> bool:
        """``line`` reads a generator's state and draws nothing: `torch.cuda.get_rng_state_all()`, alone
        or assigned to names that are not the seed's (a new value of the seed would be another seed)."""
        call = _lone_call(line)
        if call is None and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            assign = line.body[0]
            if isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call):
                bound = [target.target for target in assign.targets]
                if all(isinstance(name, cst.Name) for name in bound) and not {n.value for n in bound} & names_in(seed):
                    call = assign.value
        return call is not None and self.ctx.model.qualname(call.func) in RNG_STATE_READS

    def _availability(self, test: cst.BaseExpression) -> bool:
        """``torch.cuda.is_available()`` (or torch.accelerator's): a runtime query that draws no random number."""
        return (
            isinstance(test, cst.Call)
            and not test.args
            and self.ctx.model.qualname(test.func) in ("torch.cuda.is_available", "torch.accelerator.is_available")
        )

    def _needs_a_gpu_to_run(self, node: cst.CSTNode) -> bool:
        """In a function or class whose decorator is about CUDA or a GPU (``@skipUnless(torch.cuda.
        is_available(), ...)``, ``@pytest.mark.skipif(not torch.cuda.is_available(), ...)``,
        ``@requires_gpu``): a test that only runs where there is one."""
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)) and any(
                word in self.ctx.code(decorator).lower() for decorator in ancestor.decorators for word in ("cuda", "gpu")
            ):
                return True
        return False

    def _device_query(self, node: cst.Call) -> None:
        if under_device_check(self.ctx, node) or self._needs_a_gpu_to_run(node):
            return
        name = cuda_function(self.ctx, node, CUDA_ONLY_CALLS)
        if name in CUDA_DEVICE_QUERIES:
            message = "raises without CUDA and knows CUDA GPUs only; call it under a GPU check (no accelerator-generic query exists)"
        else:
            message = "starts CUDA, so it raises without CUDA; call it under a GPU check (no accelerator-generic form exists)"
        self.report(node, f"`torch.cuda.{name}()` {message}")

    def _set_device(self, node: cst.Call) -> None:
        if hardcoded_gpu_index(self.ctx, node) or not under_device_check(self.ctx, node):
            return  # DEV202's
        self.report(
            node,
            "`torch.cuda.set_device(...)` only selects CUDA GPUs; use `torch.accelerator.set_device_index(...)`",
            fix=lambda site: FixPlan(
                "Use `torch.accelerator.set_device_index(...)` (it runs only where a GPU is, as before)",
                [Replace(node, call_text(self.ctx, node, "torch.accelerator.set_device_index", positional_device(node)))],
                needs_torch=True,
                requires=ACCELERATOR_INDEX,
            ),
        )


_HANDLERS: dict[str, Callable[[CudaRuntimeApi, cst.Call], None]] = {
    "synchronize": CudaRuntimeApi._synchronize,
    "device_count": CudaRuntimeApi._device_count,
    "current_device": CudaRuntimeApi._current_device,
    "current_stream": CudaRuntimeApi._stream_api,
    "stream": CudaRuntimeApi._stream_api,
    "Stream": CudaRuntimeApi._stream_api,
    "Event": CudaRuntimeApi._event,
    "set_device": CudaRuntimeApi._set_device,
    "manual_seed": CudaRuntimeApi._seed,
    "manual_seed_all": CudaRuntimeApi._seed,
    "get_device_name": CudaRuntimeApi._device_query,
    "get_device_properties": CudaRuntimeApi._device_query,
    "get_device_capability": CudaRuntimeApi._device_query,
    "ipc_collect": CudaRuntimeApi._device_query,
}


def _line_removal(ctx: RuleContext, statement: cst.Expr) -> list[Replace]:
    """Removes the line of ``statement``; the comments above that line stay, above the next line or
    at the end of the block. Only the text of that line and a neighbour is rewritten: the fix costs
    those lines, never the file."""
    line = ctx.parent(statement)
    block = ctx.parent(line)
    assert isinstance(line, cst.SimpleStatementLine) and isinstance(block, (cst.IndentedBlock, cst.Module))
    body, here = siblings(ctx, block, line)
    indent = _indent_of(ctx, line)
    written = _comment_lines(ctx, body[here + 1].leading_lines, indent) + indent if here + 1 < len(body) else ""
    if written.startswith(indent) and here + 1 < len(body):
        # The text runs on to the next statement, whose own comments and indentation are written
        # back; the line's own indentation, before the replaced text, serves the first of them.
        return [Replace(line, written[len(indent) :], until=body[here + 1])]
    if here > 0:
        # The last line of its block, or one followed by a blank line or a comment at column 0
        # (the line's indentation would be left on it): from the line before through the end of
        # the line (its trailing comment too), the line before written back, then its comments.
        before = body[here - 1]
        kept = ctx.render(before, before.with_changes(leading_lines=()))
        return [Replace(before, kept + _comment_lines(ctx, line.leading_lines, indent), through=line)]
    # The first line of its block, before a blank line or a comment at column 0: nothing before
    # it in the block to start from, so a blank line goes with it and such a comment takes the
    # block's indentation.
    lines = body[1].leading_lines
    blank = bool(lines) and lines[0].comment is None
    rest = _comment_lines(ctx, lines[1:] if blank else lines, indent) + indent
    return [Replace(line, rest[len(indent) :] if rest.startswith(indent) else rest, until=body[1])]


def _indent_of(ctx: RuleContext, line: cst.CSTNode) -> str:
    blocks = [node for node in ctx.ancestors(line) if isinstance(node, cst.IndentedBlock)]
    return "".join(ctx.module.default_indent if b.indent is None else b.indent for b in reversed(blocks))


def _comment_lines(ctx: RuleContext, lines: Sequence[cst.EmptyLine], indent: str) -> str:
    return "".join((indent if empty.indent else "") + ctx.module.code_for_node(empty) for empty in lines)


def _lone_call(line: cst.BaseStatement) -> cst.Call | None:
    """The call that ``line`` is, when it is a line of one expression statement calling something."""
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
        statement = line.body[0]
        if isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
            return statement.value
    return None


def _pure(seed: cst.BaseExpression) -> bool:
    """A seed that reads the same value each time: a literal, a name, an attribute of a name."""
    while isinstance(seed, cst.Attribute):
        seed = seed.value
    if isinstance(seed, cst.UnaryOperation):
        seed = seed.expression
    return isinstance(seed, (cst.Name, cst.Integer))

