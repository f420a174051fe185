"""devlint emulate and verify --tests on real projects' own test suites (issues 19 and 32's proof).

    .venv/bin/python bench/test_suite_proof.py --mirrors /work/.mirror
    .venv/bin/python bench/test_suite_proof.py --mirrors /work/.mirror --only pyro --json /tmp/proof.json
    .venv/bin/python bench/test_suite_proof.py --mirrors /work/.mirror --skip-verify --outcomes /tmp/proof
    .venv/bin/python bench/test_suite_proof.py --from-json /tmp/proof.json   # the tables again
    .venv/bin/python bench/test_suite_proof.py --compare gpu.json --emulated /tmp/proof/emulated.json

Each run's per-test outcomes (``--outcomes DIR``: ``plain.json``, ``emulated.json``; test id ->
passed, failed, skipped, not emulated or error, with the failure's first line; format in
proof_outcomes.py) are what ``--compare GPU.json`` holds against a GPU's, test by test: agree,
refused (``not emulated``), emulation passes where the GPU fails, emulation fails where the GPU
passes, outcomes differ otherwise (a skip against a pass), or in one run only. The GPU's outcomes
come from the same bench on a machine with one, plain, neither devlint nor the mirrors needed there:

    python bench/test_suite_proof.py --mirrors /work/.mirror --export bench/.proof-trees   # here
    python bench/test_suite_proof.py --gpu --trees bench/.proof-trees --outcomes OUT       # on the GPU

``--gpu`` runs only the plain test command, with the interpreter that runs the script (its torch,
any release), and writes ``OUT/gpu.json``; ``bench/.proof-trees/site``, if there, goes on
``PYTHONPATH`` (test dependencies the GPU machine lacks: CONTRIBUTING.md, "On a machine with a GPU").

It needs the mirrors: bare git directories of the repositories in ``CODE_BASES`` under
``--mirrors`` (``DIR/owner+name/repo``, as the ``fetch`` tool leaves them, or ``DIR/owner+name``).
Nothing is cloned and nothing fetched is committed: each code base's package, tests and top-level
configuration at the pinned commit are written from the mirror's objects into a temporary folder.

The tests run in their own virtual environment, whose torch is this project's, never another:

    python3 -m venv bench/.venv-proof
    bench/.venv-proof/bin/pip install torch==2.13.0 'numpy<2'
    printf 'torch==2.13.0\\nnumpy<2\\n' > /tmp/proof-constraints.txt
    bench/.venv-proof/bin/pip install -c /tmp/proof-constraints.txt pytest parameterized matplotlib \\
        packaging tqdm scipy scikit-learn 'mpmath>=0.19,<=1.3' 'linear_operator>=0.6.1' \\
        'opt_einsum>=2.3.2' 'pyro-api>=0.1.1' 'kornia_rs>=0.1.9' 'lightning-utilities>=0.15.3,<0.16.0' \\
        'cachier==4.2.0' psutil cloudpickle

(captum wants ``numpy<2``; the projects' runtime and test dependencies, nothing else). ``bench/.venv-proof``
may be a symbolic link to a venv elsewhere (``~/.cache/devlint-bench/proof-venv``): it is git-ignored. The
projects themselves are not installed: each command runs ``python -m pytest`` in the exported tree,
which puts the tree first on ``sys.path``; that is also what makes verify's fixed copy the code the
tests import (an installed package would shadow it).

Per code base, one process at a time (the machine's cores are shared), each bounded by ``--timeout``:

1. ``plain``: the test command on the CPU. Tests that skip, and the tests that the project only
   defines where torch sees a GPU (captum parametrizes or defines its CUDA tests only then);
2. ``emulate``: ``devlint emulate -- COMMAND``: what became of each test the CPU skipped or did not
   define (passed, failed, stopped with ``not emulated``);
3. ``verify --tests COMMAND`` with the safe fixes, then with ``--unsafe-fixes`` (``--output-format
   json``): fixes written, tests that ran only under emulation, tests changed with their verdicts;
4. the cost ratio: verify's wall time over the plain run's (issue 19 asks at most 3.5).

It prints Markdown tables (``--json OUT`` writes everything) and always exits 0 unless a step could
not run at all (exit 2): it is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Its sibling module, whether this runs as a script or is loaded by runpy (the tests).
sys.path.insert(0, str(Path(__file__).resolve().parent))

import proof_outcomes  # noqa: E402
from proof_outcomes import NOT_EMULATED  # noqa: E402


@dataclass(frozen=True)
class CodeBase:
    """A public repository at a pinned commit: what to export and which tests to run."""

    name: str
    slug: str
    commit: str
    paths: tuple[str, ...]
    pytest_args: tuple[str, ...]


# Subsets chosen to cover each project's GPU-gated tests and finish in a minute or two on 2 cores.
CODE_BASES: tuple[CodeBase, ...] = (
    CodeBase(
        "captum",
        "pytorch+captum",
        "faac08773131888714b15709b28494ebeea7f6eb",
        ("captum", "tests"),
        (
            "tests/influence/_core/test_tracin_xor.py",
            "tests/influence/_core/test_naive_influence.py",
            "tests/module/test_binary_concrete_stochastic_gates.py",
            "tests/module/test_gaussian_stochastic_gates.py",
            # Defined only where CUDA is available (357 tests): the Saliency ones.
            "tests/attr/test_jit.py",
            "-k",
            "saliency or influence or tracin or stochastic_gates",
        ),
    ),
    # Apart: this module starts a gloo process group on the fixed port 29500 when it is imported, so
    # verify's three parallel runs collide (EADDRINUSE) and it would hide the rest of captum's proof.
    CodeBase(
        "captum-dp",
        "pytorch+captum",
        "faac08773131888714b15709b28494ebeea7f6eb",
        ("captum", "tests"),
        # Defined only where CUDA is available (1,192 tests): the Saliency ones.
        ("tests/attr/test_data_parallel.py", "-k", "saliency"),
    ),
    CodeBase(
        "pyro",
        "pyro-ppl+pyro",
        "ff6ae1c9572591791aae8842bcd702fcf0b46fd6",
        ("pyro", "tests"),
        (
            "tests/distributions/test_cuda.py",
            "tests/distributions/test_torch_patch.py",
            "tests/ops/test_provenance.py",
            "tests/poutine/test_mapdata.py",
        ),
    ),
    CodeBase(
        "gpytorch",
        "cornellius-gp+gpytorch",
        "7c4ec80f0f05cf530348a8a8972d67a11dd26ed2",
        ("gpytorch", "test"),
        (
            "test/examples/test_simple_gp_regression.py",
            "test/examples/test_white_noise_regression.py",
            "test/examples/test_sgpr_regression.py",
            "test/distributions/test_multivariate_normal.py",
            "test/distributions/test_multitask_multivariate_normal.py",
            "test/kernels/test_rbf_kernel_grad.py",
            "test/kernels/test_constant_kernel.py",
            "test/priors",
        ),
    ),
    # Issue 32: two more. kornia parametrizes `device` from `--device` (its conftest); `cpu,cuda`
    # makes every `[cuda]` case a skip on the CPU ("Device 'cuda' is not available") and a run
    # under emulation or on a GPU.
    CodeBase(
        "kornia",
        "kornia+kornia",
        "b4f5a78a13891c7ac4c1cd9695941380273e981d",
        ("kornia", "testing", "tests/__init__.py", "tests/color", "tests/enhance", "tests/morphology"),
        ("--device", "cpu,cuda", "tests/color", "tests/enhance", "tests/morphology"),
    ),
    # Gates with `skipif(not torch.cuda.is_available())` and `device="cuda"` parameters. Its
    # addopts want pytest-doctestplus and its layout `src/`; the timing-based
    # test_check_full_state_update_fn is left out (it compares wall times, noise on a shared CPU).
    CodeBase(
        "torchmetrics",
        "Lightning-AI+torchmetrics",
        "dab033394560ab3ce05e3d14c13f32e4cde6b351",
        ("src/torchmetrics", "tests/unittests/__init__.py", "tests/unittests/conftest.py", "tests/unittests/_helpers",
         "tests/unittests/bases", "tests/unittests/utilities/__init__.py", "tests/unittests/utilities/test_utilities.py",
         "tests/unittests/wrappers/__init__.py", "tests/unittests/wrappers/test_bootstrapping.py"),
        ("-o", "addopts=", "-o", "pythonpath=src tests", "tests/unittests/bases",
         "tests/unittests/utilities/test_utilities.py", "tests/unittests/wrappers/test_bootstrapping.py",
         "-k", "not test_check_full_state_update_fn"),
    ),
)

# Top-level files pytest and the projects read (their configuration and conftest).
TOP_LEVEL = re.compile(r"^(conftest\.py|setup\.cfg|setup\.py|pyproject\.toml|pytest\.ini|tox\.ini)$")
GPU_NAME = re.compile(r"cuda|gpu", re.IGNORECASE)


class BenchError(Exception):
    """A step could not run at all; the message says why."""


# --- exporting a pinned tree -------------------------------------------------------------------


def git_dir(mirrors: Path, slug: str) -> Path:
    for candidate in (mirrors / slug / "repo", mirrors / slug):
        if (candidate / "objects").is_dir() or (candidate / ".git").exists():
            return candidate
    raise BenchError(f"no mirror of {slug} under {mirrors} (fetch github:{slug.replace('+', '/')})")


def export(repo: Path, base: CodeBase, dest: Path) -> int:
    """Write the pinned commit's ``paths`` and top-level configuration into ``dest``.

    Blob by blob from ``git cat-file --batch``: a mirror may lack its largest blobs (slides,
    images), which makes ``git archive`` of a whole tree fail; only what the tests need is read."""
    listing = subprocess.run(
        ["git", "--git-dir", str(repo), "ls-tree", "-r", "-z", base.commit],
        capture_output=True, check=False,
    )
    if listing.returncode != 0:
        raise BenchError(f"{base.name}: commit {base.commit} not in {repo}: {listing.stderr.decode().strip()}")
    wanted: list[tuple[str, str]] = []
    for entry in listing.stdout.split(b"\0"):
        if not entry:
            continue
        meta, path = entry.decode().split("\t", 1)
        mode, kind, sha = meta.split()
        inside = any(path == p or path.startswith(p + "/") for p in base.paths)
        if kind == "blob" and mode != "120000" and (inside or TOP_LEVEL.match(path)):
            wanted.append((path, sha))
    batch = subprocess.run(
        ["git", "--git-dir", str(repo), "cat-file", "--batch"],
        input="".join(f"{sha}\n" for _, sha in wanted).encode(), capture_output=True, check=True,
    )
    data, offset = batch.stdout, 0
    for path, sha in wanted:
        header_end = data.index(b"\n", offset)
        header = data[offset:header_end].decode().split()
        if header[-1] == "missing":
            raise BenchError(f"{base.name}: {path} is missing from the mirror")
        size = int(header[2])
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data[header_end + 1 : header_end + 1 + size])
        offset = header_end + 1 + size + 1
    return len(wanted)


# --- running pytest ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    outcome: str  # passed, failed, error, skipped
    message: str


@dataclass(frozen=True)
class PytestRun:
    exit_status: int
    seconds: float
    timed_out: bool
    tests: dict[str, Outcome] = field(default_factory=dict)

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.tests.values() if o.outcome == outcome)


def read_junit(path: Path) -> dict[str, Outcome]:
    return {nodeid: Outcome(outcome, message) for nodeid, (outcome, message) in proof_outcomes.read_junit(path).items()}


def run_pytest(
    prefix: Sequence[str], python: Path, base: CodeBase, tree: Path, junit: Path, timeout: float,
    env: Mapping[str, str] | None = None,
) -> PytestRun:
    command = [*prefix, str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", *base.pytest_args]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=tree, capture_output=True, timeout=timeout, check=False, env=env)
        status, timed_out = done.returncode, False
    except subprocess.TimeoutExpired:
        status, timed_out = -1, True
    return PytestRun(status, time.monotonic() - started, timed_out, read_junit(junit))


# --- verify --tests ------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerifyRun:
    applicability: str
    exit_status: int
    seconds: float
    report: dict[str, Any]
    stderr: str


def run_verify(devlint: Path, python: Path, base: CodeBase, tree: Path, unsafe: bool, timeout: float) -> VerifyRun:
    test_command = shlex.join([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *base.pytest_args])
    command = [str(devlint), "verify", "--tests", test_command, "--output-format", "json"]
    if unsafe:
        command.append("--unsafe-fixes")
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=tree, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return VerifyRun("unsafe" if unsafe else "safe", -1, time.monotonic() - started, {}, "timed out")
    seconds = time.monotonic() - started
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        report = {}
    return VerifyRun("unsafe" if unsafe else "safe", done.returncode, seconds, report, done.stderr.decode(errors="replace")[-2000:])


# --- one code base -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BaseResult:
    base: CodeBase
    files: int
    plain: PytestRun
    emulated: PytestRun
    verifies: tuple[VerifyRun, ...]

    def gated(self) -> list[str]:
        """Tests the CPU run skipped or never defined, which emulation ran."""
        return sorted(
            nodeid for nodeid in self.emulated.tests
            if nodeid not in self.plain.tests or self.plain.tests[nodeid].outcome == "skipped"
        )

    def named_for_gpu(self) -> list[str]:
        """Tests whose name says CUDA or GPU and that passed on the CPU: most gate inside their body
        (``if torch.cuda.is_available(): ...``), so on the CPU they pass without running anything."""
        return sorted(
            nodeid for nodeid, got in self.plain.tests.items()
            if got.outcome == "passed" and GPU_NAME.search(nodeid.rpartition("::")[2]) and nodeid in self.emulated.tests
        )

    def gated_outcomes(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        for nodeid in self.gated():
            got = self.emulated.tests[nodeid]
            kind = "not emulated" if NOT_EMULATED in got.message else got.outcome
            counts[kind] += 1
        return counts


def run_base(base: CodeBase, args: argparse.Namespace, python: Path, scratch: Path) -> BaseResult:
    tree = tree_for(base, args.trees, args.mirrors, scratch)
    files = sum(1 for p in tree.rglob("*") if p.is_file())
    _say(f"{base.name}: {files} files at {base.commit[:12]}; plain run")
    plain = run_pytest((), python, base, tree, scratch / f"{base.name}-plain.xml", args.timeout)
    _say(f"{base.name}: plain {plain.seconds:.0f}s; devlint emulate")
    emulated = run_pytest((str(args.devlint), "emulate", "--"), python, base, tree, scratch / f"{base.name}-emulated.xml", args.timeout)
    verifies: list[VerifyRun] = []
    if not args.skip_verify:
        for unsafe in (False, True):
            _say(f"{base.name}: emulate {emulated.seconds:.0f}s; verify --tests{' --unsafe-fixes' if unsafe else ''}")
            verifies.append(run_verify(args.devlint, python, base, tree, unsafe, args.timeout * 4))
    return BaseResult(base, files, plain, emulated, tuple(verifies))


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# --- tables --------------------------------------------------------------------------------------


def markdown(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def emulation_table(results: Sequence[BaseResult]) -> str:
    rows = []
    for r in results:
        gated = r.gated()
        # A count, not the ids absent on the CPU: index-numbered parametrizations (captum's
        # `parameterized`) rename the CPU's own cases when the GPU gate lengthens the list.
        more = len(r.emulated.tests) - len(r.plain.tests)
        counts = r.gated_outcomes()
        named = r.named_for_gpu()
        named_passed = sum(1 for n in named if r.emulated.tests[n].outcome == "passed")
        rows.append([
            r.base.name, r.base.commit[:12], len(r.plain.tests), r.plain.count("passed"), r.plain.count("skipped"),
            more, len(r.emulated.tests), len(gated), counts["passed"], counts["failed"] + counts["error"],
            counts["not emulated"], counts["skipped"], f"{named_passed} of {len(named)}",
        ])
    return markdown(
        ["code base", "commit", "CPU: tests", "CPU: passed", "CPU: skipped", "more tests under emulation",
         "emulate: tests", "ids skipped or absent on the CPU", "passed", "failed", "not emulated", "skipped or xfail",
         "named cuda/gpu, passed on the CPU: pass under emulation"],
        rows,
    )


def emulation_failures(results: Sequence[BaseResult]) -> list[str]:
    lines = []
    for r in results:
        for nodeid in [*r.gated(), *r.named_for_gpu()]:
            got = r.emulated.tests[nodeid]
            if got.outcome in ("failed", "error"):
                lines.append(f"- {r.base.name} `{nodeid}`: {got.outcome}: {_first_line(got.message)}")
    return lines


def _first_line(text: str | None, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text and text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def verify_table(results: Sequence[BaseResult]) -> str:
    rows = []
    for r in results:
        for v in r.verifies:
            summary = v.report.get("summary", {})
            fixes = v.report.get("fixes", [])
            lines = sum(len(f.get("lines", [])) for f in fixes)
            rows.append([
                r.base.name, v.applicability, f"{lines} in {len(fixes)}", summary.get("tests", "-"),
                summary.get("emulation_only", "-"), summary.get("changed", "-"), summary.get("fails_on_original", "-"),
                summary.get("needs_cuda", "-"), v.exit_status, f"{v.seconds:.0f}",
            ])
    return markdown(
        ["code base", "fixes", "lines fixed in files", "tests", "ran only under emulation", "changed",
         "fail on the original too", "needs CUDA (cpu)", "exit", "seconds"],
        rows,
    )


def changed_tests(results: Sequence[BaseResult]) -> list[str]:
    lines = []
    for r in results:
        for v in r.verifies:
            if not v.report and v.exit_status != 0:
                lines.append(f"- {r.base.name} ({v.applicability}): verify exited {v.exit_status}: {_first_line(v.stderr, 400)}")
            for test in v.report.get("tests", []):
                if not test.get("changed"):
                    continue
                for run_name, run in test.get("runs", {}).items():
                    if run.get("verdict") != "changed":
                        continue
                    causes = "; ".join(str(c) for c in run.get("causes") or []) or "no cause named"
                    lines.append(
                        f"- {r.base.name} ({v.applicability}) `{test['nodeid']}` [{run_name}]: "
                        f"{(test.get('reference') or {}).get('outcome')} -> {run.get('outcome')}: {_first_line(run.get('message', ''))} ({causes})"
                    )
    return lines


def cost_table(results: Sequence[BaseResult]) -> str:
    rows = []
    for r in results:
        row: list[object] = [r.base.name, f"{r.plain.seconds:.0f}", f"{r.emulated.seconds:.0f}",
                             f"{r.emulated.seconds / r.plain.seconds:.2f}"]
        for v in r.verifies:
            row += [f"{v.seconds:.0f}", f"{v.seconds / r.plain.seconds:.2f}", f"{v.seconds / r.emulated.seconds:.2f}"]
        rows.append(row)
    # verify / emulate too: where the CPU defines fewer tests than emulation (captum), the plain run
    # does less work than each of verify's runs.
    header = ["code base", "plain s", "emulate s", "emulate / plain"]
    if any(r.verifies for r in results):  # --skip-verify: no empty columns
        header += ["verify s", "verify / plain", "verify / emulate", "verify --unsafe-fixes s", "unsafe / plain", "unsafe / emulate"]
    return markdown(header, rows)


def report(results: Sequence[BaseResult]) -> list[str]:
    out = ["## Tests the CPU skips, under devlint emulate", "", emulation_table(results), ""]
    failures = emulation_failures(results)
    out += ["Gated tests that fail under emulation:", "", *(failures or ["- none"]), ""]
    if any(r.verifies for r in results):
        out += ["## devlint verify --tests", "", verify_table(results), ""]
        out += ["Changed tests:", "", *(changed_tests(results) or ["- none"]), ""]
    out += ["## Cost (wall seconds, one process at a time)", "", cost_table(results), ""]
    return out


def to_json(results: Sequence[BaseResult]) -> list[dict[str, Any]]:
    return [
        {
            "name": r.base.name, "commit": r.base.commit, "pytest_args": list(r.base.pytest_args), "files": r.files,
            "plain": asdict(r.plain), "emulated": asdict(r.emulated), "gated": r.gated(),
            "verify": [asdict(v) for v in r.verifies],
        }
        for r in results
    ]


def _pytest_run(data: dict[str, Any]) -> PytestRun:
    tests = {nodeid: Outcome(**got) for nodeid, got in data["tests"].items()}
    return PytestRun(data["exit_status"], data["seconds"], data["timed_out"], tests)


def from_json(entries: Sequence[dict[str, Any]]) -> list[BaseResult]:
    """The results a ``--json`` file holds, to print the tables again without running anything."""
    bases = {b.name: b for b in CODE_BASES}
    return [
        BaseResult(
            bases[e["name"]], e["files"], _pytest_run(e["plain"]), _pytest_run(e["emulated"]),
            tuple(VerifyRun(**v) for v in e["verify"]),
        )
        for e in entries
    ]


# --- per-test outcomes, the GPU reference and the comparison --------------------------------------


def run_outcomes(run: str, torch_device: tuple[str, str], runs: Mapping[CodeBase, PytestRun]) -> proof_outcomes.RunOutcomes:
    """Each test's outcome in one run (plain, emulated or gpu), for ``--outcomes`` and ``--compare``."""
    code_bases = {
        base.name: proof_outcomes.CodeBaseOutcomes(
            base.commit, got.exit_status, got.timed_out,
            {nodeid: proof_outcomes.TestOutcome(proof_outcomes.outcome_of(o.outcome, o.message), proof_outcomes.first_line(o.message))
             for nodeid, o in got.tests.items()},
        )
        for base, got in runs.items()
    }
    return proof_outcomes.RunOutcomes(run, torch_device[0], torch_device[1], time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), code_bases)


