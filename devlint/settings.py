"""How fixes are written, the same for every file a configuration covers."""

from __future__ import annotations

from dataclasses import dataclass

from devlint.torchfacts.version import DEFAULT as DEFAULT_TORCH_VERSION
from devlint.torchfacts.version import TorchVersion


@dataclass(frozen=True)
class FixSettings:
    device_name: str = "device"
    device_expression: str = "default"
    # A notebook is linted as one module with a statement of this name between cells; when set,
    # the definitions a fix adds go in the first cell that imports torch (devlint.run.notebook).
    cell_break: str | None = None
    # The oldest torch the code must run on: no fix uses an API newer than this.
    torch_version: TorchVersion = DEFAULT_TORCH_VERSION
