"""Which torch names each installed torch release has, observed by that release's own python, and
each name's first release derived from those observations; shared by tools/device_api_table.py
(DEV605's table) and the check of devlint/torchfacts/api_versions.py.

Run with each installed release's python to record what that release has; the observations are
merged into devlint/torchfacts/observed_releases.py (per name: the releases seen with it and the
releases seen without it), and the tables are regenerated from them:

    for v in 2.4.1 2.6.0 2.9.1 2.11.0 2.14.1; do
        ~/.cache/devlint-bench/torch-$v/bin/python tools/torch_releases.py --observe
    done
    .venv/bin/python tools/torch_releases.py --observe     # torch 2.13
    .venv/bin/python tools/device_api_table.py             # regenerate both tables from the observations
    .venv/bin/python tools/device_api_table.py --check     # exit 1 if out of date or a hand entry is contradicted

How each name is observed:

- DEV605's names (``torch.accelerator``, ``torch.amp``, the members of ``torch.Stream`` and
  ``torch.Event``, and the ``__all__`` of ``torch.{cpu,cuda,mps,xpu,mtia}``) are read from the
  release's sources with `ast` (never imported), as DEV605's table always was: its question is what
  the namespace declares public (``__all__`` and its submodules), which an import cannot tell from a
  helper the module merely imports. Each release's listing is complete, so a name first listed by a
  later release is known to be absent from every earlier observed release that did not list it.
- The names a fix may write (api_versions.HAND) are introspected: imported, since most of them are
  C functions, classes and dtypes with no Python source (``torch.empty``, ``torch.Stream``,
  ``torch.float16``), and an import asks exactly what the fixed program will ask. A name
  ``torch.get_device_module().X`` is observed as ``torch.get_device_module`` existing and both
  ``torch.cpu`` and ``torch.cuda`` having ``X`` (the modules it answers where a CUDA-only program
  is made to run). A name added to HAND later is unknown to the releases observed before: run every
  release again.

First release: the oldest observed release that has the name, narrowed by the newest observed
release before it that lacks it: the first release lies in that bracket ``(lacking, having]``. A
hand-entered first release (for the unobserved releases in a bracket, e.g. 2.5 between 2.4 and
2.6, or one before the oldest observed release) is kept only inside its bracket; one outside it
contradicts an observation, and the tools fail naming the name. Without a hand entry a table takes
the end of the bracket that errs safely: api_versions the newest (a fix is then withheld, never
written for a torch that lacks the name), DEV605 the oldest (it then never reports a name as too
new for a torch that has it; before the oldest observed release, unknown: None).

torch 2.15 cannot be installed here: the tables' known range goes to 2.15 (version.RELEASES), but no
name may claim 2.15 as its first release until a 2.15 is observed (a name that no observed release
has fails). Once 2.15 installs, create its venv like the others
(``~/.cache/devlint-bench/torch-2.15.x``) and run this script ``--observe`` with its python; names
new in 2.15 then get 2.15 from the observation, with no hand entry.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
OBSERVED = ROOT / "devlint" / "torchfacts" / "observed_releases.py"
DEVICE_MODULES = ("cpu", "cuda", "mps", "xpu", "mtia")
NAMESPACES = ("accelerator", "amp")
CLASSES = ("Stream", "Event")
Release = tuple[int, int]
Seen = dict[str, tuple[tuple[Release, ...], tuple[Release, ...]]]


class Contradiction(SystemExit):
    """A hand-entered first release that an observation contradicts (exit status 1, the message names it)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.code = 1


# -- reading one release's sources -------------------------------------------------------------


