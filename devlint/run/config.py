"""Settings from `[tool.devlint]` in pyproject.toml or a devlint.toml, nearest to each file.

Like ruff: each file uses the configuration file nearest to it (walking up from its folder; a
pyproject.toml without a `[tool.devlint]` table is passed over; in one folder devlint.toml wins
over pyproject.toml), and command-line flags override what the file says. `--config FILE` forces
one file for every path. Paths in a configuration (exclude, per-file-ignores) are relative to
the folder that holds it.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from devlint.registry import UnknownCodeError, select_infos
from devlint.run.discovery import DEFAULT_EXCLUDES
from devlint.settings import FixSettings
from devlint.torchfacts.version import DEFAULT as DEFAULT_TORCH_VERSION
from devlint.torchfacts.version import (
    REQUIREMENT_FILES,
    TorchVersion,
    TorchVersionError,
    from_pyproject,
    from_requirements,
    parse_version,
)
from devlint.torchfacts.version import shown as shown_version

CONFIG_NAMES = ("devlint.toml", "pyproject.toml")
# torch.accelerator, which the "accelerator" device expression uses, arrived in torch 2.6.
ACCELERATOR_SINCE = (2, 6)
# The rule that flags the default device expression's `torch.cuda.is_available()`.
ACCELERATOR_RULE = "DEV604"
KNOWN_KEYS = (
    "select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude",
    "device-name", "device-expression", "torch-version",
)
CODE_LISTS = ("select", "ignore", "extend-select")
PATTERN_LISTS = ("exclude", "extend-exclude")


class ConfigError(Exception):
    """A configuration file that cannot be used; the message names the file."""


@dataclass(frozen=True)
class Config:
    """One configuration file's settings; ``None`` where the file says nothing."""

    root: Path
    path: Path | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    device_name: str | None = None
    device_expression: str | None = None
    torch_version: TorchVersion | None = None


