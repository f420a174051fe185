"""The settings the CLI would use for a file, found again when a configuration file changes.

devlint.run.config's Resolver caches each folder's configuration for a run; an editor session
outlives many edits of pyproject.toml. Before each check the configuration files that could
apply to the file (devlint.toml and pyproject.toml in its folder and every folder above) are
stat()ed; when one appeared, vanished or changed, the caches start afresh. A configuration that
cannot be used is reported once (until it changes again) and the file keeps the settings it
had, so a half-saved pyproject.toml never turns the diagnostics off.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from devlint.registry import select_infos
from devlint.run.config import CONFIG_NAMES, ConfigError, FileSettings, Resolver
from devlint.settings import FixSettings

Stamp = tuple[tuple[int, int, int] | None, ...]


@dataclass(frozen=True)
class Resolved:
    settings: FileSettings
    # A configuration error to show the user: only the first time it is met.
    error: str | None = None


def default_settings() -> FileSettings:
    """What a file gets with no configuration file at all."""
    return FileSettings(tuple(info.code for info in select_infos()), FixSettings())


def _stamp(folder: Path) -> Stamp:
    found: list[tuple[int, int, int] | None] = []
    for current in (folder, *folder.parents):
        for name in CONFIG_NAMES:
            try:
                info = os.stat(current / name)
            except OSError:
                found.append(None)
                continue
            found.append((info.st_mtime_ns, info.st_size, info.st_ino))
    return tuple(found)


@dataclass
class ConfigTracker:
    cwd: Path
    _resolver: Resolver | None = None
    _stamps: dict[Path, Stamp] = field(default_factory=dict)
    _last_good: dict[Path, FileSettings] = field(default_factory=dict)
    _shown: set[str] = field(default_factory=set)

    def invalidate(self) -> None:
        """Forget every cached configuration (a configuration file changed)."""
        self._resolver = None
        self._stamps.clear()
        self._shown.clear()

    def settings_for(self, path: Path) -> Resolved:
        folder = Path(os.path.abspath(path)).parent
        stamp = _stamp(folder)
        if self._stamps.get(folder, stamp) != stamp:
            self.invalidate()
        self._stamps[folder] = stamp
        if self._resolver is None:
            self._resolver = Resolver(cwd=self.cwd)
        try:
            settings = self._resolver.settings_for(path)
        except ConfigError as error:
            # The resolver may hold half a walk: the next check starts afresh.
            self._resolver = None
            message = str(error)
            fresh = message not in self._shown
            self._shown.add(message)
            kept = self._last_good.get(path) or default_settings()
            return Resolved(kept, message if fresh else None)
        self._last_good[path] = settings
        return Resolved(settings)

    def root_for(self, path: Path) -> str:
        """The project root of ``path`` (its configuration file's folder, else the server's
        folder): where absolute imports of the project's modules are found too."""
        if self._resolver is None:
            return str(self.cwd)
        try:
            return str(self._resolver.config_for(path).root)
        except ConfigError:
            return str(self.cwd)
