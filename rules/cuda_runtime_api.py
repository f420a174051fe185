"""DEV601 cuda-runtime-api: `torch.cuda` runtime calls that have a device-generic equivalent."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Rule, Site
from devlint.rulekit.accelerator import (
    ACCELERATOR,
    ACCELERATOR_INDEX,
    GET_DEVICE_MODULE,
    Guarded,
    call_text,
    cuda_function,
    device_module,
    guards_cuda_code,
    positional_device,
)
from devlint.rulekit.before_accelerator import cuda_guard_fix, runs_without_cuda_before_accelerator
from devlint.rulekit.device_checks import hardcoded_gpu_index, under_device_check
from devlint.torchfacts.names import CUDA_RUNTIME_API, DEVICE_KEYWORDS

HEAD = "import torch\n"
# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


class CudaRuntimeApi(Rule):
    code = "DEV601"
    name = "cuda-runtime-api"
    what = (
        "Flags `torch.cuda.synchronize()`, `device_count()`, `current_device()`, `current_stream()`, "
        "`torch.cuda.stream(s)`, `torch.cuda.Stream()`, `torch.cuda.Event(...)`, and a GPU selection "
        "under a device check (`torch.cuda.set_device(rank)`, `with torch.cuda.device(rank)`) that "
        "the hardcoded-device-selection rule leaves alone: calls that have a device-generic equivalent."
    )
    why = (
        "These calls only know CUDA: on Apple MPS, Intel XPU or Ascend NPU they fail or do the wrong "
        "thing, and several fail on a CPU-only machine too (`torch.cuda.synchronize()`: \"Torch not "
        'compiled with CUDA enabled"). `torch.accelerator` (torch 2.6+) and '
        "`torch.get_device_module(device)` reach whatever accelerator the program runs on."
    )
    example = (
        "torch.cuda.synchronize()\nn_gpus = torch.cuda.device_count()\n"
        "buf = torch.empty(4, device=torch.cuda.current_device())\nside = torch.cuda.Stream()"
    )
    use_instead = (
        "if torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n"
        "n_gpus = torch.accelerator.device_count()\nbuf = torch.empty(4, device=device)\n"
        "side = torch.get_device_module(device).Stream()"
    )
    fix_availability = "sometimes"
    fix_note = (
        "Each fix does on a CUDA machine exactly what the original did and runs without an "
        "accelerator. Below torch-version 2.6 (no torch.accelerator) a call that already runs without "
        "CUDA, under a GPU check or by itself (`device_count()` says 0), is not reported; a bare "
        "`torch.cuda.synchronize()` statement gets `if torch.cuda.is_available():` around it with "
        "torch-version 2.4 or older. `synchronize()`: with torch-version >= 2.6 `if torch.accelerator.is_available(): "
        "torch.accelerator.synchronize()` (the accelerator of a CUDA machine is CUDA; the guard skips "
        "what would raise \"Cannot access accelerator device when none is available\" on the CPU; an "
        "enclosing GPU check makes the guard unneeded); with 2.5 "
        "`torch.get_device_module(device).synchronize()`, `torch.cpu.synchronize()` on the CPU, a "
        "no-op. `device_count()`: `torch.accelerator.device_count()` (2.6), the same count on CUDA and "
        "0 without an accelerator, as before (`torch.cpu.device_count()` would say 1); no fix where "
        "the count decides whether CUDA code runs (`if torch.cuda.device_count() > 1: x.to(\"cuda:1\")`, "
        "`@skipUnless(torch.cuda.device_count() >= 2, \"needs two CUDA GPUs\")`). "
        "`current_device()` given as a device (`device=`, `map_location=`, `.to()`): the device in "
        "scope, which on CUDA means the current GPU too; elsewhere `torch.accelerator.current_device_index()` "
        "(2.7), unsafe: without an accelerator it still raises, as the original did, since no index "
        "is right there (`torch.cpu.current_device()` returns the string \"cpu\"). `current_stream()`, "
        "`stream(s)`, `Stream()`: `torch.get_device_module(device)` (2.5), whose `torch.cpu` "
        "stand-ins run on the CPU. `Event(...)` and a `Stream` with arguments: no fix (the CPU events "
        "have no timing, and `torch.cpu.Stream` takes no device). Under a GPU check, "
        "`set_device(rank)` becomes `torch.accelerator.set_device_index(rank)` (2.7); `with "
        "torch.cuda.device(rank)` is reported only (`torch.accelerator.device_index`, 2.8, takes an "
        "int, not a device). Versions from PyTorch's docs (torch.accelerator per release, torch.cpu "
        "since 2.1); CPU behaviour checked in tests/test_dev6_semantics.py."
    )
    triggers = ("cuda",)
    advice_since = ACCELERATOR

    VALID = (
        # accelerator-generic code
        HEAD + "if torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n"
        "    n = torch.accelerator.device_count()\n",
        HEAD + "def sync(acc: torch.device):\n    torch.get_device_module(acc).synchronize()\n",
        # DEV202 owns a hardcoded or unguarded selection
        HEAD + "torch.cuda.set_device(0)\nwith torch.cuda.device(rank):\n    pass\n",
        # other torch.cuda calls are not this rule's
        HEAD + "if torch.cuda.is_available():\n    name = torch.cuda.get_device_name()\n",
        # another library's cuda module
        "from numba import cuda\ncuda.synchronize()\nn = cuda.device_count()\n",
        # a reference, not a call
        HEAD + "assert isinstance(s, torch.cuda.Stream)\n",
        # below torch-version 2.6 (the default 2.4): what already runs without CUDA has nothing to move to
        HEAD + "n = torch.cuda.device_count()\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n"
        "    s = torch.cuda.Stream()\n",
    )
    INVALID = (
        # 2.4 (default torch-version): get_device_module needs 2.5, accelerator 2.6; what fails
        # without CUDA gets the CUDA check around it (on CUDA it runs as before)
        Invalid(HEAD + "torch.cuda.synchronize()\n", HEAD + "if torch.cuda.is_available():\n    torch.cuda.synchronize()\n"),
        Invalid(HEAD + "s = torch.cuda.current_stream()\n"),
        Invalid(HEAD + 'if torch.cuda.device_count() > 1:\n    x = x.to("cuda:1")\n', torch_version=ACCELERATOR),
        # a current-device index given as a device: the device in scope
        Invalid(
            HEAD + "buf = torch.empty(4, device=torch.cuda.current_device())\nx = x.to(torch.cuda.current_device())\n",
            HEAD + DEVICE + "buf = torch.empty(4, device=device)\nx = x.to(device)\n",
            count=2,
        ),
        Invalid(HEAD + 'print(f"gpu {torch.cuda.current_device()}")\n'),
        # rewriting the call alone would leave the line CUDA-only: no fix
        Invalid(HEAD + 'where = f"cuda:{torch.cuda.current_device()}"\n', unsafe=True),
        Invalid(
            HEAD + 'where = torch.cuda.current_device() if torch.cuda.is_available() else "cpu"\n',
            unsafe=True,
            torch_version=ACCELERATOR,
        ),
        Invalid(HEAD + "e = torch.cuda.Event(enable_timing=True)\n"),
        Invalid(HEAD + "if torch.cuda.is_available():\n    with torch.cuda.device(rank):\n        pass\n", torch_version=ACCELERATOR),
        # torch-version 2.6: torch.accelerator, guarded where it needs an accelerator
        Invalid(
            HEAD + "def timed(fn):\n    torch.cuda.synchronize()\n    n = torch.cuda.device_count()\n"
            "    if torch.cuda.is_available():\n        torch.cuda.synchronize(device=0)\n    return fn(), n\n",
            HEAD + "def timed(fn):\n    if torch.accelerator.is_available():\n        torch.accelerator.synchronize()\n"
            "    n = torch.accelerator.device_count()\n"
            "    if torch.cuda.is_available():\n        torch.accelerator.synchronize(0)\n    return fn(), n\n",
            count=3,
            torch_version=ACCELERATOR,
        ),
        # torch-version 2.5: the device module of the device in scope
        Invalid(
            HEAD + "def overlap(model, x, device: torch.device):\n    side = torch.cuda.Stream()\n"
            "    with torch.cuda.stream(side):\n        y = model(x)\n    torch.cuda.current_stream().wait_stream(side)\n"
            "    torch.cuda.synchronize()\n    return y\n",
            HEAD + "def overlap(model, x, device: torch.device):\n    side = torch.get_device_module(device).Stream()\n"
            "    with torch.get_device_module(device).stream(side):\n        y = model(x)\n"
            "    torch.get_device_module(device).current_stream().wait_stream(side)\n"
            "    torch.get_device_module(device).synchronize()\n    return y\n",
            count=4,
            torch_version=GET_DEVICE_MODULE,
        ),
        # torch-version 2.7: an index that is no device; unsafe, it still needs an accelerator
        Invalid(
            HEAD + 'rank = torch.cuda.current_device()\nif torch.cuda.is_available():\n    torch.cuda.set_device(rank)\n',
            HEAD + 'rank = torch.accelerator.current_device_index()\nif torch.cuda.is_available():\n'
            "    torch.accelerator.set_device_index(rank)\n",
            unsafe=True,
            count=2,
            torch_version=ACCELERATOR_INDEX,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        name = cuda_function(self.ctx, node, CUDA_RUNTIME_API)
        if name is None or any(a.star for a in node.args):
            return
        if runs_without_cuda_before_accelerator(self.ctx, node, name):
            return  # nothing generic to move to below torch-version 2.6, and it runs without CUDA
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(self, node)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        item = node.item
        if not isinstance(item, cst.Call) or cuda_function(self.ctx, item, frozenset({"device"})) is None:
            return
        # hardcoded or unguarded: DEV202 reports it (the item's own parent link comes after this hook)
        if hardcoded_gpu_index(self.ctx, item) or not under_device_check(self.ctx, node):
            return
        if runs_without_cuda_before_accelerator(self.ctx, node, None):
            return  # under its GPU check: it runs without CUDA, and below 2.6 has nothing to move to
        self.report(
            item,
            "`with torch.cuda.device(...)` only switches CUDA GPUs; with an int index use "
            "`torch.accelerator.device_index(i)` (torch >= 2.8)",
        )

    # -- one handler per function ------------------------------------------------------------

    def _synchronize(self, node: cst.Call) -> None:
        guarded = Guarded(node, under_device_check(self.ctx, node), "None")
        self.report(
            node,
            "`torch.cuda.synchronize()` fails without CUDA and ignores other accelerators; use "
            "`torch.accelerator.synchronize()` under `torch.accelerator.is_available()`",
            fix=lambda site: self._synchronize_fix(node, guarded, site),
        )

    def _synchronize_fix(self, node: cst.Call, guarded: Guarded, site: Site) -> FixPlan:
        if self.ctx.settings.torch_version >= ACCELERATOR:
            new = call_text(self.ctx, node, "torch.accelerator.synchronize", positional_device(node))
            return FixPlan(
                "Use `torch.accelerator.synchronize()` where an accelerator is available",
                [guarded.replace(self.ctx, new)],
                needs_torch=True,
                requires=ACCELERATOR,
            )
        if self.ctx.settings.torch_version < GET_DEVICE_MODULE:
            return cuda_guard_fix(self.ctx, node, "torch.cuda.synchronize()")
        return self._device_module_fix(node, "synchronize", site)

    def _device_count(self, node: cst.Call) -> None:
        # a count that decides whether CUDA code runs: counting other accelerators would run it there
        fixable = not guards_cuda_code(self.ctx, node)
        self.report(
            node,
            "`torch.cuda.device_count()` counts CUDA GPUs only; use `torch.accelerator.device_count()`",
            fix=(
                lambda site: FixPlan(
                    "Use `torch.accelerator.device_count()`",
                    [Replace(node, call_text(self.ctx, node, "torch.accelerator.device_count"))],
                    needs_torch=True,
                    requires=ACCELERATOR,
                )
            )
            if fixable
            else None,
        )

    def _current_device(self, node: cst.Call) -> None:
        as_device = self._given_as_device(node)
        half = self._half_migration(node)
        if half:
            advice = f"{half}: pass the device in use instead"
        else:
            advice = "pass the device in use" if as_device else "use `torch.accelerator.current_device_index()`"
        fix = None if half else (lambda site: self._device_fix(node, site)) if as_device else self._index_fix(node)
        self.report(node, "`torch.cuda.current_device()` fails without CUDA and ignores other accelerators; " + advice, fix=fix)

    def _half_migration(self, node: cst.Call) -> str:
        """Why rewriting the call alone would leave its line CUDA-only for a second migration: the
        f-string around it names CUDA (``f"cuda:{torch.cuda.current_device()}"``), or the test that
        chooses it does (``... if torch.cuda.is_available() else "cpu"``). "" when neither does."""
        child: cst.CSTNode = node
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, cst.FormattedString) and any(
                isinstance(part, cst.FormattedStringText) and "cuda" in part.value for part in ancestor.parts
            ):
                return "the string around it names CUDA as well"
            if isinstance(ancestor, cst.IfExp) and child is not ancestor.test and "cuda" in self.ctx.code(ancestor.test):
                return "the test that chooses it asks CUDA as well"
            if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                break
            child = ancestor
        return ""

    def _given_as_device(self, node: cst.Call) -> bool:
        parent = self.ctx.parent(node)
        if not isinstance(parent, cst.Arg):
            return False
        if parent.keyword is not None:
            return parent.keyword.value in DEVICE_KEYWORDS
        call = self.ctx.parent(parent)
        return (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "to"
            and call.args[0] is parent
        )

    def _device_fix(self, node: cst.Call, site: Site) -> FixPlan:
        device = self.ctx.device(site)
        return FixPlan(f"Use the device in scope, `{device.expr}`", [Replace(node, device.expr)], device=device)

    def _index_fix(self, node: cst.Call) -> Callable[[Site], FixPlan]:
        def fix(site: Site) -> FixPlan:
            return FixPlan(
                "Use `torch.accelerator.current_device_index()` (still fails without an accelerator)",
                [Replace(node, call_text(self.ctx, node, "torch.accelerator.current_device_index"))],
                "unsafe",
                needs_torch=True,
                requires=ACCELERATOR_INDEX,
            )

        return fix

    def _stream_api(self, node: cst.Call) -> None:
        name = cuda_function(self.ctx, node, CUDA_RUNTIME_API)
        assert name is not None
        fixable = name != "Stream" or not node.args
        self.report(
            node,
            f"`torch.cuda.{name}(...)` only knows CUDA streams; use `torch.get_device_module(device).{name}(...)`",
            fix=(lambda site: self._device_module_fix(node, name, site)) if fixable else None,
        )

    def _device_module_fix(self, node: cst.Call, name: str, site: Site) -> FixPlan:
        module, device = device_module(self.ctx, site)
        return FixPlan(
            f"Use `{module}.{name}(...)`",
            [Replace(node, call_text(self.ctx, node, f"{module}.{name}"))],
            device=device,
            needs_torch=True,
            requires=GET_DEVICE_MODULE,
        )

    def _event(self, node: cst.Call) -> None:
        self.report(
            node,
            "`torch.cuda.Event(...)` fails without CUDA, and no CPU event keeps time; create events "
            "through `torch.get_device_module(device).Event` where an accelerator is available",
        )

    def _set_device(self, node: cst.Call) -> None:
        if hardcoded_gpu_index(self.ctx, node) or not under_device_check(self.ctx, node):
            return  # DEV202's
        self.report(
            node,
            "`torch.cuda.set_device(...)` only selects CUDA GPUs; use `torch.accelerator.set_device_index(...)`",
            fix=lambda site: FixPlan(
                "Use `torch.accelerator.set_device_index(...)` (it runs only where a GPU is, as before)",
                [Replace(node, call_text(self.ctx, node, "torch.accelerator.set_device_index", positional_device(node)))],
                needs_torch=True,
                requires=ACCELERATOR_INDEX,
            ),
        )


_HANDLERS: dict[str, Callable[[CudaRuntimeApi, cst.Call], None]] = {
    "synchronize": CudaRuntimeApi._synchronize,
    "device_count": CudaRuntimeApi._device_count,
    "current_device": CudaRuntimeApi._current_device,
    "current_stream": CudaRuntimeApi._stream_api,
    "stream": CudaRuntimeApi._stream_api,
    "Stream": CudaRuntimeApi._stream_api,
    "Event": CudaRuntimeApi._event,
    "set_device": CudaRuntimeApi._set_device,
}
