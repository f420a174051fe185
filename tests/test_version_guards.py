"""Code in a branch written for an older torch is neither flagged nor fixed (devlint.analysis.version_guards),
and no fix uses an API newer than the project's `torch-version`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from devlint.engine.lint import fix_text, lint_text
from devlint.registry import all_rules
from devlint.run.config import ConfigError, Resolver
from devlint.settings import FixSettings
from devlint.torchfacts.version import TorchVersionError, lower_bound, parse_version

RULES = list(all_rules())


def codes(source: str, torch_version: tuple[int, int] = (2, 4)) -> list[tuple[int, str]]:
    text = textwrap.dedent(source)
    findings = lint_text(text, "guarded.py", RULES, FixSettings(torch_version=torch_version))
    return [(f.location.row, f.code) for f in findings]


OLD_AMP = "torch.cuda.amp.GradScaler()"


@pytest.mark.parametrize(
    "source",
    [
        f"""
        import torch
        if torch_version >= (2, 4):
            scaler = torch.amp.GradScaler(device.type)
        else:
            scaler = {OLD_AMP}
        """,
        f"""
        import torch
        TORCH_VERSION = tuple(int(p) for p in torch.__version__.split(".")[:2])
        if TORCH_VERSION < (2, 4):
            scaler = {OLD_AMP}
        """,
        f"""
        import torch
        from packaging import version
        if version.parse(torch.__version__) >= version.parse("2.4.0"):
            scaler = torch.amp.GradScaler(device.type)
        else:
            scaler = {OLD_AMP}
        """,
        f"""
        import torch
        if not hasattr(torch.amp, "GradScaler"):
            scaler = {OLD_AMP}
        """,
        f"""
        import torch
        scaler = torch.amp.GradScaler(device.type) if hasattr(torch.amp, "GradScaler") else {OLD_AMP}
        """,
        f"""
        import torch
        try:
            from torch.amp import GradScaler
            scaler = GradScaler(device.type)
        except (ImportError, AttributeError):
            scaler = {OLD_AMP}
        """,
        f"""
        import torch
        from lightning_utilities import compare_version
        if not _TORCH_GREATER_EQUAL_2_4:
            scaler = {OLD_AMP}
        """,
        f"""
        import torch
        if is_torch_greater_or_equal("2.4"):
            scaler = torch.amp.GradScaler(device.type)
        else:
            scaler = {OLD_AMP}
        """,
        f"""
        import torch
        if float(torch.__version__[:3]) <= 2.3 and use_amp:
            scaler = {OLD_AMP}
        """,
        f"""
        import torch
        NEW_TORCH = tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 4)
        scaler = torch.amp.GradScaler(device.type) if NEW_TORCH else {OLD_AMP}
        """,
        f"""
        import torch
        try:
            scaler = torch.amp.GradScaler(device=device.type)
        except (AttributeError, TypeError):
            scaler = {OLD_AMP}
        """,
    ],
    ids=[
        "ge-tuple", "lt-tuple", "packaging", "hasattr", "ifexp", "try-import", "flag", "helper", "float-and",
        "named-test", "try-attribute",
    ],
)
def test_deprecated_amp_in_a_branch_for_older_torch_is_not_flagged(source: str) -> None:
    assert codes(source) == []


@pytest.mark.parametrize(
    "source",
    [
        # a Python version, not torch's
        f"""
        import sys
        import torch
        if sys.version_info >= (3, 8):
            pass
        else:
            scaler = {OLD_AMP}
        """,
        # the fallback of a try that is not about torch
        f"""
        import torch
        try:
            import apex
        except ImportError:
            scaler = {OLD_AMP}
        """,
        # the branch for *newer* torch
        f"""
        import torch
        if torch_version >= (2, 4):
            scaler = {OLD_AMP}
        """,
        # `or`: the body also runs on new torch
        f"""
        import torch
        if torch_version < (2, 4) or force_legacy:
            scaler = {OLD_AMP}
        """,
        # a version test that is not a bound (==)
        f"""
        import torch
        if torch.__version__ == "2.3.0":
            pass
        else:
            scaler = {OLD_AMP}
        """,
    ],
    ids=["python-version", "other-import", "newer-branch", "or", "equality"],
)
def test_code_that_runs_on_supported_torch_is_still_flagged(source: str) -> None:
    assert [code for _, code in codes(source)] == ["DEV501"]


def test_a_branch_for_versions_the_project_still_supports_is_flagged() -> None:
    source = """
    import torch
    if TORCH_VERSION < (2, 6):
        x = x.cuda()
    """
    # 2.4 and 2.5 take that branch: `.cuda()` there still breaks a CPU-only machine.
    assert codes(source, (2, 4)) == [(4, "DEV101")]
    # A project that needs 2.6 never runs it.
    assert codes(source, (2, 6)) == []


def test_guarded_fallback_is_not_fixed_either() -> None:
    source = textwrap.dedent(
        f"""\
        import torch
        if torch_version >= (2, 4):
            scaler = torch.amp.GradScaler(device.type)
        else:
            scaler = {OLD_AMP}
        """
    )
    assert fix_text(source, "guarded.py", RULES, unsafe=True).text == source


def test_a_fix_that_needs_a_newer_torch_is_reported_without_it() -> None:
    source = "import torch\ntorch.set_default_tensor_type(torch.cuda.FloatTensor)\n"
    old = lint_text(source, "x.py", RULES, FixSettings(torch_version=(1, 13)))
    new = lint_text(source, "x.py", RULES, FixSettings(torch_version=(2, 0)))
    assert [f.code for f in old] == [f.code for f in new] == ["DEV105"]
    # torch.set_default_device arrived in 2.0.
    assert old[0].fix is None and new[0].fix is not None


@pytest.mark.parametrize(
    ("requirement", "bound"),
    [
        ("torch>=2.1", (2, 1)),
        ("torch >= 2.1.3, <3", (2, 1)),
        ("torch==2.13.0", (2, 13)),
        ("torch~=2.2", (2, 2)),
        ("torch>2.0", (2, 0)),
        ('Torch[opt]>=1.13; python_version > "3.8"', (1, 13)),
        ("torch", None),
        ("torch<3", None),
        ("torchvision>=0.15", None),
        ("torch @ https://example.com/torch.whl", None),
    ],
)
def test_the_lower_bound_of_a_torch_requirement(requirement: str, bound: tuple[int, int] | None) -> None:
    assert lower_bound(requirement) == bound


def test_parse_version_rejects_what_is_not_major_minor() -> None:
    assert parse_version("2.6") == (2, 6) and parse_version("2.6.1") == (2, 6)
    for bad in ("2", "two", "2.x", ""):
        with pytest.raises(TorchVersionError):
            parse_version(bad)


def _project(root: Path, dependencies: list[str], devlint: str = "") -> None:
    deps = ", ".join(f'"{d}"' for d in dependencies)
    (root / "pyproject.toml").write_text(f'[project]\nname = "p"\ndependencies = [{deps}]\n{devlint}')


def test_torch_version_comes_from_the_nearest_pyproject(tmp_path: Path) -> None:
    _project(tmp_path, ["numpy", "torch>=2.2"])
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "sub").mkdir()
    _project(tmp_path / "pkg" / "sub", ["requests"])
    resolver = Resolver()
    assert resolver.settings_for(tmp_path / "pkg" / "a.py").fix.torch_version == (2, 2)
    # The nearest pyproject.toml names no torch bound: the default, not the outer project's.
    assert resolver.settings_for(tmp_path / "pkg" / "sub" / "b.py").fix.torch_version == (2, 4)


def test_torch_version_comes_from_a_requirements_file_where_pyproject_names_none(tmp_path: Path) -> None:
    # DeepSpeed's layout: no [project] torch requirement, torch>=2.0 in requirements/requirements.txt
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "requirements.txt").write_text(
        "# runtime\n-r base.txt\n--index-url https://example.org/simple\nnumpy\ntorch>=2.0.0  # pinned by CI\n"
    )
    assert Resolver().settings_for(tmp_path / "deepspeed" / "a.py").fix.torch_version == (2, 0)
    # a pyproject.toml with a torch bound counts first
    _project(tmp_path, ["torch>=2.3"])
    assert Resolver().settings_for(tmp_path / "a.py").fix.torch_version == (2, 3)
    # one without falls back to the project's requirements file
    _project(tmp_path, ["einops"])
    (tmp_path / "requirements.txt").write_text("torch==2.1.2\n")
    assert Resolver().settings_for(tmp_path / "a.py").fix.torch_version == (2, 1)
    # an example's own requirements.txt that names torch without a bound is passed over
    (tmp_path / "example").mkdir()
    (tmp_path / "example" / "requirements.txt").write_text("torch\ntorchvision\n")
    assert Resolver().settings_for(tmp_path / "example" / "main.py").fix.torch_version == (2, 1)


def test_torch_version_key_and_flag_win_over_the_requirement(tmp_path: Path) -> None:
    from devlint.run.config import Overrides

    _project(tmp_path, ["torch>=2.1"], '[tool.devlint]\ntorch-version = "2.6"\n')
    assert Resolver().settings_for(tmp_path / "a.py").fix.torch_version == (2, 6)
    assert Resolver(Overrides(torch_version=(2, 8))).settings_for(tmp_path / "a.py").fix.torch_version == (2, 8)


@pytest.mark.parametrize("value", ['"2"', "2.4", '"latest"'])
def test_a_bad_torch_version_names_the_file(tmp_path: Path, value: str) -> None:
    (tmp_path / "devlint.toml").write_text(f"torch-version = {value}\n")
    with pytest.raises(ConfigError, match="devlint.toml.*torch-version"):
        Resolver().settings_for(tmp_path / "a.py")
