"""DEV602 cuda-memory-api: the `torch.cuda` memory functions that `torch.accelerator` has too."""

from __future__ import annotations

import libcst as cst

from devlint.fixes import FixPlan
from devlint.rule import Invalid, Rule
from devlint.rulekit.accelerator import ACCELERATOR, ACCELERATOR_MEMORY, Guarded, call_text, cuda_function, positional_device
from devlint.rulekit.before_accelerator import cuda_guard_fix, runs_without_cuda_before_accelerator
from devlint.rulekit.device_checks import under_device_check
from devlint.torchfacts.names import CUDA_MEMORY_API, CUDA_MEMORY_FALLBACKS

HEAD = "import torch\n"


class CudaMemoryApi(Rule):
    code = "DEV602"
    name = "cuda-memory-api"
    what = (
        "Flags `torch.cuda.empty_cache()`, `memory_allocated()`, `max_memory_allocated()`, "
        "`memory_reserved()`, `max_memory_reserved()`, `reset_peak_memory_stats()`, "
        "`reset_accumulated_memory_stats()`, `memory_stats()` and `mem_get_info()`."
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
    fix_availability = "safe"
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
        "enclosing GPU check makes the guard unneeded. A `device=` argument is passed positionally, "
        "as torch.accelerator requires. `mem_get_info()` has no fix: without an accelerator there is "
        "no free/total pair to return."
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
        # below torch-version 2.6 (the default 2.4): what already runs without CUDA has nothing to move to
        HEAD + "torch.cuda.empty_cache()\nused = torch.cuda.memory_allocated()\n"
        "if torch.cuda.is_available():\n    torch.cuda.reset_peak_memory_stats()\n",
    )
    INVALID = (
        # at the default torch-version (2.4) the accelerator memory API does not exist yet: what
        # fails without CUDA is reported, a statement fixed with the CUDA check around it
        Invalid(HEAD + "torch.cuda.reset_peak_memory_stats()\n", HEAD + "if torch.cuda.is_available():\n    torch.cuda.reset_peak_memory_stats()\n"),
        Invalid(HEAD + "free, total = torch.cuda.mem_get_info()\n"),
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
        # under a GPU check the guard is not repeated; a call inside an expression keeps its value
        Invalid(
            "from torch import cuda\nif cuda.is_available():\n    cuda.reset_peak_memory_stats()\n"
            "free = lambda: cuda.empty_cache()\n",
            "from torch import cuda\nimport torch\nif cuda.is_available():\n    torch.accelerator.reset_peak_memory_stats()\n"
            "free = lambda: torch.accelerator.empty_cache() if torch.accelerator.is_available() else None\n",
            count=2,
            torch_version=ACCELERATOR_MEMORY,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        name = cuda_function(self.ctx, node, CUDA_MEMORY_API)
        if name is None:
            return
        if runs_without_cuda_before_accelerator(self.ctx, node, name):
            return  # nothing generic to move to below torch-version 2.6, and it runs without CUDA
        fallback = CUDA_MEMORY_FALLBACKS[name]
        fixable = fallback is not None and not any(a.star for a in node.args)
        guarded = Guarded(node, under_device_check(self.ctx, node), fallback or "None")
        self.report(
            node,
            f"`torch.cuda.{name}()` only sees CUDA memory; use `torch.accelerator.{name}()` (torch >= 2.9)"
            if name != "mem_get_info"
            else "`torch.cuda.mem_get_info()` fails without CUDA; use `torch.accelerator.get_memory_info()` "
            "where an accelerator is available",
            fix=(lambda site: self._fix(node, name, guarded)) if fixable else None,
        )

    def _fix(self, node: cst.Call, name: str, guarded: Guarded) -> FixPlan | None:
        if self.ctx.settings.torch_version < ACCELERATOR:
            # fails without CUDA (what runs there is not reported below 2.6): the CUDA check around it
            return cuda_guard_fix(self.ctx, node, f"torch.cuda.{name}()") if CUDA_MEMORY_FALLBACKS[name] == "None" else None
        new = call_text(self.ctx, node, f"torch.accelerator.{name}", positional_device(node))
        return FixPlan(
            f"Use `torch.accelerator.{name}()` where an accelerator is available",
            [guarded.replace(self.ctx, new)],
            needs_torch=True,
            requires=ACCELERATOR_MEMORY,
        )
