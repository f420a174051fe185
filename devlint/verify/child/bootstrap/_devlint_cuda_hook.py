"""Emulated CUDA in this process from the moment torch is imported (child side: nothing of devlint).

``arm()`` installs emulation at once when torch is already imported, else puts a finder first on
``sys.meta_path`` that lets torch import as usual and installs emulation right after. The
emulation package (``../emulation``) is loaded by path, under the private name that verify's
harness uses, and installed at most once per process. A torch that emulation does not support
ends the process with one line on stderr and exit status 2, before any of emulation is loaded.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from typing import Any

_EMULATION = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "emulation")
_NAME = "_devlint_verify_emulation"
EXIT_UNSUPPORTED = 2
# Set on the loaded emulation package once installed, so a second arm() (the pytest option under
# `devlint emulate`) installs nothing more.
_INSTALLED = "_devlint_installed"


def arm() -> None:
    if "torch" in sys.modules:
        install()
    elif not any(isinstance(finder, AfterTorch) for finder in sys.meta_path):
        sys.meta_path.insert(0, AfterTorch())


def install() -> Any:
    """Install emulation in this process (once); the installation."""
    refused = releases().refusal(sys.modules["torch"].__version__)
    if refused is not None:
        sys.stderr.write(f"devlint emulate: {refused}\n")
        sys.stderr.flush()
        raise SystemExit(EXIT_UNSUPPORTED)
    emulation = _load()
    if getattr(emulation, _INSTALLED, None) is None:
        setattr(emulation, _INSTALLED, emulation.install())
    return getattr(emulation, _INSTALLED)


def releases() -> types.ModuleType:
    """emulation/releases.py alone (it imports nothing): the supported torch releases, readable
    before the emulation package, whose modules may not even import on another torch."""
    name = "_devlint_emulation_releases"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(_EMULATION, "releases.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]


def _load() -> types.ModuleType:
    if _NAME in sys.modules:
        return sys.modules[_NAME]
    spec = importlib.util.spec_from_file_location(
        _NAME, os.path.join(_EMULATION, "__init__.py"), submodule_search_locations=[_EMULATION]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[_NAME]
        raise
    return module


class AfterTorch(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of ``torch`` that the other finders find."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "torch":
            return None
        sys.meta_path[:] = [finder for finder in sys.meta_path if finder is not self]
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _InstallAfter(spec.loader)
        return spec


class _InstallAfter(importlib.abc.Loader):
    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        # torch's own loader again, for whatever reads it later (importlib.resources).
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        install()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)
