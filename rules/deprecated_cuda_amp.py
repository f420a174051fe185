"""DEV501 deprecated-cuda-amp: `torch.cuda.amp.autocast`, `torch.cuda.amp.GradScaler`."""

from __future__ import annotations

import libcst as cst

from devlint.astutil import arg, code_in_place, imported_qualname, prepend_arg
from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Rule

HEAD = "import torch\n"
# deprecated name -> (replacement, the old positional parameters when they do not line up with the new ones)
_REPLACEMENTS: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "torch.cuda.amp.autocast": ("torch.amp.autocast", ("enabled", "dtype", "cache_enabled")),
    "torch.cuda.amp.autocast_mode.autocast": ("torch.amp.autocast", ("enabled", "dtype", "cache_enabled")),
    # GradScaler(init_scale, growth_factor, ...) lines up with GradScaler(device, init_scale, ...)
    "torch.cuda.amp.GradScaler": ("torch.amp.GradScaler", None),
    "torch.cuda.amp.grad_scaler.GradScaler": ("torch.amp.GradScaler", None),
}
_LAST_NAMES = frozenset(name.split(".")[-1] for name in _REPLACEMENTS)


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
        'scaler = torch.amp.GradScaler("cuda")\nwith torch.amp.autocast("cuda", dtype=torch.bfloat16):\n'
        "    loss = model(x)"
    )
    fix_availability = "safe"
    fix_note = (
        'Safe: `torch.amp.autocast("cuda", ...)` and `torch.amp.GradScaler("cuda", ...)` keep every '
        "argument (positional autocast arguments become keywords, since the new signature orders them "
        "differently); without CUDA both disable themselves exactly as before. The fix keeps "
        '"cuda" on purpose: `device.type` instead would switch on CPU autocast, which changes CPU '
        "numerics. An import from `torch.cuda.amp` that becomes unused is left for your import linter."
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
            HEAD + 'scaler = torch.amp.GradScaler("cuda")\nwith torch.amp.autocast("cuda"):\n    loss = model(x)\n',
            count=2,
        ),
        # positional autocast arguments become keywords; GradScaler's line up
        Invalid(
            HEAD + "scaler = torch.cuda.amp.GradScaler(2.0**10, enabled=use_amp)\n"
            "with torch.cuda.amp.autocast(use_amp, torch.bfloat16):\n    pass\n",
            HEAD + 'scaler = torch.amp.GradScaler("cuda", 2.0**10, enabled=use_amp)\n'
            'with torch.amp.autocast("cuda", enabled=use_amp, dtype=torch.bfloat16):\n    pass\n',
            count=2,
        ),
        # imported names and aliases, a decorator
        Invalid(
            "from torch.cuda.amp import autocast, GradScaler as Scaler\n\n@autocast()\ndef forward(x):\n"
            "    return x\n\nscaler = Scaler(enabled=False)\n",
            "from torch.cuda.amp import autocast, GradScaler as Scaler\nimport torch\n\n"
            '@torch.amp.autocast("cuda")\ndef forward(x):\n    return x\n\n'
            'scaler = torch.amp.GradScaler("cuda", enabled=False)\n',
            count=2,
        ),
        Invalid(
            "from torch.cuda import amp\n\ndef step(x):\n    with amp.autocast(\n        dtype=dtype,\n    ):\n"
            "        return x\n",
            "from torch.cuda import amp\nimport torch\n\ndef step(x):\n    with torch.amp.autocast(\n"
            '        "cuda",\n        dtype=dtype,\n    ):\n        return x\n',
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qual = imported_qualname(self.ctx.model, node.func, _LAST_NAMES)
        if qual not in _REPLACEMENTS:
            return
        replacement, positions = _REPLACEMENTS[qual]
        old = "torch.cuda.amp." + qual.split(".")[-1]
        given = [a for a in node.args if a.keyword is None]
        fixable = not any(a.star for a in node.args) and (positions is None or len(given) <= len(positions))
        self.report(
            node,
            f"`{old}(...)` is deprecated; use `{replacement}(\"cuda\", ...)`",
            fix=(lambda site: self._fix(node, replacement, positions)) if fixable else None,
        )

    def _fix(self, node: cst.Call, replacement: str, positions: tuple[str, ...] | None) -> FixPlan:
        args = list(node.args)
        if positions is not None:
            args = [_as_keyword(a, positions[i]) if a.keyword is None else a for i, a in enumerate(args)]
        new = node.with_changes(func=cst.parse_expression(replacement), args=args)
        new = prepend_arg(new, arg('"cuda"'))
        return FixPlan(
            f'Use `{replacement}("cuda", ...)`',
            [Replace(node, code_in_place(self.ctx, node, new))],
            "safe",
            needs_torch=True,
        )


def _as_keyword(argument: cst.Arg, name: str) -> cst.Arg:
    return argument.with_changes(
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
