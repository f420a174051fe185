"""DEV603 cuda-device-type: `"cuda"` as a device *type* (autocast, `device_type=`, GradScaler)."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.semantic import literal_is
from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Rule, Site
from devlint.rulekit.accelerator import AMP_DEVICE_ARGUMENT, amp_device, amp_fix_text
from devlint.rulekit.calls import imported_qualname, keyword, positional
from devlint.torchfacts.names import AMP_DEVICE_TYPE, AMP_MODULES, SCALER, AmpCall

HEAD = "import torch\n"
# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
_LAST_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in AMP_DEVICE_TYPE)


def _amp_api(qualname: str) -> bool:
    return qualname.startswith(AMP_MODULES)


class CudaDeviceType(Rule):
    code = "DEV603"
    name = "cuda-device-type"
    what = (
        '`"cuda"` written as a device *type*: `torch.autocast("cuda")`, `torch.amp.autocast("cuda")`, '
        '`device_type="cuda"` in any torch call, `torch.amp.GradScaler("cuda")`, and '
        '`torch.amp.GradScaler()` with no device, which means CUDA.'
    )
    why = (
        "Autocast and gradient scaling exist for every accelerator (`torch.autocast(\"xpu\")`, "
        "`torch.amp.GradScaler(\"mps\")`), but a hardcoded `\"cuda\"` turns them off everywhere "
        "else: on Apple, Intel or AMD-via-other-backends the model silently trains in full precision, "
        'with a warning ("CUDA is not available. Disabling") on every step. Take the type from the '
        "device the program runs on."
    )
    example = (
        'scaler = torch.amp.GradScaler()\nwith torch.autocast("cuda", dtype=torch.float16):\n    loss = model(x)'
    )
    use_instead = (
        'scaler = torch.amp.GradScaler(device.type, enabled=device.type != "cpu")\n'
        'with torch.autocast(device.type, dtype=torch.float16, enabled=device.type != "cpu"):\n'
        "    loss = model(x)"
    )
    fix_availability = "safe"
    fix_note = (
        'Safe: the device type becomes the device in scope\'s `.type` (`torch.device(d).type` when '
        '`d` may be a string), and `enabled=` gets `and <type> != "cpu"`. On a CUDA machine the '
        'type is "cuda" and `enabled` is what it was, so nothing changes. Without CUDA the original '
        'disabled itself (autocast: "User provided device_type of \'cuda\', but CUDA is not '
        'available. Disabling"; GradScaler likewise): the fix keeps it off on the CPU, because '
        "`device.type` alone would switch CPU autocast on and change CPU numerics "
        "(tests/test_dev6_semantics.py checks both on this CPU build). On another accelerator it "
        "now turns on, which is the point, from torch 2.5: before it, autocast and GradScaler raise "
        'for a device type such as "mps" where the original only disabled itself, so with '
        'torch-version below 2.5 a device that may be another accelerator (a parameter, `x.device`) '
        'gets `"cuda" if <type> == "cuda" else "cpu"` and `enabled=... and <type> == "cuda"`: on, '
        "exactly where the original was. `torch.amp.GradScaler(device)` needs torch 2.3 "
        "(docs: torch.amp.GradScaler). Other `device_type=\"cuda\"` arguments (`custom_fwd`, "
        "`is_autocast_enabled`) are reported without a fix: what they do on the CPU depends on "
        "autocast state elsewhere in the program."
    )
    triggers = ("cuda", "GradScaler")
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
    )
    INVALID = (
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
        # inside forward the input's device is followed; a constant `enabled=False` stays
        Invalid(
            HEAD + "class Net(torch.nn.Module):\n    def forward(self, x):\n"
            '        with torch.autocast("cuda", enabled=False):\n            return x.float() * 2\n',
            HEAD + "class Net(torch.nn.Module):\n    def forward(self, x):\n"
            '        with torch.autocast(x.device.type, enabled=False):\n            return x.float() * 2\n',
            torch_version=(2, 5),
        ),
        # other AMP device_type="cuda" arguments: reported, no fix
        Invalid(HEAD + '@torch.amp.custom_fwd(device_type="cuda")\ndef forward(ctx, x):\n    return x\n'),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qual = imported_qualname(self.ctx.model, node.func, _LAST_NAMES)
        call = AMP_DEVICE_TYPE.get(qual or "")
        if call is not None:
            self._amp(node, call)
            return
        given = keyword(node, "device_type")
        if given is not None and literal_is(given.value, "cuda") and _amp_api(self.ctx.model.qualname(node.func) or ""):
            self.report(given.value, '`device_type="cuda"` hardcodes CUDA; pass the device type of the device in use')

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
        self.report(node, message, fix=lambda site: self._fix(node, call, site))

    def _fix(self, node: cst.Call, call: AmpCall, site: Site) -> FixPlan:
        kind, on, device = amp_device(self.ctx, site)
        new = amp_fix_text(self.ctx, node, None, call, kind, on)
        return FixPlan(
            f"Use the device type `{kind}`, off where it was off",
            [Replace(node, new)],
            "safe",
            device=device,
            needs_torch=kind.startswith("torch."),
            requires=AMP_DEVICE_ARGUMENT if call is SCALER else (0, 0),
        )
