"""The GitHub Action (action.yml): its steps, run as a runner runs them, over a git fixture with a
simulated GITHUB_* environment. No network: the install step is the one a runner needs; here the
devlint under test is already on PATH (the action's `install: false`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
OLD = "import torch\nx = torch.ones(1).cuda()\n"


def test_the_action_is_composite_with_the_promised_inputs() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert {"version", "args", "src", "torch-version", "diff-base", "sarif"} <= set(ACTION["inputs"])
    install = ACTION["runs"]["steps"][0]
    assert "pip install" in (ROOT / "action" / "install.sh").read_text() and install["if"] == "inputs.install == 'true'"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def pull_request(tmp_path: Path) -> Path:
    """A checkout of a pull request's branch, its base branch `main` fetched as `origin/main`."""
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q", "-b", "main")
    _git(origin, "config", "user.email", "dev@example.com")
    _git(origin, "config", "user.name", "dev")
    (origin / "train.py").write_text(OLD)
    _git(origin, "add", ".")
    _git(origin, "commit", "-qm", "base")
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(origin), str(work)], check=True, capture_output=True)
    _git(work, "checkout", "-qb", "feature")
    _git(work, "config", "user.email", "dev@example.com")
    _git(work, "config", "user.name", "dev")
    return work


def _expand(value: str, inputs: dict[str, str]) -> str:
    return re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: inputs[m.group(1)], value)


def _run_action(work: Path, tmp_path: Path, **given: str) -> tuple[int, str, dict[str, str]]:
    """Each step of the action in order, as a runner runs a composite action; the last step's
    exit status and output, and what it wrote to GITHUB_OUTPUT."""
    inputs = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    inputs.update({"install": "false"}, **given)
    output = tmp_path / "github_output"
    output.write_text("")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_WORKSPACE": str(work),
        "GITHUB_BASE_REF": "main",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_OUTPUT": str(output),
        "GITHUB_PATH": str(tmp_path / "github_path"),
        "RUNNER_TEMP": str(tmp_path),
    }
    status, text = 0, ""
    for step in ACTION["runs"]["steps"]:
        condition = step.get("if")
        if condition is not None and _expand(condition.replace("inputs.", "${{ inputs.").replace(" ==", " }} =="), inputs) != "true == 'true'":
            continue
        step_env = {**env, **{key: _expand(str(value), inputs) for key, value in step.get("env", {}).items()}}
        done = subprocess.run(["bash", "-c", step["run"]], cwd=work, env=step_env, capture_output=True, text=True, check=False)
        status, text = done.returncode, done.stdout + done.stderr
        if status != 0:
            break
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    return status, text, outputs


def test_a_pull_request_with_a_new_finding_fails_on_that_line_alone(pull_request: Path, tmp_path: Path) -> None:
    (pull_request / "train.py").write_text(OLD + "y = torch.zeros(2).cuda()\n")
    _git(pull_request, "commit", "-qam", "new line")
    status, text, _ = _run_action(pull_request, tmp_path)
    annotations = [line for line in text.splitlines() if line.startswith("::error")]
    assert status == 1, text
    assert len(annotations) == 1 and "file=train.py,line=3," in annotations[0], text


def test_a_pull_request_touching_only_clean_lines_passes(pull_request: Path, tmp_path: Path) -> None:
    (pull_request / "train.py").write_text(OLD + "print('ok')\n")
    _git(pull_request, "commit", "-qam", "clean line")
    status, text, _ = _run_action(pull_request, tmp_path)
    assert status == 0 and "::error" not in text, text


def test_diff_base_none_checks_everything_and_sarif_is_written(pull_request: Path, tmp_path: Path) -> None:
    status, text, outputs = _run_action(pull_request, tmp_path, **{"diff-base": "none", "sarif": "devlint.sarif"})
    assert status == 1 and "file=train.py,line=2," in text, text
    assert outputs["sarif-file"] == "devlint.sarif"
    assert '"ruleId": "DEV101"' in (pull_request / "devlint.sarif").read_text()


def test_args_and_torch_version_reach_devlint(pull_request: Path, tmp_path: Path) -> None:
    (pull_request / "train.py").write_text(OLD + "y = torch.zeros(2).cuda()\n")
    status, text, _ = _run_action(pull_request, tmp_path, args="--select DEV2", **{"torch-version": "2.9"})
    assert status == 0, text
    status, text, _ = _run_action(pull_request, tmp_path, **{"torch-version": "3.0"})
    assert status == 2 and "torch 3.0 is no torch release" in text, text
