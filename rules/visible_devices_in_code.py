"""DEV201 visible-devices-in-code: `CUDA_VISIBLE_DEVICES` assigned inside the program."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.semantic import Scope, literal_is
from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Rule
from devlint.rulekit.calls import code_in_place, keyword, method_call
from devlint.torchfacts.names import VISIBLE_DEVICES

_BASE = f"`{VISIBLE_DEVICES}` set in code overrides the GPUs the launcher chose"
_ADVICE = "; set it outside the script, or use `os.environ.setdefault`"
_LATE = ", and torch is already imported here: CUDA may be initialised and ignore it"
_ADVICE_ARGUMENT = (
    "; the value is the program's own argument ({source}): let the launcher set the variable, or "
    "select the GPU from that argument in code (`setdefault` would ignore an explicit choice)"
)
# How deep a name's assignments are followed to find where its value comes from.
_FOLLOW = 3


class VisibleDevicesInCode(Rule):
    code = "DEV201"
    name = "visible-devices-in-code"
    what = (
        f"Flags assignments of `{VISIBLE_DEVICES}` inside the program: `os.environ[\"{VISIBLE_DEVICES}\"] = ...`, "
        f"`os.putenv(\"{VISIBLE_DEVICES}\", ...)`, `os.environ.update(...)`."
    )
    why = (
        "Which GPUs a job may use is the launcher's decision (a scheduler, `torchrun`, a shell "
        f"`{VISIBLE_DEVICES}=1 python train.py`). A script that sets it itself overrides that choice: two jobs "
        "land on the same GPU, or a machine with one GPU gets none. CUDA reads the variable once, "
        "when it initialises; after `import torch` that may already have happened, and the "
        "assignment then silently does nothing. `os.environ.setdefault` keeps a default for "
        "interactive runs and lets the launcher win."
    )
    example = f'import os\nos.environ["{VISIBLE_DEVICES}"] = "0"\nimport torch'
    use_instead = f'import os\nos.environ.setdefault("{VISIBLE_DEVICES}", "0")\nimport torch'
    fix_availability = "unsafe"
    fix_note = (
        f"Unsafe: `os.environ[\"{VISIBLE_DEVICES}\"] = value` becomes `os.environ.setdefault(\"{VISIBLE_DEVICES}\", value)`, "
        "so a value set by the launcher now wins over the script's. Only the plain assignment is fixed; "
        "`putenv` and `update` are reported without a fix, and so is a value that is the program's "
        "own argument (an argparse option, `sys.argv`, a parameter of the enclosing function, or a "
        "name assigned from one): the user chose that GPU explicitly, and `setdefault` would "
        "silently ignore the choice wherever the variable is already set."
    )
    triggers = (VISIBLE_DEVICES,)

    VALID = (
        # the cure: the launcher wins
        f'import os\nos.environ.setdefault("{VISIBLE_DEVICES}", "0")\n',
        # reading it
        f'import os\ngpus = os.environ["{VISIBLE_DEVICES}"]\nalso = os.environ.get("{VISIBLE_DEVICES}", "")\nprint(os.getenv("{VISIBLE_DEVICES}"))\n',
        # another variable, another mapping
        'import os\nos.environ["OMP_NUM_THREADS"] = "1"\n',
        f'settings = {{}}\nsettings["{VISIBLE_DEVICES}"] = "0"\nenv = dict(os.environ)\nenv["{VISIBLE_DEVICES}"] = "1"\n',
        # handing an environment to a child process is how a launcher does it
        f'import os, subprocess\nsubprocess.run(cmd, env={{**os.environ, "{VISIBLE_DEVICES}": "1"}})\n',
        # strings, comments and docstrings
        f'"""Set os.environ["{VISIBLE_DEVICES}"] = "0" before launching."""\n# os.environ["{VISIBLE_DEVICES}"] = "1"\n',
    )
    INVALID = (
        Invalid(
            f'import os\nos.environ["{VISIBLE_DEVICES}"] = "0"\nimport torch\n',
            f'import os\nos.environ.setdefault("{VISIBLE_DEVICES}", "0")\nimport torch\n',
            unsafe=True,
        ),
        # after import torch, via `from os import environ`, under a condition
        Invalid(
            f"import torch\nfrom os import environ\nif fast:\n    environ['{VISIBLE_DEVICES}'] = DEFAULT_GPU  # pick one\n",
            f"import torch\nfrom os import environ\nif fast:\n    environ.setdefault('{VISIBLE_DEVICES}', DEFAULT_GPU)  # pick one\n",
            unsafe=True,
        ),
        Invalid(
            f'import os as system\nGPUS = ["0", "1"]\n\ndef main():\n    system.environ["{VISIBLE_DEVICES}"] = ",".join(GPUS)\n',
            f'import os as system\nGPUS = ["0", "1"]\n\ndef main():\n    system.environ.setdefault("{VISIBLE_DEVICES}", ",".join(GPUS))\n',
            unsafe=True,
        ),
        # the program's own argument: an explicit choice that `setdefault` would ignore
        Invalid(
            "import argparse, os\nparser = argparse.ArgumentParser()\nparser.add_argument('--device', default='0')\n"
            f"args = parser.parse_args()\nos.environ['{VISIBLE_DEVICES}'] = args.device\n"
        ),
        Invalid(f'import os, sys\ngpu = sys.argv[1]\nos.environ["{VISIBLE_DEVICES}"] = gpu\n'),
        Invalid(f'import os\n\ndef main(gpus):\n    os.environ["{VISIBLE_DEVICES}"] = ",".join(gpus)\n'),
        # reported without a fix
        Invalid(f'import os\nos.putenv("{VISIBLE_DEVICES}", "1")\n'),
        Invalid(f'import os\nos.environ.update({{"{VISIBLE_DEVICES}": "1", "A": "b"}})\n'),
        Invalid(f'import os\nos.environ.update({VISIBLE_DEVICES}="1")\n'),
        Invalid(f'import os\nos.environ["{VISIBLE_DEVICES}"] += ",1"\n'),
        Invalid(f'import os\nos.environ["A"] = os.environ["{VISIBLE_DEVICES}"] = "1"\n'),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        targets = [t.target for t in node.targets if self._is_variable_slot(t.target)]
        if not targets:
            return
        target = targets[0]
        fixable = len(node.targets) == 1 and isinstance(target, cst.Subscript)
        source = self._program_argument(node.value, self.ctx.site(node).scope, _FOLLOW)
        self.report(
            node,
            self._message(node, source),
            fix=(lambda site: self._fix(node, target)) if fixable and source is None else None,
            start=target,
        )

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._is_variable_slot(node.target):
            self.report(node, self._message(node), start=node.target)

    def visit_Call(self, node: cst.Call) -> None:
        qualname = self.ctx.model.qualname(node.func)
        if qualname == "os.putenv":
            if node.args and literal_is(node.args[0].value, VISIBLE_DEVICES):
                self.report(node, self._message(node))
            return
        update = method_call(node, "update")
        if update is None or self.ctx.model.qualname(update.value) != "os.environ":
            return
        if keyword(node, VISIBLE_DEVICES) is not None or any(self._dict_sets_variable(a.value) for a in node.args):
            self.report(node, self._message(node))

    # -- helpers -----------------------------------------------------------------------------------

    def _is_variable_slot(self, target: cst.BaseExpression) -> bool:
        """``os.environ["CUDA_VISIBLE_DEVICES"]`` (through any alias of ``os`` or ``environ``)."""
        if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
            return False
        index = target.slice[0].slice
        return (
            isinstance(index, cst.Index)
            and literal_is(index.value, VISIBLE_DEVICES)
            and self.ctx.model.qualname(target.value) == "os.environ"
        )

    @staticmethod
    def _dict_sets_variable(value: cst.BaseExpression) -> bool:
        return isinstance(value, cst.Dict) and any(
            isinstance(e, cst.DictElement) and literal_is(e.key, VISIBLE_DEVICES) for e in value.elements
        )

    def _message(self, node: cst.CSTNode, source: str | None = None) -> str:
        imported = self.ctx.model.torch_imported_at
        late = imported is not None and imported < self.ctx.site(node).order
        advice = _ADVICE if source is None else _ADVICE_ARGUMENT.format(source=source)
        return _BASE + (_LATE if late else "") + advice

    def _program_argument(self, value: cst.CSTNode, scope: Scope, depth: int) -> str | None:
        """What in ``value`` is the program's own input, as the message names it: ``sys.argv``, an
        argparse option (``args.device``), a parameter of the enclosing function, or a name assigned
        from one of them; None when nothing is."""
        if isinstance(value, (cst.Attribute, cst.Name)):
            qualname = self.ctx.model.qualname(value)
            if qualname is not None and (qualname == "sys.argv" or qualname.startswith("sys.argv.")):
                return "`sys.argv`"
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
            if self.ctx.model.option_declarations(value.attr.value):
                return f"the `--{value.attr.value.replace('_', '-')}` option"
        if isinstance(value, cst.Name):
            for _, binding in self.ctx.model.lookup(value.value, scope):
                if binding.kind == "param":
                    return f"the parameter `{value.value}`"
                if binding.kind == "assign" and binding.value is not None and depth > 0:
                    found = self._program_argument(binding.value, scope, depth - 1)
                    if found is not None:
                        return found
            return None
        for child in value.children:
            found = self._program_argument(child, scope, depth)
            if found is not None:
                return found
        return None

    def _fix(self, node: cst.Assign, target: cst.Subscript) -> FixPlan:
        def code(part: cst.CSTNode) -> str:
            return code_in_place(self.ctx, part, part)

        index = target.slice[0].slice
        assert isinstance(index, cst.Index)
        new = f"{code(target.value)}.setdefault({code(index.value)}, {code(node.value)})"
        # setdefault keeps a value already in the environment, where the assignment overwrote it
        return FixPlan(f"Replace with `{new}` (unsafe: a value the launcher set now wins)", [Replace(node, new)], "unsafe")
