"""DEV602 cuda-memory-api: the `torch.cuda` memory functions that `torch.accelerator` has too."""

from __future__ import annotations

import libcst as cst

from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid
from devlint.rulekit.accelerator import ACCELERATOR, ACCELERATOR_MEMORY, Guarded, call_text, cuda_function, positional_device
from devlint.rulekit.cuda_choices import WholeChoiceRule
from devlint.rulekit.before_accelerator import cuda_guard_fix, runs_without_cuda_before_accelerator
from devlint.rulekit.device_checks import under_device_check
from devlint.torchfacts.api_versions import SINCE
from devlint.torchfacts.names import CUDA_MEMORY_ALIASES, CUDA_MEMORY_API, CUDA_MEMORY_FALLBACKS, CUDA_OUT_OF_MEMORY

# torch.accelerator.get_memory_info, the device-generic mem_get_info
MEMORY_INFO = SINCE["torch.accelerator.get_memory_info"]
# torch.OutOfMemoryError, the name torch.cuda.OutOfMemoryError has had since torch 2.4 at the latest (the oldest release observed)
OUT_OF_MEMORY = SINCE["torch.OutOfMemoryError"]

HEAD = "import torch\n"


class CudaMemoryApi(WholeChoiceRule):
    code = "DEV602"
    name = "cuda-memory-api"
    what = (
        "Flags `torch.cuda.empty_cache()`, `memory_allocated()`, `max_memory_allocated()`, "
        "`memory_reserved()`, `max_memory_reserved()`, `reset_peak_memory_stats()`, "
        "`reset_accumulated_memory_stats()`, `memory_stats()` and `mem_get_info()`, and the deprecated "
        "names that call them (`memory_cached()`, `max_memory_cached()`, `reset_max_memory_allocated()`, "
        "`reset_max_memory_cached()`); and, with "
        "torch-version >= 2.4, `torch.cuda.OutOfMemoryError`. `torch.get_device_module(\"cuda\")` is "
        "`torch.cuda` itself: its calls are reported alike, also through a name bound to it on every "
        "path to the call."
    )
    why = (
        "They report and manage CUDA memory only: on Apple MPS, Intel XPU or other accelerators a "
        "memory log prints 0 and `empty_cache()` frees nothing, and some fail outright without CUDA "
        "(`reset_peak_memory_stats()`, `mem_get_info()`). Since torch 2.9 `torch.accelerator` has "
        "the same functions for whatever accelerator the program runs on."
    )
    example = (
        "torch.cuda.empty_cache()\nprint(torch.cuda.max_memory_allocated() / 2**20)\n"
        "torch.cuda.reset_peak_memory_stats()"
    )
    use_instead = (
        "if torch.accelerator.is_available():\n    torch.accelerator.empty_cache()\n"
        "print((torch.accelerator.max_memory_allocated() if torch.accelerator.is_available() else 0) / 2**20)\n"
        "if torch.accelerator.is_available():\n    torch.accelerator.reset_peak_memory_stats()"
    )
    fix_availability = "sometimes"
    fix_note = (
        "Safe, with torch-version >= 2.9 (the torch.accelerator memory functions, per PyTorch's "
        "docs; from 2.6 to 2.8 the finding has no fix). Below 2.6 a call that already runs without "
        "CUDA (under a GPU check; `empty_cache()`, `memory_allocated()` and the other readers, which "
        "return 0 or `{}` there) is not reported, and a `reset_peak_memory_stats()` or "
        "`reset_accumulated_memory_stats()` statement, which fails without CUDA, gets `if "
        "torch.cuda.is_available():` around it. On a CUDA machine the accelerator is CUDA and "
        "`torch.accelerator.X(device_index=None)` reads the current device, as `torch.cuda.X()` did. "
        "Without an accelerator they raise \"Cannot access accelerator device when none is "
        "available\", so the fix guards them: a call that returns nothing runs under `if "
        "torch.accelerator.is_available():` (or `... if ... else None` inside an expression), and "
        "one that returns a value falls back to what the CUDA call returns without CUDA: 0 bytes, "
        "`{}` for `memory_stats()` (tests/test_dev6_semantics.py checks both on this CPU build). An "
        "enclosing GPU check makes the guard unneeded; a reading chosen by `torch.cuda.is_available()` in "
        "its own expression (`torch.cuda.memory_allocated() if torch.cuda.is_available() else 0`) gets "
        "`torch.accelerator.is_available()` there too, and none where the test asks more of CUDA. "
        "Consecutive statements that get a guard share one `if`. A `device=` argument is passed positionally, "
        "as torch.accelerator requires. `mem_get_info()`: with torch-version >= 2.10 "
        "`torch.accelerator.get_memory_info()` (the same cudaMemGetInfo of the current device on CUDA); "
        "a deprecated name becomes the accelerator's twin of the function it calls (torch/cuda/memory.py: "
        "`memory_cached` is `memory_reserved`, `max_memory_cached` `max_memory_reserved`, both "
        "`reset_max_memory_*` are `reset_peak_memory_stats`, after a FutureWarning the fix no longer prints); "
        "safe under a GPU check, unsafe elsewhere, since without an accelerator it still raises, as "
        "the original did: there is no free/total pair to fall back to. `torch.cuda.OutOfMemoryError` "
        "-> `torch.OutOfMemoryError`, safe: torch.cuda's name is an alias of that very class "
        "(`OutOfMemoryError = torch._C.OutOfMemoryError` in torch/cuda/__init__.py), which every "
        "backend raises; reported only with torch-version >= 2.4, the first torch with the generic name."
    )
    triggers = ("cuda",)
    advice_since = ACCELERATOR_MEMORY

    VALID = (
        HEAD + "if torch.accelerator.is_available():\n    torch.accelerator.empty_cache()\n"
        "    peak = torch.accelerator.max_memory_allocated()\n",
        HEAD + "used = torch.get_device_module(device).memory_allocated()\n",
        HEAD + "if torch.cuda.is_available():\n    print(torch.cuda.get_device_name())\n",
        "from numba import cuda\ncuda.current_context().memory_info()\n",
        # a reference, not a call
        HEAD + "hook = torch.cuda.empty_cache\n",
        # torch.OutOfMemoryError is the generic name already (torch.cuda's below torch-version 2.4,
        # the oldest release observed to have the generic one: tests/test_dev6_rules.py)
        HEAD + "try:\n    run()\nexcept torch.OutOfMemoryError:\n    pass\n",
        # another object's OutOfMemoryError
        "import torch\nimport jax\ntry:\n    run()\nexcept jax.errors.OutOfMemoryError:\n    pass\n",
        # below torch-version 2.6 (the default 2.4): what already runs without CUDA has nothing to move to
        HEAD + "torch.cuda.empty_cache()\nused = torch.cuda.memory_allocated()\n"
        "if torch.cuda.is_available():\n    torch.cuda.reset_peak_memory_stats()\n",
    )
    INVALID = (
        # at the default torch-version (2.4) the accelerator memory API does not exist yet: what
        # fails without CUDA is reported, a statement fixed with the CUDA check around it
        Invalid(HEAD + "torch.cuda.reset_peak_memory_stats()\n", HEAD + "if torch.cuda.is_available():\n    torch.cuda.reset_peak_memory_stats()\n"),
        Invalid(HEAD + "free, total = torch.cuda.mem_get_info()\n"),
        # torch.get_device_module("cuda") is torch.cuda itself
        Invalid(
            HEAD + 'torch.get_device_module("cuda").reset_peak_memory_stats()\n',
            HEAD + 'if torch.cuda.is_available():\n    torch.get_device_module("cuda").reset_peak_memory_stats()\n',
        ),
        # ... also through a name that holds it on every path to the call
        Invalid(
            HEAD + 'def report():\n    gpu = torch.get_device_module("cuda")\n    gpu.reset_peak_memory_stats()\n',
            HEAD + 'def report():\n    gpu = torch.get_device_module("cuda")\n    if torch.cuda.is_available():\n'
            "        gpu.reset_peak_memory_stats()\n",
        ),
        # from 2.6 accelerator-generic code is the goal: reported, the fix needs 2.9
        Invalid(HEAD + "torch.cuda.empty_cache()\nused = torch.cuda.memory_allocated()\n", count=2, torch_version=(2, 6)),
        Invalid(HEAD + "from torch.cuda import memory_stats\nstats = memory_stats(device=0)\n", torch_version=(2, 6)),
        # torch-version 2.9: a statement gets a guard, a value the CUDA call's value without CUDA
        Invalid(
            HEAD + "def report(step):\n    torch.cuda.empty_cache()  # between epochs\n"
            '    print(f"{step}: {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")\n'
            "    stats = torch.cuda.memory_stats(device=0)\n",
            HEAD + "def report(step):\n    if torch.accelerator.is_available():\n"
            "        torch.accelerator.empty_cache()  # between epochs\n"
            '    print(f"{step}: {(torch.accelerator.max_memory_allocated() if torch.accelerator.is_available() else 0) / 2**20:.0f} MiB")\n'
            "    stats = torch.accelerator.memory_stats(0) if torch.accelerator.is_available() else {}\n",
            count=3,
            torch_version=ACCELERATOR_MEMORY,
        ),
        # a deprecated name is the function it calls: below torch 2.6 the reset is guarded as
        # written (the readers return 0 without CUDA: not reported there), from 2.9 each moves to
        # the accelerator's twin of what it calls
        Invalid(
            HEAD + "torch.cuda.reset_max_memory_allocated()\nused = torch.cuda.max_memory_cached()\n",
            HEAD + "if torch.cuda.is_available():\n    torch.cuda.reset_max_memory_allocated()\nused = torch.cuda.max_memory_cached()\n",
        ),
        Invalid(
            HEAD + "torch.cuda.reset_max_memory_cached()\nused = torch.cuda.memory_cached(device=0) / 2**20\n",
            HEAD + "if torch.accelerator.is_available():\n    torch.accelerator.reset_peak_memory_stats()\n"
            "used = (torch.accelerator.memory_reserved(0) if torch.accelerator.is_available() else 0) / 2**20\n",
            count=2,
            torch_version=ACCELERATOR_MEMORY,
        ),
        # a reading chosen by a CUDA check in its expression moves with the check, or gets no fix
        Invalid(
            HEAD + "used = torch.cuda.memory_allocated() if torch.cuda.is_available() else 0\n",
            HEAD + "used = torch.accelerator.memory_allocated() if torch.accelerator.is_available() else 0\n",
            torch_version=ACCELERATOR_MEMORY,
        ),
        Invalid(
            HEAD + "used = torch.cuda.memory_allocated() if torch.cuda.device_count() else 0\n",
            torch_version=ACCELERATOR_MEMORY,
        ),
        # consecutive statements share one guard, as do a statement and a guard block right next
        # to it with the same test; a blank line or a comment line ends a run
        Invalid(
            HEAD + "torch.cuda.empty_cache()\ntorch.cuda.reset_peak_memory_stats()\n# then\n"
            "torch.cuda.reset_accumulated_memory_stats()\n\ntorch.cuda.empty_cache()\n"
            "if torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n",
            HEAD + "if torch.accelerator.is_available():\n    torch.accelerator.empty_cache()\n"
            "    torch.accelerator.reset_peak_memory_stats()\n# then\nif torch.accelerator.is_available():\n"
            "    torch.accelerator.reset_accumulated_memory_stats()\n\nif torch.accelerator.is_available():\n"
            "    torch.accelerator.empty_cache()\n    torch.accelerator.synchronize()\n",
            count=4,
            torch_version=ACCELERATOR_MEMORY,
        ),
        # another test (a CUDA check, an else) is no identical guard: a block of its own
        Invalid(
            HEAD + "if torch.cuda.is_available():\n    model.half()\ntorch.cuda.empty_cache()\n"
            "if torch.accelerator.is_available():\n    model.half()\nelse:\n    model.float()\n",
            HEAD + "if torch.cuda.is_available():\n    model.half()\nif torch.accelerator.is_available():\n"
            "    torch.accelerator.empty_cache()\nif torch.accelerator.is_available():\n    model.half()\nelse:\n"
            "    model.float()\n",
            torch_version=ACCELERATOR_MEMORY,
        ),
        # below torch 2.6 the guard is the CUDA check, shared the same way
        Invalid(
            HEAD + "torch.cuda.reset_peak_memory_stats()\ntorch.cuda.reset_accumulated_memory_stats()\n",
            HEAD + "if torch.cuda.is_available():\n    torch.cuda.reset_peak_memory_stats()\n"
            "    torch.cuda.reset_accumulated_memory_stats()\n",
            count=2,
        ),
        # under a GPU check the guard is not repeated; a call inside an expression keeps its value
        Invalid(
            "from torch import cuda\nif cuda.is_available():\n    cuda.reset_peak_memory_stats()\n"
            "free = lambda: cuda.empty_cache()\n",
            "from torch import cuda\nimport torch\nif cuda.is_available():\n    torch.accelerator.reset_peak_memory_stats()\n"
            "free = lambda: torch.accelerator.empty_cache() if torch.accelerator.is_available() else None\n",
            count=2,
            torch_version=ACCELERATOR_MEMORY,
        ),
        # torch-version 2.10: mem_get_info has a device-generic twin; safe under a GPU check
        Invalid(
            HEAD + "if torch.cuda.is_available():\n    free, total = torch.cuda.mem_get_info(device=0)\n",
            HEAD + "if torch.cuda.is_available():\n    free, total = torch.accelerator.get_memory_info(0)\n",
            torch_version=MEMORY_INFO,
        ),
        # unguarded it still needs an accelerator, as the original needed CUDA: unsafe
        Invalid(
            HEAD + "free, total = torch.cuda.mem_get_info()\n",
            HEAD + "free, total = torch.accelerator.get_memory_info()\n",
            unsafe=True,
            torch_version=MEMORY_INFO,
        ),
        # torch-version 2.4: the OutOfMemoryError class by its generic name, through any import
        Invalid(
            HEAD + "try:\n    run()\nexcept (torch.cuda.OutOfMemoryError, ValueError) as error:\n"
            "    ok = isinstance(error, torch.cuda.OutOfMemoryError)\n",
            HEAD + "try:\n    run()\nexcept (torch.OutOfMemoryError, ValueError) as error:\n"
            "    ok = isinstance(error, torch.OutOfMemoryError)\n",
            count=2,
            torch_version=OUT_OF_MEMORY,
        ),
        Invalid(
            "from torch.cuda import OutOfMemoryError as OOM\ntry:\n    run()\nexcept OOM:\n    pass\n",
            "import torch\ntry:\n    run()\nexcept torch.OutOfMemoryError:\n    pass\n",
            torch_version=OUT_OF_MEMORY,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        name = cuda_function(self.ctx, node, CUDA_MEMORY_API)
        if name is None:
            return
        if runs_without_cuda_before_accelerator(self.ctx, node, name):
            return  # nothing generic to move to below torch-version 2.6, and it runs without CUDA
        if name == "mem_get_info":
            self._mem_get_info(node)
            return
        generic = CUDA_MEMORY_ALIASES.get(name, name)
        fallback = CUDA_MEMORY_FALLBACKS[generic]
        fixable = fallback is not None and not any(a.star for a in node.args)
        guarded = Guarded(node, under_device_check(self.ctx, node), fallback or "None")
        self.report(
            node,
            f"`torch.cuda.{name}()` only sees CUDA memory; use `torch.accelerator.{generic}()` (torch >= 2.9)",
            fix=(lambda site: self._fix(node, name, generic, guarded)) if fixable else None,
        )

    def _fix(self, node: cst.Call, name: str, generic: str, guarded: Guarded) -> FixPlan | None:
        if self.ctx.settings.torch_version < ACCELERATOR:
            # fails without CUDA (what runs there is not reported below 2.6): the CUDA check around it
            return cuda_guard_fix(self.ctx, node, f"torch.cuda.{name}()") if CUDA_MEMORY_FALLBACKS[generic] == "None" else None
        new = call_text(self.ctx, node, f"torch.accelerator.{generic}", positional_device(node))
        return FixPlan(
            f"Use `torch.accelerator.{generic}()` where an accelerator is available",
            [guarded.replace(self.ctx, new)],
            needs_torch=True,
            requires=ACCELERATOR_MEMORY,
        )

    def _mem_get_info(self, node: cst.Call) -> None:
        checked = under_device_check(self.ctx, node)
        fixable = not any(a.star for a in node.args)
        self.report(
            node,
            "`torch.cuda.mem_get_info()` fails without CUDA; use `torch.accelerator.get_memory_info()` "
            "(torch >= 2.10) where an accelerator is available",
            fix=(lambda site: self._memory_info_fix(node, checked)) if fixable else None,
        )

    def _memory_info_fix(self, node: cst.Call, checked: bool) -> FixPlan:
        new = call_text(self.ctx, node, "torch.accelerator.get_memory_info", positional_device(node))
        if checked:
            return FixPlan(
                "Use `torch.accelerator.get_memory_info()`", [Replace(node, new)], needs_torch=True, requires=MEMORY_INFO
            )
        return FixPlan(
            "Use `torch.accelerator.get_memory_info()` (still fails without an accelerator)",
            [Replace(node, new)],
            "unsafe",
            needs_torch=True,
            requires=MEMORY_INFO,
        )

    # torch.cuda.OutOfMemoryError, by an attribute chain or an imported name
    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "OutOfMemoryError" and self.ctx.model.qualname(node) == CUDA_OUT_OF_MEMORY:
            self._out_of_memory(node)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value not in self.ctx.model.imports or self._in_import_or_attribute(node):
            return
        if self.ctx.model.qualname(node) == CUDA_OUT_OF_MEMORY:
            self._out_of_memory(node)

    def _in_import_or_attribute(self, node: cst.Name) -> bool:
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return True
        # An import is a statement: the climb ends at the first statement above the name.
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, (cst.Import, cst.ImportFrom)):
                return True
            if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return False
        return False

    def _out_of_memory(self, node: cst.Attribute | cst.Name) -> None:
        if self.ctx.settings.torch_version < OUT_OF_MEMORY:
            return  # the generic name does not exist yet, and the CUDA one is the same class
        self.report(
            node,
            "`torch.cuda.OutOfMemoryError` is `torch.OutOfMemoryError`, which every accelerator raises; "
            "use the device-generic name",
            fix=lambda site: FixPlan(
                "Use `torch.OutOfMemoryError` (the same class)",
                [Replace(node, "torch.OutOfMemoryError")],
                needs_torch=True,
                requires=OUT_OF_MEMORY,
            ),
        )
