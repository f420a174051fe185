"""How fixes are written, the same for every file a configuration covers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FixSettings:
    device_name: str = "device"
    device_expression: str = "default"
    # A notebook is linted as one module with a statement of this name between cells; when set,
    # the definitions a fix adds go in the first cell that imports torch (devlint.notebook).
    cell_break: str | None = None
