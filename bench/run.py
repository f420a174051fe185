"""devlint's benchmark: how fast a check is next to TorchFix, ruff and parsing alone, on real code.

    .venv/bin/python bench/run.py                 # everything (20-30 minutes on 2 cores)
    .venv/bin/python bench/run.py --no-torchfix   # without installing and running TorchFix
    .venv/bin/python bench/run.py --limit 300     # a quick look on every n-th file
    .venv/bin/python bench/run.py --no-torchfix --subset nn,optim,cuda,amp,testing/_internal   # issue 29's 295 files

The corpus is the installed torch package's own ``.py`` files, copied into a temporary folder.
On the same files, in one run, it measures: devlint check cold (``--no-cache``) with ``--jobs 1``
and with the default jobs, devlint warm (the cache primed by a first run), devlint fix (on a
copy), TorchFix 0.7.0 (installed into its own virtual environment: torch pinned to 2.13.0 and
installed first, then torchfix), ``ruff check --select ALL`` (ruff pinned, in its own virtual
environment), and the LibCST parse floor (every file parsed once, one process). Then the same
devlint cold check on 1x, 2x and 4x copies of a sample of the corpus shows how time and memory
grow with size. Each command's peak resident memory is measured: the largest single process
(``wait4``) and the whole process tree (``/proc`` sampled every 0.1 s). Last, the cost of
checking one small file (clean, and with a finding) against a bare ``python -c pass``: the median
of many runs each, the machine being shared. And how cost grows with one file: the corpus's most
expensive file against its own LibCST parse, a generated file of N and 4N blocks of every
rule's INVALID examples, and files of N and 4N parts that reach across the file (an ``elif``
chain, an attribute read in every class: tests/test_linear_cost.py's
``SHAPES``) (``bench/scaling.py``'s measures, CPU seconds).

It prints one markdown table and the ratios, each against its target. It is no test: the
numbers depend on the machine and on what else runs on it (the load average is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
TORCH_VERSION = "2.13.0"
TORCHFIX_VERSION = "0.7.0"
DEFAULT_TORCHFIX_VENV = ROOT / "bench" / ".venv-torchfix"
RUFF_VERSION = "0.17.5"
DEFAULT_RUFF_VENV = ROOT / "bench" / ".venv-ruff"
# One small file each, checked again and again: what a pre-commit hook or an editor pays.
SMALL_CLEAN = "import torch\n\n\ndef scale(x: torch.Tensor, factor: float) -> torch.Tensor:\n    return x * factor\n"
SMALL_FINDING = "import torch\n\nmodel = torch.nn.Linear(4, 2).cuda()\n"
SMALL_RUNS = 21
# Wheels of these would mean pip is about to download CUDA builds (gigabytes): refuse.
CUDA_PACKAGES = ("nvidia-", "triton")
SCALES = (1, 2, 4)

FLOOR_SCRIPT = """
import sys, time, pathlib, libcst
files = sorted(pathlib.Path(sys.argv[1]).rglob("*.py"))
failed = 0
for path in files:
    try:
        libcst.parse_module(path.read_bytes())
    except Exception:
        failed += 1
print(f"{len(files)} files, {failed} not parsed")
"""


@dataclass
class Measurement:
    name: str
    seconds: float
    peak_process_mb: float
    peak_tree_mb: float
    returncode: int
    output: str = ""


@dataclass
class Results:
    rows: list[Measurement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Median seconds of the one-small-file runs, by what ran.
    small: dict[str, float] = field(default_factory=dict)
    # How cost grows with one file: (what, value, target, met).
    growth: list[tuple[str, float, str, bool]] = field(default_factory=list)

    def get(self, name: str) -> Measurement | None:
        return next((row for row in self.rows if row.name == name), None)


# -- measuring one command ----------------------------------------------------------------------


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants, 0 once it is gone."""
    total = 0
    pending = [pid]
    page = os.sysconf("SC_PAGE_SIZE")
    while pending:
        current = pending.pop()
        try:
            with open(f"/proc/{current}/statm") as stream:
                total += int(stream.read().split()[1]) * page
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as stream:
                    pending.extend(int(child) for child in stream.read().split())
        except (OSError, ValueError):
            continue
    return total


