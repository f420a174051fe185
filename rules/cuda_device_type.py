"""DEV603 cuda-device-type: `"cuda"` as a device *type* (autocast, `device_type=`, GradScaler)."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.devices import reach_of
from devlint.analysis.reaching import Unknown
from devlint.analysis.semantic import Scope, dotted_name, literal_is
from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Report, Rule, Site, Word
from devlint.rulekit.accelerator import (
    ACCELERATOR,
    AMP_DEVICE_ARGUMENT,
    AVAILABLE,
    CPU_AUTOCAST_NOTE,
    CURRENT,
    accelerator_choice,
    amp_device,
    amp_fix_text,
    turns_cpu_autocast_off,
)
from devlint.rulekit.calls import imported_qualname, keyword, positional
from devlint.rulekit.device_checks import under_device_check
from devlint.torchfacts.names import (
    AMP_DEVICE_TYPE,
    AMP_MODULES,
    CPU_BACKEND,
    CUDA_BACKEND,
    MESH_DEVICE_TYPE,
    PROCESS_GROUP_BACKEND,
    SCALER,
    AmpCall,
)

HEAD = "import torch\n"
# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
_LAST_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in (*AMP_DEVICE_TYPE, *MESH_DEVICE_TYPE, *PROCESS_GROUP_BACKEND))
GUARD = " if torch.cuda.is_available() else "
BACKEND_FOR_DEVICE = "get_default_backend_for_device"
# Names followed from an imported name to the literal it holds (`BACKEND = DEFAULT_BACKEND`).
_HOPS = 3


def _amp_api(qualname: str) -> bool:
    return qualname.startswith(AMP_MODULES)


class CudaDeviceType(Rule):
    code = "DEV603"
    name = "cuda-device-type"
    what = (
        '`"cuda"` written as a device *type*: `torch.autocast("cuda")`, `torch.amp.autocast("cuda")`, '
        '`device_type="cuda"` in any torch call, `torch.amp.GradScaler("cuda")`, and '
        '`torch.amp.GradScaler()` with no device, which means CUDA; a name that may hold autocast '
        'or GradScaler (`scope = autocast if amp else nullcontext`, then `scope("cuda")`); and in '
        'torch.distributed, a mesh of `"cuda"` devices (`init_device_mesh("cuda", ...)`, '
        '`DeviceMesh("cuda", ...)`) and the CUDA-only collective backend (`init_process_group(backend="nccl")`, '
        '`new_group(..., backend="nccl")`) chosen without looking at the device. Also a tensor\'s '
        '`.device` compared with `torch.device("cuda")`, which never holds for a CUDA tensor (its device is '
        '`cuda:0`). Comparisons of `.device.type` with "cuda" are not reported: choosing a CUDA code '
        'path by the device type is device-generic code.'
    )
    why = (
        "Autocast and gradient scaling exist for every accelerator (`torch.autocast(\"xpu\")`, "
        "`torch.amp.GradScaler(\"mps\")`), but a hardcoded `\"cuda\"` turns them off everywhere "
        "else: on Apple, Intel or AMD-via-other-backends the model silently trains in full precision, "
        'with a warning ("CUDA is not available. Disabling") on every step. Take the type from the '
        "device the program runs on. In torch.distributed, \"nccl\" and a \"cuda\" mesh run on CUDA only: "
        "on a CPU build `init_process_group(\"nccl\")` raises \"Distributed package doesn't have NCCL "
        "built in\", where gloo runs the same job. And a tensor's device is never "
        "`torch.device(\"cuda\")`, which has no index."
    )
    example = (
        'scaler = torch.amp.GradScaler()\nwith torch.autocast("cuda", dtype=torch.float16):\n    loss = model(x)'
    )
    use_instead = (
        'scaler = torch.amp.GradScaler(device.type, enabled=device.type != "cpu")\n'
        'with torch.autocast(device.type, dtype=torch.float16, enabled=device.type != "cpu"):\n'
        "    loss = model(x)"
    )
    fix_availability = "sometimes"
    fix_note = (
        'Autocast and GradScaler, safe: the device type becomes the device in scope\'s `.type` (`torch.device(d).type` when '
        '`d` may be a string), and `enabled=` gets `and <type> != "cpu"`. On a CUDA machine the '
        'type is "cuda" and `enabled` is what it was, so nothing changes. Without CUDA the original '
        'disabled itself (autocast: "User provided device_type of \'cuda\', but CUDA is not '
        'available. Disabling"; GradScaler likewise): the fix keeps it off on the CPU, because '
        "`device.type` alone would switch CPU autocast on and change CPU numerics "
        "(tests/test_dev6_semantics.py checks both on this CPU build). An autocast given "
        "`enabled=False` as written is unsafe: entering an autocast sets the thread's state for its "
        "device type, so without CUDA the fixed `autocast(\"cpu\", enabled=False)` turns a CPU autocast "
        "around it off inside, which the original left on. On another accelerator it "
        "now turns on, which is the point, from torch 2.5: before it, autocast and GradScaler raise "
        'for a device type such as "mps" where the original only disabled itself, so with '
        'torch-version below 2.5 a device that may be another accelerator (a parameter, `x.device`) '
        'gets `"cuda" if <type> == "cuda" else "cpu"` and `enabled=... and <type> == "cuda"`: on, '
        "exactly where the original was. `torch.amp.GradScaler(device)` needs torch 2.3 "
        "(docs: torch.amp.GradScaler). Other `device_type=\"cuda\"` arguments (`custom_fwd`, "
        "`is_autocast_enabled`) are reported without a fix: what they do on the CPU depends on "
        "autocast state elsewhere in the program. A name that may hold autocast is reported without "
        "a fix: it may hold something else too (`nullcontext`, which takes no `enabled=`). "
        'torch.distributed: `"nccl"` becomes `"nccl" if torch.cuda.is_available() else "gloo"` and a '
        'mesh\'s `"cuda"` becomes `"cuda" if torch.cuda.is_available() else "cpu"`, safe: on a CUDA '
        "machine the string is what it was; without CUDA the original fails (a CPU build: "
        "\"Distributed package doesn't have NCCL built in\"; a CUDA mesh builds, but its first tensor "
        'needs a GPU) and gloo and a "cpu" mesh are torch\'s own pairing for the CPU '
        "(`Backend.default_device_backend_map`); a name bound to `\"nccl\"` on every path to the call "
        "(a module constant, a local assigned before it) is guarded the same way at the call; a name "
        "imported from another module of the project that binds it to `\"nccl\"` once (`from .dist_config "
        "import BACKEND`, at module level or inside the function that makes the call; devlint reads that "
        "module, never imports it) becomes `BACKEND if "
        "torch.cuda.is_available() else \"gloo\"` (`torch.accelerator.is_available()` with DEV604 selected), "
        "safe: wherever the test holds the name is what it was, the project's setting stays in force "
        "and the other module is left as it is; a local copy of such a name (`backend = BACKEND`), where "
        "every binding of the copy that reaches the call is the copy or `\"nccl\"`, is guarded the same way; and "
        "a backend held in an attribute (`backend=args.dist_backend`, `cfg.backend`) where every value "
        "the file gives that attribute is `\"nccl\"` (the default of the program's own `--dist_backend` "
        "option, `args.dist_backend = \"nccl\"`) has each of those literals guarded the same way: a "
        "backend the user passes on the command line still wins. Another accelerator gets gloo / the CPU, where the "
        "original failed; with DEV604 selected (torch-version >= 2.6) it gets its own backend instead: `\"nccl\"` "
        "becomes `torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() "
        "if torch.accelerator.is_available() else \"cpu\")` (torch 2.6; `Backend.default_device_backend_map`: "
        "nccl for CUDA, gloo for the CPU, xccl for XPU; a ValueError for a device with none, where nccl failed "
        "too). Not reported: a backend or mesh chosen per device "
        '(under `if torch.cuda.is_available():` or `if device.type == "cuda":`, or in an `if` with '
        'an `else`), and `"cpu:gloo,cuda:nccl"`, which names a backend per device. '
        '`x.device == torch.device("cuda")` (or `!=`) becomes `x.device.type == "cuda"`, unsafe: torch.device '
        'compares type and index, so the original `==` is False for every CUDA tensor (`cuda:0`), its `!=` '
        'True, and the fix changes what a CUDA machine does (to what the code meant); without CUDA the two agree. '
        "`args.device`, `self.device` and the like are left alone: they may be strings, which have no `.type`."
    )
    # A backend name imported from another module of the project: no "nccl" in this file's text.
    triggers = ("cuda", "GradScaler", "nccl", Word("init_process_group"), Word("new_group"))
    advice_since = AMP_DEVICE_ARGUMENT

    VALID = (
        # a test filter of torch's own test helpers, not a device type AMP runs for
        "from torch.testing._internal.common_methods_invocations import DecorateInfo\n"
        "skip = DecorateInfo(unittest.skip('slow'), 'TestCommon', device_type='cuda')\n",
        # the device-generic form this rule writes
        HEAD + "acc = torch.accelerator.current_accelerator()\n"
        "with torch.autocast(device_type=acc.type, dtype=torch.bfloat16):\n    pass\n",
        HEAD + 'scaler = torch.amp.GradScaler(device.type, enabled=device.type != "cpu")\n',
        HEAD + "with torch.amp.autocast(x.device.type):\n    pass\n",
        # other device types
        HEAD + 'with torch.autocast("cpu", dtype=torch.bfloat16):\n    pass\n',
        HEAD + 'scaler = torch.amp.GradScaler("xpu")\n',
        # devices, not device types: DEV103's business
        HEAD + 'x = torch.ones(2, device="cuda" if torch.cuda.is_available() else "cpu")\n',
        # a GradScaler of another library, an autocast that is not torch's
        "from apex.amp import GradScaler\nscaler = GradScaler()\n",
        "import jax\nwith autocast('cuda'):\n    pass\n",
        # torch.cuda.amp is DEV501's
        HEAD + "scaler = torch.cuda.amp.GradScaler()\n",
        # a reference, not a call
        HEAD + "assert isinstance(scaler, torch.amp.GradScaler)\n",
        # torch.distributed, chosen per device: guarded, one side of a choice, a backend per device
        "import torch\nimport torch.distributed as dist\n"
        'dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")\n'
        'dist.init_process_group(backend="cpu:gloo,cuda:nccl")\n'
        "if torch.cuda.is_available():\n    dist.init_process_group(\"nccl\")\n",
        "import torch.distributed as dist\nif args.gpu:\n    dist.init_process_group('nccl')\nelse:\n"
        "    dist.init_process_group('gloo')\n",
        "from torch.distributed.device_mesh import init_device_mesh\n"
        'def build(device):\n    if device.type == "cuda":\n        return init_device_mesh("cuda", (2,))\n'
        '    return init_device_mesh(device.type, (2,))\n',
        # a name that holds "nccl" on some paths only, or a parameter (the caller's choice), or
        # an option without a CUDA default, or that the program sets itself
        "import torch\nimport torch.distributed as dist\n"
        'def setup():\n    backend = "nccl"\n    if not torch.cuda.is_available():\n        backend = "gloo"\n'
        "    dist.init_process_group(backend=backend)\n"
        'def join(backend="nccl"):\n    dist.init_process_group(backend)\n'
        'BACKEND = "nccl"\nif not torch.cuda.is_available():\n    BACKEND = "gloo"\ndist.init_process_group(BACKEND)\n',
        # a module constant a function may rebind (`global`)
        'import torch.distributed as dist\nBACKEND = "nccl"\ndef cpu_only():\n    global BACKEND\n    BACKEND = "gloo"\n'
        "def setup():\n    dist.init_process_group(BACKEND)\n",
        "import argparse\nimport torch.distributed as dist\nparser = argparse.ArgumentParser()\n"
        'parser.add_argument("--backend", default="gloo")\nparser.add_argument("--dist-backend")\n'
        'parser.add_argument("--comm", default="nccl")\nargs = parser.parse_args()\n'
        'if args.cpu:\n    args.comm = "gloo"\n'
        "dist.init_process_group(backend=args.backend)\ndist.init_process_group(backend=args.dist_backend)\n"
        "dist.init_process_group(backend=args.comm)\n",
        # a backend attribute the program also sets to gloo, or sets to nccl only where CUDA is known
        "import torch\n\n\ndef init(cfg):\n    cfg.dist_backend = 'nccl'\n    if cfg.cpu:\n"
        "        cfg.dist_backend = 'gloo'\n    torch.distributed.init_process_group(backend=cfg.dist_backend)\n",
        "import torch\n\n\ndef init(cfg):\n    cfg.backend = 'gloo'\n    torch.distributed.init_process_group(cfg.backend)\n",
        "import torch\n\n\ndef init(cfg):\n    if torch.cuda.is_available():\n        cfg.backend = 'nccl'\n"
        "    torch.distributed.init_process_group(cfg.backend)\n",
        # another library's init_process_group; another device type
        'import deepspeed\ndeepspeed.init_distributed(dist_backend="nccl")\nmesh = other.init_device_mesh("cuda", (2,))\n',
        'from torch.distributed import init_device_mesh\nmesh = init_device_mesh("cpu", (2,))\n',
        # a name holding something other than autocast
        "from contextlib import nullcontext\nscope = nullcontext\nwith scope('cuda'):\n    pass\n",
        # device types compared: a CUDA code path chosen by type; an indexed device; a configured device
        HEAD + 'if x.device.type == "cuda" and x.is_cuda:\n    pass\n',
        HEAD + 'same = x.device == torch.device("cuda", 0) or x.device == torch.device("cuda:0")\n',
        HEAD + 'same = args.device == torch.device("cuda") or self.device != torch.device("cuda")\n',
        HEAD + 'ok = x.device == torch.device("cpu")\n',
    )
    INVALID = (
        # a decorator of `forward(self, x)` runs where the class is defined: it cannot follow `x`
        # (vit-pytorch's `@autocast("cuda", enabled=False)` became `x.device.type`, a NameError)
        Invalid(
            HEAD + "from torch.amp import autocast\n\n\nclass Rotary(torch.nn.Module):\n"
            "    @autocast('cuda', enabled=False)\n    def forward(self, x):\n        return x.float() * 2\n",
            HEAD + "from torch.amp import autocast\n" + DEVICE + "\n\nclass Rotary(torch.nn.Module):\n"
            "    @autocast(device.type, enabled=False)\n    def forward(self, x):\n        return x.float() * 2\n",
            # unsafe: without CUDA, `autocast("cpu", enabled=False)` turns CPU autocast off inside
            unsafe=True,
        ),
        # the device type given last: the argument before it ends the call as it did, with no
        # `x, )` left behind, on one line or one argument a line
        Invalid(
            HEAD + 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            'with torch.autocast(enabled=False, device_type="cuda"):\n    pass\n'
            'with torch.autocast(\n    dtype=torch.bfloat16,\n    device_type="cuda"\n):\n    pass\n'
            'scaler = torch.amp.GradScaler(enabled=use_amp, device="cuda",\n)\n',
            HEAD + 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            'with torch.autocast(device_type=device.type, enabled=False):\n    pass\n'
            'with torch.autocast(\n    device_type=device.type,\n    dtype=torch.bfloat16,\n    enabled=device.type != "cpu"\n):\n    pass\n'
            'scaler = torch.amp.GradScaler(device=device.type, enabled=use_amp and device.type != "cpu",\n)\n',
            count=3,
            unsafe=True,
        ),
        Invalid(
            HEAD + 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            'with torch.autocast("cuda", dtype=torch.float16):\n    pass\n',
            HEAD + 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            'with torch.autocast(device.type, dtype=torch.float16, enabled=device.type != "cpu"):\n    pass\n',
        ),
        # `enabled=` given: both must hold; an `or` keeps its parentheses
        Invalid(
            HEAD + "def step(model, x, device: torch.device, use_amp):\n"
            '    with torch.amp.autocast(device_type="cuda", enabled=use_amp or force):\n        return model(x)\n',
            HEAD + "def step(model, x, device: torch.device, use_amp):\n"
            '    with torch.amp.autocast(device_type=device.type, enabled=(use_amp or force) and device.type != "cpu"):\n'
            "        return model(x)\n",
            torch_version=(2, 5),
        ),
        # before torch 2.5 autocast raises for "mps": a device that may be one keeps AMP to CUDA,
        # off elsewhere, as the original was
        Invalid(
            HEAD + "def step(model, x, device: torch.device, use_amp):\n"
            '    with torch.amp.autocast(device_type="cuda", enabled=use_amp or force):\n        return model(x)\n',
            HEAD + "def step(model, x, device: torch.device, use_amp):\n"
            '    with torch.amp.autocast(device_type="cuda" if device.type == "cuda" else "cpu", '
            'enabled=(use_amp or force) and device.type == "cuda"):\n'
            "        return model(x)\n",
        ),
        # a string device: `.type` would fail on a str
        Invalid(
            HEAD + 'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
            'scaler = torch.amp.GradScaler("cuda", enabled=use_amp)\n',
            HEAD + 'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
            'scaler = torch.amp.GradScaler(torch.device(device).type, enabled=use_amp and torch.device(device).type != "cpu")\n',
        ),
        # GradScaler() means CUDA; positional arguments after the type become keywords
        Invalid(
            "from torch.amp import GradScaler, autocast\nscaler = GradScaler()\n"
            "with autocast('cuda', torch.bfloat16):\n    pass\n",
            "from torch.amp import GradScaler, autocast\nimport torch\n" + DEVICE
            + 'scaler = GradScaler(device.type, enabled=device.type != "cpu")\n'
            'with autocast(device.type, dtype=torch.bfloat16, enabled=device.type != "cpu"):\n    pass\n',
            count=2,
        ),
        # a device copied from a configuration may be a string ("cuda"), which has no `.type`
        Invalid(
            HEAD + "def train(config, model, x):\n    device = config.device\n    x = x.to(device)\n"
            '    with torch.autocast("cuda"):\n        return model(x)\n',
            HEAD + "def train(config, model, x):\n    device = config.device\n    x = x.to(device)\n"
            '    with torch.autocast("cuda" if torch.device(device).type == "cuda" else "cpu", '
            'enabled=torch.device(device).type == "cuda"):\n        return model(x)\n',
        ),
        # inside forward the input's device is followed; a constant `enabled=False` stays
        Invalid(
            HEAD + "class Net(torch.nn.Module):\n    def forward(self, x):\n"
            '        with torch.autocast("cuda", enabled=False):\n            return x.float() * 2\n',
            HEAD + "class Net(torch.nn.Module):\n    def forward(self, x):\n"
            '        with torch.autocast(x.device.type, enabled=False):\n            return x.float() * 2\n',
            unsafe=True,
            torch_version=(2, 5),
        ),
        # other AMP device_type="cuda" arguments: reported, no fix
        Invalid(HEAD + '@torch.amp.custom_fwd(device_type="cuda")\ndef forward(ctx, x):\n    return x\n'),
        # the type given by position and by keyword (a TypeError either way): reported, no fix
        Invalid(HEAD + 'with torch.amp.autocast(True, device_type="cuda"):\n    pass\n'),
        # a name that may hold autocast (Stable Diffusion's txt2img): reported, no fix
        Invalid(
            "from contextlib import nullcontext\nfrom torch import autocast\n"
            "precision_scope = autocast if opt.precision == 'autocast' else nullcontext\n"
            "with precision_scope('cuda'):\n    pass\n"
        ),
        Invalid("import torch as t\nScaler = t.amp.GradScaler\nscaler = Scaler(device='cuda')\n"),
        # the CUDA-only backend, positional or by keyword; new_group's third parameter
        Invalid(
            "import torch.distributed as dist\ndist.init_process_group('nccl', init_method='env://')\n"
            'group = dist.new_group([0, 1], None, "nccl")\n',
            "import torch.distributed as dist\nimport torch\n"
            "dist.init_process_group('nccl' if torch.cuda.is_available() else 'gloo', init_method='env://')\n"
            'group = dist.new_group([0, 1], None, "nccl" if torch.cuda.is_available() else "gloo")\n',
            count=2,
        ),
        Invalid(
            "import torch\nfrom torch.distributed import init_process_group as init\n"
            'def setup(rank):\n    init(backend="nccl", rank=rank, world_size=2)\n',
            "import torch\nfrom torch.distributed import init_process_group as init\n"
            'def setup(rank):\n    init(backend="nccl" if torch.cuda.is_available() else "gloo", rank=rank, world_size=2)\n',
        ),
        # the CUDA-only backend through a name bound to it on every path to the call: a module
        # constant, a local assigned before it
        Invalid(
            'import torch.distributed as dist\nBACKEND = "nccl"\n\n\ndef setup(rank):\n'
            "    dist.init_process_group(BACKEND, rank=rank, world_size=2)\n\n\ndef local():\n"
            '    backend = "nccl"\n    dist.init_process_group(backend=backend)\n',
            'import torch.distributed as dist\nimport torch\nBACKEND = "nccl"\n\n\ndef setup(rank):\n'
            '    dist.init_process_group(BACKEND if torch.cuda.is_available() else "gloo", rank=rank, world_size=2)\n\n\n'
            'def local():\n    backend = "nccl"\n    dist.init_process_group(backend=backend if torch.cuda.is_available() else "gloo")\n',
            count=2,
        ),
        # a name another module of the project binds to "nccl" (`BACKEND = "nccl"` in
        # dist_config.py), imported: guarded at the call, the name kept (the fix edits this file only)
        Invalid(
            "import torch.distributed as dist\nfrom .dist_config import BACKEND\nimport mypkg.dist_config as conf\n\n\n"
            "def setup(rank):\n    dist.init_process_group(BACKEND, rank=rank, world_size=2)\n"
            "    return dist.new_group([0, 1], backend=conf.BACKEND)\n",
            "import torch.distributed as dist\nfrom .dist_config import BACKEND\nimport mypkg.dist_config as conf\nimport torch\n\n\n"
            'def setup(rank):\n    dist.init_process_group(BACKEND if torch.cuda.is_available() else "gloo", rank=rank, world_size=2)\n'
            '    return dist.new_group([0, 1], backend=conf.BACKEND if torch.cuda.is_available() else "gloo")\n',
            count=2,
            imported=(("BACKEND", '"nccl"'), ("conf.BACKEND", '"nccl"')),
        ),
        # a copy of the imported name, or a function's own import of it (the module's other
        # binding of the name is another variable)
        Invalid(
            'import torch.distributed as dist\nfrom .dist_config import BACKEND\nWORKERS = "gloo"\n\n\n'
            "def setup(rank):\n    backend = BACKEND\n    dist.init_process_group(backend, rank=rank, world_size=2)\n\n\n"
            "def workers():\n    from .dist_config import BACKEND as WORKERS\n    return dist.new_group([0, 1], backend=WORKERS)\n",
            'import torch.distributed as dist\nfrom .dist_config import BACKEND\nimport torch\nWORKERS = "gloo"\n\n\n'
            "def setup(rank):\n    backend = BACKEND\n"
            '    dist.init_process_group(backend if torch.cuda.is_available() else "gloo", rank=rank, world_size=2)\n\n\n'
            "def workers():\n    from .dist_config import BACKEND as WORKERS\n"
            '    return dist.new_group([0, 1], backend=WORKERS if torch.cuda.is_available() else "gloo")\n',
            count=2,
            imported=(("BACKEND", '"nccl"'), ("WORKERS", '"nccl"')),
        ),
        # a backend held in an attribute: the default of the program's own option, or the value the
        # program gives it; a backend the user passes still wins
        Invalid(
            "import argparse\nimport torch.distributed as dist\nparser = argparse.ArgumentParser()\n"
            'parser.add_argument("--backend", default="nccl")\nargs = parser.parse_args()\n'
            "dist.init_process_group(backend=args.backend)\n",
            "import argparse\nimport torch.distributed as dist\nimport torch\nparser = argparse.ArgumentParser()\n"
            'parser.add_argument("--backend", default="nccl" if torch.cuda.is_available() else "gloo")\n'
            "args = parser.parse_args()\ndist.init_process_group(backend=args.backend)\n",
        ),
        Invalid(
            "import torch\n\n\ndef init_distributed_mode(args):\n    torch.cuda.set_device(args.gpu)\n"
            "    args.dist_backend = 'nccl'\n    torch.distributed.init_process_group(backend=args.dist_backend, "
            "init_method=args.dist_url)\n",
            "import torch\n\n\ndef init_distributed_mode(args):\n    torch.cuda.set_device(args.gpu)\n"
            "    args.dist_backend = 'nccl' if torch.cuda.is_available() else 'gloo'\n"
            "    torch.distributed.init_process_group(backend=args.dist_backend, init_method=args.dist_url)\n",
        ),
        # a tensor's device never equals the index-less CUDA device
        Invalid(
            HEAD + 'def move(x):\n    if x.device != torch.device("cuda"):\n        x = x.to("cuda")\n    return x\n'
            "on_gpu = torch.device('cuda') == batch[0].device\n",
            HEAD + 'def move(x):\n    if x.device.type != "cuda":\n        x = x.to("cuda")\n    return x\n'
            "on_gpu = batch[0].device.type == 'cuda'\n",
            count=2,
            unsafe=True,
        ),
        # a mesh of CUDA devices
        Invalid(
            "from torch.distributed.device_mesh import DeviceMesh\nmesh = DeviceMesh.from_group(group, 'cuda')\n",
            "from torch.distributed.device_mesh import DeviceMesh\nimport torch\n"
            "mesh = DeviceMesh.from_group(group, 'cuda' if torch.cuda.is_available() else 'cpu')\n",
        ),
        Invalid(
            "import torch\nfrom torch.distributed.device_mesh import init_device_mesh\n"
            'mesh = init_device_mesh("cuda", (2, 4), mesh_dim_names=("dp", "tp"))\n'
            'flat = torch.distributed.DeviceMesh(device_type="cuda", mesh=[0, 1])\n',
            "import torch\nfrom torch.distributed.device_mesh import init_device_mesh\n"
            'mesh = init_device_mesh("cuda" if torch.cuda.is_available() else "cpu", (2, 4), mesh_dim_names=("dp", "tp"))\n'
            'flat = torch.distributed.DeviceMesh(device_type="cuda" if torch.cuda.is_available() else "cpu", mesh=[0, 1])\n',
            count=2,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qual = imported_qualname(self.ctx.model, node.func, _LAST_NAMES)
        call = AMP_DEVICE_TYPE.get(qual or "")
        if call is not None:
            self._amp(node, call)
            return
        if qual in MESH_DEVICE_TYPE:
            self._mesh(node, MESH_DEVICE_TYPE[qual])
            return
        if qual in PROCESS_GROUP_BACKEND:
            self._backend(node, PROCESS_GROUP_BACKEND[qual])
            return
        if qual is None and isinstance(node.func, cst.Name):
            self._alias(node)
        given = keyword(node, "device_type")
        if given is not None and literal_is(given.value, "cuda") and _amp_api(self.ctx.model.qualname(node.func) or ""):
            self.report(given.value, '`device_type="cuda"` hardcodes CUDA; pass the device type of the device in use')

    # -- torch.distributed: a mesh of "cuda" devices, the "nccl" backend ------------------------

    def _mesh(self, node: cst.Call, position: int) -> None:
        """`init_device_mesh("cuda", ...)`, `DeviceMesh(device_type="cuda", ...)`,
        `DeviceMesh.from_group(group, "cuda")`."""
        value = _argument(node, "device_type", position)
        if value is None or not literal_is(value, "cuda") or self._chosen(node):
            return
        self.report(
            value,
            '`"cuda"` as the mesh\'s device type makes the mesh CUDA-only; use "cpu" where CUDA is missing',
            fix=lambda site: self._guarded(value, "cpu"),
        )

    def _backend(self, node: cst.Call, position: int) -> None:
        """`init_process_group(backend="nccl")`, `new_group(ranks, backend="nccl")`; the backend
        may come through a name bound to `"nccl"` on every path that reaches the call (a module
        constant, a local assigned before it), through a name imported from another module of the
        project that binds it to `"nccl"`, or a copy of one, or be an attribute the program gives
        only `"nccl"` (its own option's default, `args.dist_backend = "nccl"`)."""
        value = _argument(node, "backend", position)
        if value is None or self._chosen(node):
            return
        scope = self.ctx.site(node).scope
        held = self._held(value, scope, node, _HOPS) if isinstance(value, cst.Name) else None
        if literal_is(value, CUDA_BACKEND) or held == "":
            what = f'`{value.value}` holds `"{CUDA_BACKEND}"`: that backend' if held == "" else f'the `"{CUDA_BACKEND}"` backend'  # type: ignore[attr-defined]
            self.report(
                value,
                f'{what} runs on CUDA only; use "{CPU_BACKEND}" where CUDA is missing',
                fix=lambda site: self._guarded(value, CPU_BACKEND),
            )
        elif held is not None or self._imports_cuda_backend(value, scope, node):
            code = self.ctx.code(value)
            source = f"`{code}` holds `{held}`, which is" if held else f"`{code}` is"
            self.report(
                value,
                f'{source} imported from another module of the project and holds `"{CUDA_BACKEND}"`: '
                f'that backend runs on CUDA only; use "{CPU_BACKEND}" where CUDA is missing',
                fix=lambda site: self._kept_name(value),
            )
        else:
            self._backend_setting(value)

    def _held(self, name: cst.Name, scope: Scope, site: cst.CSTNode, hops: int) -> str | None:
        """What makes ``name`` hold `"nccl"` for certain at ``site`` (in ``scope``): ``""`` where
        every binding that can reach it is that literal; the text of the imported name it copies
        (`backend = BACKEND`, devlint.analysis.reaching) where every binding is the literal or a
        copy, made where it holds for certain, of a name imported from another module of the
        project that binds it to `"nccl"` (or of another such local, up to ``hops`` copies away);
        else None."""
        found = reach_of(name.value, scope, site, self.ctx.flows)
        reach = found[1] if found is not None else None
        if reach is None or not reach.bindings or reach.maybe_unbound or reach.unknown or reach.params:
            return None
        if self.ctx.flows.declared_global(name.value):
            return None
        copied = ""
        for value in reach.values:
            if literal_is(value, CUDA_BACKEND):
                continue
            # A copy is an assignment of the scope that binds the name: its value is read there
            # (not a `:=` in a comprehension, whose own names would read otherwise).
            if hops <= 0 or not isinstance(self.ctx.parent(value), (cst.Assign, cst.AnnAssign)):
                return None
            where = found[0]  # type: ignore[index]
            inner = self._held(value, where, value, hops - 1) if isinstance(value, cst.Name) else None
            if inner is None and self._imports_cuda_backend(value, where, value):
                inner = self.ctx.code(value)
            if inner is None:
                return None
            copied = copied or inner
        return copied

    def _imports_cuda_backend(self, value: cst.BaseExpression, scope: Scope, site: cst.CSTNode) -> bool:
        """`BACKEND` after `from .dist_config import BACKEND`, or `dist_config.BACKEND` after
        `import pkg.dist_config as dist_config`, where that module binds `BACKEND = "nccl"` once
        (the run reads it, devlint.run.project_imports): what reaches ``site`` (in ``scope``) on
        every path is an import of the name. That import is the file's one binding of the name, or
        the function's own (`def setup(): from .dist_config import BACKEND`), which a module-level
        binding of the name does not touch."""
        root = value
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name) or self.ctx.flows.declared_global(root.value):
            return False
        found = reach_of(root.value, scope, site, self.ctx.flows)
        if found is None or found[1] is None:
            return False
        where, reach = found
        if where is self.ctx.model.module_scope and len(where.bindings.get(root.value, [])) != 1:
            return False
        imported = all(isinstance(b, Unknown) and isinstance(b.node, (cst.Import, cst.ImportFrom)) for b in reach.bindings)
        reference = dotted_name(value)
        if not reach.bindings or not imported or reference is None:
            return False
        definition = self.ctx.imported_definition(reference)
        for _ in range(_HOPS):
            if definition is None:
                return False
            reader, held = definition
            if literal_is(held, CUDA_BACKEND):
                return True
            definition = reader.definition(held)
        return False

    def _kept_name(self, value: cst.BaseExpression) -> FixPlan:
        """The name is the project's own setting, kept wherever it can run: only where no
        accelerator is present does gloo take its place (the fix edits this file alone)."""
        text = self.ctx.code(value)
        accelerator = self.ctx.settings.device_expression == "accelerator"
        available = AVAILABLE if accelerator else "torch.cuda.is_available()"
        guarded = f'{text} if {available} else "{CPU_BACKEND}"'
        return FixPlan(
            f"Replace {text} with `{guarded}`",
            [Replace(value, guarded)],
            "safe",
            needs_torch=True,
            requires=ACCELERATOR if accelerator else (0, 0),
        )

    def _backend_setting(self, value: cst.BaseExpression) -> None:
        """`args.dist_backend` (`cfg.backend`, any `x.attr`) where every value the file gives that
        attribute is `"nccl"`: the default of the program's own `--dist_backend` option, the
        assignments `args.dist_backend = "nccl"` (mae's `init_distributed_mode`), or both. Each of
        those literals is guarded: on CUDA the attribute holds what it held, without CUDA gloo; a
        value the user passes on the command line still wins. An attribute given anything else
        anywhere in the file (`args.comm = "gloo"`), or `"nccl"` only where a GPU is known, is the
        program's choice per device: not reported."""
        if not isinstance(value, cst.Attribute) or dotted_name(value) is None:
            return
        attribute = value.attr.value
        # Asked once per attribute: every use of it reads the same values and gets the same fix.
        setting = self.ctx.indexed(("backend attribute", attribute), lambda: self._attribute_setting(attribute))
        if setting is None:
            return
        where, plan, below = setting
        if below:
            # A literal the walk had not reached when the attribute was first read is not known
            # to stand under a GPU check: asked again once the whole file is known (``withdraws``).
            self.ctx.indexed("backend attributes set below", dict)[id(value)] = attribute
        self.report(
            value,
            f'`{self.ctx.code(value)}`, {where}, holds `"{CUDA_BACKEND}"`, which runs on CUDA only; '
            f'use "{CPU_BACKEND}" where CUDA is missing',
            fix=lambda site: plan,
        )

    def withdraws(self, report: Report) -> bool:
        attribute = self.ctx.indexed("backend attributes set below", dict).get(id(report.node))
        return attribute is not None and self.ctx.indexed(
            ("backend attribute guarded", attribute),
            lambda: any(under_device_check(self.ctx, held) for held in self._attribute_values(attribute)),
        )

    def _attribute_values(self, attribute: str) -> list[cst.BaseExpression]:
        """The values the file gives ``x.<attribute>``: its assignments, and the default of the
        program's own option of that name."""
        declared, default = self.ctx.model.option_default(attribute)
        given = list(self.ctx.model.attribute_assignments(attribute))
        return [*given, default] if declared and default is not None else given

    def _attribute_setting(self, attribute: str) -> tuple[str, FixPlan, bool] | None:
        """Where ``attribute`` gets its values and the fix guarding them all, when every value the
        file gives it is `"nccl"` outside device checks (an option without a default: the
        command line's); else None. ``bool``: some of those values lie below where the walk is."""
        declared, default = self.ctx.model.option_default(attribute)
        if declared and default is None:
            return None
        given = self._attribute_values(attribute)
        if not given or not all(literal_is(held, CUDA_BACKEND) for held in given):
            return None
        if any(under_device_check(self.ctx, held) for held in given):
            return None
        where = "the program's own option" if declared else "set by the program"
        below = any(self.ctx.parent(held) is None for held in given)
        return where, self._guarded_all(given), below

    def _guarded_all(self, literals: list[cst.BaseExpression]) -> FixPlan:
        """Every literal guarded as ``_guarded`` guards one, in one fix."""
        plans = [self._guarded(literal, CPU_BACKEND) for literal in literals]
        edits = [edit for plan in plans for edit in plan.replacements]
        first = plans[0]
        message = first.message if len(plans) == 1 else f"{first.message} (and {len(plans) - 1} more)"
        return FixPlan(message, edits, "safe", needs_torch=True, requires=first.requires)

    def _chosen(self, node: cst.Call) -> bool:
        """The call runs only where there is a GPU (`if torch.cuda.is_available():`,
        `if device.type == "cuda":`), or is one side of a choice (an `if` with an `else`): the
        program already picks per device."""
        if under_device_check(self.ctx, node):
            return True
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(ancestor, cst.If) and ancestor.orelse is not None:
                return True
        return False

    def _guarded(self, value: cst.BaseExpression, other: str) -> FixPlan:
        text = self.ctx.module.code_for_node(value)
        quote = value.quote[0] if isinstance(value, cst.SimpleString) else '"'
        if self.ctx.settings.device_expression == "accelerator":
            # DEV604 is selected (torch-version >= 2.6): no `torch.cuda.is_available()` it would flag
            if other == "cpu":
                guarded = accelerator_choice("cuda", quote)[0]  # type: ignore[index]
            else:
                guarded = f"torch.distributed.{BACKEND_FOR_DEVICE}({CURRENT} if {AVAILABLE} else {quote}cpu{quote})"
            return FixPlan(
                f"Replace {text} with `{guarded}`", [Replace(value, guarded)], "safe", needs_torch=True, requires=ACCELERATOR
            )
        guarded = f"{text}{GUARD}{quote}{other}{quote}"
        return FixPlan(f"Replace {text} with `{guarded}`", [Replace(value, guarded)], "safe", needs_torch=True)

    # -- a tensor's device compared with torch.device("cuda") -----------------------------------

    def visit_Comparison(self, node: cst.Comparison) -> None:
        """`x.device == torch.device("cuda")` is False for every CUDA tensor: a tensor's device
        carries its index (`cuda:0`), and torch.device compares type and index. The device type
        is what such code asks about."""
        if len(node.comparisons) != 1:
            return
        target = node.comparisons[0]
        if not isinstance(target.operator, (cst.Equal, cst.NotEqual)):
            return
        for held, other in ((node.left, target.comparator), (target.comparator, node.left)):
            if _object_device(held) and self._bare_cuda_device(other):
                self.report(
                    node,
                    'a tensor\'s device carries its index (`cuda:0`) and never equals `torch.device("cuda")`; '
                    'compare `.device.type` with "cuda"',
                    fix=lambda site, held=held, other=other: self._type_comparison(node, held, other),
                )
                return

    def _bare_cuda_device(self, node: cst.BaseExpression) -> bool:
        """`torch.device("cuda")`: no index."""
        if not isinstance(node, cst.Call) or self.ctx.model.qualname(node.func) != "torch.device":
            return False
        return len(node.args) == 1 and node.args[0].keyword is None and literal_is(node.args[0].value, "cuda")

    def _type_comparison(self, node: cst.Comparison, held: cst.BaseExpression, other: cst.Call) -> FixPlan:
        literal = other.args[0].value
        operator = "==" if isinstance(node.comparisons[0].operator, cst.Equal) else "!="
        new = f"{self.ctx.module.code_for_node(held)}.type {operator} {self.ctx.module.code_for_node(literal)}"
        # The original's `==` held for no CUDA tensor (their devices carry an index), its `!=` for every one.
        now = "holds for CUDA tensors" if operator == "==" else "no longer holds for CUDA tensors"
        return FixPlan(
            f"Compare the device type: `{new}` (unsafe: on a CUDA machine the comparison now {now})",
            [Replace(node, new)],
            "unsafe",
        )

    # -- an alias of autocast or GradScaler ------------------------------------------------------

    def _alias(self, node: cst.Call) -> None:
        """`precision_scope = autocast if amp else nullcontext` ... `precision_scope("cuda")`: the
        name may hold torch's autocast (or GradScaler). Reported without a fix: the name may hold
        something else too (`nullcontext` takes no `enabled=`)."""
        func = node.func
        assert isinstance(func, cst.Name)
        if func.value in self.ctx.model.imports:
            return
        held = sorted(q for q in self.ctx.model.qualnames(func) if q in AMP_DEVICE_TYPE)
        if not held or any(a.star for a in node.args):
            return
        call = AMP_DEVICE_TYPE[held[0]]
        value = _argument(node, call.device_parameter or "", 0)
        if value is None or not literal_is(value, "cuda"):
            return
        self.report(
            value,
            f'`{func.value}` may be `{held[0]}`: `"cuda"` as its device type turns AMP off on every other '
            "accelerator; pass the device type in use",
        )

    def _amp(self, node: cst.Call, call: AmpCall) -> None:
        if any(a.star for a in node.args):
            return
        plain = positional(node)
        given = keyword(node, call.device_parameter or "")
        value = given.value if given is not None else plain[0].value if plain else None
        if value is None:
            if call is not SCALER:
                return
            message = "`GradScaler()` without a device scales for CUDA only; pass the device type in use"
        elif literal_is(value, "cuda"):
            message = '`"cuda"` as the device type turns AMP off on every other accelerator; pass the device type in use'
        else:
            return
        if given is not None and plain:
            # the type given twice, at its position and by keyword: the call raises TypeError
            # before the fix as after, and a rewrite would repeat the keyword CPython rejects
            self.report(node, message)
            return
        self.report(node, message, fix=lambda site: self._fix(node, call, site))

    def _fix(self, node: cst.Call, call: AmpCall, site: Site) -> FixPlan:
        kind, on, device = amp_device(self.ctx, site)
        new = amp_fix_text(self.ctx, node, None, call, kind, on)
        unsafe = turns_cpu_autocast_off(node, call)
        return FixPlan(
            f"Use the device type `{kind}`, off where it was off" + (CPU_AUTOCAST_NOTE if unsafe else ""),
            [Replace(node, new)],
            "unsafe" if unsafe else "safe",
            device=device,
            needs_torch=kind.startswith("torch."),
            requires=AMP_DEVICE_ARGUMENT if call is SCALER else (0, 0),
        )


def _argument(node: cst.Call, name: str, position: int) -> cst.BaseExpression | None:
    """The argument given for parameter ``name``, by keyword or at ``position``."""
    given = keyword(node, name)
    if given is not None:
        return given.value
    if any(a.star for a in node.args):
        return None
    plain = positional(node)
    return plain[position].value if len(plain) > position else None


# Objects whose `.device` is often a string or a device the program made itself (`args.device`,
# `self.device`), where `.type` may not exist: their comparisons are left alone.
_CONFIG_OBJECTS = frozenset({"self", "args", "opt", "opts", "config", "cfg", "hparams", "options", "settings"})


def _object_device(node: cst.BaseExpression) -> bool:
    """``x.device``, ``batch[0].device``, ``next(model.parameters()).device``: the device of a
    tensor or module, a torch.device."""
    if not isinstance(node, cst.Attribute) or node.attr.value != "device":
        return False
    base: cst.BaseExpression = node.value
    while isinstance(base, (cst.Attribute, cst.Subscript)):
        base = base.value
    return not (isinstance(base, cst.Name) and base.value in _CONFIG_OBJECTS)