@dataclass(frozen=True)
class Overrides:
    """What the command line says; it wins over every configuration file."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    device_name: str | None = None
    device_expression: str | None = None
    torch_version: TorchVersion | None = None


@dataclass(frozen=True)
class FileSettings:
    codes: tuple[str, ...]
    fix: FixSettings


def _table(path: Path) -> dict[str, Any] | None:
    """The devlint table of a configuration file; None for a pyproject.toml without one."""
    # Imported here: most runs (a file outside any project, an editor's check) read no TOML.
    import tomllib

    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"{shown(path)}: cannot read: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{shown(path)}: invalid TOML: {error}") from None
    if path.name != "pyproject.toml":
        return data
    tool = data.get("tool")
    table = tool.get("devlint") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{shown(path)}: [tool.devlint] must be a table")
    return table


def shown(path: Path) -> str:
    """``path`` as the user knows it: relative to the current folder when under it."""
    relative = os.path.relpath(os.path.abspath(path))
    return relative if not relative.startswith("..") else str(path)


def _where(path: Path) -> str:
    return f"{shown(path)}: [tool.devlint]" if path.name == "pyproject.toml" else shown(path)


def _strings(path: Path, key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{_where(path)}: `{key}` must be a list of strings")
    return tuple(value)


def _codes(path: Path, key: str, value: object) -> tuple[str, ...]:
    codes = _strings(path, key, value)
    try:
        select_infos(codes)
    except UnknownCodeError as error:
        raise ConfigError(f"{_where(path)}: `{key}`: {error}") from None
    return codes


def _text(path: Path, key: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{_where(path)}: `{key}` must be a non-empty string")
    return value


def parse_table(path: Path, table: dict[str, Any]) -> Config:
    unknown = [key for key in table if key not in KNOWN_KEYS]
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(key, KNOWN_KEYS, n=1)
        hint = f" (did you mean `{close[0]}`?)" if close else f" (known keys: {', '.join(KNOWN_KEYS)})"
        raise ConfigError(f"{_where(path)}: unknown key `{key}`{hint}")
    values: dict[str, Any] = {}
    for key in CODE_LISTS:
        if key in table:
            values[key.replace("-", "_")] = _codes(path, key, table[key])
    for key in PATTERN_LISTS:
        if key in table:
            values[key.replace("-", "_")] = _strings(path, key, table[key])
    if "per-file-ignores" in table:
        raw = table["per-file-ignores"]
        if not isinstance(raw, dict):
            raise ConfigError(f"{_where(path)}: `per-file-ignores` must be a table of glob = [codes]")
        values["per_file_ignores"] = tuple(
            (glob, _codes(path, f"per-file-ignores.{glob}", codes)) for glob, codes in raw.items()
        )
    if "device-name" in table:
        name = _text(path, "device-name", table["device-name"])
        if not name.isidentifier():
            raise ConfigError(f"{_where(path)}: `device-name` must be a Python identifier, not {name!r}")
        values["device_name"] = name
    if "device-expression" in table:
        expression = _text(path, "device-expression", table["device-expression"])
        if expression not in ("default", "accelerator"):
            try:
                compile(expression, str(path), "eval")
            except SyntaxError:
                raise ConfigError(f"{_where(path)}: `device-expression` is not a Python expression: {expression!r}") from None
        values["device_expression"] = expression
    if "torch-version" in table:
        raw = table["torch-version"]
        if isinstance(raw, float):
            raise ConfigError(f"{_where(path)}: `torch-version` must be a string such as \"2.4\" (a TOML float loses trailing zeros)")
        try:
            values["torch_version"] = parse_version(_text(path, "torch-version", raw))
        except TorchVersionError as error:
            raise ConfigError(f"{_where(path)}: `torch-version`: {error}") from None
    return Config(root=Path(os.path.abspath(path.parent)), path=path, **values)


def _default_expression(codes: tuple[str, ...], torch_version: TorchVersion) -> str:
    """The device definition fixes insert when none is configured: the accelerator form where
    DEV604 is selected (it flags the CUDA check of the default one) and torch has it (DEV604 is
    silent below 2.6)."""
    return "accelerator" if ACCELERATOR_RULE in codes and torch_version >= ACCELERATOR_SINCE else "default"


def load(path: Path, forced: bool = False) -> Config | None:
    """The configuration in ``path``; None for a pyproject.toml without `[tool.devlint]`,
    unless ``forced`` (named by --config), where that is an error."""
    table = _table(path)
    if table is None:
        if forced:
            raise ConfigError(f"{shown(path)}: no [tool.devlint] table")
        return None
    return parse_table(path, table)


@lru_cache(maxsize=64)
def _matcher(patterns: tuple[str, ...], is_dir: bool) -> Callable[[str, str], bool]:
    """``_matches`` of any of ``patterns``, as two compiled alternations (a walk asks it of every
    file: one regex per path instead of a few dozen fnmatch calls)."""
    names: list[str] = []
    rels: list[str] = []
    for pattern in patterns:
        if pattern.endswith("/"):
            if not is_dir:
                continue
            pattern = pattern.rstrip("/")
        names.append(fnmatch.translate(pattern))
        rels.append(fnmatch.translate(pattern))
        if "**/" in pattern:
            rels.append(fnmatch.translate(pattern.replace("**/", "")))
    if not names:
        return lambda rel, name: False
    by_name, by_rel = re.compile("|".join(names)).match, re.compile("|".join(rels)).match
    return lambda rel, name: by_name(name) is not None or by_rel(rel) is not None


def _matches(rel: str, name: str, pattern: str, is_dir: bool = False) -> bool:
    if pattern.endswith("/"):
        if not is_dir:
            return False  # `name/` means the folder only
        pattern = pattern.rstrip("/")
    if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(rel, pattern):
        return True
    # `dir/**/x.py` also matches `dir/x.py`
    return "**/" in pattern and fnmatch.fnmatchcase(rel, pattern.replace("**/", ""))


def _relative(path: Path, root: Path) -> str:
    absolute = os.path.abspath(path)
    try:
        return Path(absolute).relative_to(root).as_posix()
    except ValueError:
        return Path(absolute).as_posix()


@dataclass
class Resolver:
    """Finds and caches the configuration for each folder of a run."""

    overrides: Overrides = Overrides()
    forced: Path | None = None
    cwd: Path = field(default_factory=lambda: Path(os.getcwd()))
    _folders: dict[Path, Config] = field(default_factory=dict)
    _codes: dict[tuple[Config, TorchVersion], tuple[str, ...]] = field(default_factory=dict)
    _forced_config: Config | None = None
    # folder -> the torch lower bound of the nearest pyproject.toml at or above it
    _requirements: dict[Path, TorchVersion | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.forced is not None:
            if not self.forced.is_file():
                raise ConfigError(f"{shown(self.forced)}: no such configuration file")
            self._forced_config = load(self.forced, forced=True)

    def config_for(self, path: Path) -> Config:
        """The configuration of the file or folder ``path`` (that of the folder holding it)."""
        if self._forced_config is not None:
            return self._forced_config
        return self._folder(Path(os.path.abspath(path)).parent)

    def _folder(self, folder: Path) -> Config:
        chain: list[Path] = []
        current: Path | None = folder
        found: Config | None = None
        while current is not None:
            if current in self._folders:
                found = self._folders[current]
                break
            chain.append(current)
            found = self._in(current)
            if found is not None:
                break
            current = current.parent if current.parent != current else None
        if found is None:
            found = Config(root=self.cwd)
        for visited in chain:
            self._folders[visited] = found
        return found

    @staticmethod
    def _in(folder: Path) -> Config | None:
        """The configuration in ``folder`` itself; each folder is asked once (see _folder)."""
        for name in CONFIG_NAMES:
            candidate = folder / name
            found = load(candidate) if candidate.is_file() else None
            if found is not None:
                return found
        return None

    def excluded(self, path: Path, is_dir: bool = False) -> bool:
        """Whether a walk skips ``path`` (files named on the command line are always checked)."""
        config = self.config_for(path)
        patterns = (DEFAULT_EXCLUDES if config.exclude is None else config.exclude) + config.extend_exclude
        return _matcher(tuple(patterns), is_dir)(_relative(path, config.root), path.name)

    def settings_for(self, path: Path) -> FileSettings:
        config = self.config_for(path)
        over = self.overrides
        torch_version = over.torch_version or config.torch_version or self.required_torch(path)
        codes = self._selected(config, torch_version)
        if config.per_file_ignores:
            rel = _relative(path, config.root)
            dropped = {
                rule.code
                for glob, globbed in config.per_file_ignores
                if _matches(rel, path.name, glob)
                for rule in select_infos(globbed)
            }
            codes = tuple(code for code in codes if code not in dropped)
        expression = over.device_expression or config.device_expression or _default_expression(codes, torch_version)
        if expression == "accelerator" and torch_version < ACCELERATOR_SINCE:
            source = "--device-expression" if over.device_expression else _where(config.path) if config.path else "device-expression"
            raise ConfigError(
                f"{source}: `device-expression = \"accelerator\"` uses torch.accelerator (torch >= 2.6), but "
                f"torch-version is {shown_version(torch_version)} for {shown(path)}: set torch-version = \"2.6\" or newer"
            )
        return FileSettings(
            codes,
            FixSettings(over.device_name or config.device_name or "device", expression, torch_version=torch_version),
        )

    def required_torch(self, path: Path) -> TorchVersion:
        """The lower bound of `torch` the nearest project requires, else the default. The project
        is the nearest folder with a pyproject.toml or a requirements file that bounds torch; its
        pyproject.toml's `[project] dependencies` count first, then its requirements file."""
        folder = Path(os.path.abspath(path)).parent
        chain: list[Path] = []
        found: TorchVersion | None = None
        current: Path | None = folder
        while current is not None:
            if current in self._requirements:
                found = self._requirements[current]
                break
            chain.append(current)
            candidate = current / "pyproject.toml"
            listed = next(filter(None, (from_requirements(current / name) for name in REQUIREMENT_FILES)), None)
            if candidate.is_file() or listed is not None:
                found = (from_pyproject(candidate) if candidate.is_file() else None) or listed
                break
            current = current.parent if current.parent != current else None
        for visited in chain:
            self._requirements[visited] = found
        return found or DEFAULT_TORCH_VERSION

    def torch_version_origin(self, path: Path) -> str:
        """Where the `torch-version` in force for ``path`` comes from, in words."""
        config = self.config_for(path)
        if self.overrides.torch_version is not None:
            return "--torch-version"
        if config.torch_version is not None and config.path is not None:
            return f"`torch-version` in {shown(config.path)}"
        current: Path | None = Path(os.path.abspath(path)).parent
        while current is not None:
            candidate = current / "pyproject.toml"
            if candidate.is_file() and from_pyproject(candidate) is not None:
                return f"the lowest torch that [project] dependencies admit, in {shown(candidate)}"
            listed = next((current / name for name in REQUIREMENT_FILES if from_requirements(current / name) is not None), None)
            if listed is not None:
                return f"the lowest torch that {shown(listed)} admits"
            if candidate.is_file():
                break
            current = current.parent if current.parent != current else None
        return "devlint's default (no torch-version setting, and no torch requirement with a lower bound)"

    def _selected(self, config: Config, torch_version: TorchVersion) -> tuple[str, ...]:
        """The file's selection, then the command line's on top: a `select` starts afresh,
        `extend-select` adds, `ignore` removes (as with ruff). Without a `select` anywhere, the
        start is the rules on by default at the file's torch-version (DEV604 from 2.6); what the
        configuration or the command line names always wins over that default."""
        key = (config, torch_version)
        if key not in self._codes:
            chosen = {
                rule.code for rule in select_infos(config.select, config.ignore, config.extend_select, torch_version)
            }
            over = self.overrides
            if over.select is not None:
                chosen = {rule.code for rule in select_infos(over.select)}
            chosen |= {rule.code for rule in select_infos(over.extend_select)}
            chosen -= {rule.code for rule in select_infos(over.ignore)}
            self._codes[key] = tuple(sorted(chosen))
        return self._codes[key]