def _all(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
            return list(ast.literal_eval(node.value))
    # No __all__ (torch/amp before 2.12): the public names the module binds at its top level.
    found = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found += [(a.asname or a.name).split(".")[0] for a in node.names]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(node.name)
    return [name for name in found if not name.startswith("_") and name != "*"]


def _submodules(package: Path) -> list[str]:
    names = [p.stem for p in package.glob("*.py") if not p.stem.startswith("_")]
    return names + [p.name for p in package.iterdir() if (p / "__init__.py").exists() and not p.name.startswith("_")]


def _class_members(stub: Path, name: str) -> list[str]:
    tree = ast.parse(stub.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            found = []
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found.append(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    found.append(item.target.id)
            return sorted({n for n in found if not n.startswith("_") or n in ("__enter__", "__exit__")})
    return []


def read_sources(torch_dir: Path) -> set[str]:
    """DEV605's names that the release in ``torch_dir`` declares: ``torch.accelerator`` (the
    namespace), ``torch.accelerator.X``, ``torch.amp.X``, ``torch.Stream.X``, ``torch.cuda.X``."""
    found: set[str] = set()
    for namespace in NAMESPACES:
        package = torch_dir / namespace
        if (package / "__init__.py").exists():
            found.add(f"torch.{namespace}")
            found |= {f"torch.{namespace}.{n}" for n in _all(package / "__init__.py") + _submodules(package)}
    for cls in CLASSES:
        found |= {f"torch.{cls}.{n}" for n in _class_members(torch_dir / "_C" / "__init__.pyi", cls)}
    for module in DEVICE_MODULES:
        init = torch_dir / module / "__init__.py"
        if init.exists():
            found |= {f"torch.{module}.{n}" for n in _all(init)}
    return found


def torch_dir() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise SystemExit("torch is not installed")
    return Path(spec.origin).parent


def running_release() -> tuple[Release, str]:
    """(major, minor) and the full version of the installed torch, read from its version.py."""
    text = (torch_dir() / "version.py").read_text(encoding="utf-8")
    version = text.split("__version__ = ", 1)[1].split("\n", 1)[0].strip("'\"").split("+")[0]
    major, minor = version.split(".")[:2]
    return (int(major), int(minor)), version


# -- introspecting it --------------------------------------------------------------------------


def exists(dotted: str) -> bool:
    """Whether the running torch has ``dotted`` (modules are imported on the way, as code does);
    ``torch.get_device_module().X``: torch.get_device_module, and X in torch.cpu and torch.cuda."""
    if "()." in dotted:
        owner, attribute = dotted.split("().", 1)
        return exists(owner) and all(exists(f"torch.{module}.{attribute}") for module in ("cpu", "cuda"))
    parts = dotted.split(".")
    found: object = importlib.import_module(parts[0])
    for index, part in enumerate(parts[1:], start=1):
        if isinstance(found, ModuleType) and not hasattr(found, part):
            try:
                found = importlib.import_module(".".join(parts[: index + 1]))
                continue
            except ImportError:
                return False
        if not hasattr(found, part):
            return False
        found = getattr(found, part)
    return True


# -- the observation file ----------------------------------------------------------------------


def load() -> ModuleType | None:
    return load_generated(OBSERVED)


def load_generated(path: Path) -> ModuleType | None:
    """A generated table (plain data), loaded from its file without importing devlint; None
    where it is not written yet."""
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def differs(path: Path, text: str) -> bool:
    """``--check``: whether the generated file at ``path`` is not ``text`` (a missing one is)."""
    return (path.read_text(encoding="utf-8") if path.exists() else "") != text


def merge(old: Seen, release: Release, asked: Iterable[str], having: set[str], complete: bool) -> Seen:
    """``old`` with ``release``'s answers for ``asked`` replacing its earlier ones. ``complete``: the
    answers list everything the release has (a source listing), so every other name is absent."""
    names = set(old) | set(asked) if not complete else set(old) | having
    merged: Seen = {}
    for name in sorted(names):
        with_, without = (set(r) - {release} for r in old.get(name, ((), ())))
        if complete or name in asked:
            (with_ if name in having else without).add(release)
        merged[name] = (tuple(sorted(with_)), tuple(sorted(without)))
    return merged


def render(releases: Mapping[Release, str], sources: Seen, imported: Seen) -> str:
    def table(name: str, seen: Seen) -> list[str]:
        return [f"{name}: dict[str, tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]] = {{"] + [
            f"    {key!r}: ({with_!r}, {without!r})," for key, (with_, without) in seen.items()
        ] + ["}"]

    return "\n".join([
        '"""Which torch names each observed torch release has: per name, (the releases seen with it, the',
        "releases seen without it). Written by tools/torch_releases.py --observe, run with each release's",
        "python; do not edit by hand. SOURCES: DEV605's names, read from the release's sources (`ast`);",
        'IMPORTED: the names a fix may write (devlint.torchfacts.api_versions.HAND), introspected."""',
        "",
        "from __future__ import annotations",
        "",
        f"RELEASES: dict[tuple[int, int], str] = {dict(sorted(releases.items()))!r}",
        *table("SOURCES", sources),
        *table("IMPORTED", imported),
        "",
    ])


def hand_entered_api() -> Mapping[str, Release | None]:
    sys.path.insert(0, str(ROOT))
    from devlint.torchfacts.api_versions import HAND

    return HAND


def observe() -> str:
    """The observation file with the running release's answers merged in."""
    release, version = running_release()
    data = load()
    releases = dict(data.RELEASES) if data else {}
    releases[release] = version
    listed = read_sources(torch_dir())
    sources = merge(dict(data.SOURCES) if data else {}, release, listed, listed, complete=True)
    asked = sorted(hand_entered_api())
    imported = merge(dict(data.IMPORTED) if data else {}, release, asked, {n for n in asked if exists(n)}, complete=False)
    return render(releases, sources, imported)


# -- first releases ----------------------------------------------------------------------------


def following(release: Release) -> Release:
    """The release after ``release`` (2.4 -> 2.5, 1.13 -> 2.0)."""
    sys.path.insert(0, str(ROOT))
    from devlint.torchfacts.version import RELEASES

    major, minor = release
    return (major, minor + 1) if minor < RELEASES.get(major, minor) else (major + 1, 0)


def bracket(name: str, seen: tuple[tuple[Release, ...], tuple[Release, ...]]) -> tuple[Release | None, Release]:
    """(newest observed release lacking ``name`` before its first, oldest observed release having it)."""
    with_, without = seen
    if not with_:
        raise Contradiction(f"{name}: no observed torch release has it ({', '.join(map(_shown, without))} lack it)")
    again = [r for r in without if with_[0] < r < with_[-1]]
    if again:
        raise Contradiction(f"{name}: present in {_shown(with_[0])}, absent in {_shown(again[0])}, present again; no first release says so")
    lacking = [r for r in without if r < with_[0]]
    return (lacking[-1] if lacking else None), with_[0]


def first_release(name: str, seen: tuple[tuple[Release, ...], tuple[Release, ...]] | None, hand: Release | None, late: bool) -> Release | None:
    """``name``'s first release: ``hand`` where it lies inside the observed bracket (else
    Contradiction), otherwise the bracket's newest end (``late``) or its oldest (None when no
    observed release lacks it)."""
    if seen is None:
        raise Contradiction(f"{name}: no torch release was observed for it; run tools/torch_releases.py --observe with each release's python")
    lacking, having = bracket(name, seen)
    if hand is not None:
        if hand > having or (lacking is not None and hand <= lacking):
            low = f"after {_shown(lacking)} and " if lacking is not None else ""
            raise Contradiction(
                f"{name}: hand-entered first release {_shown(hand)} contradicts the observations: "
                f"torch {_shown(having)} has it" + (f", torch {_shown(lacking)} lacks it" if lacking else "")
                + f" (first release {low}no later than {_shown(having)})"
            )
        return hand
    if late:
        return having
    return following(lacking) if lacking is not None else None


def _shown(release: Release) -> str:
    return f"{release[0]}.{release[1]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observe", action="store_true", help="merge the running torch's answers into the observation file")
    parser.add_argument("--check", action="store_true", help="exit 1 if the running torch's answers differ from the file's")
    options = parser.parse_args()
    text = observe()
    if options.check or not options.observe:
        if differs(OBSERVED, text):
            print(f"{OBSERVED.relative_to(ROOT)} differs from what torch {running_release()[1]} answers", file=sys.stderr)
            return 1
        return 0
    OBSERVED.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
