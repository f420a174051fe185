"""DEV201 visible-devices-in-code: `CUDA_VISIBLE_DEVICES` assigned inside the program."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.devices import reach_of
from devlint.analysis.semantic import Scope, literal_is, string_value
from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Rule, RuleContext, Site
from devlint.rulekit.calls import code_in_place, keyword, method_call
from devlint.torchfacts.names import VISIBLE_DEVICES

_BASE = f"`{VISIBLE_DEVICES}` set in code overrides the GPUs the launcher chose"
_ADVICE = "; set it outside the script, or use `os.environ.setdefault`"
_LATE = ", and torch is already imported here: CUDA may be initialised and ignore it"
_ADVICE_LOOP = (
    "; set it outside the script, or give each job its own environment "
    "(`subprocess.run(..., env={**os.environ, ...})`): in a loop `setdefault` would keep the first value"
)
_ADVICE_ARGUMENT = (
    "; the value is the program's own argument ({source}): let the launcher set the variable, or "
    "select the GPU from that argument in code (`setdefault` would ignore an explicit choice)"
)
# How deep a name's assignments are followed to find where its value comes from.
_FOLLOW = 3
# Parsers' methods that return the options of the command line (argparse's, and the parsers
# built on it).
_PARSED = frozenset({"parse_args", "parse_known_args"})


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
        "own argument (an argparse option, an attribute of what `parse_args()` returned, `sys.argv`, a parameter of the enclosing function, or a "
        "name assigned from one): the user chose that GPU explicitly, and `setdefault` would "
        "silently ignore the choice wherever the variable is already set. Nor is an assignment "
        "in a loop of a value that may change between iterations, or one after the same function "
        "already set the variable (restoring it in `finally`): `setdefault` would keep the value "
        "already there."
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
        # ... also an option another module declares, read from what `parse_args()` returned
        Invalid(
            "import argparse, os\nfrom .options import add_model_args\n\ndef main():\n    parser = argparse.ArgumentParser()\n"
            f"    add_model_args(parser)\n    args = parser.parse_args()\n    os.environ['{VISIBLE_DEVICES}'] = args.gpus\n"
        ),
        Invalid(f'import os, sys\ngpu = sys.argv[1]\nos.environ["{VISIBLE_DEVICES}"] = gpu\n'),
        Invalid(f'import os\n\ndef main(gpus):\n    os.environ["{VISIBLE_DEVICES}"] = ",".join(gpus)\n'),
        # reported without a fix
        Invalid(f'import os\nfor gpu in ("0", "1"):\n    os.environ["{VISIBLE_DEVICES}"] = gpu\n    run()\n'),
        Invalid(f'import os\nos.putenv("{VISIBLE_DEVICES}", "1")\n'),
        Invalid(f'import os\nos.environ.update({{"{VISIBLE_DEVICES}": "1", "A": "b"}})\n'),
        Invalid(f'import os\nos.environ.update({VISIBLE_DEVICES}="1")\n'),
        Invalid(f'import os\nos.environ["{VISIBLE_DEVICES}"] += ",1"\n'),
        Invalid(f'import os\nos.environ["A"] = os.environ["{VISIBLE_DEVICES}"] = "1"\n'),
    )

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        # each assignment, and whether code of its function (or of the module) set the variable
        # above it: it is in the environment there, and `setdefault` would not change it (a
        # restore in `finally` would be lost)
        self._assignments: list[tuple[cst.Assign, cst.BaseExpression, Site, bool]] = []
        self._setting: set[int] = set()
        self._sources: dict[tuple[int, int], str | None] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        targets = [t.target for t in node.targets if self._is_variable_slot(t.target)]
        if targets:
            # Where the value comes from is asked after the walk, when every binding that may
            # reach it is known (a function reads the module's names as they end up).
            self._assignments.append((node, targets[0], self.ctx.site(node), self._sets_variable()))

    def finish(self) -> None:
        for node, target, site, set_above in self._assignments:
            looped = self._changes_in_a_loop(node)
            fixable = len(node.targets) == 1 and isinstance(target, cst.Subscript) and not looped and not set_above
            source = self._program_argument(node.value, site.scope, site.order, _FOLLOW)
            self.report(
                node,
                self._message(site, source, looped),
                fix=(lambda _site, node=node, target=target: self._fix(node, target)) if fixable and source is None else None,
                start=target,
                site=site,
            )

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._is_variable_slot(node.target):
            self._sets_variable()
            self.report(node, self._message(self.ctx.site(node)), start=node.target)

    def visit_Call(self, node: cst.Call) -> None:
        setdefault = method_call(node, "setdefault")
        if (
            setdefault is not None and node.args and literal_is(node.args[0].value, VISIBLE_DEVICES)
            and self.ctx.model.qualname(setdefault.value) == "os.environ"
        ):
            self._sets_variable()  # what this rule's own fix writes: a second round sees it
            return
        qualname = self.ctx.model.qualname(node.func)
        if qualname == "os.putenv":
            if node.args and literal_is(node.args[0].value, VISIBLE_DEVICES):
                self.report(node, self._message(self.ctx.site(node)))
            return
        update = method_call(node, "update")
        if update is None or self.ctx.model.qualname(update.value) != "os.environ":
            return
        if keyword(node, VISIBLE_DEVICES) is not None or any(self._dict_sets_variable(a.value) for a in node.args):
            self._sets_variable()
            self.report(node, self._message(self.ctx.site(node)))

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

    def _sets_variable(self) -> bool:
        """Code of the walk's function (or the module) sets the variable here; whether some did
        above already."""
        function = self.ctx.model.scope.function_scope() or self.ctx.model.module_scope
        above = id(function.node) in self._setting
        self._setting.add(id(function.node))
        return above

    def _changes_in_a_loop(self, node: cst.Assign) -> bool:
        """Run again and again with a value that may differ (not one string): ``setdefault``
        would keep the first iteration's value for all the others, launcher or not."""
        if string_value(node.value) is not None:
            return False
        child: cst.CSTNode = node
        for parent in self.ctx.ancestors(node):
            if isinstance(parent, (cst.For, cst.While)) and child is parent.body:
                return True
            if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            child = parent
        return False

    def _message(self, site: Site, source: str | None = None, looped: bool = False) -> str:
        imported = self.ctx.model.torch_imported_at
        late = imported is not None and imported < site.order
        if source is not None:
            advice = _ADVICE_ARGUMENT.format(source=source)
        else:
            advice = _ADVICE_LOOP if looped else _ADVICE
        return _BASE + (_LATE if late else "") + advice

    def _program_argument(self, value: cst.CSTNode, scope: Scope, order: int, depth: int) -> str | None:
        """What in ``value`` is the program's own input, as the message names it: ``sys.argv``, an
        argparse option (``args.device``), a parameter of the enclosing function, or a name
        assigned from one of them (followed ``depth`` assignments deep); None when nothing is.
        ``order``: the walk's order of the statement holding ``value``. Each value is read once
        per depth, however many assignments reach it."""
        key = (id(value), depth)
        if key not in self._sources:
            self._sources[key] = self._read_source(value, scope, order, depth)
        return self._sources[key]

    def _read_source(self, value: cst.CSTNode, scope: Scope, order: int, depth: int) -> str | None:
        if isinstance(value, (cst.Attribute, cst.Name)):
            qualname = self.ctx.model.qualname(value)
            if qualname is not None and (qualname == "sys.argv" or qualname.startswith("sys.argv.")):
                return "`sys.argv`"
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
            if self.ctx.model.option_declarations(value.attr.value):
                return f"the `--{value.attr.value.replace('_', '-')}` option"
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _PARSED:
            # argparse's namespace, whose options may be declared in another module
            return f"what `{value.func.attr.value}()` read from the command line"
        if isinstance(value, cst.Name):
            if scope.kind == "class" and value.value in scope.bindings:
                return self._class_source(value, scope, order, depth)
            return self._name_source(value, scope, depth)
        for child in value.children:
            found = self._program_argument(child, scope, order, depth)
            if found is not None:
                return found
        return None

    def _name_source(self, name: cst.Name, scope: Scope, depth: int) -> str | None:
        """The source of the values ``name`` may hold where it is read (its reaching definitions):
        an assignment's before the parameter's, as the parameter is bound before them."""
        found = reach_of(name.value, scope, name, self.ctx.flows)
        if found is None:
            return None
        bound_in, reach = found
        if reach is None:  # a lambda's own name: one of its parameters
            params = [b for b in bound_in.bindings.get(name.value, []) if b.kind == "param"]
            return f"the parameter `{name.value}`" if params else None
        if depth > 0:
            orders = self._assignment_orders(bound_in, name.value)
            named: list[tuple[int, str]] = []
            for value in reach.values:
                order = orders.get(id(value), -1)
                source = self._program_argument(value, bound_in, order, depth - 1)
                if source is not None:
                    named.append((order, source))
            if named:
                # the latest assignment's; the values no assignment of that scope records (a `:=`
                # in a comprehension) after them, in the order of what they name
                return max(named)[1]
        if reach.params:
            return f"the parameter `{name.value}`"
        return None

    def _class_source(self, name: cst.Name, scope: Scope, order: int, depth: int) -> str | None:
        """A class body runs in place: the name holds its latest binding above."""
        binding = next(scope.before(name.value, order), None)
        if binding is None or binding.value is None or depth == 0:
            return None
        return self._program_argument(binding.value, scope, binding.order, depth - 1)

    def _assignment_orders(self, scope: Scope, name: str) -> dict[int, int]:
        """The walk's order of each value assigned to ``name`` in ``scope``."""
        bindings = scope.bindings.get(name, [])
        return self.ctx.indexed(("assignment orders", id(scope), name), lambda: {id(b.value): b.order for b in bindings if b.value is not None})

    def _fix(self, node: cst.Assign, target: cst.Subscript) -> FixPlan:
        def code(part: cst.CSTNode) -> str:
            return code_in_place(self.ctx, part, part)

        index = target.slice[0].slice
        assert isinstance(index, cst.Index)
        new = f"{code(target.value)}.setdefault({code(index.value)}, {code(node.value)})"
        # setdefault keeps a value already in the environment, where the assignment overwrote it
        return FixPlan(f"Replace with `{new}` (unsafe: a value the launcher set now wins)", [Replace(node, new)], "unsafe")
