"""DEV501 deprecated-cuda-amp: `torch.cuda.amp.autocast`, `torch.cuda.amp.GradScaler`."""

from __future__ import annotations

import libcst as cst

from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Rule, Site
from devlint.rulekit.accelerator import CPU_AUTOCAST_NOTE, amp_device, amp_fix_text, turns_cpu_autocast_off
from devlint.rulekit.calls import imported_qualname
from devlint.torchfacts.names import DEPRECATED_AMP, AmpCall

HEAD = "import torch\n"
# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
OFF = 'enabled=device.type != "cpu"'
# the deprecated autocast's own dtype, written where a call names none
FP16 = "dtype=torch.float16"
_LAST_NAMES = frozenset(name.split(".")[-1] for name in DEPRECATED_AMP)


class DeprecatedCudaAmp(Rule):
    code = "DEV501"
    name = "deprecated-cuda-amp"
    what = "Flags `torch.cuda.amp.autocast(...)` and `torch.cuda.amp.GradScaler(...)`, as calls, `with` items and decorators."
    why = (
        "Both are deprecated since PyTorch 2.4 and warn on every use (`FutureWarning: "
        "torch.cuda.amp.autocast(args...) is deprecated`). `torch.amp.autocast(device_type, ...)` "
        "and `torch.amp.GradScaler(device, ...)` are the same classes with the device made "
        "explicit, so the same code can later name another device."
    )
    example = (
        "scaler = torch.cuda.amp.GradScaler()\nwith torch.cuda.amp.autocast(dtype=torch.bfloat16):\n"
        "    loss = model(x)"
    )
    use_instead = (
        'scaler = torch.amp.GradScaler(device.type, enabled=device.type != "cpu")\n'
        'with torch.amp.autocast(device.type, dtype=torch.bfloat16, enabled=device.type != "cpu"):\n'
        "    loss = model(x)"
    )
    fix_availability = "safe"
    fix_note = (
        "Safe: the `torch.amp` class with the device type written as DEV603 writes it, so the fixed "
        "code is not flagged again: `torch.amp.autocast(device.type, ..., enabled=device.type != "
        '"cpu")`. Every argument is kept (positional autocast arguments become keywords, since the '
        "new signature orders them differently; an existing `enabled=x` becomes `enabled=x and "
        'device.type != "cpu"`). An autocast that names no `dtype` gets `dtype=torch.float16`, '
        "the deprecated class's own default, which it always passed on: `torch.amp.autocast` without "
        "one takes the thread's autocast dtype, which an enclosing `torch.autocast(..., "
        "dtype=torch.bfloat16)` or `torch.set_autocast_dtype` sets. On a CUDA machine the type is "
        '"cuda" and nothing changes; without '
        "CUDA the deprecated classes disabled themselves, and `enabled` keeps them off on the CPU "
        "(CPU autocast would change CPU numerics); an autocast given `enabled=False` is unsafe, as "
        "without CUDA the fixed call turns a CPU autocast around it off inside (DEV603 says why); "
        "below torch-version 2.5 a device that may be another "
        'accelerator gets DEV603\'s `"cuda" if <type> == "cuda" else "cpu"` form, since older autocast '
        'raises for "mps". `torch.amp.GradScaler(device)` needs torch 2.3: below torch-version 2.3 '
        "a GradScaler gets no fix (its message says so; no device-generic scaler exists there), while "
        "autocast, whose `torch.amp` form exists from 1.13, still does. The device is the one in scope; "
        "in a LightningModule's method `self.device`, and where the call's own arguments read one "
        "device's type (`enabled=p.device.type != \"cpu\"`, `enabled=device.type != \"cpu\"`), that device: no second notion beside it; "
        "where none is in scope, an autocast in a function that computes on its tensor input's "
        "device (`device=x.device`) follows `x.device`, and one in a method that moves its data to "
        "`self.device` follows `torch.device(self.device)` (CUDA's where the data is on the GPU; "
        "where it is on the CPU the original did nothing to that work and the fix is off). "
        "The fix is never made in code guarded for a torch older than 2.4. An import from "
        "`torch.cuda.amp` the fixes leave unused goes with them (not in a package's `__init__.py`, "
        "nor a name `__all__` or a string annotation names)."
    )
    # Every finding names `autocast` or `GradScaler` somewhere: the call, its import, or an alias.
    triggers = ("autocast", "GradScaler")
    # From 2.4 on the torch.cuda.amp names warn; a branch for older torch keeps them rightly.
    advice_since = (2, 4)

    VALID = (
        HEAD + 'scaler = torch.amp.GradScaler("cuda")\nwith torch.amp.autocast("cuda", enabled=use_amp):\n    pass\n',
        HEAD + "with torch.autocast(device_type='cuda', dtype=torch.float16):\n    pass\n",
        HEAD + "with torch.cpu.amp.autocast():\n    pass\n",
        # a reference, not a construction
        HEAD + "assert isinstance(scaler, torch.cuda.amp.GradScaler)\n",
        "from apex import amp\nmodel, optimizer = amp.initialize(model, optimizer)\n",
    )
    INVALID = (
        Invalid(
            HEAD + "scaler = torch.cuda.amp.GradScaler()\nwith torch.cuda.amp.autocast():\n    loss = model(x)\n",
            HEAD + DEVICE + f"scaler = torch.amp.GradScaler(device.type, {OFF})\n"
            f"with torch.amp.autocast(device.type, {FP16}, {OFF}):\n    loss = model(x)\n",
            count=2,
        ),
        # in a LightningModule's method the module's own device decides (no second notion); off
        # where the module is not on the GPU, as the CUDA-only original did nothing there
        Invalid(
            "import pytorch_lightning as pl\nimport torch\n\n\nclass Speech(pl.LightningModule):\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        with torch.cuda.amp.autocast(enabled=self.precision == 16):\n            return self.model(batch)\n",
            "import pytorch_lightning as pl\nimport torch\n\n\nclass Speech(pl.LightningModule):\n"
            "    def validation_step(self, batch, batch_idx):\n"
            '        with torch.amp.autocast("cuda" if self.device.type == "cuda" else "cpu", dtype=torch.float16, '
            'enabled=self.precision == 16 and self.device.type == "cuda"):\n            return self.model(batch)\n',
        ),
        # positional autocast arguments become keywords; GradScaler's line up; `enabled` combines
        Invalid(
            HEAD + DEVICE + "scaler = torch.cuda.amp.GradScaler(2.0**10, enabled=use_amp)\n"
            "with torch.cuda.amp.autocast(use_amp, torch.bfloat16):\n    pass\n",
            HEAD + DEVICE + 'scaler = torch.amp.GradScaler(device.type, init_scale=2.0**10, enabled=use_amp and device.type != "cpu")\n'
            'with torch.amp.autocast(device.type, enabled=use_amp and device.type != "cpu", dtype=torch.bfloat16):\n    pass\n',
            count=2,
        ),
        # a trailing comma before the `)` of a rewritten call goes; one before a line break stays
        Invalid(
            HEAD + DEVICE + "scaler = torch.cuda.amp.GradScaler(enabled=use_amp,)\n"
            "with torch.cuda.amp.autocast(enabled=False, ):\n    pass\n"
            "with torch.cuda.amp.autocast(\n    enabled=False,\n):\n    pass\n",
            HEAD + DEVICE + 'scaler = torch.amp.GradScaler(device.type, enabled=use_amp and device.type != "cpu")\n'
            f"with torch.amp.autocast(device.type, {FP16}, enabled=False):\n    pass\n"
            f"with torch.amp.autocast(\n    device.type,\n    {FP16},\n    enabled=False,\n):\n    pass\n",
            count=3,
            # unsafe: without CUDA, an autocast given `enabled=False` turns CPU autocast off inside
            unsafe=True,
        ),
        # imported names and aliases, a decorator
        Invalid(
            "from torch.cuda.amp import autocast, GradScaler as Scaler\n\n@autocast()\ndef forward(x):\n"
            "    return x\n\nscaler = Scaler(enabled=False)\n",
            "import torch\n" + DEVICE + "\n\n"
            f"@torch.amp.autocast(device.type, {FP16}, {OFF})\ndef forward(x):\n    return x\n\n"
            "scaler = torch.amp.GradScaler(device.type, enabled=False)\n",
            count=2,
        ),
        # the import goes with the fixes that leave it unused; a name still read stays
        Invalid(
            HEAD + "from torch.cuda.amp import (\n    autocast,\n    GradScaler,  # isinstance reads it\n)\n\n"
            "with autocast():\n    pass\nassert isinstance(scaler, GradScaler)\n",
            HEAD + "from torch.cuda.amp import (\n    GradScaler,  # isinstance reads it\n)\n" + DEVICE + "\n"
            f"with torch.amp.autocast(device.type, {FP16}, {OFF}):\n    pass\nassert isinstance(scaler, GradScaler)\n",
        ),
        # a call laid out one argument a line keeps that layout
        Invalid(
            "from torch.cuda import amp\n\ndef step(x, device: torch.device):\n    with amp.autocast(\n        dtype=dtype,\n    ):\n"
            "        return x\n",
            "import torch\n\ndef step(x, device: torch.device):\n    with torch.amp.autocast(\n"
            '        device.type,\n        dtype=dtype,\n        enabled=device.type != "cpu",\n    ):\n        return x\n',
            torch_version=(2, 5),
        ),
        # a call whose own arguments read a device's type follows that device (yolov7's AutoShape)
        Invalid(
            "from torch.cuda import amp\n\ndef infer(model, x):\n    p = next(model.parameters())\n"
            "    with amp.autocast(enabled=p.device.type != 'cpu'):\n        return model(x.to(p.device))\n",
            "import torch\n\ndef infer(model, x):\n    p = next(model.parameters())\n"
            "    with torch.amp.autocast(p.device.type, dtype=torch.float16, enabled=p.device.type != 'cpu'):\n"
            "        return model(x.to(p.device))\n",
            torch_version=(2, 9),
        ),
        # ... or the instance's device a method moves its data to (Time-Series-Library's
        # experiments, whose base class in another file sets `self.device`); a scaler keeps the
        # module-level device
        Invalid(
            "import torch\n\nclass Experiment(Base):\n    def vali(self, loader):\n        for x in loader:\n"
            "            x = x.float().to(self.device)\n            with torch.cuda.amp.autocast():\n                y = self.model(x)\n"
            "        return y\n\n    def train(self):\n        return torch.cuda.amp.GradScaler()\n",
            "import torch\n" + DEVICE + "\n\nclass Experiment(Base):\n    def vali(self, loader):\n        for x in loader:\n"
            "            x = x.float().to(self.device)\n            with torch.amp.autocast(torch.device(self.device).type, "
            'dtype=torch.float16, enabled=torch.device(self.device).type != "cpu"):\n                y = self.model(x)\n'
            f"        return y\n\n    def train(self):\n        return torch.amp.GradScaler(device.type, {OFF})\n",
            count=2,
            torch_version=(2, 9),
        ),
        # ... or a device name's type (YOLOP's scaler, whose device comes from its own helper)
        Invalid(
            "from torch.cuda import amp\n\ndef train(cfg):\n    device = select_device(cfg.gpus)\n"
            "    scaler = amp.GradScaler(enabled=device.type != 'cpu')\n",
            "import torch\n\ndef train(cfg):\n    device = select_device(cfg.gpus)\n"
            "    scaler = torch.amp.GradScaler(device.type, enabled=device.type != 'cpu')\n",
            torch_version=(2, 9),
        ),
        # in a function that computes on its tensor input's device, autocast follows that device
        # (Time-Series-Library's wavelet filters); a configuration's `.device`, or a scaler, does not
        Invalid(
            "import torch\n\ndef filtered(x, taps):\n    taps = torch.tensor(taps, device=x.device)\n"
            "    with torch.cuda.amp.autocast():\n        return x * taps\n\n"
            "def step(cfg, batch):\n    batch = batch.to(cfg.device)\n    with torch.cuda.amp.autocast():\n        return batch\n",
            "import torch\n" + DEVICE + "\n\ndef filtered(x, taps):\n    taps = torch.tensor(taps, device=x.device)\n"
            '    with torch.amp.autocast(x.device.type, dtype=torch.float16, enabled=x.device.type != "cpu"):\n        return x * taps\n\n'
            "def step(cfg, batch):\n    batch = batch.to(cfg.device)\n"
            f"    with torch.amp.autocast(device.type, {FP16}, {OFF}):\n        return batch\n",
            count=2,
            torch_version=(2, 9),
        ),
        # below torch 2.3 torch.amp has no GradScaler: the scaler is reported without a fix
        Invalid(HEAD + DEVICE + "scaler = torch.cuda.amp.GradScaler()\n", None, torch_version=(2, 2)),
        # before torch 2.5, autocast raises for "mps": a device that may be one keeps AMP to CUDA
        Invalid(
            "from torch.cuda import amp\n\ndef step(x, device: torch.device):\n    with amp.autocast():\n        return x\n",
            "import torch\n\ndef step(x, device: torch.device):\n"
            '    with torch.amp.autocast("cuda" if device.type == "cuda" else "cpu", dtype=torch.float16, enabled=device.type == "cuda"):\n'
            "        return x\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qual = imported_qualname(self.ctx.model, node.func, _LAST_NAMES)
        if qual not in DEPRECATED_AMP:
            return
        replacement, call = DEPRECATED_AMP[qual]
        old = "torch.cuda.amp." + qual.split(".")[-1]
        given = [a for a in node.args if a.keyword is None]
        fixable = not any(a.star for a in node.args) and len(given) <= len(call.parameters)
        self.report(
            node,
            f"`{old}(...)` is deprecated; use `{replacement}(device.type, ...)`",
            fix=(lambda site: self._fix(node, replacement, call, site)) if fixable else None,
        )

    def _fix(self, node: cst.Call, replacement: str, call: AmpCall, site: Site) -> FixPlan:
        kind, on, device = amp_device(self.ctx, site)
        unsafe = turns_cpu_autocast_off(node, call)
        return FixPlan(
            f"Use `{replacement}({kind}, ...)`, off where it was off" + (CPU_AUTOCAST_NOTE if unsafe else ""),
            [Replace(node, amp_fix_text(self.ctx, node, replacement, call, kind, on, call.dtype))],
            "unsafe" if unsafe else "safe",
            device=device,
            needs_torch=True,
        )
