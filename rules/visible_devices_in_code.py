"""DEV201 visible-devices-in-code: `CUDA_VISIBLE_DEVICES` assigned inside the program."""

from __future__ import annotations

import libcst as cst

from devlint.astutil import code_in_place, keyword, method_call
from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Rule
from devlint.semantic import literal_is

VARIABLE = "CUDA_VISIBLE_DEVICES"
_BASE = f"`{VARIABLE}` set in code overrides the GPUs the launcher chose"
_ADVICE = "; set it outside the script, or use `os.environ.setdefault`"
_LATE = ", and torch is already imported here: CUDA may be initialised and ignore it"


class VisibleDevicesInCode(Rule):
    code = "DEV201"
    name = "visible-devices-in-code"
    what = (
        f"Flags assignments of `{VARIABLE}` inside the program: `os.environ[\"{VARIABLE}\"] = ...`, "
        f"`os.putenv(\"{VARIABLE}\", ...)`, `os.environ.update(...)`."
    )
    why = (
        "Which GPUs a job may use is the launcher's decision (a scheduler, `torchrun`, a shell "
        f"`{VARIABLE}=1 python train.py`). A script that sets it itself overrides that choice: two jobs "
        "land on the same GPU, or a machine with one GPU gets none. CUDA reads the variable once, "
        "when it initialises; after `import torch` that may already have happened, and the "
        "assignment then silently does nothing. `os.environ.setdefault` keeps a default for "
        "interactive runs and lets the launcher win."
    )
    example = f'import os\nos.environ["{VARIABLE}"] = "0"\nimport torch'
    use_instead = f'import os\nos.environ.setdefault("{VARIABLE}", "0")\nimport torch'
    fix_availability = "unsafe"
    fix_note = (
        f"Unsafe: `os.environ[\"{VARIABLE}\"] = value` becomes `os.environ.setdefault(\"{VARIABLE}\", value)`, "
        "so a value set by the launcher now wins over the script's. Only the plain assignment is fixed; "
        "`putenv` and `update` are reported without a fix."
    )
    triggers = (VARIABLE,)

    VALID = (
        # the cure: the launcher wins
        f'import os\nos.environ.setdefault("{VARIABLE}", "0")\n',
        # reading it
        f'import os\ngpus = os.environ["{VARIABLE}"]\nalso = os.environ.get("{VARIABLE}", "")\nprint(os.getenv("{VARIABLE}"))\n',
        # another variable, another mapping
        'import os\nos.environ["OMP_NUM_THREADS"] = "1"\n',
        f'settings = {{}}\nsettings["{VARIABLE}"] = "0"\nenv = dict(os.environ)\nenv["{VARIABLE}"] = "1"\n',
        # handing an environment to a child process is how a launcher does it
        f'import os, subprocess\nsubprocess.run(cmd, env={{**os.environ, "{VARIABLE}": "1"}})\n',
        # strings, comments and docstrings
        f'"""Set os.environ["{VARIABLE}"] = "0" before launching."""\n# os.environ["{VARIABLE}"] = "1"\n',
    )
    INVALID = (
        Invalid(
            f'import os\nos.environ["{VARIABLE}"] = "0"\nimport torch\n',
            f'import os\nos.environ.setdefault("{VARIABLE}", "0")\nimport torch\n',
            unsafe=True,
        ),
        # after import torch, via `from os import environ`, under a condition
        Invalid(
            f"import torch\nfrom os import environ\nif args.gpu:\n    environ['{VARIABLE}'] = args.gpu  # pick one\n",
            f"import torch\nfrom os import environ\nif args.gpu:\n    environ.setdefault('{VARIABLE}', args.gpu)  # pick one\n",
            unsafe=True,
        ),
        Invalid(
            f'import os as system\n\ndef main(gpus):\n    system.environ["{VARIABLE}"] = ",".join(gpus)\n',
            f'import os as system\n\ndef main(gpus):\n    system.environ.setdefault("{VARIABLE}", ",".join(gpus))\n',
            unsafe=True,
        ),
        # reported without a fix
        Invalid(f'import os\nos.putenv("{VARIABLE}", "1")\n'),
        Invalid(f'import os\nos.environ.update({{"{VARIABLE}": "1", "A": "b"}})\n'),
        Invalid(f'import os\nos.environ.update({VARIABLE}="1")\n'),
        Invalid(f'import os\nos.environ["{VARIABLE}"] += ",1"\n'),
        Invalid(f'import os\nos.environ["A"] = os.environ["{VARIABLE}"] = "1"\n'),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        targets = [t.target for t in node.targets if self._is_variable_slot(t.target)]
        if not targets:
            return
        target = targets[0]
        fixable = len(node.targets) == 1 and isinstance(target, cst.Subscript)
        self.report(
            node,
            self._message(node),
            fix=(lambda site: self._fix(node, target)) if fixable else None,
            start=target,
        )

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._is_variable_slot(node.target):
            self.report(node, self._message(node), start=node.target)

    def visit_Call(self, node: cst.Call) -> None:
        qualname = self.ctx.model.qualname(node.func)
        if qualname == "os.putenv":
            if node.args and literal_is(node.args[0].value, VARIABLE):
                self.report(node, self._message(node))
            return
        update = method_call(node, "update")
        if update is None or self.ctx.model.qualname(update.value) != "os.environ":
            return
        if keyword(node, VARIABLE) is not None or any(self._dict_sets_variable(a.value) for a in node.args):
            self.report(node, self._message(node))

    # -- helpers -----------------------------------------------------------------------------------

    def _is_variable_slot(self, target: cst.BaseExpression) -> bool:
        """``os.environ["CUDA_VISIBLE_DEVICES"]`` (through any alias of ``os`` or ``environ``)."""
        if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
            return False
        index = target.slice[0].slice
        return (
            isinstance(index, cst.Index)
            and literal_is(index.value, VARIABLE)
            and self.ctx.model.qualname(target.value) == "os.environ"
        )

    @staticmethod
    def _dict_sets_variable(value: cst.BaseExpression) -> bool:
        return isinstance(value, cst.Dict) and any(
            isinstance(e, cst.DictElement) and literal_is(e.key, VARIABLE) for e in value.elements
        )

    def _message(self, node: cst.CSTNode) -> str:
        imported = self.ctx.model.torch_imported_at
        late = imported is not None and imported < self.ctx.site(node).order
        return _BASE + (_LATE if late else "") + _ADVICE

    def _fix(self, node: cst.Assign, target: cst.Subscript) -> FixPlan:
        def code(part: cst.CSTNode) -> str:
            return code_in_place(self.ctx, part, part)

        index = target.slice[0].slice
        assert isinstance(index, cst.Index)
        new = f"{code(target.value)}.setdefault({code(index.value)}, {code(node.value)})"
        return FixPlan(f"Replace with `{new}`", [Replace(node, new)], "unsafe")
