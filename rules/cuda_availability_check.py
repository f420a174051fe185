"""DEV604 cuda-availability-check (on by default from torch-version 2.6): `torch.cuda.is_available()`
choosing a device or guarding device code."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.devices import ACCELERATOR_EXPRESSION, is_cuda_string
from devlint.analysis.semantic import string_value
from devlint.analysis.tree import descendants
from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Rule, RuleContext
from devlint.rulekit.guards import checked_block
from devlint.rulekit.value_flow import is_dataloader_call
from devlint.rulekit.accelerator import (
    ACCELERATOR,
    AVAILABLE,
    accelerator_form,
    accelerator_fstring,
    conditional_in_place,
    guards_cuda_code,
    second_gpu,
)
from devlint.torchfacts.names import MOVES

HEAD = "import torch\n"
_CHECK = "torch.cuda.is_available"
# Guard blocks of the examples that join, or must not.
_SYNC = "if torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n"
_FAST = "if torch.accelerator.is_available():\n    torch.backends.cudnn.benchmark = True\n"
_FAST_CUDA = _FAST.replace("accelerator", "cuda", 1)
_CUDA_HEAD = "if torch.cuda.is_available():\n"
_HALF_BODY = "    model = model.half()\n"
_HALF = "if torch.accelerator.is_available():\n" + _HALF_BODY
_HALF_CUDA = _CUDA_HEAD + _HALF_BODY


class CudaAvailabilityCheck(Rule):
    code = "DEV604"
    name = "cuda-availability-check"
    what = (
        '`torch.cuda.is_available()` choosing a device (`"cuda" if torch.cuda.is_available() else '
        '"cpu"`, `torch.device(...)` of that, `f"cuda:{rank}"` too), guarding device code '
        "(`if torch.cuda.is_available():`), or as a DataLoader's `pin_memory=`. "
        "On by default where torch-version is 2.6 or newer; below, opt-in with `extend-select` "
        "(it reports nothing there)."
    )
    why = (
        "The check only knows CUDA: on Apple MPS, Intel XPU or Ascend NPU the program picks the CPU "
        "and skips its accelerator code. `torch.accelerator.is_available()` and "
        "`torch.accelerator.current_accelerator()` (torch 2.6+) answer for whatever accelerator "
        "there is. Whenever this rule is selected (by default from torch-version 2.6), the device "
        "definitions fixes insert use the accelerator form, so fixing never creates a finding of it."
    )
    example = (
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "if torch.cuda.is_available():\n    model = model.half()"
    )
    use_instead = (
        "device = " + ACCELERATOR_EXPRESSION + "\nif torch.accelerator.is_available():\n    model = model.half()"
    )
    fix_availability = "sometimes"
    fix_note = (
        "Needs torch-version >= 2.6 (torch.accelerator): a project that must still run on an older "
        "torch has nothing to move to, so below 2.6 the rule reports nothing, as for code in a "
        "branch guarded for an older torch. Safe: `torch.device(\"cuda\" if torch.cuda.is_available() "
        'else "cpu")` becomes `torch.accelerator.current_accelerator() if '
        'torch.accelerator.is_available() else torch.device("cpu")`: on a CUDA machine the '
        "accelerator is CUDA and `current_accelerator()` is `device(type='cuda')`, the same device; "
        "without an accelerator both pick the CPU. A string choice keeps its type "
        '(`torch.accelerator.current_accelerator().type`, "cuda" on a CUDA machine). The accelerator '
        "is only asked for under the check that it exists, so the 2.6 behaviour of "
        "`current_accelerator()` (raising without one) never shows. An `if` guard is rewritten only "
        "when it has no `else`/`elif` (often a chain over backends) and neither the rest of its "
        "test, its block, nor, after an early exit, the code that follows names CUDA: on another "
        "accelerator that code now runs, and CUDA-only code there would fail; otherwise it is "
        "reported without a fix (fix that code with the other DEV rules first). "
        "Such a guard right after an identical `if torch.accelerator.is_available():` block (the "
        "user's, or one rewritten in the same run) drops its header line and continues that "
        "block; right before one, it takes that block's header away. One check where there were "
        "two is exact, and the fix stays safe, only where the blocks are next to each other (no blank or "
        "comment line between, no comment on the dropped header, none ending the first block), neither "
        "has an `else`, both are in the file's indentation, the first does not end in "
        "`return`/`raise`/`continue`/`break` (the joined code would be unreachable), and it cannot change the check's answer: "
        "it imports nothing (an extension such as torch_npu registers a backend, which "
        "`torch.accelerator` puts before CUDA), writes no module's state (`os.environ`, which "
        "`PYTORCH_NVML_BASED_CUDA_CHECK=1` makes CUDA's count read on every call before CUDA "
        "starts; `torch` itself), neither yields nor awaits, defines nothing, and calls only "
        "torch's public functions (not those loading code) and plain builtins, not the program's "
        "own code; otherwise both checks stay. A choice whose "
        "test asks more of CUDA (`torch.version.cuda`, its capability) has no fix either. A GPU index is kept: `\"cuda:1\"` becomes "
        "`f\"{torch.accelerator.current_accelerator().type}:1\"`, \"cuda:1\" on a CUDA machine; that fix "
        "is unsafe for an index above 0, which an accelerator with one device (Apple's MPS) lacks "
        "where the original chose the CPU. `DataLoader(..., pin_memory=torch.cuda.is_available())` "
        "becomes `pin_memory=torch.accelerator.is_available()`, safe: from torch 2.6 a DataLoader "
        "pins for the current accelerator (pytorch#131858); both are True on a CUDA machine and "
        "False without an accelerator, and pinning changes no value (on MPS the DataLoader turns it "
        "off itself, with a warning). The f-string choice is unsafe too: `f\"cuda:{rank}\"`, which becomes "
        "`f\"{torch.accelerator.current_accelerator().type}:{rank}\"` (the same string on a CUDA "
        "machine), since its index is not known. A guard gets no fix where another check in its "
        "function, or, for a guard that moves or makes data on a device, in the module's own code "
        "(which runs the file's functions and classes), stays CUDA's (reported without a fix, kept in a name, handed to a library, or not a choice of "
        "device): on another accelerator the two would disagree (a logger that adds a field under "
        "one check and fills it under the other; a mask moved to the accelerator for a model kept "
        "on the CPU). A check in a `map_location=` argument keeps nothing: it says where `torch.load` "
        "puts tensors saved on a GPU."
    )
    triggers = ("is_available",)
    default_enabled = False
    # Where torch.accelerator exists the goal is accelerator-generic code: on by default there.
    default_since = ACCELERATOR
    advice_since = ACCELERATOR

    VALID = (
        HEAD + "device = " + ACCELERATOR_EXPRESSION + "\n",
        HEAD + "if torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n",
        # not a DataLoader's flag: a tensor factory pins for CUDA by its own rules
        HEAD + "buf = torch.empty(4, pin_memory=torch.cuda.is_available())\n",
        # below torch-version 2.6 there is no torch.accelerator to move to
        HEAD + 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
        # another library's check
        "from numba import cuda\nif cuda.is_available():\n    pass\n",
        # an f-string chosen by the program's own flag, or naming no CUDA device
        HEAD + 'dev = f"cuda:{rank}" if use_gpu else "cpu"\nname = f"run:{rank}" if torch.cuda.is_available() else "cpu"\n',
    )
    INVALID = (
        # a check the module's code keeps (handed to a library) holds every guard of the file
        # (pytorch-grad-cam: the mask would reach the accelerator, the model stay on the CPU)
        Invalid(
            HEAD + "class Target:\n    def __init__(self, mask):\n        self.mask = mask\n"
            "        if torch.cuda.is_available():\n            self.mask = self.mask.to(device)\n\n"
            "cam = CAM(model, use_cuda=torch.cuda.is_available())\n",
            torch_version=ACCELERATOR,
        ),
        # ... that moves or makes data: a guard that only tidies up (bark's cache clearing) moves
        Invalid(
            HEAD + "def tidy():\n    if torch.cuda.is_available():\n        setup()\n\n"
            "cam = CAM(model, use_cuda=torch.cuda.is_available())\n",
            HEAD + "def tidy():\n    if torch.accelerator.is_available():\n        setup()\n\n"
            "cam = CAM(model, use_cuda=torch.cuda.is_available())\n",
            torch_version=ACCELERATOR,
        ),
        # ... nor one that says where `torch.load` puts tensors saved on a GPU
        Invalid(
            HEAD + "state = torch.load(path, map_location=None if torch.cuda.is_available() else 'cpu')\n"
            "if torch.cuda.is_available():\n    setup()\n",
            HEAD + "state = torch.load(path, map_location=None if torch.cuda.is_available() else 'cpu')\n"
            "if torch.accelerator.is_available():\n    setup()\n",
            torch_version=ACCELERATOR,
        ),
        # two checks of one function move together or not at all (ConvNeXt's and DeiT's logger:
        # the second has an `else`, so the first would add a field the second then does not fill)
        Invalid(
            HEAD + "def log_every(step):\n    fields = ['step: {step}']\n    if torch.cuda.is_available():\n"
            "        fields.append('mem: {mem}')\n    line = ' '.join(fields)\n    if torch.cuda.is_available():\n"
            "        print(line.format(step=step, mem=peak()))\n    else:\n        print(line.format(step=step))\n",
            count=2,
            torch_version=ACCELERATOR,
        ),
        Invalid(
            HEAD + 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
            HEAD + "device = " + ACCELERATOR_EXPRESSION + "\n",
            torch_version=ACCELERATOR,
        ),
        # a string stays a string; other conditions stay; the inverted test too
        Invalid(
            HEAD + 'dev = "cuda" if torch.cuda.is_available() and not args.cpu else "cpu"\n'
            'kind = ("cpu" if not torch.cuda.is_available() else "cuda")\n',
            HEAD + 'dev = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() and not args.cpu else "cpu"\n'
            'kind = ("cpu" if not torch.accelerator.is_available() else torch.accelerator.current_accelerator().type)\n',
            count=2,
            torch_version=ACCELERATOR,
        ),
        Invalid(
            HEAD + 'name = torch.device("cuda" if torch.cuda.is_available() else "cpu").type\n',
            HEAD + "name = (" + ACCELERATOR_EXPRESSION + ").type\n",
            torch_version=ACCELERATOR,
        ),
        # a DataLoader's pin_memory: the accelerator's check pins wherever there is one
        Invalid(
            HEAD + "from torch.utils.data import DataLoader\nloader = DataLoader(data, pin_memory=torch.cuda.is_available())\n",
            HEAD + "from torch.utils.data import DataLoader\nloader = DataLoader(data, pin_memory=torch.accelerator.is_available())\n",
            torch_version=ACCELERATOR,
        ),
        # a guard around device-generic code
        Invalid(
            HEAD + "if torch.cuda.is_available():\n    model = model.half()\n",
            HEAD + "if torch.accelerator.is_available():\n    model = model.half()\n",
            torch_version=ACCELERATOR,
        ),
        # a guard around CUDA-only code, before it (an early exit), or choosing among backends; a
        # test that asks more of CUDA: reported without a fix
        Invalid(HEAD + "if torch.cuda.is_available():\n    torch.cuda.manual_seed_all(0)\n", torch_version=ACCELERATOR),
        Invalid(
            HEAD + "def bf16():\n    if not torch.cuda.is_available():\n        return True\n"
            "    return torch.cuda.is_bf16_supported()\n",
            torch_version=ACCELERATOR,
        ),
        Invalid(
            HEAD + "if torch.cuda.is_available():\n    kinds.append(Activity.CUDA)\nelif torch.xpu.is_available():\n"
            "    kinds.append(Activity.XPU)\n",
            torch_version=ACCELERATOR,
        ),
        Invalid(
            HEAD + "if torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0):\n    fast = True\n",
            torch_version=ACCELERATOR,
        ),
        # a GPU index stays; above 0 the fix is unsafe (MPS has a single device)
        Invalid(
            HEAD + "gpu = 'cuda:1' if torch.cuda.is_available() else 'cpu'\n"
            'dev = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")\n',
            HEAD + "gpu = 'cuda:1' if torch.cuda.is_available() else 'cpu'\n"
            'dev = torch.device(torch.accelerator.current_accelerator().type, 0) if torch.accelerator.is_available() else torch.device("cpu")\n',
            count=2,
            torch_version=ACCELERATOR,
        ),
        # a GPU index in an f-string (a rank): that index of the accelerator, unsafe as above
        Invalid(
            HEAD + 'dev = f"cuda:{rank}" if torch.cuda.is_available() else "cpu"\n',
            HEAD + 'dev = f"{torch.accelerator.current_accelerator().type}:{rank}" if torch.accelerator.is_available() else "cpu"\n',
            unsafe=True,
            torch_version=ACCELERATOR,
        ),
        Invalid(
            HEAD + "gpu = 'cuda:1' if torch.cuda.is_available() else 'cpu'\n",
            HEAD + "gpu = f'{torch.accelerator.current_accelerator().type}:1' if torch.accelerator.is_available() else 'cpu'\n",
            unsafe=True,
            torch_version=ACCELERATOR,
        ),
        # a guard right after an identical accelerator guard continues its block: the user's block,
        # through any import of torch, or one rewritten in the same run; right before one too
        Invalid(HEAD + _SYNC + _HALF_CUDA, HEAD + _SYNC + "    model = model.half()\n", torch_version=ACCELERATOR),
        Invalid(
            "import torch as t\nif t.accelerator.is_available():\n    print('on the GPU')\nif t.cuda.is_available():\n"
            "    model = model.half()\n",
            "import torch as t\nif t.accelerator.is_available():\n    print('on the GPU')\n    model = model.half()\n",
            torch_version=ACCELERATOR,
        ),
        Invalid(
            HEAD + _FAST_CUDA + _HALF_CUDA,
            HEAD + _FAST + "    model = model.half()\n",
            count=2,
            torch_version=ACCELERATOR,
        ),
        Invalid(HEAD + _FAST_CUDA + _HALF, HEAD + _FAST + "    model = model.half()\n", torch_version=ACCELERATOR),
        # no join where it is not exact, or would move or lose a comment or a line: an `else`, a
        # first block that leaves, a line between, a comment on the header, at the start of the
        # block or ending the first one, another indentation; a first block that may change the
        # answer (writes the environment, imports, calls the program's own code)
        *(
            Invalid(
                HEAD + before + between + head + _HALF_BODY,
                HEAD + before + between + head.replace("cuda", "accelerator") + _HALF_BODY,
                torch_version=ACCELERATOR,
            )
            for before, between, head in (
                (_SYNC + "else:\n    pass\n", "", _CUDA_HEAD),
                (_SYNC, "\n", _CUDA_HEAD),
                (_SYNC, "# in half precision\n", _CUDA_HEAD),
                (_SYNC, "", _CUDA_HEAD.replace(":", ":  # in half precision")),
                (_SYNC, "", _CUDA_HEAD + "    # in half precision\n"),
                (_SYNC + "    # then\n", "", _CUDA_HEAD),
                ("def f():\n    pass\nif torch.accelerator.is_available():\n  torch.accelerator.synchronize()\n", "", _CUDA_HEAD),
                ('import os\nif torch.accelerator.is_available():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n', "", _CUDA_HEAD),
                ("if torch.accelerator.is_available():\n    import torch_npu\n", "", _CUDA_HEAD),
                ("if torch.accelerator.is_available():\n    setup()\n", "", _CUDA_HEAD),
            )
        ),
        Invalid(
            HEAD + "for model in models:\n    if torch.accelerator.is_available():\n        continue\n"
            "    if torch.cuda.is_available():\n        model = model.half()\n",
            HEAD + "for model in models:\n    if torch.accelerator.is_available():\n        continue\n"
            "    if torch.accelerator.is_available():\n        model = model.half()\n",
            torch_version=ACCELERATOR,
        ),
        Invalid(
            HEAD + "if torch.cuda.is_available():\n    setup()\n" + _HALF,
            HEAD + "if torch.accelerator.is_available():\n    setup()\n" + _HALF,
            torch_version=ACCELERATOR,
        ),
    )

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        # The functions (the module: None) where some `torch.cuda.is_available()` stays as it is.
        self._kept: set[cst.CSTNode | None] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.settings.torch_version < ACCELERATOR or self.ctx.model.qualname(node.func) != _CHECK:
            return
        if self._pin_memory_flag(node) or self._map_location(node):
            return
        owner = self._test_owner(node)
        if isinstance(owner, cst.IfExp):
            self._choice(node, owner)
        elif isinstance(owner, cst.If):
            self._guard(node, owner)
        else:
            self._kept.add(self._function(node))

    def _function(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return next((a for a in self.ctx.ancestors(node) if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)

    def _pin_memory_flag(self, node: cst.Call) -> bool:
        """`DataLoader(..., pin_memory=torch.cuda.is_available())`: from torch 2.6 (pytorch#131858)
        a DataLoader pins for the current accelerator, so the accelerator's check pins on every
        accelerator where the CUDA check pinned on CUDA only. Safe: on a CUDA machine both are
        True, without an accelerator both False; pinning changes no value. On MPS the DataLoader
        turns pinning off itself, with a warning."""
        argument = self.ctx.parent(node)
        if not isinstance(argument, cst.Arg) or argument.keyword is None or argument.keyword.value != "pin_memory":
            return False
        if not is_dataloader_call(self.ctx.parent(argument)):
            return False
        self.report(
            node,
            "`pin_memory=torch.cuda.is_available()` pins on CUDA only; `torch.accelerator.is_available()` pins "
            "for every accelerator",
            fix=lambda site: FixPlan(
                f"Use `{AVAILABLE}`", [Replace(node, AVAILABLE)], needs_torch=True, requires=ACCELERATOR
            ),
        )
        return True

    def _map_location(self, node: cst.Call) -> bool:
        """A check in a ``map_location=`` argument (``None if torch.cuda.is_available() else
        ...``, DEV402's fix): it says where `torch.load` puts tensors saved on a GPU, which the
        program then moves where it computes; no placement another check could disagree with."""
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, cst.Arg):
                return ancestor.keyword is not None and ancestor.keyword.value == "map_location"
            if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return False
        return False

    def _test_owner(self, node: cst.Call) -> cst.CSTNode | None:
        """The conditional whose test holds ``node`` (through ``and``/``or``/``not``)."""
        child: cst.CSTNode = node
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp)):
                return ancestor if child is ancestor.test else None
            if not isinstance(ancestor, (cst.BooleanOperation, cst.UnaryOperation)):
                return None
            child = ancestor
        return None

    def _choice(self, node: cst.Call, choice: cst.IfExp) -> None:
        cuda_side = self._cuda_side(node, choice)
        if cuda_side is None:
            self._kept.add(self._function(node))
            return
        fix = self._choice_fix(node, choice, cuda_side)
        if fix is None:
            self._kept.add(self._function(node))
        self.report(
            node,
            "`torch.cuda.is_available()` chooses CUDA or the CPU only; use `torch.accelerator.is_available()` "
            "and `torch.accelerator.current_accelerator()`",
            fix=fix,
        )

    def _cuda_side(self, node: cst.Call, choice: cst.IfExp) -> cst.BaseExpression | None:
        """The side of ``choice`` taken where CUDA is available, when it is a CUDA device
        (``"cuda"``, ``torch.device("cuda")``) and the other one is not."""
        negated = isinstance(choice.test, cst.UnaryOperation) and choice.test.expression is node
        if choice.test is not node and not negated and not _conjunct(choice.test, node):
            return None
        cuda, other = (choice.orelse, choice.body) if negated else (choice.body, choice.orelse)
        if self._device_literal(other) is None:
            return None
        if accelerator_fstring(cuda) is not None and not is_cuda_string(self._device_literal(other)):
            return cuda  # f"cuda:{rank}" if torch.cuda.is_available() else "cpu"
        if self._device_literal(cuda) is None:
            return None
        return cuda if is_cuda_string(self._device_literal(cuda)) else None

    def _device_literal(self, node: cst.BaseExpression) -> str | None:
        value = string_value(node)
        if value is None and isinstance(node, cst.Call) and self.ctx.model.qualname(node.func) == "torch.device":
            args = [a for a in node.args if a.keyword is None]
            value = string_value(args[0].value) if len(node.args) == 1 and args else None
        return value

    def _choice_fix(self, node: cst.Call, choice: cst.IfExp, cuda_side: cst.BaseExpression):
        if _mentions_cuda(self.ctx.code(choice.test.deep_replace(node, cst.Name("_")))):
            return None  # the rest of the test asks about CUDA itself (its version, its capability)
        fstring = accelerator_fstring(cuda_side)
        if fstring is not None:
            # f"cuda:{rank}": that index of the accelerator; unsafe, as for "cuda:1", since the
            # index may be above 0, which an accelerator with a single device (MPS) lacks
            current_text = self.ctx.module.code_for_node(fstring)
            return lambda site: FixPlan(
                "Choose the accelerator, else the CPU (unsafe: an accelerator with a single device may lack that index)",
                [Replace(node, AVAILABLE), Replace(cuda_side, current_text)],
                "unsafe", needs_torch=True, requires=ACCELERATOR,
            )
        literal = self._device_literal(cuda_side)
        wrapper = self.ctx.parent(choice)
        device_call = self.ctx.parent(wrapper) if isinstance(wrapper, cst.Arg) else None
        whole = (
            isinstance(device_call, cst.Call)
            and self.ctx.model.qualname(device_call.func) == "torch.device"
            and len(device_call.args) == 1
        )
        as_string = isinstance(cuda_side, cst.SimpleString) and not whole
        current = accelerator_form(literal or "", as_string, cuda_side.quote if as_string else '"')
        if current is None:
            return None

        def fix(site) -> FixPlan:
            if whole:
                # torch.device("cuda" if c else "cpu") -> current_accelerator() if c' else torch.device("cpu")
                other = choice.body if cuda_side is choice.orelse else choice.orelse
                other_text = f"torch.device({self.ctx.code(other)})"
                test = self.ctx.code(choice.test.with_deep_changes(node, func=cst.parse_expression("torch.accelerator.is_available")))
                body, orelse = (other_text, current) if cuda_side is choice.orelse else (current, other_text)
                replacements = [Replace(device_call, conditional_in_place(self.ctx, device_call, f"{body} if {test} else {orelse}"))]
            else:
                replacements = [Replace(node, AVAILABLE), Replace(cuda_side, current)]
            if second_gpu(literal or ""):
                # "cuda:1" is GPU 1 of a CUDA machine; another machine's accelerator may have no
                # device 1 (Apple's MPS has one device), where the original chose the CPU.
                return FixPlan(
                    "Choose the accelerator, else the CPU (unsafe: an accelerator with a single device has no "
                    f"device {literal.removeprefix('cuda:')})",
                    replacements, "unsafe", needs_torch=True, requires=ACCELERATOR,
                )
            return FixPlan("Choose the accelerator, else the CPU", replacements, needs_torch=True, requires=ACCELERATOR)

        return fix

    def _guard(self, node: cst.Call, guard: cst.If) -> None:
        fixable = guard.orelse is None and not guards_cuda_code(self.ctx, node)
        function = self._function(node)
        if not fixable:
            self._kept.add(function)
        # the whole test: the block may join an identical one next to it (devlint.rulekit.guards);
        # decided now, while the walk's scope is the guard's
        whole = fixable and guard.test is node
        edits = checked_block(self.ctx, guard, _CHECK + "()", AVAILABLE) if whole else [Replace(node, AVAILABLE)]
        # an edit that runs on to a block's first statement takes that block's header line away
        joins = any(e.until is not None for e in edits)
        message = f"Use `{AVAILABLE}`" + (", in one block with the identical check next to it" if joins else "")
        places = fixable and _places_data(guard.body)
        self.report(
            node,
            "`torch.cuda.is_available()` guards code for CUDA only; use `torch.accelerator.is_available()`",
            fix=(lambda site: self._guard_fix(function, message, edits, places)) if fixable else None,
        )

    def _guard_fix(self, function: cst.CSTNode | None, message: str, edits: list[Replace], places: bool) -> FixPlan | None:
        """None where another check of the same function stays CUDA's (ConvNeXt's logger adds a
        `{memory}` field under one check and fills it under another, which keeps its `else`): on
        another accelerator the two would disagree. A check the module's own code keeps stays
        against every guard of the file that places data (``places``): that code runs the file's
        functions and classes (pytorch-grad-cam's notebook keeps `use_cuda=torch.cuda.is_available()`
        for its CAM and the model on the CPU off CUDA, while a target class's guard would move its
        mask to the accelerator); a guard that only synchronizes or frees memory places nothing.
        Asked after the walk, when every check of the file has been seen."""
        if function in self._kept or (places and None in self._kept):
            return None
        return FixPlan(message, edits, needs_torch=True, requires=ACCELERATOR)

def _places_data(body: cst.CSTNode) -> bool:
    """``body`` moves or makes data on a device: a `.to(...)` or `.cuda(...)` call, or a
    ``device=`` argument."""
    for node in descendants(body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MOVES:
            return True
        if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "device":
            return True
    return False


def _mentions_cuda(code: str) -> bool:
    return "cuda" in code.lower()


def _conjunct(test: cst.BaseExpression, node: cst.CSTNode) -> bool:
    """``node`` is one of the ``and``-ed parts of ``test``: where ``test`` holds, so does it."""
    if test is node:
        return True
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _conjunct(test.left, node) or _conjunct(test.right, node)
    return False
