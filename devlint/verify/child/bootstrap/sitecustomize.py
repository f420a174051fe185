"""Start-up of every Python process that ``devlint emulate`` starts (this folder leads ``PYTHONPATH``).

It must cost nothing to processes that never import torch (pip, tools, build backends): it only
puts a finder on ``sys.meta_path`` that installs emulated CUDA once torch has been imported. Then
it runs the ``sitecustomize`` this file shadows, if any, as Python would have.
"""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _arm() -> None:
    if os.environ.get("DEVLINT_EMULATE_CUDA") != "1":
        return
    import _devlint_cuda_hook

    _devlint_cuda_hook.arm()


def _run_shadowed() -> None:
    """The ``sitecustomize`` later on ``sys.path`` that Python would have imported without us."""
    others = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_arm()
_run_shadowed()
