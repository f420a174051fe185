"""``devlint check --show-settings``: the settings in force for a file, and where each came from,
as ruff's ``--show-settings`` shows them; nothing is checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from devlint.run.config import Resolver, shown
from devlint.run.discovery import discover
from devlint.torchfacts.version import shown as shown_version


def show_settings(resolver: Resolver, paths: list[str], out: TextIO) -> int:
    """The settings of the first file the paths hold (of the paths themselves where they hold
    none); exit status 0."""
    found = discover(paths, exclude=(), skip=resolver.excluded)
    path = found.files[0] if found.files else Path(paths[0]) / "__init__.py"
    config = resolver.config_for(path)
    settings = resolver.settings_for(path)
    fix = settings.fix
    out.write(f"Resolved settings for: {shown(path)}\n")
    out.write(f"Settings path: {shown(config.path) if config.path is not None else 'none (built-in defaults)'}\n\n")
    out.write(f"torch-version = {json.dumps(shown_version(fix.torch_version))}  # from {resolver.torch_version_origin(path)}\n")
    out.write(f"device-name = {json.dumps(fix.device_name)}\n")
    out.write(f"device-expression = {json.dumps(fix.device_expression)}\n")
    out.write("select = [\n" + "".join(f"    {json.dumps(code)},\n" for code in settings.codes) + "]\n")
    return 0