# What the code bases' tests import besides torch (module names): a GPU machine that lacks one gets it
# from TREES/site (CONTRIBUTING.md); --gpu names those missing before it runs anything.
TEST_MODULES = (
    "pytest", "numpy", "scipy", "sklearn", "matplotlib", "packaging", "tqdm", "parameterized", "mpmath",
    "linear_operator", "opt_einsum", "pyroapi", "kornia_rs", "lightning_utilities", "cachier", "psutil",
)


def probe(python: Path, env: Mapping[str, str] | None) -> tuple[str, str, tuple[str, ...]]:
    """The test interpreter's torch release, its GPU's name ("CPU" without one) and which of
    ``TEST_MODULES`` it cannot find."""
    code = (
        "import importlib.util, json, sys, torch; print(json.dumps([torch.__version__, "
        "torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'CPU', "
        "[m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]]))"
    )
    done = subprocess.run([str(python), "-c", code, *TEST_MODULES], capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0 or not done.stdout.strip():
        raise BenchError(f"{python} cannot import torch: {_first_line(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else '')}")
    version, device, missing = json.loads(done.stdout.strip().splitlines()[-1])
    return version, device, tuple(missing)


def write_outcomes(folder: Path, outcomes: proof_outcomes.RunOutcomes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{outcomes.run}.json"
    path.write_text(json.dumps(proof_outcomes.to_json(outcomes), indent=1))
    return path


def load_outcomes(path: Path) -> proof_outcomes.RunOutcomes:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise BenchError(f"{path}: {error}") from None
    try:
        return proof_outcomes.from_json(data, str(path))
    except proof_outcomes.OutcomesError as error:
        raise BenchError(str(error)) from None


def export_trees(bases: Sequence[CodeBase], mirrors: Path, dest: Path) -> None:
    """Each code base's tree into ``dest/NAME``: what ``--gpu --trees`` runs on a machine without
    the mirrors (the device machine gets the working tree, not /work/.mirror)."""
    for base in bases:
        tree = dest / base.name
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        files = export(git_dir(mirrors, base.slug), base, tree)
        _say(f"{base.name}: {files} files at {base.commit[:12]} in {tree}")


def tree_for(base: CodeBase, trees: Path | None, mirrors: Path | None, scratch: Path) -> Path:
    if trees is not None:
        if not (trees / base.name).is_dir():
            raise BenchError(f"{trees / base.name} is not there (write it with --export {trees} where the mirrors are)")
        # A copy outside any checkout: pytest looks for its configuration upwards from the tree,
        # and a project without one of its own (captum) would take devlint's pyproject.toml.
        return Path(shutil.copytree(trees / base.name, scratch / base.name))
    if mirrors is None:
        raise BenchError("--mirrors or --trees is required")
    tree = scratch / base.name
    tree.mkdir()
    export(git_dir(mirrors, base.slug), base, tree)
    return tree


def gpu_pythonpath(trees: Path | None, inherited: str) -> str:
    """``TREES/site`` first, then the inherited entries, all absolute: pytest runs in each tree's
    copy, where a relative entry would name nothing."""
    entries = [trees / "site"] if trees is not None and (trees / "site").is_dir() else []
    entries += [Path(entry) for entry in inherited.split(os.pathsep) if entry]
    return os.pathsep.join(str(entry.resolve()) for entry in entries)


def gpu_reference(bases: Sequence[CodeBase], args: argparse.Namespace, python: Path, scratch: Path) -> proof_outcomes.RunOutcomes:
    """The plain runs on a machine with a GPU: no devlint, no emulation; the reference outcomes.

    ``TREES/site``, where present, is put on ``PYTHONPATH``: the test dependencies the GPU
    machine's environment lacks, installed there with ``pip install --target``."""
    env = {**os.environ, "PYTHONPATH": gpu_pythonpath(args.trees, os.environ.get("PYTHONPATH", ""))}
    version, device, missing = probe(python, env)
    if device == "CPU":
        raise BenchError(f"{python}: torch {version} sees no GPU; --gpu is the reference run on a GPU")
    if missing:
        _say(f"not importable here (their tests will fail to collect): {', '.join(missing)}")
    torch_device = (version, device)
    runs: dict[CodeBase, PytestRun] = {}
    for base in bases:
        tree = tree_for(base, args.trees, args.mirrors, scratch)
        _say(f"{base.name}: plain run on {torch_device[1]} (torch {torch_device[0]})")
        runs[base] = run_pytest((), python, base, tree, scratch / f"{base.name}-gpu.xml", args.timeout, env)
        _say(f"{base.name}: {len(runs[base].tests)} tests in {runs[base].seconds:.0f}s")
    return run_outcomes("gpu", torch_device, runs)


def print_comparison(emulated: proof_outcomes.RunOutcomes, gpu: proof_outcomes.RunOutcomes) -> None:
    comparison = proof_outcomes.compare(emulated, gpu)
    print("\n".join(proof_outcomes.comparison_report(comparison, emulated, gpu)))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, help="folder of bare mirrors (owner+name/repo)")
    parser.add_argument("--from-json", type=Path, help="print the tables of an earlier --json file; runs nothing")
    parser.add_argument("--only", help="comma-separated code base names")
    parser.add_argument("--python", type=Path, help="the tests' interpreter (bench/.venv-proof's; with --gpu this one)")
    parser.add_argument("--devlint", type=Path, default=ROOT / ".venv" / "bin" / "devlint")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per pytest run (verify gets 4x)")
    parser.add_argument("--skip-verify", action="store_true", help="plain and emulate runs only")
    parser.add_argument("--keep", type=Path, help="keep the exported trees and JUnit files here")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    parser.add_argument("--outcomes", type=Path, help="write each run's per-test outcomes here (plain.json, emulated.json; gpu.json)")
    parser.add_argument("--export", type=Path, help="only write each code base's tree here (DIR/NAME), for --gpu --trees")
    parser.add_argument("--trees", type=Path, help="run on the trees --export wrote instead of exporting from --mirrors")
    parser.add_argument("--gpu", action="store_true", help="the reference: plain runs only, on this machine's GPU")
    parser.add_argument("--compare", type=Path, metavar="GPU.json", help="compare the emulated outcomes with a --gpu run's")
    parser.add_argument("--emulated", type=Path, metavar="EMULATED.json", help="with --compare: an earlier run's emulated.json; runs nothing")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return _main(args)
    except BenchError as error:
        print(error, file=sys.stderr)
        return 2


def _main(args: argparse.Namespace) -> int:
    if args.from_json:
        print("\n".join(report(from_json(json.loads(args.from_json.read_text())))))
        return 0
    gpu = load_outcomes(args.compare) if args.compare else None
    if gpu is not None and args.emulated:
        print_comparison(load_outcomes(args.emulated), gpu)
        return 0
    names = args.only.split(",") if args.only else [b.name for b in CODE_BASES]
    unknown = set(names) - {b.name for b in CODE_BASES}
    if unknown:
        raise BenchError(f"unknown code base(s): {', '.join(sorted(unknown))}")
    bases = [b for b in CODE_BASES if b.name in names]
    if args.export:
        if args.mirrors is None:
            raise BenchError("--export needs --mirrors")
        export_trees(bases, args.mirrors, args.export)
        return 0
    if args.mirrors is None and args.trees is None:
        raise BenchError("--mirrors (or --trees, or --from-json, or --compare with --emulated) is required")
    python = args.python or (Path(sys.executable) if args.gpu else ROOT / "bench" / ".venv-proof" / "bin" / "python")
    for tool in (python, *(() if args.gpu else (args.devlint,))):
        if not tool.exists():
            raise BenchError(f"{tool} not found (see this script's docstring for the setup)")
    scratch = Path(tempfile.mkdtemp(prefix="devlint-proof-"))
    try:
        if args.gpu:
            reference = gpu_reference(bases, args, python, scratch)
            print(f"wrote {write_outcomes(args.outcomes or Path.cwd(), reference)}")
            return 0
        results: list[BaseResult] = []
        for base in bases:
            results.append(run_base(base, args, python, scratch))
            if args.json:  # after each code base: a late failure loses nothing measured
                args.json.write_text(json.dumps(to_json(results), indent=1))
    finally:
        if args.keep:
            shutil.copytree(scratch, args.keep, dirs_exist_ok=True)
        shutil.rmtree(scratch, ignore_errors=True)
    print("\n".join(report(results)))
    if args.outcomes or gpu is not None:
        torch_version = probe(python, None)[0]
        plain = run_outcomes("plain", (torch_version, "CPU"), {r.base: r.plain for r in results})
        emulated = run_outcomes("emulated", (torch_version, "CPU, emulated"), {r.base: r.emulated for r in results})
        if args.outcomes:
            for outcomes in (plain, emulated):
                _say(f"wrote {write_outcomes(args.outcomes, outcomes)}")
        if gpu is not None:
            print_comparison(emulated, gpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
