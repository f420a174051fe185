"""`devlint emulate` and the pytest option `--emulate-cuda`, end to end, as subprocesses.

The package under test is fixtures/packages/gpu_pkg: CUDA-first code whose GPU tests skip without
CUDA. Each pytest-in-pytest run costs seconds (torch is imported in every process), so each is
made once per module and shared by the assertions about it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from devlint.verify.gpu_probe import cpu_only_build, probe

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "fixtures" / "packages" / "gpu_pkg"
DEVLINT = [sys.executable, "-m", "devlint"]
PYTEST = [sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider"]
GPU_TESTS = 3
# Asked in a child process: this one must not start CUDA (the tests fork).
HAS_GPU = probe(need_version=False).gpu is not None


def _env(**extra: str) -> dict[str, str]:
    """This process's environment without what would leak the outer pytest or emulation in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DEVLINT_"))}
    env.pop("PYTHONPATH", None)
    env.update(PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=cwd, env=env or _env(), capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("emulate") / "gpu_pkg"
    shutil.copytree(PACKAGE, target)
    return target


@pytest.fixture(scope="module")
def plain_run(package: Path) -> subprocess.CompletedProcess:
    return _run(PYTEST, package)


@pytest.fixture(scope="module")
def emulated_run(package: Path) -> subprocess.CompletedProcess:
    return _run([*DEVLINT, "emulate", "--", *PYTEST], package)


@pytest.fixture(scope="module")
def option_run(package: Path) -> subprocess.CompletedProcess:
    return _run([*PYTEST, "--emulate-cuda", "-n", "2"], package)


@pytest.mark.skipif(HAS_GPU, reason="on a machine with a GPU the GPU tests run without emulation")
def test_gpu_tests_skip_without_emulation(plain_run: subprocess.CompletedProcess) -> None:
    assert plain_run.returncode == 0, plain_run.stdout + plain_run.stderr
    assert f"1 passed, {GPU_TESTS} skipped" in plain_run.stdout


def test_gpu_tests_run_and_pass_under_devlint_emulate(emulated_run: subprocess.CompletedProcess) -> None:
    assert emulated_run.returncode == 0, emulated_run.stdout + emulated_run.stderr
    assert f"{GPU_TESTS + 1} passed" in emulated_run.stdout
    assert "skipped" not in emulated_run.stdout


def test_the_pytest_option_emulates_in_the_session_and_its_xdist_workers(option_run: subprocess.CompletedProcess) -> None:
    assert option_run.returncode == 0, option_run.stdout + option_run.stderr
    assert "2 workers" in option_run.stdout
    assert f"{GPU_TESTS + 1} passed" in option_run.stdout


def test_the_pytest_option_is_offered_and_costs_no_torch_import(package: Path) -> None:
    help_run = _run([sys.executable, "-m", "pytest", "--help"], package)
    assert "--emulate-cuda" in help_run.stdout
    probe = "import sys, devlint.verify.child.pytest_plugin; print('torch' in sys.modules)"
    assert _run([sys.executable, "-c", probe], package).stdout.strip() == "False"


SCRIPT = """\
import subprocess
import sys

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Flags(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        # Answered in a worker process: is CUDA there, and is this really a worker?
        return torch.tensor([torch.cuda.is_available(), get_worker_info() is not None], dtype=torch.float32)


if __name__ == "__main__":
    loader = DataLoader(Flags(), batch_size=2, num_workers=2, multiprocessing_context="spawn")
    print("workers", torch.cat(list(loader)).all().item())
    child = "import torch; print(torch.cuda.is_available(), torch.zeros(1, device='cuda').device)"
    print("subprocess", subprocess.run([sys.executable, "-c", child], capture_output=True, text=True).stdout.strip())
    try:
        torch.cuda.CUDAGraph()
    except Exception as error:
        print("unmodelled", error)
    print("to stderr", file=sys.stderr)
    sys.exit(3)
"""


@pytest.fixture(scope="module")
def script_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess:
    folder = tmp_path_factory.mktemp("script")
    (folder / "workers.py").write_text(SCRIPT, encoding="utf-8")
    return _run([*DEVLINT, "emulate", sys.executable, "workers.py"], folder)


def test_dataloader_workers_started_by_spawn_see_emulated_cuda(script_run: subprocess.CompletedProcess) -> None:
    assert "workers True" in script_run.stdout, script_run.stderr


def test_a_python_subprocess_sees_emulated_cuda(script_run: subprocess.CompletedProcess) -> None:
    assert "subprocess True cuda:0" in script_run.stdout, script_run.stderr


def test_streams_and_exit_status_are_the_commands_own(script_run: subprocess.CompletedProcess) -> None:
    assert script_run.returncode == 3
    assert script_run.stderr == "to stderr\n"


def test_what_emulation_cannot_model_names_the_call_and_the_line(script_run: subprocess.CompletedProcess) -> None:
    line = SCRIPT.splitlines().index("        torch.cuda.CUDAGraph()") + 1
    message = next(row for row in script_run.stdout.splitlines() if row.startswith("unmodelled"))
    assert message.startswith("unmodelled not emulated: CUDA graphs (torch.cuda.CUDAGraph) (at ")
    assert message.endswith(f"{os.sep}workers.py:{line})")


def test_processes_that_never_import_torch_pay_nothing_and_a_shadowed_sitecustomize_still_runs(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import builtins\nbuiltins.THEIRS_RAN = True\n", encoding="utf-8")
    code = "import sys, builtins; print('torch' in sys.modules, getattr(builtins, 'THEIRS_RAN', False))"
    done = _run([*DEVLINT, "emulate", "--", sys.executable, "-c", code], tmp_path, _env(PYTHONPATH=str(theirs)))
    assert (done.returncode, done.stdout, done.stderr) == (0, "False True\n", "")


def test_a_command_that_cannot_be_found_exits_2_with_one_line(tmp_path: Path) -> None:
    done = _run([*DEVLINT, "emulate", "--", "no-such-command-devlint"], tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "devlint emulate: error: command not found: no-such-command-devlint\n"
    done = _run([*DEVLINT, "emulate"], tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("devlint emulate: error: name a command")


def test_a_signal_to_devlint_reaches_the_command(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import signal, sys, time
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(42))
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    process = subprocess.Popen(
        [*DEVLINT, "emulate", "--", sys.executable, "-c", code], cwd=tmp_path, env=_env(),
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 42
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.mark.parametrize(
    ("text", "cpu_only"),
    [
        ("cuda: Optional[str] = None\nhip: Optional[str] = None\n", True),
        ("cuda: Optional[str] = '12.8'\nhip: Optional[str] = None\n", False),
        ("cuda: Optional[str] = None\nhip: Optional[str] = '6.3'\n", False),
    ],
)
def test_a_cpu_build_of_torch_is_known_without_importing_it(tmp_path: Path, text: str, cpu_only: bool) -> None:
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "version.py").write_text(text, encoding="utf-8")
    assert cpu_only_build(tmp_path) is cpu_only


@pytest.mark.skipif(not HAS_GPU, reason="needs a GPU that torch can see")
def test_on_a_machine_with_a_gpu_it_says_so_and_runs_on_the_gpu_unless_forced(tmp_path: Path) -> None:
    code = "import torch; print(torch.cuda.get_device_name(0))"
    done = _run([*DEVLINT, "emulate", "--", sys.executable, "-c", code], tmp_path)
    assert "torch sees a real GPU" in done.stderr
    assert "Emulated CUDA device" not in done.stdout
    forced = _run([*DEVLINT, "emulate", "--force", "--", sys.executable, "-c", code], tmp_path)
    assert "Emulated CUDA device" in forced.stdout and forced.stderr == ""


def test_emulate_is_in_the_help() -> None:
    done = _run([*DEVLINT, "emulate", "--help"], ROOT)
    assert "--force" in done.stdout and "COMMAND" in done.stdout
