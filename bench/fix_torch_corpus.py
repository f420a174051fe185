"""Fix safety at scale: devlint fix on a copy of every ``.py`` file of the installed torch package.

    .venv/bin/python bench/fix_torch_corpus.py              # all files (2,285 files, 46 MB: 11 min on 2 shared cores)
    .venv/bin/python bench/fix_torch_corpus.py --sample     # the sample tests/test_scale.py fixes (~1 min)
    .venv/bin/python bench/fix_torch_corpus.py --every 20   # every 20th file
    .venv/bin/python bench/fix_torch_corpus.py --jobs 4 --keep /tmp/corpus

Five devlint runs on the copy, each a separate process as a user would run it (``--no-cache``):
``check`` (JSON: which files have findings, and which of those carry a safe or any fix), ``fix``,
``fix`` again, ``fix --unsafe-fixes``, ``fix --unsafe-fixes`` again. Then it checks:

- every file a fix changed still compiles (``compile``, which runs nothing);
- the second run of each kind changes nothing (idempotence);
- a file without a fix of the applied kind is byte-identical to the original;
- no run printed a traceback or an internal error, and no temporary file is left behind.

It prints the counts and exits 1 when any check fails, listing the files.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def torch_root() -> Path | None:
    """The installed torch package, found without importing it."""
    from importlib.util import find_spec

    spec = find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def corpus_files(root: Path, every: int = 1) -> list[Path]:
    """Every ``every``-th ``.py`` file below ``root`` in sorted order: a deterministic sample."""
    files = sorted(path.relative_to(root) for path in root.rglob("*.py") if path.is_file())
    return files[::every]


# Text that suggests a finding: the CI sample favours such files, or it would fix almost nothing
# (3% of torch's files have findings).
SUGGESTIVE = re.compile(r"""\.cuda\(|torch\.cuda\.[A-Z]\w*Tensor|set_default_tensor_type|CUDA_VISIBLE_DEVICES|["']cuda["':]""")
SAMPLE_MAX_BYTES = 60_000


def sample_files(root: Path) -> list[Path]:
    """The deterministic sample tests/test_scale.py fixes: every file under 60 KB whose text
    suggests a finding, and every 100th of the others (torch 2.13: 199 files, 3.9 MB, 34 with
    findings; 20 to 40 s on 2 cores)."""
    suggestive: list[Path] = []
    others: list[Path] = []
    for rel in corpus_files(root):
        path = root / rel
        if SUGGESTIVE.search(path.read_text(encoding="utf-8", errors="replace")):
            if path.stat().st_size < SAMPLE_MAX_BYTES:
                suggestive.append(rel)
        else:
            others.append(rel)
    return sorted(suggestive + others[::100])


def copy_corpus(root: Path, files: list[Path], dest: Path) -> dict[str, bytes]:
    """Copies ``files`` into ``dest``; returns their bytes by relative path."""
    original: dict[str, bytes] = {}
    for rel in files:
        data = (root / rel).read_bytes()
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        original[rel.as_posix()] = data
    return original


def snapshot(dest: Path) -> dict[str, bytes]:
    return {path.relative_to(dest).as_posix(): path.read_bytes() for path in dest.rglob("*") if path.is_file()}


@dataclass
class Run:
    name: str
    seconds: float
    returncode: int
    stdout: str
    stderr: str


def devlint(name: str, args: list[str], dest: Path, jobs: int | None) -> Run:
    command = [sys.executable, "-m", "devlint", *args, "--no-cache", str(dest)]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, errors="replace")
    return Run(name, time.perf_counter() - start, done.returncode, done.stdout, done.stderr)


@dataclass
class Report:
    files: int = 0
    bytes: int = 0
    with_findings: int = 0
    findings: Counter[str] = field(default_factory=Counter)
    safe_fixable: int = 0
    any_fixable: int = 0
    changed_safe: int = 0
    changed_unsafe: int = 0
    identical: int = 0
    file_errors: int = 0
    runs: list[Run] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [
            f"files: {self.files} ({self.bytes / 1e6:.1f} MB)",
            f"files with findings: {self.with_findings}; findings: {sum(self.findings.values())} "
            + "(" + ", ".join(f"{code} {count}" for code, count in sorted(self.findings.items())) + ")",
            f"files with a safe fix: {self.safe_fixable}; with any fix: {self.any_fixable}",
            f"changed by fix: {self.changed_safe}; changed by fix --unsafe-fixes (in all): {self.changed_unsafe}",
            f"byte-identical after both passes: {self.identical}",
            f"files devlint reported as errors: {self.file_errors}",
        ]
        out += [f"{run.name}: {run.seconds:.1f} s (exit {run.returncode})" for run in self.runs]
        out.append(f"problems: {len(self.problems)}")
        out += [f"  {problem}" for problem in self.problems]
        return out


def _compiles(rel: str, data: bytes) -> str | None:
    try:
        compile(data, rel, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    return None


def _fixable(findings: list[dict], dest: Path) -> tuple[Counter[str], set[str], set[str], set[str]]:
    codes: Counter[str] = Counter()
    found: set[str] = set()
    safe: set[str] = set()
    fixable: set[str] = set()
    for finding in findings:
        rel = Path(finding["filename"]).resolve().relative_to(dest.resolve()).as_posix()
        codes[finding["code"]] += 1
        found.add(rel)
        if finding["fix"] is not None:
            fixable.add(rel)
            if finding["fix"]["applicability"] == "safe":
                safe.add(rel)
    return codes, found, safe, fixable


def _check_run(run: Run, report: Report) -> None:
    if "Traceback" in run.stderr or "internal error" in run.stderr:
        lines = [line for line in run.stderr.splitlines() if "internal error" in line or "Error" in line]
        report.problems.append(f"{run.name}: crashed or internal error: {' | '.join(lines[-5:])}")
    if run.returncode not in (0, 1, 2):
        report.problems.append(f"{run.name}: exit status {run.returncode}")


def check_corpus(dest: Path, original: dict[str, bytes], jobs: int | None = None) -> Report:
    """The five runs and every check above, on the copy in ``dest``."""
    report = Report(files=len(original), bytes=sum(map(len, original.values())))
    compiled_before = {rel for rel, data in original.items() if _compiles(rel, data) is None}

    check = devlint("check", ["check", "--output-format", "json", "--exit-zero"], dest, jobs)
    report.runs.append(check)
    _check_run(check, report)
    codes, found, safe, fixable = _fixable(json.loads(check.stdout or "[]"), dest)
    report.findings, report.with_findings = codes, len(found)
    report.safe_fixable, report.any_fixable = len(safe), len(fixable)
    report.file_errors = sum(1 for line in check.stderr.splitlines() if line.startswith("devlint: error:"))

    states: list[dict[str, bytes]] = []
    for name, args in (
        ("fix", ["fix", "--exit-zero"]),
        ("fix again", ["fix", "--exit-zero"]),
        ("fix --unsafe-fixes", ["fix", "--unsafe-fixes", "--exit-zero"]),
        ("fix --unsafe-fixes again", ["fix", "--unsafe-fixes", "--exit-zero"]),
    ):
        run = devlint(name, args, dest, jobs)
        report.runs.append(run)
        _check_run(run, report)
        states.append(snapshot(dest))

    safe_state, safe_again, unsafe_state, unsafe_again = states
    for label, state in (("fix", safe_state), ("fix --unsafe-fixes", unsafe_state)):
        leftovers = sorted(set(state) - set(original))
        if leftovers:
            report.problems.append(f"{label}: files left behind: {leftovers[:5]}")
    if safe_again != safe_state:
        report.problems += [f"{rel}: the second fix changed it" for rel in _changed(safe_state, safe_again)]
    if unsafe_again != unsafe_state:
        report.problems += [f"{rel}: the second fix --unsafe-fixes changed it" for rel in _changed(unsafe_state, unsafe_again)]
    for label, state, allowed in (("fix", safe_state, safe), ("fix --unsafe-fixes", unsafe_state, fixable)):
        changed = _changed(original, state)
        for rel in changed:
            if rel not in allowed:
                report.problems.append(f"{rel}: changed by {label} without a finding that has such a fix")
            problem = _compiles(rel, state.get(rel, b""))
            if problem is not None and rel in compiled_before:
                report.problems.append(f"{rel}: does not compile after {label}: {problem}")
        if label == "fix":
            report.changed_safe = len(changed)
        else:
            report.changed_unsafe = len(changed)
    report.identical = sum(1 for rel, data in original.items() if unsafe_state.get(rel) == data)
    return report


def _changed(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    return sorted(rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=1, help="take every n-th file (sorted by path)")
    parser.add_argument("--sample", action="store_true", help="the sample tests/test_scale.py fixes")
    parser.add_argument("--jobs", type=int, default=None, help="devlint --jobs (default: all cores)")
    parser.add_argument("--keep", type=Path, default=None, help="copy the corpus here and leave it (must not exist)")
    args = parser.parse_args(argv)
    root = torch_root()
    if root is None:
        print("torch is not installed", file=sys.stderr)
        return 2
    files = sample_files(root) if args.sample else corpus_files(root, args.every)
    with tempfile.TemporaryDirectory(prefix="devlint-corpus-") as scratch:
        dest = args.keep if args.keep is not None else Path(scratch) / "torch"
        dest.mkdir(parents=True)
        original = copy_corpus(root, files, dest)
        start = time.perf_counter()
        report = check_corpus(dest, original, args.jobs)
        elapsed = time.perf_counter() - start
    chosen = "the test_scale.py sample" if args.sample else f"every {args.every} file(s)"
    print(f"torch at {root}; {chosen}; jobs {args.jobs or os.cpu_count()}")
    print("\n".join(report.lines()))
    print(f"total: {elapsed:.1f} s")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
