"""The pre-commit hooks: their definition, the README snippet, and (slow) a real pre-commit run.

The real run installs devlint from a snapshot of this working tree into pre-commit's own
virtualenv twice (try-repo, then run), with libcst, rich and setuptools from the package index:
about 20 s here, beside the other tests under pytest-xdist.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from devlint.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
PRE_COMMIT = Path(sys.executable).parent / "pre-commit"
GIT_ENV = {"GIT_AUTHOR_NAME": "devlint", "GIT_AUTHOR_EMAIL": "devlint@example.com",
           "GIT_COMMITTER_NAME": "devlint", "GIT_COMMITTER_EMAIL": "devlint@example.com"}


def readme_configs() -> list[dict]:
    """The README's .pre-commit-config.yaml snippets, in order: the remote repository, then `repo: local`."""
    readme = (ROOT / "README.md").read_text()
    found = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", readme, re.DOTALL)
             if block.startswith("# .pre-commit-config.yaml")]
    assert found, "README.md has no .pre-commit-config.yaml snippet"
    return found


def readme_config() -> dict:
    return readme_configs()[0]


def test_hooks_are_declared_as_pre_commit_expects() -> None:
    by_id = {hook["id"]: hook for hook in HOOKS}
    assert set(by_id) == {"devlint", "devlint-fix"}
    for hook in HOOKS:
        assert hook["language"] == "python" and hook["require_serial"] is True
        assert hook["types_or"] == ["python", "jupyter"]
        assert {"id", "name", "entry", "language"} <= set(hook)
        argv = shlex.split(hook["entry"])
        assert argv[0] == "devlint"
        build_parser().parse_args([*argv[1:], "some_file.py"])  # exits on an unknown flag
    assert shlex.split(by_id["devlint"]["entry"])[1] == "check"
    assert shlex.split(by_id["devlint-fix"]["entry"])[1] == "fix"


def test_readme_snippet_uses_the_declared_hooks_fix_first() -> None:
    repos = readme_config()["repos"]
    assert len(repos) == 1 and {"repo", "rev", "hooks"} <= set(repos[0])
    ids = [hook["id"] for hook in repos[0]["hooks"]]
    assert ids == ["devlint-fix", "devlint"]
    assert set(ids) <= {hook["id"] for hook in HOOKS}


def test_readme_rev_is_a_placeholder_for_a_commit_not_a_tag_that_does_not_exist() -> None:
    # This repository has no release tags: a `rev: v0.1.0` would fail for whoever copies it.
    rev = str(readme_config()["repos"][0]["rev"])
    assert rev == "<commit SHA>"
    assert "git ls-remote" in (ROOT / "README.md").read_text()


def test_readme_local_hook_runs_the_installed_devlint_as_the_declared_hook_does() -> None:
    local = [config for config in readme_configs() if config["repos"][0]["repo"] == "local"]
    assert len(local) == 1
    (hook,) = local[0]["repos"][0]["hooks"]
    declared = {declared["id"]: declared for declared in HOOKS}[hook["id"]]
    # Only the language differs: `system` uses the devlint installed in the environment.
    assert hook["language"] == "system"
    for key in ("entry", "types_or", "require_serial"):
        assert hook[key] == declared[key], key


def test_readme_try_repo_command_names_a_declared_hook() -> None:
    readme = (ROOT / "README.md").read_text()
    (line,) = [line for line in readme.splitlines() if line.startswith("pre-commit try-repo ")]
    argv = shlex.split(line)
    assert argv[3] in {hook["id"] for hook in HOOKS} and argv[4] == "--files"


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _snapshot(target: Path, env: dict[str, str]) -> str:
    """This working tree (tracked and untracked, not ignored files) as a one-commit repository."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    for argv in (["git", "init", "-q", "."], ["git", "add", "-A"], ["git", "commit", "-qm", "snapshot"]):
        subprocess.run(argv, cwd=target, env=env, check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=target, capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.skipif(not PRE_COMMIT.exists() or not (ROOT / ".git").exists(), reason="needs pre-commit and a git checkout")
def test_hooks_fail_on_cuda_and_pass_after_the_fix_hook(tmp_path: Path) -> None:
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    env.pop("CI", None)
    source, project = tmp_path / "devlint-src", tmp_path / "project"
    source.mkdir()
    project.mkdir()
    rev = _snapshot(source, env)
    subprocess.run(["git", "init", "-q", "."], cwd=project, check=True)
    train = project / "train.py"
    train.write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)

    tried = _run([str(PRE_COMMIT), "try-repo", str(source), "devlint", "--all-files"], project, env)
    assert tried.returncode == 1, tried.stdout + tried.stderr
    assert "train.py:2:" in tried.stdout and "DEV101" in tried.stdout

    # the README's configuration, pointed at the snapshot
    config = readme_config()
    config["repos"][0].update(repo=str(source), rev=rev)
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    first = _run([str(PRE_COMMIT), "run", "--all-files"], project, env)
    assert first.returncode == 1 and "files were modified by this hook" in first.stdout, first.stdout + first.stderr
    assert ".to(device)" in train.read_text() and ".cuda()" not in train.read_text()
    second = _run([str(PRE_COMMIT), "run", "--all-files"], project, env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert second.stdout.count("Passed") == 2


@pytest.mark.skipif(not PRE_COMMIT.exists(), reason="needs pre-commit (the test extra installs it)")
def test_the_readme_local_hook_runs_and_reports_a_finding(tmp_path: Path) -> None:
    """The README's `repo: local` configuration, run by pre-commit as printed: devlint from the
    environment (this one's, on PATH), so nothing is installed."""
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env.pop("CI", None)
    local = next(config for config in readme_configs() if config["repos"][0]["repo"] == "local")
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "."], cwd=project, check=True)
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(local))
    (project / "train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    (project / "clean.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2)\n")
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    found = _run([str(PRE_COMMIT), "run", "--all-files"], project, env)
    assert found.returncode == 1 and "train.py:2:" in found.stdout and "DEV101" in found.stdout, found.stdout + found.stderr
    clean = _run([str(PRE_COMMIT), "run", "--files", "clean.py"], project, env)
    assert clean.returncode == 0 and "Passed" in clean.stdout, clean.stdout + clean.stderr
