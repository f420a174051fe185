"""Configuration: nearest file wins, flags override, --config forces one, errors name the file."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import pytest
from report_lines import finding_lines

import devlint.run.command
from devlint.cli import main
from devlint.run.config import ConfigError, Overrides, Resolver, load

CUDA = "import torch\nx = torch.ones(2).cuda()\n"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CI", raising=False)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def flagged(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, set[str]]:
    """Exit status and the files with findings of `devlint check --output-format concise ARGV`."""
    status = main(["check", "--output-format", "concise", *argv])
    out = capsys.readouterr().out
    return status, {Path(line.split(":", 1)[0]).as_posix() for line in finding_lines(out)}


def test_nearest_configuration_applies_and_pyproject_without_table_is_skipped(tmp_path: Path, capsys) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devlint]\nignore = ["DEV101"]\n')
    write(tmp_path / "a.py", CUDA)
    # a pyproject.toml without [tool.devlint] does not stop the walk up: the root's ignore applies
    write(tmp_path / "pkg" / "pyproject.toml", "[project]\nname = 'pkg'\n")
    write(tmp_path / "pkg" / "b.py", CUDA)
    # a nearer devlint.toml replaces the root's settings for its folder
    write(tmp_path / "lab" / "devlint.toml", 'select = ["DEV101"]\n')
    write(tmp_path / "lab" / "deep" / "c.py", CUDA)
    assert flagged(capsys, ".") == (1, {"lab/deep/c.py"})


def test_devlint_toml_wins_over_pyproject_in_the_same_folder(tmp_path: Path, capsys) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devlint]\nselect = ["DEV101"]\n')
    write(tmp_path / "devlint.toml", 'ignore = ["DEV101"]\n')
    write(tmp_path / "a.py", CUDA)
    assert flagged(capsys, ".") == (0, set())


def test_flags_override_the_file(tmp_path: Path, capsys) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devlint]\nignore = ["DEV101"]\n')
    write(tmp_path / "a.py", CUDA)
    assert flagged(capsys, ".") == (0, set())
    assert flagged(capsys, "--select", "DEV101", ".") == (1, {"a.py"})
    assert flagged(capsys, "--extend-select", "DEV101", ".") == (1, {"a.py"})
    write(tmp_path / "pyproject.toml", '[tool.devlint]\nselect = ["DEV101"]\n')
    assert flagged(capsys, "--ignore", "DEV101", ".") == (0, set())


def test_config_flag_forces_one_file_for_every_path(tmp_path: Path, capsys) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devlint]\nignore = ["DEV101"]\n')
    write(tmp_path / "sub" / "devlint.toml", 'ignore = ["DEV101"]\n')
    write(tmp_path / "sub" / "a.py", CUDA)
    forced = write(tmp_path / "ci" / "strict.toml", 'select = ["DEV101"]\n')
    assert flagged(capsys, ".") == (0, set())
    assert flagged(capsys, "--config", str(forced), ".") == (1, {"sub/a.py"})


def test_per_file_ignores_match_paths_relative_to_the_configuration(tmp_path: Path, capsys) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devlint.per-file-ignores]\n"tests/**/*.py" = ["DEV1"]\n"legacy_*.py" = ["DEV101"]\n')
    for name in ("tests/test_a.py", "tests/unit/test_b.py", "src/legacy_c.py", "src/d.py", "other/tests/e.py"):
        write(tmp_path / name, CUDA)
    # `legacy_*.py` matches by file name anywhere; `tests/**` only under the configuration's tests/
    assert flagged(capsys, ".") == (1, {"src/d.py", "other/tests/e.py"})


def test_exclude_replaces_the_defaults_and_extend_exclude_adds(tmp_path: Path, capsys) -> None:
    for name in ("keep.py", "build/gen.py", "vendor/x.py", "notes/draft.py", "ignored_by_git.py"):
        write(tmp_path / name, CUDA)
    write(tmp_path / ".gitignore", "ignored_by_git.py\n")
    (tmp_path / ".git").mkdir()
    assert flagged(capsys, ".")[1] == {"keep.py", "vendor/x.py", "notes/draft.py"}
    write(tmp_path / "pyproject.toml", '[tool.devlint]\nextend-exclude = ["vendor/", "notes/*.py", "keep.py/"]\n')
    # `name/` is a folder only: keep.py stays
    assert flagged(capsys, ".")[1] == {"keep.py"}
    write(tmp_path / "pyproject.toml", '[tool.devlint]\nexclude = ["vendor"]\n')
    assert flagged(capsys, ".")[1] == {"keep.py", "build/gen.py", "notes/draft.py"}
    # a file named on the command line is checked even when excluded
    assert flagged(capsys, "vendor/x.py")[1] == {"vendor/x.py"}


def test_device_settings_reach_the_fix_and_flags_win(tmp_path: Path, capsys) -> None:
    write(
        tmp_path / "pyproject.toml",
        '[tool.devlint]\ndevice-name = "dev"\ndevice-expression = "accelerator"\ntorch-version = "2.6"\n',
    )
    target = write(tmp_path / "a.py", CUDA)
    assert main(["fix", "--output-format", "concise", "a.py"]) == 0
    fixed = target.read_text()
    assert "dev = torch.accelerator.current_accelerator()" in fixed and ".to(dev)" in fixed
    target.write_text(CUDA)
    assert main(["fix", "--output-format", "concise", "--device-name", "gpu", "a.py"]) == 0
    assert ".to(gpu)" in target.read_text() and "gpu = torch.accelerator" in target.read_text()


def test_the_accelerator_expression_needs_torch_2_6(tmp_path: Path, capsys) -> None:
    write(tmp_path / "pyproject.toml", '[project]\nname = "p"\ndependencies = ["torch>=2.4"]\n[tool.devlint]\ndevice-expression = "accelerator"\n')
    target = write(tmp_path / "a.py", CUDA)
    assert main(["fix", "--output-format", "concise", "a.py"]) == 2
    error = capsys.readouterr().err
    assert "pyproject.toml" in error and "torch-version is 2.4" in error and "Traceback" not in error
    assert target.read_text() == CUDA
    assert main(["fix", "--output-format", "concise", "--torch-version", "2.6", "a.py"]) == 0
    assert "torch.accelerator.current_accelerator()" in target.read_text()


def test_files_with_different_settings_get_different_jobs(tmp_path: Path, monkeypatch) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devlint]\nselect = ["DEV101"]\n[tool.devlint.per-file-ignores]\n"x_*.py" = ["DEV101"]\n')
    write(tmp_path / "sub" / "devlint.toml", 'select = ["DEV101"]\ndevice-name = "dev"\n')
    for name in ("a.py", "b.py", "x_c.py", "sub/d.py"):
        write(tmp_path / name, CUDA)
    seen = {}

    def capture(work):
        seen.update({path.as_posix(): job for path, job in work})
        return devlint.run.command.execute(work)

    monkeypatch.setattr(devlint.run.command, "run_with_progress", lambda run, work, err: capture(work))
    assert main(["check", "--output-format", "concise", "."]) == 1
    assert seen["a.py"] is seen["b.py"]
    assert seen["a.py"].codes == ("DEV101",) and seen["x_c.py"].codes == ()
    assert seen["sub/d.py"].settings.device_name == "dev" and seen["a.py"].settings.device_name == "device"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[tool.devlint]\nselct = ["DEV101"]\n', "unknown key `selct` (did you mean `select`?)"),
        ('[tool.devlint]\nselect = ["DEV999"]\n', "`select`: unknown rule code or prefix 'DEV999'"),
        ('[tool.devlint.per-file-ignores]\n"a.py" = ["NOPE1"]\n', "per-file-ignores.a.py"),
        ('[tool.devlint]\nignore = "DEV101"\n', "`ignore` must be a list of strings"),
        ('[tool.devlint]\ndevice-name = "my device"\n', "`device-name` must be a Python identifier"),
        ('[tool.devlint]\ndevice-expression = "torch.device("\n', "`device-expression` is not a Python expression"),
        ("[tool.devlint\n", "invalid TOML"),
        ('[tool.devlint]\nselect = ["DEV101"]\nwat = 1\n', "unknown key `wat`"),
    ],
)
def test_bad_configuration_is_a_clear_error_naming_the_file(tmp_path: Path, capsys, text: str, expected: str) -> None:
    write(tmp_path / "pkg" / "pyproject.toml", text)
    write(tmp_path / "pkg" / "a.py", CUDA)
    assert main(["check", "."]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("devlint: error: ")
    assert os.path.join("pkg", "pyproject.toml") in lines[0] and expected in lines[0]
    assert "Traceback" not in captured.err and captured.out == ""


def test_config_flag_errors(tmp_path: Path, capsys) -> None:
    write(tmp_path / "a.py", CUDA)
    assert main(["check", "--config", "missing.toml", "a.py"]) == 2
    assert "missing.toml: no such configuration file" in capsys.readouterr().err
    write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n")
    assert main(["check", "--config", "pyproject.toml", "a.py"]) == 2
    assert "pyproject.toml: no [tool.devlint] table" in capsys.readouterr().err


def test_resolver_reads_each_file_once_and_caches_folders(tmp_path: Path, monkeypatch) -> None:
    write(tmp_path / "devlint.toml", 'select = ["DEV101"]\n')
    calls = []
    import devlint.run.config as config

    real = config.load
    monkeypatch.setattr(config, "load", lambda path, forced=False: calls.append(path) or real(path, forced))
    resolver = Resolver(Overrides(), cwd=tmp_path)
    for name in ("a/b/c/x.py", "a/b/y.py", "a/z.py", "w.py"):
        assert resolver.settings_for(tmp_path / name).codes == ("DEV101",)
    assert calls == [tmp_path / "devlint.toml"]


def test_load_returns_none_for_a_pyproject_without_the_table(tmp_path: Path) -> None:
    assert load(write(tmp_path / "pyproject.toml", "[tool.other]\nx = 1\n")) is None
    with pytest.raises(ConfigError, match="must be a table"):
        load(write(tmp_path / "pyproject.toml", "[tool]\ndevlint = 3\n"))


def readme_block(first_line: str) -> str:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for block in re.findall(r"```[a-z]*\n(.*?)```", readme, re.DOTALL):
        if block.splitlines()[0].strip() == first_line:
            return block
    raise AssertionError(f"README.md has no code block starting with {first_line!r}")


def test_readme_configuration_example_is_valid_and_works(tmp_path: Path, capsys) -> None:
    text = readme_block("# pyproject.toml")
    table = tomllib.loads(text)["tool"]["devlint"]
    assert set(table) >= {"extend-select", "ignore", "extend-exclude", "per-file-ignores", "device-expression"}
    write(tmp_path / "pyproject.toml", text)
    write(tmp_path / "tests" / "unit" / "test_model.py", CUDA)
    write(tmp_path / "third_party" / "lib.py", CUDA)
    write(tmp_path / "experiments" / "scratch_1.py", CUDA)
    target = write(tmp_path / "train.py", CUDA)
    assert flagged(capsys, ".") == (1, {"train.py"})
    assert main(["fix", "--output-format", "concise", "train.py"]) == 0
    assert "device = torch.accelerator.current_accelerator()" in target.read_text()


def test_readme_error_example_is_what_devlint_prints(tmp_path: Path, capsys) -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    example = next(line for line in readme.splitlines() if line.startswith("devlint: error: pyproject.toml"))
    key = re.search(r"unknown key `(\w+)`", example).group(1)
    write(tmp_path / "pyproject.toml", f'[tool.devlint]\n{key} = ["DEV101"]\n')
    write(tmp_path / "a.py", CUDA)
    assert main(["check", "a.py"]) == 2
    assert capsys.readouterr().err.strip() == example


# -- defaults follow torch-version (as ruff's rules follow target-version) ---------------------

GUARDED_CHOICE = 'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


@pytest.mark.parametrize(
    ("table", "flags", "dev604"),
    [
        ('torch-version = "2.4"\n', (), False),  # below 2.6: off by default
        ('torch-version = "2.6"\n', (), True),  # 2.6 or newer: on by default
        ('torch-version = "2.9"\n', (), True),
        ('torch-version = "2.6"\nignore = ["DEV604"]\n', (), False),  # the file's ignore wins
        ('torch-version = "2.6"\nignore = ["DEV6"]\n', (), False),  # a prefix too
        ('torch-version = "2.6"\nselect = ["DEV601"]\n', (), False),  # an explicit select replaces the defaults
        ('torch-version = "2.6"\nselect = ["DEV6"]\n', (), True),  # ... and may name it
        ('torch-version = "2.4"\nextend-select = ["DEV604"]\n', (), True),  # opt-in below 2.6
        ('torch-version = "2.6"\n', ("--ignore", "DEV604"), False),  # the command line wins
        ('torch-version = "2.6"\n', ("--select", "DEV601"), False),
        ('torch-version = "2.4"\n', ("--torch-version", "2.6"), True),  # --torch-version moves the default
        ('torch-version = "2.6"\n', ("--torch-version", "2.5"), False),
    ],
)
def test_dev604_is_on_by_default_from_torch_2_6_and_explicit_configuration_wins(
    tmp_path: Path, table: str, flags: tuple[str, ...], dev604: bool
) -> None:
    write(tmp_path / "pyproject.toml", "[tool.devlint]\n" + table)
    resolver = Resolver(Overrides(
        select=tuple(flags[1].split(",")) if flags[:1] == ("--select",) else None,
        ignore=tuple(flags[1].split(",")) if flags[:1] == ("--ignore",) else (),
        torch_version=tuple(int(p) for p in flags[1].split(".")) if flags[:1] == ("--torch-version",) else None,
    ))
    settings = resolver.settings_for(write(tmp_path / "a.py", GUARDED_CHOICE))
    assert ("DEV604" in settings.codes) is dev604
    # whenever DEV604 is selected (and can report), the definitions fixes insert use the accelerator form
    accelerator = dev604 and settings.fix.torch_version >= (2, 6)
    assert settings.fix.device_expression == ("accelerator" if accelerator else "default")


def test_torch_2_6_from_the_project_requirement_makes_fixes_accelerator_generic(tmp_path: Path, capsys) -> None:
    write(tmp_path / "pyproject.toml", '[project]\nname = "p"\ndependencies = ["torch>=2.6"]\n')
    target = write(tmp_path / "a.py", GUARDED_CHOICE + "x = torch.ones(2).cuda()\n")
    assert main(["fix", "--output-format", "concise", "a.py"]) == 0
    assert target.read_text() == (
        "import torch\ndevice = torch.accelerator.current_accelerator() if torch.accelerator.is_available() "
        'else torch.device("cpu")\nx = torch.ones(2).to(device)\n'
    )
    # the same file, for a project that must still run on torch 2.4: the CUDA check stays
    write(tmp_path / "pyproject.toml", '[project]\nname = "p"\ndependencies = ["torch>=2.4"]\n')
    target.write_text(GUARDED_CHOICE + "x = torch.ones(2).cuda()\n")
    assert main(["fix", "--output-format", "concise", "a.py"]) == 0
    assert target.read_text() == GUARDED_CHOICE + "x = torch.ones(2).to(device)\n"


def test_devlint_rules_shows_the_defaults_per_torch_version(capsys) -> None:
    assert main(["rules"]) == 0
    assert re.search(r"DEV604 .*from 2\.6", capsys.readouterr().out)
    assert main(["rules", "--torch-version", "2.6"]) == 0
    assert re.search(r"DEV604\W+cuda-availability-check\W+sometimes\W+on\b", capsys.readouterr().out)
    assert main(["rules", "--torch-version", "2.5"]) == 0
    assert re.search(r"DEV604\W+cuda-availability-check\W+sometimes\W+off\b", capsys.readouterr().out)


def test_the_compiled_exclusion_matcher_agrees_with_each_pattern() -> None:
    # Resolver.excluded asks one compiled alternation per path; every pattern alone must say the same.
    from devlint.run.config import _matcher, _matches
    from devlint.run.discovery import DEFAULT_EXCLUDES

    patterns = (*DEFAULT_EXCLUDES, "build/", "**/gen_*.py", "docs/*.py", "x[ab].py", "vendor/**/x.py", "*.ipynb")
    paths = [
        "a.py", "build", "build/x.py", "src/gen_a.py", "gen_b.py", "docs/conf.py", "docs/sub/conf.py", "xa.py", "xc.py",
        "vendor/x.py", "vendor/a/b/x.py", "nb.ipynb", ".venv", ".git/config", "node_modules/m.py", "__pycache__",
        "pkg/.tox/t.py", "site-packages/torch/x.py",
    ]
    for chosen in (patterns, patterns[:1], ()):
        for is_dir in (False, True):
            for rel in paths:
                name = rel.rsplit("/", 1)[-1]
                expected = any(_matches(rel, name, pattern, is_dir) for pattern in chosen)
                assert _matcher(chosen, is_dir)(rel, name) is expected, (chosen, rel, is_dir)