def measure(
    name: str, command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None, keep: bool = True
) -> Measurement:
    """Run ``command`` to the end; its wall time and peak memory, and its output if ``keep``.

    Another tool's output (ruff's is ~100 MB here) is thrown away, not read: a child started
    by this process inherits its peak memory (Linux counts the parent's pages in a vforked child's
    peak), so a large output read here would show as the peak of every later command."""
    print(f"  {name}", file=sys.stderr, flush=True)
    with tempfile.TemporaryFile() as output:
        start = time.perf_counter()
        sink = output if keep else subprocess.DEVNULL
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        peak_tree = 0
        done = threading.Event()

        def sample() -> None:
            nonlocal peak_tree
            while not done.wait(0.1):
                peak_tree = max(peak_tree, _tree_rss(process.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        if Path("/proc").is_dir():
            sampler.start()
        # wait4: the peak of the largest single process among the command and what it waited for.
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        done.set()
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        text = output.read().decode("utf-8", "replace")
    peak_process = usage.ru_maxrss * 1024 if sys.platform != "darwin" else usage.ru_maxrss
    return Measurement(name, seconds, peak_process / 2**20, max(peak_tree, peak_process) / 2**20, process.returncode, text)


# -- corpora ------------------------------------------------------------------------------------


def torch_directory(python: str) -> Path:
    command = [python, "-c", "import torch, os; print(os.path.dirname(torch.__file__))"]
    return Path(subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip())


def build_corpus(source: Path, target: Path, every: int = 1, subset: Sequence[str] = ()) -> tuple[int, int]:
    """Copy every ``every``-th ``.py`` file of ``source`` (sorted; only under the ``subset``
    folders where given) to ``target``; (files, bytes)."""
    roots = [source / folder for folder in subset] or [source]
    files = sorted(path for root in roots for path in root.rglob("*.py") if path.is_file())[::every]
    size = 0
    for path in files:
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
        size += destination.stat().st_size
    return len(files), size


def scaled_copies(sample: Path, target: Path, copies: int) -> None:
    for index in range(copies):
        shutil.copytree(sample, target / f"copy{index}")


# -- TorchFix -----------------------------------------------------------------------------------


def torchfix_executable(venv: Path, install: bool) -> tuple[Path | None, str]:
    """TorchFix's command in its own virtual environment, installing it when asked; else why not."""
    executable = venv / "bin" / "torchfix"
    if executable.exists():
        return executable, ""
    if not install:
        return None, "not installed (run without --no-torchfix-install to install it)"
    pip = venv / "bin" / "pip"
    try:
        if not pip.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        # torch first and pinned: with it in place torchfix's own torch requirement is already met.
        report = subprocess.run(
            [str(pip), "install", "--dry-run", "--quiet", "--report", "-", f"torch=={TORCH_VERSION}"],
            check=True, capture_output=True, text=True,
        )
        planned = [item["metadata"]["name"].lower() for item in json.loads(report.stdout).get("install", [])]
        heavy = [name for name in planned if name.startswith(CUDA_PACKAGES)]
        if heavy:
            return None, f"pip would download CUDA packages for torch=={TORCH_VERSION} ({', '.join(heavy[:3])}, ...): skipped"
        subprocess.run([str(pip), "install", "--quiet", f"torch=={TORCH_VERSION}"], check=True, capture_output=True, text=True)
        subprocess.run([str(pip), "install", "--quiet", f"torchfix=={TORCHFIX_VERSION}"], check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as error:
        last = (error.stderr or error.stdout or "").strip().splitlines()[-1:] or ["no output"]
        return None, f"could not be installed: {last[0]}"
    except (OSError, ValueError, KeyError) as error:
        return None, f"could not be installed: {error}"
    return (executable, "") if executable.exists() else (None, "installed, but no torchfix command was found")


# -- ruff ---------------------------------------------------------------------------------------


def ruff_executable(venv: Path, install: bool) -> tuple[Path | None, str]:
    """ruff's command in its own virtual environment (never the project's), installing it when
    asked; else why not."""
    executable = venv / "bin" / "ruff"
    if not executable.exists() and install:
        try:
            if not (venv / "bin" / "pip").exists():
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
            subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", f"ruff=={RUFF_VERSION}"], check=True, capture_output=True, text=True)
        except subprocess.CalledProcessError as error:
            last = (error.stderr or error.stdout or "").strip().splitlines()[-1:] or ["no output"]
            return None, f"could not be installed: {last[0]}"
    if not executable.exists():
        return None, "not installed (run without --no-ruff-install to install it)"
    return executable, ""


def version_of(executable: Path) -> str:
    done = subprocess.run([str(executable), "--version"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


# -- one small file -----------------------------------------------------------------------------


def median_seconds(command: list[str], env: dict[str, str], cwd: Path, runs: int) -> float:
    """The median wall time of ``runs`` runs of ``command`` (one warm-up run first)."""
    times = []
    for index in range(runs + 1):
        start = time.perf_counter()
        subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if index:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def small_files(work: Path, env: dict[str, str], runs: int) -> dict[str, float]:
    """Median seconds of `python -c pass` and of `devlint check` on one small file, cold."""
    folder = work / "small"
    folder.mkdir()
    (folder / "clean.py").write_text(SMALL_CLEAN)
    (folder / "finding.py").write_text(SMALL_FINDING)
    print(f"  one small file, {runs} runs each", file=sys.stderr, flush=True)
    check = [sys.executable, "-m", "devlint", "check", "--no-cache"]
    return {
        "python -c pass": median_seconds([sys.executable, "-c", "pass"], env, folder, runs),
        "devlint check, one small clean file": median_seconds([*check, "clean.py"], env, folder, runs),
        "devlint check, one small file with a finding": median_seconds([*check, "finding.py"], env, folder, runs),
    }


# -- cost against the size of one file ----------------------------------------------------------


def file_growth(corpus: Path, env: dict[str, str], largest: int) -> list[tuple[str, float, str, bool]]:
    """The check of each of the ``largest`` files the gate sends to LibCST against that file's
    own LibCST parse (CPU seconds, one process each), and a generated file of 4N blocks of every
    rule's INVALID examples against N blocks."""
    from devlint.gate.screen import screen
    from devlint.registry import select_infos
    from devlint.torchfacts.version import DEFAULT
    from scaling import check_seconds, parse_seconds, shape_growth, synthetic_growth

    rules = select_infos(None)
    # as the runs screen them: the corpus has no configuration, so the default torch-version
    parsed = [path for path in corpus.rglob("*.py") if screen(path.read_text("utf-8", "replace"), rules, torch_version=DEFAULT) != []]
    rows = []
    print(f"  the {largest} largest files sent to LibCST, one process each", file=sys.stderr, flush=True)
    for path in sorted(parsed, key=lambda p: p.stat().st_size, reverse=True)[:largest]:
        ratio = check_seconds(path, env) / parse_seconds(path)
        name = f"check / own LibCST parse, {path.relative_to(corpus)} ({path.stat().st_size // 1024} KiB)"
        rows.append((name, ratio, "<= 3", ratio <= 3))
    print("  generated files of N and 4N blocks", file=sys.stderr, flush=True)
    for shape, seconds_n, seconds_4n, _, _ in synthetic_growth(2, env):
        ratio = seconds_4n / seconds_n
        rows.append((f"check CPU, 4N / N {shape}-level blocks of every rule's INVALID examples", ratio, "<= 5", ratio <= 5))
    print("  files whose parts reach across them, at N and 4N", file=sys.stderr, flush=True)
    for shape, seconds_n, seconds_4n in shape_growth():
        ratio = seconds_4n / seconds_n
        rows.append((f"check and fix CPU, 4N / N: {shape}", ratio, "<= 5", ratio <= 5))
    return rows


# -- the run ------------------------------------------------------------------------------------


def prefilter_note(corpus: Path) -> str:
    """How much of the corpus the default rules' prefilter lets through, and the gate after it."""
    from devlint.gate.prefilter import may_match
    from devlint.gate.screen import screen
    from devlint.registry import select_infos
    from devlint.torchfacts.version import DEFAULT

    rules = select_infos(None)
    sizes = []
    for path in corpus.rglob("*.py"):
        text = path.read_text("utf-8", "replace")
        sizes.append((path.stat().st_size, may_match(text, rules), screen(text, rules, torch_version=DEFAULT) != []))
    triggered = [size for size, matched, _ in sizes if matched]
    parsed = [size for size, _, kept in sizes if kept]
    return (
        f"prefilter (default rules): {len(triggered)} of {len(sizes)} files, {sum(triggered) / 2**20:.1f} of "
        f"{sum(size for size, _, _ in sizes) / 2**20:.1f} MiB, hold a trigger; the gate sends {len(parsed)} "
        f"files, {sum(parsed) / 2**20:.1f} MiB, to LibCST; largest file {max(size for size, _, _ in sizes) / 1024:.0f} KiB"
    )


def snapshot_devlint(target: Path) -> dict[str, str]:
    """A copy of devlint's code taken now, and the environment that runs it (from a folder other
    than the repository, whose devlint/ would come first): every devlint command of the run is
    the same code, and so has the same cache key, whatever is edited meanwhile."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "devlint", target / "devlint", ignore=ignore)
    shutil.copytree(ROOT / "rules", target / "devlint" / "rules", ignore=ignore)
    # Compiled once, as an installed package is: each run then reads bytecode rather than
    # compiling devlint's modules again (the runs below write none).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(target / "devlint")], check=True)
    return {**os.environ, "PYTHONPATH": str(target), "PYTHONDONTWRITEBYTECODE": "1"}


def devlint(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "devlint", *arguments, "--output-format", "concise", "--exit-zero", "--quiet"]


def findings_of(measurement: Measurement) -> list[str]:
    return sorted(line for line in measurement.output.splitlines() if ": DEV" in line)


def run(args: argparse.Namespace) -> Results:
    results = Results()
    results.notes.append(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the start")
    work = Path(tempfile.mkdtemp(prefix="devlint-bench-", dir=args.work))
    try:
        source = args.corpus or torch_directory(sys.executable)
        corpus = work / "torch"
        every = 1
        if args.limit:
            total = sum(1 for _ in source.rglob("*.py"))
            every = max(1, total // args.limit)
        count, size = build_corpus(source, corpus, every, args.subset)
        within = f" ({', '.join(args.subset)})" if args.subset else ""
        results.notes.append(f"corpus: {count} files, {size / 2**20:.1f} MiB, from {source}{within}" + (f" (every {every}th file)" if every > 1 else ""))
        plain = snapshot_devlint(work / "code")
        cached = {**plain, "DEVLINT_CACHE_DIR": str(work / "cache")}
        print("measuring (each command runs once):", file=sys.stderr)

        floor = measure("LibCST parse floor (1 process)", [sys.executable, "-c", FLOOR_SCRIPT, str(corpus)], cwd=work)
        cold1 = measure("devlint check, cold, --jobs 1", devlint("check", str(corpus), "--no-cache", "--jobs", "1"), env=plain, cwd=work)
        cold = measure("devlint check, cold, default jobs", devlint("check", str(corpus), "--no-cache"), env=plain, cwd=work)
        prime = measure("devlint check, first run (writes cache)", devlint("check", str(corpus)), env=cached, cwd=work)
        warm = measure("devlint check, warm (cache primed)", devlint("check", str(corpus)), env=cached, cwd=work)
        fix_copy = work / "fix"
        shutil.copytree(corpus, fix_copy)
        fix = measure("devlint fix (a copy), cold", devlint("fix", str(fix_copy), "--no-cache"), env=plain, cwd=work)
        results.rows += [floor, cold1, cold, prime, warm, fix]
        stores = list((work / "cache").glob("*.json"))
        results.notes.append(f"cache: {len(stores)} store file(s), {sum(p.stat().st_size for p in stores) / 1024:.0f} KiB")
        reference = findings_of(cold1)
        for row in (cold, prime, warm):
            if findings_of(row) != reference:
                results.notes.append(f"MISMATCH: {row.name} reported other findings than --jobs 1 --no-cache")
        results.notes.append(f"findings: {len(reference)} (identical across jobs 1, default jobs, cold and warm: {all(findings_of(r) == reference for r in (cold, prime, warm))})")

        if args.torchfix:
            found = torchfix_executable(args.torchfix_venv, args.torchfix_install)
            name = f"TorchFix {TORCHFIX_VERSION} (default rules)"
            _measure_tool(results, name, found, lambda torchfix: [str(torchfix), str(corpus)], work)
        if args.ruff:
            found = ruff_executable(args.ruff_venv, args.ruff_install)
            if found[0] is not None:
                results.notes.append(f"ruff: {version_of(found[0])}, `ruff check --select ALL --no-cache --isolated --exit-zero`")
            options = ["--select", "ALL", "--no-cache", "--isolated", "--exit-zero", "--quiet"]
            _measure_tool(results, "ruff check --select ALL", found, lambda ruff: [str(ruff), "check", *options, str(corpus)], work)

        sample = work / "sample"
        sample_count, sample_size = build_corpus(corpus, sample, args.sample_every)
        results.notes.append(f"scaling sample: every {args.sample_every}th file of the corpus, {sample_count} files, {sample_size / 2**20:.1f} MiB per copy")
        for copies in SCALES:
            target = work / f"scale{copies}"
            scaled_copies(sample, target, copies)
            results.rows.append(measure(f"devlint check, cold, default jobs, {copies}x sample", devlint("check", str(target), "--no-cache"), env=plain, cwd=work))
            shutil.rmtree(target)
        results.small = small_files(work, plain, args.small_runs)
        results.growth = file_growth(corpus, plain, args.largest)
        # Last: reading every file with CPython's parser here raises this process's peak memory,
        # which Linux counts into the peak of every command started after it.
        results.notes.insert(2, prefilter_note(corpus))
    finally:
        if args.keep:
            print(f"kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return results


def _measure_tool(
    results: Results, name: str, found: tuple[Path | None, str], command: Callable[[Path], list[str]], work: Path
) -> None:
    """Measure another tool on the corpus, or note why it could not run."""
    executable, why = found
    if executable is None:
        print(f"{name}: {why}", file=sys.stderr)
        results.notes.append(f"{name}: {why}")
        return
    results.rows.append(measure(name, command(executable), cwd=work, keep=False))


# -- the report ---------------------------------------------------------------------------------


def _ratio(name: str, value: float | None, target: str, met: bool | None) -> str:
    if value is None:
        return f"| {name} | n/a | {target} | |"
    verdict = "" if met is None else ("met" if met else "**missed**")
    return f"| {name} | {value:.3g} | {target} | {verdict} |"


def report(results: Results) -> str:
    lines = [
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end",
        *results.notes,
        "",
        "| what | seconds | peak RSS, largest process (MiB) | peak RSS, all processes (MiB) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for row in results.rows:
        failed = f" (exit {row.returncode})" if row.returncode not in (0, 1) else ""
        lines.append(f"| {row.name}{failed} | {row.seconds:.2f} | {row.peak_process_mb:.0f} | {row.peak_tree_mb:.0f} |")
    for name, value in results.small.items():
        lines.append(f"| {name} (median) | {value:.3f} | | |")

    def seconds(prefix: str) -> float | None:
        row = next((r for r in results.rows if r.name.startswith(prefix)), None)
        return row.seconds if row is not None else None

    cold, cold1 = seconds("devlint check, cold, default jobs"), seconds("devlint check, cold, --jobs 1")
    warm, floor, torchfix = seconds("devlint check, warm"), seconds("LibCST parse floor"), seconds("TorchFix")
    ruff = seconds("ruff check")
    devlint_rows = [r for r in results.rows if r.name.startswith("devlint")]
    peak = max((r.peak_process_mb for r in devlint_rows), default=None)

    def divide(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b else None

    lines += ["", "| ratio | value | target | |", "| --- | ---: | --- | --- |"]
    value = divide(cold, torchfix)
    lines.append(_ratio("cold / TorchFix", value, "<= 0.1", None if value is None else value <= 0.1))
    value = divide(cold, floor)
    lines.append(_ratio("cold / LibCST parse floor", value, "<= 0.12", None if value is None else value <= 0.12))
    value = divide(cold, ruff)
    lines.append(_ratio("cold / ruff check --select ALL", value, "~2 (about 2x ruff)", None if value is None else value <= 2.0))
    value = divide(cold1, floor)
    lines.append(_ratio("cold --jobs 1 / LibCST parse floor", value, "(one process each)", None))
    value = divide(warm, cold)
    lines.append(_ratio("warm / cold", value, "<= 0.05", None if value is None else value <= 0.05))
    value = divide(cold1, cold)
    lines.append(_ratio("speed-up of default jobs over --jobs 1", value, ">= 1.6 on 2 cores", None if value is None else value >= 1.6))
    lines.append(_ratio("peak RSS of any devlint process (MiB)", peak, "<= 250", None if peak is None else peak <= 250))
    floor_row = next((r for r in results.rows if r.name.startswith("LibCST parse floor")), None)
    value = divide(peak, floor_row.peak_process_mb if floor_row else None)
    lines.append(_ratio("that peak / LibCST parse floor's peak", value, "(the largest file's tree)", None))
    base = seconds("devlint check, cold, default jobs, 1x")
    for copies in SCALES[1:]:
        value = divide(seconds(f"devlint check, cold, default jobs, {copies}x"), base)
        # Less than linear is the fixed cost of starting workers spread thinner: only more is a miss.
        lines.append(_ratio(f"time {copies}x sample / 1x sample", value, f"<= {copies * 1.25:g}", None if value is None else value <= 1.25 * copies))
    bare = results.small.get("python -c pass")
    for name, target in (("devlint check, one small clean file", 5), ("devlint check, one small file with a finding", 15)):
        value = divide(results.small.get(name), bare)
        lines.append(_ratio(f"{name.removeprefix('devlint check, ')} / python -c pass", value, f"<= {target}", None if value is None else value <= target))
    for name, value, target, met in results.growth:
        lines.append(_ratio(name, value, target, met))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="a folder of .py files instead of the installed torch package")
    parser.add_argument("--limit", type=int, default=0, help="about this many files: every n-th file of the corpus")
    parser.add_argument("--subset", type=lambda text: tuple(text.split(",")), default=(), help="only these folders of the corpus, comma-separated (issue 29's: nn,optim,cuda,amp,testing/_internal)")
    parser.add_argument("--largest", type=int, default=3, help="check against its own parse for this many of the largest files sent to LibCST (default 3)")
    parser.add_argument("--sample-every", type=int, default=8, help="the scaling sample takes every n-th corpus file (default 8)")
    parser.add_argument("--no-torchfix", dest="torchfix", action="store_false", help="do not measure TorchFix")
    parser.add_argument("--no-torchfix-install", dest="torchfix_install", action="store_false", help="use TorchFix only if already installed")
    parser.add_argument("--torchfix-venv", type=Path, default=DEFAULT_TORCHFIX_VENV, help=f"where TorchFix lives (default {DEFAULT_TORCHFIX_VENV.relative_to(ROOT)})")
    parser.add_argument("--no-ruff", dest="ruff", action="store_false", help="do not measure ruff")
    parser.add_argument("--no-ruff-install", dest="ruff_install", action="store_false", help="use ruff only if already installed")
    parser.add_argument("--ruff-venv", type=Path, default=DEFAULT_RUFF_VENV, help=f"where ruff lives (default {DEFAULT_RUFF_VENV.relative_to(ROOT)})")
    parser.add_argument("--small-runs", type=int, default=SMALL_RUNS, help=f"runs of each one-small-file command (default {SMALL_RUNS})")
    parser.add_argument("--work", type=Path, default=None, help="where to build the corpora (default: the temp folder)")
    parser.add_argument("--keep", action="store_true", help="keep the corpora afterwards")
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    args = parser.parse_args(argv)
    text = report(run(args))
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
