"""Emulated CUDA and `devlint verify` on every torch release emulation supports: one table.

One virtual environment per release, made once and kept under ~/.cache/devlint-bench/torch-X.Y.Z
(`pip install torch==X.Y.Z numpy`, then this checkout editable with its test and verify extras);
a release whose install fails is skipped with the reason. In each, with this checkout first on
PYTHONPATH (so the code measured is this checkout's, whatever the environment installed):

- tests/test_emulation.py (pytest's counts, read from its JUnit XML);
- `devlint verify` on the bundled programs and on fixtures/pairs (cells pass, FAIL, n/a, ...);
- `devlint verify --tests` in each of fixtures/packages/* (exit status, tests run, changed).

    python3 bench/torch_matrix.py                       # every release, installing what is missing
    python3 bench/torch_matrix.py --no-install 2.4.1 2.14.1 --venv 2.13.0=.venv
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path.home() / ".cache" / "devlint-bench"
RELEASES = ("2.4.1", "2.6.0", "2.9.1", "2.11.0", "2.13.0", "2.14.1")
PACKAGES = sorted(path for path in (ROOT / "fixtures" / "packages").iterdir() if path.is_dir())
# A check: its column and what runs it, (python, scratch folder) -> the cell (its time is added).
Check = tuple[str, Callable[[Path, Path], str]]
INSTALL_TIMEOUT = 3600
CHECK_TIMEOUT = 3600


def environment(release: str, given: dict[str, Path], install: bool) -> tuple[Path | None, str]:
    """The python of ``release``'s environment, or None and why there is none."""
    if release in given:
        python = given[release]
        return (python, "") if python.exists() else (None, f"{python}: no such interpreter")
    venv = CACHE / f"torch-{release}"
    python = venv / "bin" / "python"
    if python.exists() and _has_torch(python, release):
        return python, ""
    if not install:
        return None, f"no environment at {venv} (--no-install)"
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "-q", f"torch=={release}", "numpy"],
        [str(python), "-m", "pip", "install", "-q", "-e", f"{ROOT}[test,verify]"],
    ]
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            return None, f"`{' '.join(step[2:])}` took longer than {INSTALL_TIMEOUT}s"
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["exit status %d" % done.returncode])[-1]
            return None, f"`{' '.join(step[2:])}` failed: {last}"
    return python, ""


def _has_torch(python: Path, release: str) -> bool:
    done = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('torch'))"],
        capture_output=True, text=True, check=False,
    )
    return done.returncode == 0 and done.stdout.strip().split("+")[0] == release


def _run(python: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("PYTEST_", "DEVLINT_"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=CHECK_TIMEOUT, check=False
    )


def emulation_tests(python: Path, scratch: Path) -> str:
    xml = scratch / "junit.xml"
    done = _run(python, ["-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}", "tests/test_emulation.py"], ROOT)
    try:
        suite = ElementTree.parse(xml).getroot()
    except (OSError, ElementTree.ParseError):
        return f"no report (exit {done.returncode})"
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    assert suite is not None
    total, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
    failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    return f"{total - skipped - failed} passed, {failed} failed, {skipped} skipped"


def verify_programs(*paths: str) -> Callable[[Path, Path], str]:
    def check(python: Path, scratch: Path) -> str:
        done = _run(python, ["-m", "devlint", "verify", "--output-format", "json", *paths], ROOT)
        try:
            report = json.loads(done.stdout)
        except ValueError:
            return f"no report (exit {done.returncode}): {(done.stderr.strip().splitlines() or [''])[-1]}"
        summary = report["summary"]
        shown = ", ".join(f"{summary[name]} {name}" for name in ("pass", "FAIL", "n/a", "skipped", "differs") if summary.get(name))
        return f"{summary['programs']} programs: {shown or 'no cell'} (exit {report['exit_code']})"

    return check


def verify_tests(package: Path) -> Callable[[Path, Path], str]:
    def check(python: Path, scratch: Path) -> str:
        command = f"{python} -m pytest -q -p no:cacheprovider"
        done = _run(python, ["-m", "devlint", "verify", "--tests", command, "--output-format", "json"], package)
        try:
            report = json.loads(done.stdout)
        except ValueError:
            return f"no report (exit {done.returncode}): {(done.stderr.strip().splitlines() or [''])[-1]}"
        summary = report["summary"]
        text = f"exit {report['exit_code']}: {summary['tests_run']} run, {summary['changed']} changed"
        return text + (f"; {len(report['errors'])} error(s): {report['errors'][0]}" if report["errors"] else "")

    return check


CHECKS: list[Check] = [
    ("tests/test_emulation.py", emulation_tests),
    ("verify (bundled programs)", verify_programs()),
    ("verify fixtures/pairs", verify_programs("fixtures/pairs")),
    *[(f"verify --tests {package.name}", verify_tests(package)) for package in PACKAGES],
]


def measure(python: Path) -> list[str]:
    cells = []
    for name, check in CHECKS:
        with tempfile.TemporaryDirectory(prefix="devlint-matrix-") as scratch:
            started = time.monotonic()
            try:
                text = check(python, Path(scratch))
            except subprocess.TimeoutExpired:
                text = f"stopped after {CHECK_TIMEOUT}s"
            cells.append(f"{text}; {time.monotonic() - started:.0f}s")
        print(f"  {name}: {cells[-1]}", file=sys.stderr, flush=True)
    return cells


def table(rows: list[tuple[str, list[str]]]) -> str:
    header = ["torch", *(name for name, _ in CHECKS)]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join([release, *cells]) + " |" for release, cells in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("releases", nargs="*", default=list(RELEASES), help="torch releases (default: all of %(default)s)")
    parser.add_argument("--no-install", action="store_true", help="use only the environments already made")
    parser.add_argument(
        "--venv", action="append", default=[], metavar="X.Y.Z=PATH",
        help="an existing environment (its folder or its python) for a release",
    )
    args = parser.parse_args()
    given = {}
    for item in args.venv:
        release, _, path = item.partition("=")
        folder = Path(path).absolute()
        given[release] = folder / "bin" / "python" if folder.is_dir() else folder
    rows = []
    for release in dict.fromkeys([*args.releases, *given]):
        python, why = environment(release, given, not args.no_install)
        if python is None:
            print(f"torch {release}: skipped: {why}", file=sys.stderr, flush=True)
            rows.append((release, [f"skipped: {why}"] + [""] * (len(CHECKS) - 1)))
            continue
        print(f"torch {release} ({python}):", file=sys.stderr, flush=True)
        rows.append((release, measure(python)))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
