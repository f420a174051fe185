"""A non-editable install (what pre-commit and pip users get) must ship every subpackage."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapping = config["package-dir"]
    on_disk = {
        ".".join(("devlint", *init.parent.relative_to(ROOT / "devlint").parts))
        for init in (ROOT / "devlint").rglob("__init__.py")
    }
    assert on_disk | {"devlint.rules"} == listed
    assert mapping["devlint.rules"] == "rules"
    assert (ROOT / "rules" / "__init__.py").exists()
    assert not (ROOT / "devlint" / "rules").exists()
