"""DEV105 set-default-tensor-type: `torch.set_default_tensor_type(...)`, deprecated since PyTorch 2.1."""

from __future__ import annotations

import sys

import libcst as cst

from devlint.analysis.semantic import string_value
from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Rule, Site
from devlint.torchfacts.names import LEGACY_TENSOR_TYPES

HEADER = "import torch\n"
# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
# torch accepts only the floating types as the default.
_FLOATING = {name: dtype for name, dtype in LEGACY_TENSOR_TYPES.items() if "float" in dtype}
_CALL = "torch.set_default_tensor_type"


def tensor_type(name: str | None) -> tuple[str, bool] | None:
    """(dtype, on CUDA) for a floating tensor type name like ``torch.cuda.FloatTensor``."""
    if name is None:
        return None
    for prefix, cuda in (("torch.cuda.", True), ("torch.", False)):
        if name.startswith(prefix) and name[len(prefix):] in _FLOATING:
            return _FLOATING[name[len(prefix):]], cuda
    return None


class SetDefaultTensorType(Rule):
    code = "DEV105"
    name = "set-default-tensor-type"
    what = "Flags `torch.set_default_tensor_type(...)`, deprecated since PyTorch 2.1."
    why = (
        "`set_default_tensor_type` mixes two settings, the default dtype and the default device, "
        "and is deprecated since PyTorch 2.1. With a CUDA type it makes every new tensor a CUDA "
        "tensor, so the script fails on any machine without an NVIDIA GPU. "
        "`torch.set_default_dtype` and `torch.set_default_device(device)` say each part separately, "
        "and the device can be chosen at start-up."
    )
    example = 'torch.set_default_tensor_type("torch.cuda.FloatTensor")\ntorch.set_default_tensor_type(torch.DoubleTensor)'
    use_instead = (
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "torch.set_default_dtype(torch.float32)\ntorch.set_default_device(device)\n"
        "torch.set_default_dtype(torch.float64)"
    )
    fix_availability = "sometimes"
    fix_note = (
        "A CUDA type becomes `torch.set_default_dtype(...)` plus `torch.set_default_device(device)` "
        "(CUDA on a CUDA machine, as before; the pair needs torch 2.0). Every factory (`torch.zeros`, "
        "`torch.tensor`, `torch.randn`, ...) then makes the same tensors as before, with one "
        "exception: the legacy constructor `torch.Tensor(...)` follows the default tensor type but not "
        "the default device, so after the fix it makes CPU tensors where it made CUDA ones. The fix is "
        "safe when the file never calls `torch.Tensor(...)`, and unsafe when it does (other modules of "
        "the program that call it are beyond what one file shows: unsafe too where the file imports a module "
        "other than torch's, NumPy's or the standard library's, such as llama's fairscale, whose "
        "layers make their weights with `torch.Tensor(...)`). Likewise the default device is "
        "per thread and the default tensor type was per process: unsafe in a file that imports "
        "`threading`, `concurrent.futures` or a thread pool. A CPU type becomes "
        "`torch.set_default_dtype(...)` (safe: `torch.Tensor(...)` follows the default dtype), plus "
        '`torch.set_default_device("cpu")` when the file also sets a CUDA type, whose fix moves the '
        "default device (the old call reset the type); a default device the program sets itself "
        "with `torch.set_default_device` outlasts `set_default_tensor_type` (2.4.1 as 2.13), so the "
        "fixes of a CUDA type are unsafe in such a file. The calls of a file move together: the "
        "default device one fix sets outlasts a later call left as it was, and a CPU type's dtype "
        "alone leaves a CUDA type in force, so none gets a fix where another has none (unless all are "
        "CPU types), and a CPU type's fix is unsafe where the CUDA type's is. Fixed only when the "
        "argument is a string literal or a resolvable type and the call is the only statement on "
        "its line."
    )
    triggers = ("set_default_tensor_type",)

    VALID = (
        "import torch\ntorch.set_default_dtype(torch.float64)\ntorch.set_default_device(device)\n",
        '"""torch.set_default_tensor_type("torch.cuda.FloatTensor")"""\n# torch.set_default_tensor_type(t)\n',
        # someone else's function of the same name
        "import mylib\nmylib.set_default_tensor_type('torch.cuda.FloatTensor')\n",
    )
    INVALID = (
        Invalid(
            "import torch\ntorch.set_default_tensor_type('torch.cuda.FloatTensor')\nx = torch.ones(2)\n",
            HEADER + DEVICE + "torch.set_default_dtype(torch.float32)\ntorch.set_default_device(device)\nx = torch.ones(2)\n",
        ),
        Invalid(
            "import torch\ntorch.set_default_tensor_type(torch.DoubleTensor)  # precision\n",
            "import torch\ntorch.set_default_dtype(torch.float64)  # precision\n",
        ),
        # aliases, and indentation of the two statements
        Invalid(
            "import torch as t\nfrom torch.cuda import HalfTensor\n\ndef setup():\n"
            "    t.set_default_tensor_type(HalfTensor)\n",
            "import torch as t\n" + DEVICE.replace("torch.", "t.") + "\n\ndef setup():\n"
            "    t.set_default_dtype(t.float16)\n    t.set_default_device(device)\n",
        ),
        Invalid(
            "from torch import set_default_tensor_type, cuda\nif use_gpu:\n    set_default_tensor_type(cuda.DoubleTensor)\n",
            "import torch\n" + DEVICE + "if use_gpu:\n"
            "    torch.set_default_dtype(torch.float64)\n    torch.set_default_device(device)\n",
        ),
        # a CPU type after a CUDA one elsewhere in the file: the device goes back to the CPU too
        Invalid(
            "import torch\n\ndef gpu():\n    torch.set_default_tensor_type('torch.cuda.FloatTensor')\n\n"
            "def cpu():\n    torch.set_default_tensor_type('torch.FloatTensor')\n",
            "import torch\n" + DEVICE + "\n\ndef gpu():\n    torch.set_default_dtype(torch.float32)\n"
            "    torch.set_default_device(device)\n\ndef cpu():\n    torch.set_default_dtype(torch.float32)\n"
            "    torch.set_default_device('cpu')\n",
            count=2,
        ),
        # the calls of a file move together: the CPU type's fix pairs with the CUDA type's, unsafe
        # here (apex's RNN test packs its lengths on the CPU between the two)
        Invalid(
            "import torch\n\ndef packed():\n    torch.set_default_tensor_type(torch.FloatTensor)\n"
            "    lengths = torch.Tensor([3, 2])\n    torch.set_default_tensor_type(torch.cuda.FloatTensor)\n",
            "import torch\n" + DEVICE + "\n\ndef packed():\n    torch.set_default_dtype(torch.float32)\n"
            '    torch.set_default_device("cpu")\n    lengths = torch.Tensor([3, 2])\n'
            "    torch.set_default_dtype(torch.float32)\n    torch.set_default_device(device)\n",
            count=2,
            unsafe=True,
        ),
        # ... and none moves where one cannot: a type decided at run time may be CUDA's
        Invalid(
            "import torch\ntorch.set_default_tensor_type(kind)\ntorch.set_default_tensor_type('torch.FloatTensor')\n",
            count=2,
        ),
        # a default device the program sets itself outlasts a CPU type: the dtype alone changes
        Invalid(
            "import torch\ntorch.set_default_device(chosen)\ntorch.set_default_tensor_type(torch.DoubleTensor)\n",
            "import torch\ntorch.set_default_device(chosen)\ntorch.set_default_dtype(torch.float64)\n",
        ),
        # the legacy constructor follows the tensor type but not the default device: unsafe
        Invalid(
            "import torch\ntorch.set_default_tensor_type('torch.cuda.FloatTensor')\nbuffer = torch.Tensor(4, 4)\n",
            HEADER + DEVICE + "torch.set_default_dtype(torch.float32)\ntorch.set_default_device(device)\n"
            "buffer = torch.Tensor(4, 4)\n",
            unsafe=True,
        ),
        # the default device is per thread, the default tensor type was not: unsafe with threads
        Invalid(
            "import threading\nimport torch\ntorch.set_default_tensor_type(torch.cuda.FloatTensor)\n",
            "import threading\nimport torch\n" + DEVICE + "torch.set_default_dtype(torch.float32)\n"
            "torch.set_default_device(device)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nfrom concurrent.futures import ThreadPoolExecutor\n"
            "torch.set_default_tensor_type(torch.cuda.FloatTensor)\n",
            "import torch\nfrom concurrent.futures import ThreadPoolExecutor\n" + DEVICE
            + "torch.set_default_dtype(torch.float32)\ntorch.set_default_device(device)\n",
            unsafe=True,
        ),
        # ... and where the file imports other code, whose `torch.Tensor(...)` calls one file cannot
        # see (llama's generation.py: fairscale's parallel layers make their weights so)
        Invalid(
            "import torch\nfrom fairscale.nn.model_parallel.layers import ColumnParallelLinear\n"
            "torch.set_default_tensor_type(torch.cuda.HalfTensor)\n",
            "import torch\nfrom fairscale.nn.model_parallel.layers import ColumnParallelLinear\n" + DEVICE
            + "torch.set_default_dtype(torch.float16)\ntorch.set_default_device(device)\n",
            unsafe=True,
        ),
        # not a literal: reported without a fix
        Invalid("import torch\ntorch.set_default_tensor_type(torch.cuda.FloatTensor if cuda else torch.FloatTensor)\n"),
        # not alone on its line: reported without a fix
        Invalid("import torch\nimport numpy; torch.set_default_tensor_type('torch.DoubleTensor')\n"),
        Invalid("import torch\nold = torch.set_default_tensor_type('torch.DoubleTensor')\n"),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # The file calls `torch.set_default_device` itself: `set_default_tensor_type` left that in force.
        self._explicit_device = False
        # Every `set_default_tensor_type` call's type (None: unknown) and whether it can be fixed.
        self._calls: list[tuple[tuple[str, bool] | None, bool]] = []
        # What the fixes ask of all those calls, worked out once after the walk (see _file_calls).
        self._seen: tuple[bool, bool] | None = None
        # `torch.Tensor(...)` follows the default tensor type, not the default device.
        self._legacy_constructor = False

    def visit_Call(self, node: cst.Call) -> None:
        qualname = self.ctx.model.qualname(node.func)
        if qualname == "torch.Tensor":
            self._legacy_constructor = True
            return
        if qualname == "torch.set_default_device":
            self._explicit_device = True
            return
        if qualname != _CALL:
            return
        given = node.args[0].value if len(node.args) == 1 and node.args[0].keyword is None else None
        resolved = self._resolve(given) if given is not None else None
        statement = self._sole_statement(node)
        fixable = resolved is not None and statement is not None
        self._calls.append((resolved, fixable))
        self.report(
            node,
            "`torch.set_default_tensor_type` is deprecated; use `torch.set_default_dtype` "
            "and `torch.set_default_device`",
            fix=(lambda site: self._fix(statement, resolved, site)) if fixable else None,
        )

    def _thread_module(self) -> str | None:
        """A module the file imports that starts threads: `set_default_tensor_type` reached every
        thread, `set_default_device` reaches only the one that calls it."""
        for qualname in sorted(self.ctx.model.imports.values()):
            if qualname.split(".")[0] == "threading" or qualname.startswith(_THREAD_MODULES):
                return qualname.split(".")[0] if qualname.startswith("threading") else qualname
        return None

    def _other_code(self) -> str | None:
        """The modules the file imports that are neither torch's, NumPy's nor the standard
        library's, named (up to three) for the message: the default tensor type reached their
        `torch.Tensor(...)` calls too (fairscale 0.4.13 makes its parallel layers' weights with
        `Parameter(torch.Tensor(...))`), the default device does not, and one file cannot show
        which of them makes none."""
        others: list[str] = []
        for qualname in sorted(self.ctx.model.imports.values()):
            root = qualname.split(".")[0]
            if root not in ("torch", "numpy") and root not in sys.stdlib_module_names:
                module = root or qualname.lstrip(".").split(".")[0] or "a module of the package"
                if module not in others:
                    others.append(module)
        if not others:
            return None
        named = [f"`{module}`" if module != "a module of the package" else module for module in others[:3]]
        return ", ".join(named) + (" and others" if len(others) > 3 else "")

    def _resolve(self, given: cst.BaseExpression) -> tuple[str, bool] | None:
        text = string_value(given)
        if text is not None:
            return tensor_type(text)
        names = self.ctx.model.qualnames(given)
        return tensor_type(next(iter(names))) if len(names) == 1 else None

    def _sole_statement(self, node: cst.Call) -> cst.Expr | None:
        expr = self.ctx.parent(node)
        line = self.ctx.parent(expr) if expr is not None else None
        if isinstance(expr, cst.Expr) and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            return expr
        return None

    def _fix(self, statement: cst.Expr, resolved: tuple[str, bool], site: Site) -> FixPlan | None:
        held, cuda_types = self._file_calls()
        if held:
            return None
        dtype, cuda = resolved
        dtype_call = f"torch.set_default_dtype(torch.{dtype})"
        if cuda:
            device = self.ctx.device(site)
            statements = (dtype_call, f"torch.set_default_device({device.expr})")
            reason = self._cuda_unsafe()
            return FixPlan(
                f"Replace with `{dtype_call}` and `torch.set_default_device({device.expr})`" + (f" (unsafe: {reason})" if reason else ""),
                [Replace(statement, statements)],
                "unsafe" if reason else "safe",
                device=device,
                needs_torch=True,
                requires=_SET_DEFAULT_DEVICE_SINCE,
            )
        if cuda_types:
            # The fixes of the file's CUDA types move the default device: this one moves it back.
            quote = _quote_of(statement)
            statements = (dtype_call, f"torch.set_default_device({quote}cpu{quote})")
            reason = self._cuda_unsafe()
            if reason is not None:
                reason = (
                    "it pairs with the fix of this file's CUDA type, which is unsafe; applied without that fix, "
                    "its CPU default device would outlast the CUDA type"
                    if reason != _OWN_DEVICE else reason
                )
            return FixPlan(
                f"Replace with `{dtype_call}` and `torch.set_default_device(\"cpu\")`" + (f" (unsafe: {reason})" if reason else ""),
                [Replace(statement, statements)],
                "unsafe" if reason else "safe",
                needs_torch=True,
                requires=_SET_DEFAULT_DEVICE_SINCE,
            )
        return FixPlan(f"Replace with `{dtype_call}`", [Replace(statement, dtype_call)], "safe", needs_torch=True)

    def _file_calls(self) -> tuple[bool, bool]:
        """Whether every call is held without a fix, and whether the file sets a CUDA type (whose
        fix moves the default device, which a CPU type's fix must move back); asked after the
        walk, read once however many calls ask. The calls of one file move together: a default
        device set by one fix outlasts a later `set_default_tensor_type` left as it was (the
        device wins over the tensor type, on 2.4.1 as on 2.13), and a CPU type's
        `set_default_dtype(...)` alone leaves a CUDA type in force. So no call gets a fix where
        another has none, unless every call is a CPU type's."""
        if self._seen is None:
            held = any(not fixable for _, fixable in self._calls) and not all(
                resolved is not None and not resolved[1] for resolved, _ in self._calls
            )
            self._seen = (held, any(resolved is not None and resolved[1] for resolved, _ in self._calls))
        return self._seen

    def _cuda_unsafe(self) -> str | None:
        """Why the fix of a CUDA type is unsafe in this file, if it is."""
        threads = self._thread_module()
        other = self._other_code()
        if self._legacy_constructor:
            return "`torch.Tensor(...)` in this file would now make CPU tensors"
        if threads is not None:
            return f"the default device is per thread; threads started with `{threads}` would make CPU tensors"
        if other is not None:
            return (
                f"code the file imports ({other}) may call `torch.Tensor(...)`, which would now make "
                "CPU tensors, as fairscale's parallel layers do"
            )
        if self._explicit_device:
            return _OWN_DEVICE
        return None


# The old call left a default device the program set itself in force; `set_default_device` replaces it.
_OWN_DEVICE = "the file sets a default device itself, which the old call left in place and this one replaces"
_THREAD_MODULES = ("concurrent.futures", "multiprocessing.pool", "multiprocessing.dummy")
# torch.set_default_device arrived in torch 2.0.
_SET_DEFAULT_DEVICE_SINCE = (2, 0)


def _quote_of(statement: cst.Expr) -> str:
    """The quote character the replaced call used for its string argument, else a double quote."""
    call = statement.value
    if isinstance(call, cst.Call) and call.args and isinstance(call.args[0].value, cst.SimpleString):
        return call.args[0].value.quote[0]
    return '"'
