"""The private torch names emulated CUDA relies on, held to the table of releases that has them.

Emulation replaces and calls private parts of torch that come and go between releases. Every name
its sources touch (read with `ast` by tools/emulation_names_table.py) must be in
devlint/verify/child/emulation/names_table.py, the table must agree with the torch running the
tests, and a name some supported release lacks must be patched with ``optional=True`` (which
skips it where it is missing) or read with a fallback.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
import torch

from devlint.verify.child.emulation import names_table
from devlint.verify.child.emulation.releases import SUPPORTED, refusal, release

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "emulation_names_table.py"
RUNNING = release(torch.__version__)


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("emulation_names_table", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


TOOL_MODULE = _tool()
USED = TOOL_MODULE.collect_names()


def _has(name: str, at: tuple[int, int]) -> bool:
    """Whether release ``at`` has ``name``, by the table (a release between two introspected ones
    has a name from its first release on)."""
    first = names_table.FIRST[name]
    return first is not None and first <= at <= names_table.LAST.get(name, at)


def _in_every_supported_release(name: str) -> bool:
    oldest, newest = SUPPORTED
    return _has(name, oldest) and _has(name, newest) and name not in names_table.LAST


def test_every_name_the_code_touches_is_in_the_table() -> None:
    assert sorted(set(USED) - set(names_table.FIRST)) == []
    # A name the code no longer touches is stale: the tool would drop it.
    assert sorted(set(names_table.FIRST) - set(USED)) == []


def test_the_collector_sees_the_accelerator_names_and_the_legacy_types() -> None:
    """The shapes of code that hide names from a plain search: a loop over a sibling module's
    constant (legacy.py over tensor.LEGACY_NAMES), an alias (``c = torch._C``), ``from torch.x
    import _y``."""
    assert USED["torch._C._accelerator_emptyHostCache"] is True
    assert USED["torch.cuda.HalfTensor"] is False and USED["torch.HalfTensor"] is False
    assert "torch.utils._device._device_constructors" in USED
    assert "torch.autograd.function.Function.apply" in USED


def test_the_collector_refuses_a_patch_it_cannot_resolve(tmp_path: Path) -> None:
    (tmp_path / "module.py").write_text(
        textwrap.dedent(
            """
            import torch

            def install(patches, owners):
                patches.set(owners[0], "_hidden", None)
            """
        )
    )
    with pytest.raises(SyntaxError, match="cannot tell which torch object"):
        TOOL_MODULE.collect_names(tmp_path)


def test_the_collector_finds_a_patch_through_an_alias_and_a_loop(tmp_path: Path) -> None:
    (tmp_path / "module.py").write_text(
        textwrap.dedent(
            """
            import torch

            NAMES = {"a": "_first", "b": "_second"}

            def install(patches, replace):
                c = torch._C
                for key, name in NAMES.items():
                    replace(c, name, None, optional=True)
                patches.set(torch.cuda, "synchronize", None)
            """
        )
    )
    assert TOOL_MODULE.collect_names(tmp_path) == {
        "torch._C": False,
        "torch._C._first": True,
        "torch._C._second": True,
        "torch.cuda.synchronize": False,
    }


@pytest.mark.parametrize("name", sorted(name for name, optional in USED.items() if not optional))
def test_a_name_used_without_a_fallback_is_in_every_supported_release(name: str) -> None:
    """A name patched without ``optional=True`` (or read without a ``getattr`` default) fails at
    once where it is missing: every supported release must have it."""
    assert _in_every_supported_release(name), (
        f"{name}: first release {names_table.FIRST[name]}, last {names_table.LAST.get(name)}: "
        "patch it with optional=True, or say what emulation does without it"
    )


@pytest.mark.skipif(RUNNING not in names_table.INTROSPECTED, reason=f"torch {torch.__version__} is not in the table")
@pytest.mark.parametrize("name", sorted(names_table.FIRST))
def test_the_table_agrees_with_the_running_torch(name: str) -> None:
    assert RUNNING is not None
    assert TOOL_MODULE.exists(name) == _has(name, RUNNING)


@pytest.mark.skipif(RUNNING not in names_table.INTROSPECTED, reason=f"torch {torch.__version__} is not in the table")
def test_the_table_is_what_the_tool_writes() -> None:
    run = subprocess.run([sys.executable, str(TOOL), "--check"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_the_table_covers_the_releases_it_must() -> None:
    """Introspected releases span the supported range; 2.6 and 2.9, where torch.accelerator came
    and grew, are read from torch's sources (the tool's FIRST_SEEN)."""
    assert names_table.INTROSPECTED[0] == SUPPORTED[0] and names_table.INTROSPECTED[-1] == SUPPORTED[1]
    assert _has("torch._C._accelerator_getAccelerator", (2, 6)) and not _has("torch._C._accelerator_getAccelerator", (2, 5))
    assert _has("torch._C._accelerator_emptyCache", (2, 9)) and not _has("torch._C._accelerator_emptyCache", (2, 8))


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("2.2.0", "torch 2.2.0 is older than emulation supports (2.4)"),
        ("2.15.0.dev20260101+cpu", "torch 2.15.0.dev20260101 is newer than emulation supports (2.14)"),
        ("2.4.1+cu121", None),
        ("2.14.1", None),
        ("nightly", "torch nightly has a version emulation cannot read (it supports 2.4 to 2.14)"),
    ],
)
def test_refusal(version: str, expected: str | None) -> None:
    assert refusal(version) == expected


@pytest.fixture
def old_torch(tmp_path: Path) -> dict[str, str]:
    """An environment whose ``import torch`` finds a torch 2.2 (its version.py and nothing more)."""
    package = tmp_path / "old" / "torch"
    package.mkdir(parents=True)
    (package / "version.py").write_text("__version__ = '2.2.0+cpu'\n")
    (package / "__init__.py").write_text("from .version import __version__\n")
    (tmp_path / "test_one.py").write_text("import torch\n\n\ndef test_one():\n    pass\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(package.parent), str(ROOT)])}


REFUSED = "torch 2.2.0 is older than emulation supports (2.4)"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["-m", "devlint", "emulate", "--", sys.executable, "-c", "import torch; print('ran')"], f"devlint emulate: {REFUSED}"),
        (["-m", "pytest", "-p", "no:cacheprovider", "--emulate-cuda", "test_one.py"], f"pytest --emulate-cuda: {REFUSED}"),
        (["-m", "devlint", "verify", "test_one.py"], f"devlint verify: error: {REFUSED}"),
    ],
    ids=["emulate", "pytest-option", "verify"],
)
def test_an_unsupported_torch_gets_one_line_and_exit_status_2(
    old_torch: dict[str, str], tmp_path: Path, args: list[str], line: str
) -> None:
    run = subprocess.run([sys.executable, *args], cwd=tmp_path, env=old_torch, capture_output=True, text=True, timeout=120)
    assert (run.returncode, run.stdout, run.stderr) == (2, "", line + "\n")
