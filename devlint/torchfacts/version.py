"""The oldest PyTorch a project supports: `torch-version`, `--torch-version X.Y`, or the lower bound
of `torch` the project itself requires: in the `[project] dependencies` of its pyproject.toml, else in
its requirements file (`requirements.txt`, `requirements/requirements.txt`).

A fix never uses an API newer than this version. Versions are (major, minor) pairs: no torch API
this project relies on appeared in a patch release.
"""

from __future__ import annotations

import re
from pathlib import Path

TorchVersion = tuple[int, int]
DEFAULT: TorchVersion = (2, 4)

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)*")
# A PEP 508 requirement: name, optional [extras], then the specifiers up to a `;` marker or `@`.
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*?)\s*(?:;.*)?$")
_SPECIFIER = re.compile(r"(~=|===|==|>=|<=|!=|>|<)\s*([0-9][0-9A-Za-z.*+!-]*)")


class TorchVersionError(ValueError):
    pass


# Every torch release by (major, minor): the last minor release of each major series. 2.15 is the
# newest the package index lists; a later one is added here when it ships.
RELEASES: dict[int, int] = {1: 13, 2: 15}


def known_range() -> str:
    return " and ".join(f"{major}.0 to {major}.{last}" for major, last in sorted(RELEASES.items()))


def parse_version(text: str) -> TorchVersion:
    """``"2.4"`` or ``"2.4.1"`` -> (2, 4); anything else, or a version no torch release has
    (``3.0``, ``2.40``), raises TorchVersionError."""
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        raise TorchVersionError(f"not a torch version (expected MAJOR.MINOR, e.g. 2.4): {text!r}")
    version = int(match.group(1)), int(match.group(2))
    if version[1] > RELEASES.get(version[0], -1):
        raise TorchVersionError(f"torch {shown(version)} is no torch release (known: {known_range()}): {text!r}")
    return version


def shown(version: TorchVersion) -> str:
    return f"{version[0]}.{version[1]}"


def lower_bound(requirement: str) -> TorchVersion | None:
    """The oldest (major, minor) a ``torch`` requirement admits, if it names one: ``torch>=2.1``,
    ``torch==2.3.1``, ``torch~=2.2``, ``torch>2.0`` (2.0.1 satisfies it). None for another package
    or a requirement without a lower bound (``torch``, ``torch<3``, a URL)."""
    match = _REQUIREMENT.match(requirement)
    if match is None or _normal(match.group(1)) != "torch" or "@" in match.group(2):
        return None
    bounds: list[TorchVersion] = []
    for operator, version in _SPECIFIER.findall(match.group(2)):
        if operator in (">=", ">", "==", "===", "~="):
            found = _VERSION.match(version)
            if found is not None:
                bounds.append((int(found.group(1)), int(found.group(2))))
    return max(bounds) if bounds else None


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def from_pyproject(path: Path) -> TorchVersion | None:
    """The torch lower bound in ``path``'s ``[project] dependencies``; None when it names none or
    the file cannot be read (a broken pyproject.toml that holds no devlint settings is not ours to
    report)."""
    import tomllib  # only where a pyproject.toml is read: clean runs import little

    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return None
    project = data.get("project")
    dependencies = project.get("dependencies") if isinstance(project, dict) else None
    if not isinstance(dependencies, list):
        return None
    bounds = [bound for item in dependencies if isinstance(item, str) and (bound := lower_bound(item)) is not None]
    return max(bounds) if bounds else None


# Where a project without a `[project]` torch requirement lists its dependencies, by convention.
REQUIREMENT_FILES = ("requirements.txt", "requirements/requirements.txt")


def from_requirements(path: Path) -> TorchVersion | None:
    """The torch lower bound in the pip requirements file ``path`` (None where there is no such
    file): one requirement per line, `#` comments and pip options (`-r other.txt`,
    `--index-url ...`) skipped."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    bounds = []
    for line in text.splitlines():
        requirement = line.split(" #", 1)[0].strip()
        if not requirement or requirement.startswith(("#", "-")):
            continue
        bound = lower_bound(requirement)
        if bound is not None:
            bounds.append(bound)
    return max(bounds) if bounds else None
