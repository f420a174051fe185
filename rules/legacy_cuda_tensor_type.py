"""DEV104 legacy-cuda-tensor-type: `torch.cuda.FloatTensor(...)` and kin."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.devices import checks_cuda_available
from devlint.analysis.semantic import Binding, dotted_name, string_value
from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Rule, Site
from devlint.rulekit.calls import arg, code_in_place, keyword, method_call, names_in, positional, with_args
from devlint.torchfacts.names import LEGACY_TENSOR_TYPES

HEADER = "import torch\n"
# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
CUDA_TYPES = {f"torch.cuda.{name}": dtype for name, dtype in LEGACY_TENSOR_TYPES.items()}
CPU_TYPES = {f"torch.{name}": dtype for name, dtype in LEGACY_TENSOR_TYPES.items()}
_SPACED_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
# How deep a size expression may be looked up through variables (`n = 4`, `size = n * 2`).
_SIZE_DEPTH = 3


def cuda_type(name: str | None) -> str | None:
    """The dtype of a legacy CUDA tensor type name, else None."""
    return CUDA_TYPES.get(name or "")


class LegacyCudaTensorType(Rule):
    code = "DEV104"
    name = "legacy-cuda-tensor-type"
    what = (
        "Flags the legacy CUDA tensor types: `torch.cuda.FloatTensor(...)` and the other `torch.cuda.*Tensor` "
        "constructors (also through aliases such as `Tensor = torch.cuda.FloatTensor if cuda else "
        "torch.FloatTensor`), `.type(torch.cuda.FloatTensor)`, `.type(\"torch.cuda.FloatTensor\")`, "
        "`from torch.cuda import FloatTensor`, and `isinstance(x, torch.cuda.FloatTensor)`."
    )
    why = (
        "The `torch.cuda.*Tensor` types exist only in CUDA builds of PyTorch and only work with an "
        "NVIDIA GPU: the script fails elsewhere. They are legacy since PyTorch 0.4; a factory with "
        "`dtype=` and `device=` says the same and runs on every device. `isinstance` checks against "
        "them are false for a tensor on any other device."
    )
    example = (
        "ones = torch.cuda.FloatTensor(4, 3).fill_(1)\nlabels = torch.cuda.LongTensor([0, 2, 1])\n"
        "x = x.type(torch.cuda.HalfTensor)"
    )
    use_instead = (
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "ones = torch.empty(4, 3, dtype=torch.float32, device=device).fill_(1)\n"
        "labels = torch.tensor([0, 2, 1], dtype=torch.int64, device=device)\n"
        "x = x.to(device=device, dtype=torch.float16)"
    )
    fix_availability = "safe"
    fix_note = (
        "Safe: a constructor given sizes becomes `torch.empty(sizes, dtype=..., device=device)` (the "
        "legacy constructor does not initialise memory either), one given a list or tuple literal "
        "`torch.tensor(data, dtype=..., device=device)`, `.type(T)` becomes `.to(device=device, "
        "dtype=...)`, except on a module (a `torch.nn` class or a local Module subclass), whose "
        "`.type(T)` casts integer buffers too: there it becomes `.type(torch.<dtype>).to(device)`. "
        "No fix for a single argument that may be a size or data (`FloatTensor(x)`), "
        "for imports, alias definitions and `isinstance` checks. An alias choosing between a CUDA "
        "and a CPU type is fixed safely when its condition is `torch.cuda.is_available()`; under "
        "another condition (`args.cuda`) the fix is unsafe: the device no longer follows it."
    )
    triggers = ("cuda",)
    quiet_where_cuda_is_known = True

    VALID = (
        # CPU types are not CUDA-only
        "import torch\nx = torch.FloatTensor(3)\ny = x.type(torch.LongTensor)\n",
        # modern spellings
        "import torch\nx = torch.empty(3, dtype=torch.float32, device=device)\ny = x.to(dtype=torch.float16)\n",
        # the type of a tensor asked for, not set
        'import torch\nname = x.type()\nok = x.type() == "torch.cuda.FloatTensor"\n',
        # strings, comments and docstrings
        '"""Use torch.cuda.FloatTensor(3)."""\n# torch.cuda.LongTensor([1])\nhint = "torch.cuda.FloatTensor"\n',
        # a local name that only looks like one
        "class FloatTensor:\n    pass\n\nx = FloatTensor()\n",
        # set_default_tensor_type is DEV105's
        "import torch\ntorch.set_default_tensor_type(torch.cuda.FloatTensor)\n",
    )
    INVALID = (
        Invalid(
            "import torch\nones = torch.cuda.FloatTensor(4, 3).fill_(1)\n",
            HEADER + DEVICE + "ones = torch.empty(4, 3, dtype=torch.float32, device=device).fill_(1)\n",
        ),
        Invalid(
            "import torch\nlabels = torch.cuda.LongTensor([0, 2, 1])\nempty = torch.cuda.ByteTensor()\n",
            HEADER + DEVICE + "labels = torch.tensor([0, 2, 1], dtype=torch.int64, device=device)\n"
            "empty = torch.empty(0, dtype=torch.uint8, device=device)\n",
            count=2,
        ),
        # a single argument that may be a size or data: reported, not fixed
        Invalid("import torch\nx = torch.cuda.FloatTensor(values)\n"),
        # ... unless its binding says which
        Invalid(
            "import torch\n\ndef make(n: int, rows):\n    return torch.cuda.FloatTensor(n), torch.cuda.FloatTensor(rows.shape)\n",
            "import torch\n" + DEVICE + "\n\ndef make(n: int, rows):\n"
            "    return torch.empty(n, dtype=torch.float32, device=device), "
            "torch.empty(rows.shape, dtype=torch.float32, device=device)\n",
            count=2,
        ),
        # aliases through imports
        Invalid(
            "import torch as t\nfrom torch import cuda\nx = t.cuda.DoubleTensor(2)\ny = cuda.HalfTensor(2, 2)\n",
            "import torch as t\n" + DEVICE.replace("torch.", "t.")
            + "x = t.empty(2, dtype=t.float64, device=device)\n"
            "y = t.empty(2, 2, dtype=t.float16, device=device)\n",
            count=2,
        ),
        # the import itself is reported (no fix), the call through it is fixed, and the import
        # it leaves unused goes with it
        Invalid(
            "import torch\nfrom torch.cuda import FloatTensor as CF\nx = CF(8)\n",
            "import torch\n" + DEVICE
            + "x = torch.empty(8, dtype=torch.float32, device=device)\n",
            count=2,
        ),
        # .type() with a type, an alias or a type name
        Invalid(
            'import torch\nx = x.type(torch.cuda.HalfTensor)\ny = y.type("torch.cuda.LongTensor", non_blocking=True)\n',
            HEADER + DEVICE + "x = x.to(device=device, dtype=torch.float16)\n"
            "y = y.to(device=device, dtype=torch.int64, non_blocking=True)\n",
            count=2,
        ),
        Invalid(
            "import torch\ndtype = torch.cuda.FloatTensor\nx = x.type(dtype)\n",
            HEADER + DEVICE + "dtype = torch.cuda.FloatTensor\nx = x.to(device=device, dtype=torch.float32)\n",
            count=2,
        ),
        # a module's .type() casts its integer buffers too, which Module.to(dtype=) leaves alone
        Invalid(
            "import torch\nimport torch.nn as nn\n\nclass Net(nn.Module):\n    def half_on_gpu(self):\n"
            "        return self.type(torch.cuda.HalfTensor)\n\n"
            "dtype = torch.cuda.FloatTensor\nmodel = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))\n"
            "model.type(dtype)\nnet = Net().type(dtype)\nx = x.type(dtype)\n",
            "import torch\nimport torch.nn as nn\n" + DEVICE + "\n\nclass Net(nn.Module):\n    def half_on_gpu(self):\n"
            "        return self.type(torch.float16).to(device)\n\n"
            "dtype = torch.cuda.FloatTensor\nmodel = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))\n"
            "model.type(torch.float32).to(device)\nnet = Net().type(torch.float32).to(device)\n"
            "x = x.to(device=device, dtype=torch.float32)\n",
            count=5,
        ),
        # an alias choosing by availability: the fix does what the alias did
        Invalid(
            "import torch\ncuda = torch.cuda.is_available()\n"
            "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\nones = Tensor(4).fill_(1)\n",
            "import torch\n" + DEVICE + "cuda = torch.cuda.is_available()\n"
            "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n"
            "ones = torch.empty(4, dtype=torch.float32, device=device).fill_(1)\n",
            count=2,
        ),
        # an alias choosing by a flag: unsafe (a CUDA box run with the flag off moves to CUDA)
        Invalid(
            "import torch\nTensor = torch.cuda.LongTensor if args.cuda else torch.LongTensor\n"
            "idx = Tensor([1, 2])\n",
            "import torch\n" + DEVICE + "Tensor = torch.cuda.LongTensor if args.cuda else torch.LongTensor\n"
            "idx = torch.tensor([1, 2], dtype=torch.int64, device=device)\n",
            unsafe=True,
            count=2,
        ),
        # isinstance checks: no fix
        Invalid("import torch\nif isinstance(x, torch.cuda.FloatTensor):\n    pass\n"),
        Invalid(
            "import torch\nok = isinstance(x, (torch.cuda.FloatTensor, torch.cuda.DoubleTensor))\n",
            count=2,
        ),
        # inside forward the input's device is used
        Invalid(
            "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
            "        return x * torch.cuda.FloatTensor([1.0, 2.0])\n",
            "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
            "        return x * torch.tensor([1.0, 2.0], dtype=torch.float32, device=x.device)\n",
        ),
        Invalid(
            "import torch\nif args.cuda:\n    mask = torch.cuda.BoolTensor(3, 3)\n",
            HEADER + DEVICE + "if args.cuda:\n    mask = torch.empty(3, 3, dtype=torch.bool, device=device)\n",
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # Type references a call handler has already reported (as constructor, .type() or isinstance).
        self._handled: set[int] = set()

    # -- the walk ------------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        model = self.ctx.model
        qualname = model.qualname(node.func)
        if qualname == "torch.set_default_tensor_type":
            self._handled.update(id(a.value) for a in node.args)
            return
        if isinstance(node.func, cst.Name) and node.func.value in ("isinstance", "issubclass") and len(node.args) == 2:
            self._isinstance(node.args[1].value)
            return
        if any(cuda_type(q) for q in model.qualnames(node.func)):
            self._handled.add(id(node.func))
            self._constructor(node)
            return
        attribute = method_call(node, "type")
        if attribute is not None:
            given = positional(node)[:1] or [k for k in (keyword(node, "dtype"),) if k is not None]
            if given and self._target_dtypes(given[0].value) is not None:
                self._handled.add(id(given[0].value))
                self._type_call(node, attribute, given[0])

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in LEGACY_TENSOR_TYPES:
            self._reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        # only an imported name can resolve to a type by itself; most names are not
        if node.value not in self.ctx.model.imports:
            return
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Attribute) or (isinstance(parent, cst.Arg) and parent.keyword is node):
            return
        if isinstance(parent, (cst.ImportAlias, cst.AsName, cst.AssignTarget, cst.Param)):
            return
        self._reference(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        if dotted_name(node.module) != "torch.cuda":
            return
        for alias in node.names:
            if isinstance(alias.name, cst.Name) and cuda_type(f"torch.cuda.{alias.name.value}"):
                self.report(
                    alias,
                    f"`torch.cuda.{alias.name.value}` is a legacy CUDA-only tensor type; drop the import "
                    f"and use `dtype=torch.{LEGACY_TENSOR_TYPES[alias.name.value]}` with `device=`",
                )

    # -- what is reported ------------------------------------------------------------------------

    def _reference(self, node: cst.BaseExpression) -> None:
        dtype = cuda_type(self.ctx.model.qualname(node))
        if dtype is None or id(node) in self._handled:
            return
        self.report(
            node,
            f"`{self._code(node)}` is a legacy CUDA-only tensor type; use `dtype=torch.{dtype}` with a `device`",
        )

    def _isinstance(self, types: cst.BaseExpression) -> None:
        elements = [e.value for e in types.elements] if isinstance(types, (cst.Tuple, cst.List)) else [types]
        for element in elements:
            dtype = cuda_type(self.ctx.model.qualname(element))
            if dtype is None:
                continue
            self._handled.add(id(element))
            self.report(
                element,
                f"`isinstance` with `{self._code(element)}` is false for tensors on other devices; "
                f"test `x.dtype == torch.{dtype}` (and `x.device` if it matters)",
            )

    def _constructor(self, node: cst.Call) -> None:
        site = self.ctx.site(node)
        shape = self._arguments(node, site)
        name = self._code(node.func)
        called = f"`{name}(...)`"
        resolved = sorted(q for q in self.ctx.model.qualnames(node.func) if cuda_type(q))
        if resolved != [name] and len(resolved) == 1:
            called += f" (`{resolved[0]}`)"
        if shape == "ambiguous":
            message = (
                f"{called} is a legacy CUDA-only tensor type; use `torch.empty(size, ...)` or "
                "`torch.tensor(data, ...)` with `dtype=` and `device=` (no automatic fix: its one "
                "argument may be a size or data)"
            )
            self.report(node, message)
            return
        dtypes = self._target_dtypes(node.func)
        message = f"{called} is a legacy CUDA-only tensor type; use a factory with `dtype=` and `device=`"
        fix = None if dtypes is None or shape is None else (lambda site: self._constructor_fix(node, shape, dtypes, site))
        self.report(node, message, fix=fix)

    def _type_call(self, node: cst.Call, attribute: cst.Attribute, given: cst.Arg) -> None:
        dtypes = self._target_dtypes(given.value)
        assert dtypes is not None
        self.report(
            node,
            f"`.type({self._code(given.value)})` casts to a legacy CUDA-only tensor type; "
            "use `.to(device=..., dtype=...)`",
            fix=lambda site: self._type_fix(node, attribute, given, dtypes, site),
            start=attribute.attr,
        )

    # -- reading the arguments -------------------------------------------------------------------

    def _target_dtypes(self, expr: cst.BaseExpression) -> tuple[str, bool] | None:
        """(dtype, safe) for a type expression naming legacy CUDA types of one dtype.

        ``safe`` is False for an alias that picks a CPU type under a condition other than CUDA
        availability; None when no CUDA type is involved or the dtypes differ.
        """
        name = string_value(expr)
        # spelled out in the source, as the "cuda" trigger of the textual prefilter requires
        if name is not None and "cuda" in self._code(expr):
            dtype = cuda_type(name)
            return (dtype, True) if dtype is not None else None
        names = self.ctx.model.qualnames(expr)
        if not any(cuda_type(q) for q in names):
            return None
        dtypes = {CUDA_TYPES.get(q) or CPU_TYPES.get(q) for q in names}
        if len(dtypes) != 1 or None in dtypes:
            return None
        dtype = dtypes.pop()
        assert dtype is not None
        mixed = any(q in CPU_TYPES for q in names)
        return dtype, not mixed or self._chosen_by_availability(expr)

    def _chosen_by_availability(self, expr: cst.BaseExpression) -> bool:
        """A CUDA-or-CPU alias whose every definition tests `torch.cuda.is_available()`."""
        if isinstance(expr, cst.IfExp):
            values: list[cst.BaseExpression | None] = [expr]
            site = self.ctx.site(expr)
        elif isinstance(expr, cst.Name):
            site = self.ctx.site(expr)
            values = [b.value for b in self.ctx.model.visible_bindings(expr.value, site.scope, site.order)]
        else:
            return False
        return bool(values) and all(
            isinstance(v, cst.IfExp)
            and checks_cuda_available(self.ctx.model, v.test, site.scope, site.order)
            and any(cuda_type(q) for q in self.ctx.model.qualnames(v.body))
            for v in values
        )

    def _arguments(self, node: cst.Call, site: Site) -> str | None:
        """"sizes", "data", "empty", "ambiguous", or None (keywords: no fix)."""
        if any(a.keyword is not None or a.star == "**" for a in node.args):
            return None
        if not node.args:
            return "empty"
        if len(node.args) > 1 or node.args[0].star == "*":
            return "sizes"
        value = node.args[0].value
        if isinstance(value, (cst.List, cst.Tuple, cst.ListComp)):
            return "data"
        if self._is_size(value, site, _SIZE_DEPTH):
            return "sizes"
        return "ambiguous"

    def _is_size(self, value: cst.BaseExpression, site: Site, depth: int) -> bool:
        """An int or a shape: ``3``, ``len(x)``, ``x.shape``, ``x.size()``, ``x.size(0) * 2``, a name bound to one."""
        model = self.ctx.model
        if isinstance(value, cst.Integer):
            return True
        if isinstance(value, cst.BinaryOperation):
            return self._is_size(value.left, site, depth) and self._is_size(value.right, site, depth)
        if isinstance(value, cst.Attribute):
            return value.attr.value == "shape"
        if isinstance(value, cst.Subscript):
            return isinstance(value.value, cst.Attribute) and value.value.attr.value == "shape"
        if isinstance(value, cst.Call):
            if isinstance(value.func, cst.Name) and value.func.value in ("len", "int"):
                return True
            return method_call(value, "size") is not None or model.qualname(value.func) == "torch.Size"
        if isinstance(value, cst.Name) and depth > 0:
            bindings = model.visible_bindings(value.value, site.scope, site.order)
            return bool(bindings) and all(self._binds_size(b, site, depth - 1) for b in bindings)
        return False

    def _binds_size(self, binding: Binding, site: Site, depth: int) -> bool:
        if binding.kind == "param":
            annotation = binding.annotation
            if isinstance(annotation, cst.Name) and annotation.value == "int":
                return True
            return binding.value is not None and self._is_size(binding.value, site, depth)
        return binding.kind == "assign" and binding.value is not None and self._is_size(binding.value, site, depth)

    # -- fixes -----------------------------------------------------------------------------------

    def _constructor_fix(self, node: cst.Call, shape: str, dtypes: tuple[str, bool], site: Site) -> FixPlan:
        dtype, safe = dtypes
        device = self.ctx.device(site)
        if shape == "empty":
            factory, args = "empty", "0"
        else:
            factory = "tensor" if shape == "data" else "empty"
            args = ", ".join(code_in_place(self.ctx, a, a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in node.args)
        new = f"torch.{factory}({args}, dtype=torch.{dtype}, device={device.expr})"
        return FixPlan(
            f"Replace `{self._code(node.func)}(...)` with `torch.{factory}(..., dtype=torch.{dtype}, device={device.expr})`",
            [Replace(node, new)],
            "safe" if safe else "unsafe",
            device=device,
            needs_torch=True,
        )

    def _type_fix(
        self, node: cst.Call, attribute: cst.Attribute, given: cst.Arg, dtypes: tuple[str, bool], site: Site
    ) -> FixPlan:
        dtype, safe = dtypes
        device = self.ctx.device(site, avoid=names_in(attribute.value))
        rest = [a for a in node.args if a is not given]
        if not rest and self._is_module(attribute.value, site):
            # Module.type() casts every parameter and buffer, integer ones too (BatchNorm's
            # num_batches_tracked); Module.to(dtype=) casts only the floating-point ones.
            cast = with_args(node, "type", [arg(f"torch.{dtype}")])
            new = cst.Call(func=cst.Attribute(value=cast, attr=cst.Name("to")), args=[arg(device.expr)])
            shown = f".type(torch.{dtype}).to({device.expr})"
        else:
            new = with_args(node, "to", [arg(device.expr, "device"), arg(f"torch.{dtype}", "dtype"), *rest])
            if node.args[0] is given:
                # in place of the type argument, keeping the layout of a call written over several lines
                pair = [arg(device.expr, "device").with_changes(comma=_SPACED_COMMA), arg(f"torch.{dtype}", "dtype")]
                pair[1] = pair[1].with_changes(comma=given.comma, whitespace_after_arg=given.whitespace_after_arg)
                new = node.with_changes(func=node.func.with_changes(attr=cst.Name("to")), args=[*pair, *rest])
            shown = f".to(device={device.expr}, dtype=torch.{dtype})"
        return FixPlan(
            f"Replace `.type(...)` with `{shown}`",
            [Replace(node, code_in_place(self.ctx, node, new))],
            "safe" if safe else "unsafe",
            device=device,
            needs_torch=True,
        )

    def _is_module(self, receiver: cst.BaseExpression, site: Site) -> bool:
        """An ``nn.Module``: made by a ``torch.nn`` class or a local Module subclass, directly or
        through a name every binding of which is one."""
        model = self.ctx.model
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            scope = site.scope
            while scope is not None and scope.kind != "class":
                scope = scope.parent
            return scope is not None and model.is_module_like_class(scope.name)
        if isinstance(receiver, cst.Name):
            bindings = model.visible_bindings(receiver.value, site.scope, site.order)
            return bool(bindings) and all(
                b.kind == "assign" and b.value is not None and self._is_module(b.value, site) for b in bindings
            )
        if not isinstance(receiver, cst.Call):
            return False
        if isinstance(receiver.func, cst.Attribute) and receiver.func.attr.value in ("to", "cuda", "cpu", "float", "eval", "train"):
            return self._is_module(receiver.func.value, site)
        qualname = model.qualname(receiver.func) or ""
        if qualname.startswith("torch.nn.") and qualname.rsplit(".", 1)[-1][:1].isupper():
            return True
        name = dotted_name(receiver.func)
        return name is not None and name in model.classes and model.is_module_like_class(name)

    def _code(self, node: cst.CSTNode) -> str:
        return self.ctx.module.code_for_node(node)

