"""devlint on real code bases: check, fix and fix --unsafe-fixes over public repositories.

    .venv/bin/python bench/real_repos.py --mirrors /work/.mirror --json /tmp/real.json
    .venv/bin/python bench/real_repos.py                      # clone each from GitHub instead
    .venv/bin/python bench/real_repos.py --mirrors M --only detr,timm --keep /tmp/fixed
    .venv/bin/python bench/real_repos.py --mirrors M --check-only --sample-fixes 40 --seed 1 --applicability safe
    .venv/bin/python bench/real_repos.py --mirrors M --check-only --sample-findings 40 --seed 1
    .venv/bin/python bench/real_repos.py --mirrors M --only torchtitan,deepspeed --extend-select DEV604

Each code base in ``CODE_BASES`` is a public repository at a pinned commit (and, for a large one,
one folder of it). Nothing fetched is ever committed: ``--mirrors DIR`` reads bare git
directories already on disk (``DIR/owner+name/repo``, as the ``fetch`` tool leaves them, or
``DIR/owner+name``); without it each repository is cloned (``--filter=blob:none``) into a
temporary folder. The pinned tree's ``.py`` and ``.ipynb`` files (and the ``.gitignore``,
``pyproject.toml`` and ``devlint.toml`` files devlint reads) are exported with ``git archive`` into a temporary folder,
never into a repository; the largest blobs of a mirror may be absent, which is why only what
devlint reads is exported.

For each code base, devlint runs as a user runs it, one process per step, ``--no-cache``:
``check --output-format json`` on the export (findings per rule; files that do not parse, most of
them Python 2, are counted apart), then on one copy ``fix`` and ``fix`` again, and on another
copy ``fix --unsafe-fixes`` and the same again. It checks that every changed ``.py`` file that
compiled before still compiles (``compile``, which runs nothing), that the second fix changes
nothing, and that a file without a fix of the kind applied stays byte-identical. It prints a
per-rule and a per-repository table in Markdown (``--json OUT`` writes everything) and exits 1
when a check failed.

``--sample-fixes N --seed S --applicability safe|unsafe`` prints N seeded random fixes as unified
diff hunks, each fix applied alone to the original file; ``--sample-findings N --seed S`` prints
N findings with their source lines. Both draw from all the code bases run, notebooks excepted
(their positions are per cell). ``--check-only`` skips the fix runs, enough for sampling.
``--extend-select``, ``--select`` and ``--torch-version`` go to every devlint run as given (an
opt-in rule such as DEV604, or a project's real oldest torch).
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import io
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class CodeBase:
    """A public repository at a pinned commit; ``subdir`` limits a large one to one folder."""

    name: str
    url: str
    commit: str
    subdir: str | None = None

    @property
    def slug(self) -> str:
        """``owner+name``, the folder a mirror of the repository lives in."""
        owner, repo = self.url.removesuffix(".git").rstrip("/").split("/")[-2:]
        return f"{owner}+{repo}"


def _github(owner_repo: str) -> str:
    return f"https://github.com/{owner_repo}.git"


# Newest snapshots and older ones from the years when `.cuda()` and torch.cuda.*Tensor were the
# way to write PyTorch (the dates are the commits' own).
CODE_BASES: tuple[CodeBase, ...] = (
    CodeBase("lightning", _github("Lightning-AI/pytorch-lightning"), "7f0c3436cd3f6ad3753125672024fc415cbcb414"),
    CodeBase("lightning-2020", _github("Lightning-AI/pytorch-lightning"), "94afe8236ccee4bce5d7bd429f943149949ee762"),
    CodeBase("timm", _github("huggingface/pytorch-image-models"), "aa4b5850c1543fa488abf260f18390eda46cf85d"),
    CodeBase("timm-2019", _github("huggingface/pytorch-image-models"), "6057496409229437f7532a35971c72476effe696"),
    CodeBase("examples", _github("pytorch/examples"), "77f55b912142e11fcfdf5b530231fb9c52f181e8"),
    CodeBase("examples-2018", _github("pytorch/examples"), "f9820471d615d848c14661b2d582417ca3aee8a3"),
    CodeBase("detr", _github("facebookresearch/detr"), "29901c51d7fe8712168b8d0d64351170bc0f83e0"),
    CodeBase("yolov3", _github("eriklindernoren/PyTorch-YOLOv3"), "1d621c8489e22c76ceb93bb2397ac6c8dfb5ceb7"),
    CodeBase("yolov3-2019", _github("eriklindernoren/PyTorch-YOLOv3"), "47b7c912877ca69db35b8af3a38d6522681b3bb3"),
    CodeBase("ultralytics-yolov3", _github("ultralytics/yolov3"), "97b87b1347d6d927d27227d2225140da38e4d308"),
    CodeBase("ultralytics-yolov3-2019", _github("ultralytics/yolov3"), "7807337c5f6cc16a1478f65cdbb2185a73ff2baa"),
    CodeBase("d2l", _github("d2l-ai/d2l-en"), "23d7a5aecceee57d1292c56e90cce307f183bb0a"),
    CodeBase("pytorch-gan", _github("eriklindernoren/PyTorch-GAN"), "36d3c77e5ff20ebe0aeefd322326a134a279b93e"),
    CodeBase("semseg", _github("CSAILVision/semantic-segmentation-pytorch"), "8f27c9b97d2ca7c6e05333d5766d144bf7d8c31b"),
    CodeBase("pytorch-cifar", _github("kuangliu/pytorch-cifar"), "49b7aa97b0c12fe0d4054e670403a16b6b834ddd"),
    CodeBase("transformer", _github("jadore801120/attention-is-all-you-need-pytorch"), "132907dd272e2cc92e3c10e6c4e783a87ff8893d"),
    CodeBase("fairseq", _github("facebookresearch/fairseq"), "3d262bb25690e4eb2e7d3c1309b1e9c406ca4b99", "fairseq"),
    CodeBase("fairseq-examples", _github("facebookresearch/fairseq"), "3d262bb25690e4eb2e7d3c1309b1e9c406ca4b99", "examples"),
    CodeBase("pytorch-tutorial", _github("yunjey/pytorch-tutorial"), "0500d3df5a2a8080ccfccbc00aca0eacc21818db"),
    CodeBase("pytorch-classification", _github("bearpaw/pytorch-classification"), "24f1c456f48c78133088c4eefd182ca9e6199b03"),
    CodeBase("faster-rcnn", _github("jwyang/faster-rcnn.pytorch"), "f9d984d27b48a067b29792932bcb5321a39c1f09"),
    # Two code bases moving from torch.cuda to torch.accelerator (issue 13's DEV6 measurement).
    CodeBase("torchtitan", _github("pytorch/torchtitan"), "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a"),
    CodeBase("deepspeed", _github("deepspeedai/DeepSpeed"), "edaa7221267243c7be7fb49c5d5f5c4fb97b4641"),
    # Code bases devlint had not seen (issue 22): model and metric libraries, two of them (peft,
    # torchtune) partly moved to torch.accelerator by hand.
    CodeBase("torchmetrics", _github("Lightning-AI/torchmetrics"), "dab033394560ab3ce05e3d14c13f32e4cde6b351"),
    CodeBase("gpytorch", _github("cornellius-gp/gpytorch"), "7c4ec80f0f05cf530348a8a8972d67a11dd26ed2"),
    CodeBase("pyro", _github("pyro-ppl/pyro"), "ff6ae1c9572591791aae8842bcd702fcf0b46fd6"),
    CodeBase("peft", _github("huggingface/peft"), "5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40"),
    CodeBase("torchtune", _github("pytorch/torchtune"), "bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1"),
    # Issue 22: four code bases new to devlint, each pinned at the parent of its maintainers' own
    # move off torch.cuda (bench/migration_recall.py compares devlint with those commits).
    CodeBase("peft-examples", _github("huggingface/peft"), "48f6493f946e2ebbb19fbfb4e6816f5061367f3b", "examples"),
    CodeBase("torchao-test", _github("pytorch/ao"), "7a2a7b34877530283d4c6c1bf737b71a99169a82", "test"),
    CodeBase("accelerate-examples", _github("huggingface/accelerate"), "ec92b1af7a5fbaf362da04401fc2576570368a1c", "examples"),
    CodeBase("torchtune-training", _github("pytorch/torchtune"), "38edb21f4926c4b40b93d9e8b4080f05ddf2da1a", "torchtune/training"),
    # Issue 22's judged unsafe sample, two code bases written for CUDA only and not used before:
    # research training scripts (`.cuda(args.gpu)` in spawned workers) and a kernel library with
    # benchmarks (timing events, device queries).
    CodeBase("moco-v3", _github("facebookresearch/moco-v3"), "c349e6e24f40d3fedb22d973f92defa4cedf37a7"),
    CodeBase("flash-attention", _github("Dao-AILab/flash-attention"), "0251105a2fb19d2957484b7f023cd8c115286ced"),
    # Issue 31's fresh judged sample: CUDA-first research code devlint had not been run on (self-
    # supervised training with DDP and `.cuda(args.gpu)`, GANs, OCR, speech).
    CodeBase("dino", _github("facebookresearch/dino"), "7c446df5b9f45747937fb0d72314eb9f7b66930a"),
    CodeBase("barlowtwins", _github("facebookresearch/barlowtwins"), "8e8d284ca0bc02f88b92328e53f9b901e86b4a3c"),
    CodeBase("spade", _github("NVlabs/SPADE"), "fecacc920c1367a038995c45a39c15f6521ca64f"),
    CodeBase("text-recognition", _github("clovaai/deep-text-recognition-benchmark"), "e2117f2fb882b3c6085030500a260c113be27a63"),
    CodeBase("deepspeech", _github("SeanNaren/deepspeech.pytorch"), "b88a631ef6b96553e16bbaa5bd6a621435bed278"),
)

# What devlint reads in a tree: the code and the files that steer its walk.
EXPORTED = ("*.py", "*.ipynb", ".gitignore", "pyproject.toml", "devlint.toml", "requirements.txt")


# --- getting the trees -------------------------------------------------------------------------


class SourceError(Exception):
    """A code base could not be exported; the message says why."""


def _git(args: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], capture_output=True, **kwargs)


def mirror_git_dir(mirrors: Path, base: CodeBase) -> Path:
    """The bare git directory of ``base`` under ``mirrors``."""
    for candidate in (mirrors / base.slug / "repo", mirrors / base.slug, mirrors / f"{base.slug}.git"):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    raise SourceError(f"{base.name}: no mirror of {base.slug} under {mirrors}")


def clone_git_dir(base: CodeBase, scratch: Path) -> Path:
    """A blobless clone of ``base`` in ``scratch``, with the pinned commit's blobs fetched."""
    work = scratch / f"clone-{base.name}"
    done = _git(["clone", "--quiet", "--filter=blob:none", "--no-checkout", base.url, str(work)])
    if done.returncode != 0:
        raise SourceError(f"{base.name}: git clone {base.url} failed: {_last_line(done.stderr)}")
    if _git(["-C", str(work), "cat-file", "-e", f"{base.commit}^{{commit}}"]).returncode != 0:
        _git(["-C", str(work), "fetch", "--quiet", "--filter=blob:none", "origin", base.commit])
    # One checkout fetches the missing blobs in one batch; git archive would fetch them one by one.
    done = _git(["-C", str(work), "checkout", "--quiet", "--detach", base.commit])
    if done.returncode != 0:
        raise SourceError(f"{base.name}: checkout {base.commit} failed: {_last_line(done.stderr)}")
    return work / ".git"


def _last_line(stderr: bytes) -> str:
    lines = stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else "(no message)"


def exported_files(git_dir: Path, base: CodeBase) -> list[str]:
    """The files of the pinned tree devlint reads (symbolic links and submodules left out)."""
    where = [base.subdir.strip("/")] if base.subdir else []
    done = _git(["--git-dir", str(git_dir), "ls-tree", "-r", "-z", base.commit, "--", *where])
    if done.returncode != 0:
        raise SourceError(f"{base.name}: commit {base.commit} not in {git_dir}: {_last_line(done.stderr)}")
    files = []
    for entry in done.stdout.decode("utf-8", errors="surrogateescape").split("\0"):
        meta, _, path = entry.partition("\t")
        if meta.startswith("100") and any(fnmatch.fnmatchcase(path.rpartition("/")[2], p) for p in EXPORTED):
            files.append(path)
    return files


def export_tree(git_dir: Path, base: CodeBase, dest: Path) -> None:
    """``git archive`` of the pinned commit's files devlint reads, extracted into ``dest``."""
    files = exported_files(git_dir, base)
    dest.mkdir(parents=True)
    if not files:
        return
    # git archive fails on a pattern that matches nothing: pass only those that match.
    prefix = f"{base.subdir.strip('/')}/" if base.subdir else ""
    patterns = [p for p in EXPORTED if any(fnmatch.fnmatchcase(f.rpartition("/")[2], p) for f in files)]
    command = ["git", "--git-dir", str(git_dir), "archive", "--format=tar", base.commit, "--"]
    # A file, not a pipe, for git's complaints: a full pipe nobody reads would stall the archive.
    with tempfile.TemporaryFile() as complaints:
        archive = subprocess.Popen([*command, *(f":(glob){prefix}**/{p}" for p in patterns)], stdout=subprocess.PIPE, stderr=complaints)
        assert archive.stdout is not None
        untar = subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, capture_output=True)
        archive.stdout.close()
        # A missing blob of a file not exported makes git complain; the exit status decides.
        failed = archive.wait() != 0 or untar.returncode != 0
        complaints.seek(0)
        if failed:
            raise SourceError(f"{base.name}: git archive failed: {_last_line(complaints.read() or untar.stderr)}")
    missing = set(files) - set(snapshot(dest))
    if missing:
        raise SourceError(f"{base.name}: {len(missing)} files absent from the export, e.g. {sorted(missing)[0]}")


# --- running devlint ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DevlintRun:
    """One devlint process: its arguments, time, exit status, findings (JSON) and stderr."""

    args: tuple[str, ...]
    seconds: float
    returncode: int
    findings: list[dict[str, Any]]
    stderr: str


def run_devlint(args: Sequence[str], tree: Path) -> DevlintRun:
    command = [sys.executable, "-m", "devlint", *args, "--output-format", "json", "--exit-zero", "--no-cache", str(tree)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, errors="replace")
    seconds = time.perf_counter() - start
    try:
        findings = json.loads(done.stdout or "[]")
    except json.JSONDecodeError:
        findings = []
    for finding in findings:
        finding["filename"] = Path(finding["filename"]).resolve().relative_to(tree.resolve()).as_posix()
    return DevlintRun(tuple(args), seconds, done.returncode, findings, done.stderr)


ERROR_LINE = re.compile(r"^devlint: error: (?P<file>.+?):(?P<row>\d+):(?P<col>\d+): (?P<message>.*)$")


def file_errors(run: DevlintRun, tree: Path) -> tuple[dict[str, str], list[str]]:
    """Files devlint could not parse (file -> message), and every other error line."""
    unparsed: dict[str, str] = {}
    other: list[str] = []
    prefix = str(tree.resolve()) + "/"
    for line in run.stderr.splitlines():
        match = ERROR_LINE.match(line)
        if match and "syntax error" in match["message"]:
            unparsed[match["file"].removeprefix(prefix)] = f"{match['row']}: {match['message']}"
        elif line.strip():
            other.append(line.replace(prefix, ""))
    return unparsed, other


def crashed(run: DevlintRun) -> str | None:
    """Why a run counts as a crash (a traceback, an internal error, an odd exit), or None."""
    if "Traceback" in run.stderr or "internal error" in run.stderr:
        return f"{' '.join(run.args)}: {run.stderr.strip().splitlines()[-1]}"
    if run.returncode not in (0, 1, 2):
        return f"{' '.join(run.args)}: exit status {run.returncode}"
    return None


# --- checking the fixed trees ------------------------------------------------------------------


def snapshot(tree: Path) -> dict[str, bytes]:
    return {p.relative_to(tree).as_posix(): p.read_bytes() for p in tree.rglob("*") if p.is_file() and not p.is_symlink()}


def changed_files(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    return sorted(rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel))


def compile_error(rel: str, data: bytes) -> tuple[int, str] | None:
    """Where and why ``data`` does not compile as Python, or None when it does."""
    try:
        with warnings.catch_warnings():
            # Old code is full of `x is 1`: a warning about the code, not a failure to compile.
            warnings.simplefilter("ignore")
            compile(data, rel, "exec", dont_inherit=True)
    except SyntaxError as error:
        return error.lineno or 1, f"SyntaxError: {error.msg}"
    except ValueError as error:
        return 1, f"ValueError: {error}"
    return None


@dataclass(frozen=True)
class Problem:
    """A fix that broke something: the file, what broke, and the diff that did it."""

    file: str
    what: str
    diff: str


@dataclass
class FixOutcome:
    """What one kind of fix (safe, or safe and unsafe) did to a code base."""

    applicability: str
    seconds: float = 0.0
    remaining: dict[str, int] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    rules_by_file: dict[str, list[str]] = field(default_factory=dict)
    compile_failures: list[Problem] = field(default_factory=list)
    idempotency_failures: list[Problem] = field(default_factory=list)
    unexpected_changes: list[Problem] = field(default_factory=list)
    left_behind: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)


def applied_kinds(applicability: str) -> tuple[str, ...]:
    return ("safe",) if applicability == "safe" else ("safe", "unsafe")


def fixable_rules(findings: Iterable[dict[str, Any]], applicability: str) -> dict[str, list[str]]:
    """For each file, the rules of its findings whose fix ``fix`` applies at this applicability."""
    kinds = applied_kinds(applicability)
    rules: dict[str, set[str]] = {}
    for finding in findings:
        if finding["fix"] is not None and finding["fix"]["applicability"] in kinds:
            rules.setdefault(finding["filename"], set()).add(finding["code"])
    return {rel: sorted(codes) for rel, codes in rules.items()}


def unified_diff(rel: str, before: bytes, after: bytes, context: int = 3) -> str:
    old = before.decode("utf-8", errors="replace").splitlines(keepends=True)
    new = after.decode("utf-8", errors="replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}", n=context))


def hunk_at(diff: str, line: int) -> str:
    """The hunk of ``diff`` whose new side holds ``line``, else the whole diff."""
    header, *hunks = re.split(r"(?m)^(?=@@ )", diff)
    for hunk in hunks:
        match = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", hunk)
        if match and int(match[1]) <= line < int(match[1]) + int(match[2] or 1):
            return header + hunk
    return diff


def fix_copy(
    original: dict[str, bytes], source: Path, copy: Path, findings: list[dict[str, Any]], applicability: str, options: Sequence[str] = ()
) -> FixOutcome:
    """Fixes a copy of ``source`` twice and checks compile, idempotency and untouched files."""
    shutil.copytree(source, copy, symlinks=True)
    args = ["fix", *options, *(["--unsafe-fixes"] if applicability == "unsafe" else [])]
    outcome = FixOutcome(applicability, rules_by_file=fixable_rules(findings, applicability))
    first = run_devlint(args, copy)
    fixed = snapshot(copy)
    second = run_devlint(args, copy)
    again = snapshot(copy)
    outcome.seconds = first.seconds + second.seconds
    outcome.remaining = dict(Counter(f["code"] for f in first.findings))
    outcome.crashes = [why for why in (crashed(first), crashed(second)) if why]
    outcome.changed = changed_files(original, fixed)
    outcome.left_behind = sorted(set(fixed) - set(original))
    for rel in outcome.changed:
        _check_changed_file(rel, original, fixed, outcome)
    for rel in changed_files(fixed, again):
        outcome.idempotency_failures.append(Problem(rel, "a second fix changed it", unified_diff(rel, fixed.get(rel, b""), again.get(rel, b""))))
    return outcome


def _check_changed_file(rel: str, original: dict[str, bytes], fixed: dict[str, bytes], outcome: FixOutcome) -> None:
    before, after = original.get(rel, b""), fixed.get(rel, b"")
    diff = unified_diff(rel, before, after)
    if rel not in outcome.rules_by_file:
        outcome.unexpected_changes.append(Problem(rel, "changed without a finding that has such a fix", diff))
    if not rel.endswith(".py") or compile_error(rel, before) is not None:
        return
    broken = compile_error(rel, after)
    if broken is not None:
        line, message = broken
        outcome.compile_failures.append(Problem(rel, f"line {line}: {message}", hunk_at(diff, line)))


# --- one code base -----------------------------------------------------------------------------


@dataclass
class RepoResult:
    """Everything measured on one code base."""

    base: CodeBase
    py_files: int = 0
    notebooks: int = 0
    not_python3: int = 0
    check_seconds: float = 0.0
    findings: list[dict[str, Any]] = field(default_factory=list)
    unparsed: dict[str, str] = field(default_factory=dict)
    other_errors: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    fixes: list[FixOutcome] = field(default_factory=list)
    error: str | None = None
    # The text of each file with findings, for the samples (not written to the JSON).
    texts: dict[str, str] = field(default_factory=dict, repr=False)

    def problems(self) -> int:
        per_fix = sum(
            len(f.compile_failures) + len(f.idempotency_failures) + len(f.unexpected_changes) + len(f.left_behind) + len(f.crashes)
            for f in self.fixes
        )
        return per_fix + len(self.crashes) + (self.error is not None)


def decode_source(data: bytes) -> str:
    """Python source text as the interpreter reads it (coding cookie, BOM); bad bytes replaced."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        encoding = "utf-8"
    return data.decode(encoding, errors="replace").removeprefix("\ufeff")


def analyse(base: CodeBase, tree: Path, work: Path, check_only: bool, options: Sequence[str] = ()) -> RepoResult:
    """The check and fix runs on the export in ``tree``, each with ``options``; copies go under ``work``."""
    original = snapshot(tree)
    result = RepoResult(base)
    result.py_files = sum(rel.endswith(".py") for rel in original)
    result.notebooks = sum(rel.endswith(".ipynb") for rel in original)
    result.not_python3 = sum(1 for rel, data in original.items() if rel.endswith(".py") and compile_error(rel, data))
    check = run_devlint(["check", *options], tree)
    result.check_seconds = check.seconds
    result.findings = check.findings
    result.unparsed, result.other_errors = file_errors(check, tree)
    result.crashes = [why for why in (crashed(check),) if why]
    result.texts = {rel: decode_source(original[rel]) for rel in {f["filename"] for f in check.findings}}
    if not check_only:
        for applicability in ("safe", "unsafe"):
            result.fixes.append(fix_copy(original, tree, work / applicability, check.findings, applicability, options))
    if snapshot(tree) != original:
        result.crashes.append("check changed the files it checked")
    return result


def run_code_base(
    base: CodeBase, mirrors: Path | None, scratch: Path, keep: Path | None, check_only: bool, options: Sequence[str] = ()
) -> RepoResult:
    """Exports ``base`` and analyses it; a code base that cannot be exported is reported, not fatal."""
    work = (keep if keep is not None else scratch) / base.name
    try:
        git_dir = mirror_git_dir(mirrors, base) if mirrors is not None else clone_git_dir(base, scratch)
        export_tree(git_dir, base, work / "original")
    except SourceError as error:
        return RepoResult(base, error=str(error))
    try:
        return analyse(base, work / "original", work, check_only, options)
    finally:
        shutil.rmtree(scratch / f"clone-{base.name}", ignore_errors=True)
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


# --- tables ------------------------------------------------------------------------------------


def _fix(result: RepoResult, applicability: str) -> FixOutcome | None:
    return next((f for f in result.fixes if f.applicability == applicability), None)


def _markdown(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


RULE_HEADER = (
    "rule", "findings", "code bases", "safe fix", "unsafe fix", "no fix", "fixed by fix", "fixed by --unsafe-fixes",
    "files changed (fix)", "files changed (unsafe)", "compile failures", "idempotency failures",
)


def rule_rows(results: Sequence[RepoResult]) -> list[list[object]]:
    """One row per rule: findings and fixes summed over the code bases."""
    codes = sorted({f["code"] for r in results for f in r.findings})
    rows = []
    for code in codes:
        mine = [f for r in results for f in r.findings if f["code"] == code]
        kinds = Counter(f["fix"]["applicability"] if f["fix"] else "none" for f in mine)
        row: list[object] = [code, len(mine), sum(any(f["code"] == code for f in r.findings) for r in results)]
        row += [kinds["safe"], kinds["unsafe"], kinds["none"]]
        # Findings before less findings after: a fix that makes new findings lowers it.
        for applicability in ("safe", "unsafe"):
            row.append(sum(_fixed(r, applicability, code) for r in results))
        for applicability in ("safe", "unsafe"):
            row.append(sum(_files_of_rule(r, applicability, code) for r in results))
        for kind in ("compile_failures", "idempotency_failures"):
            row.append(sum(_problems_of_rule(r, kind, code) for r in results))
        rows.append(row)
    return rows


def _fixed(result: RepoResult, applicability: str, code: str) -> int:
    fix = _fix(result, applicability)
    return 0 if fix is None else sum(f["code"] == code for f in result.findings) - fix.remaining.get(code, 0)


def _files_of_rule(result: RepoResult, applicability: str, code: str) -> int:
    fix = _fix(result, applicability)
    return 0 if fix is None else sum(code in fix.rules_by_file.get(rel, ()) for rel in fix.changed)


def _problems_of_rule(result: RepoResult, kind: str, code: str) -> int:
    return sum(code in fix.rules_by_file.get(p.file, ()) for fix in result.fixes for p in getattr(fix, kind))


REPO_HEADER = (
    "code base", "commit", ".py", ".ipynb", "unparsed", "not Python 3", "findings", "safe fix", "unsafe fix",
    "changed (fix)", "changed (unsafe)", "compile failures", "idempotency failures", "other problems", "seconds",
)


def repo_rows(results: Sequence[RepoResult]) -> list[list[object]]:
    rows = []
    for r in results:
        name = r.base.name + (f" ({r.base.subdir}/)" if r.base.subdir else "")
        if r.error is not None:
            rows.append([name, r.base.commit[:10], "error: " + r.error, *[""] * (len(REPO_HEADER) - 3)])
            continue
        kinds = Counter(f["fix"]["applicability"] for f in r.findings if f["fix"])
        safe, unsafe = _fix(r, "safe"), _fix(r, "unsafe")
        other = len(r.crashes) + sum(len(f.unexpected_changes) + len(f.left_behind) + len(f.crashes) for f in r.fixes)
        seconds = r.check_seconds + sum(f.seconds for f in r.fixes)
        rows.append([
            name, r.base.commit[:10], r.py_files, r.notebooks, len(r.unparsed), r.not_python3, len(r.findings),
            kinds["safe"], kinds["unsafe"], len(safe.changed) if safe else "-", len(unsafe.changed) if unsafe else "-",
            sum(len(f.compile_failures) for f in r.fixes), sum(len(f.idempotency_failures) for f in r.fixes), other,
            f"{seconds:.1f}",
        ])
    return rows


def problem_report(results: Sequence[RepoResult]) -> list[str]:
    """Every failed check, with the file and the hunk that caused it."""
    lines: list[str] = []
    for r in results:
        for why in r.crashes:
            lines.append(f"- {r.base.name}: {why}")
        for fix in r.fixes:
            for kind in ("compile_failures", "idempotency_failures", "unexpected_changes"):
                for problem in getattr(fix, kind):
                    lines += [f"- {r.base.name} ({fix.applicability}) {problem.file}: {problem.what}", "```diff", problem.diff.rstrip(), "```"]
            lines += [f"- {r.base.name} ({fix.applicability}): {why}" for why in fix.crashes]
            lines += [f"- {r.base.name} ({fix.applicability}): left behind {rel}" for rel in fix.left_behind]
    return lines


# --- samples -----------------------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split as Python's tokenizer and LibCST count rows."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


def apply_edits(text: str, edits: Sequence[dict[str, Any]]) -> str:
    """``text`` with one fix's edits (1-based rows and columns) applied."""
    starts = [0]
    for line in split_lines(text):
        starts.append(starts[-1] + len(line))

    def offset(position: dict[str, int]) -> int:
        return starts[position["row"] - 1] + position["column"] - 1

    # Back to front, so earlier offsets stay valid; inserts at one offset keep the order given.
    spans = sorted(((offset(e["location"]), offset(e["end_location"]), i) for i, e in enumerate(edits)), reverse=True)
    for start, end, index in spans:
        content = edits[index]["content"]
        text = text[:start] + content + text[end:]
    return text


def _population(results: Sequence[RepoResult], applicability: str | None) -> list[tuple[RepoResult, dict[str, Any]]]:
    """Findings of every code base (of one fix kind when given), notebooks left out, in a fixed order."""
    pool = []
    for r in results:
        for f in sorted(r.findings, key=lambda f: (f["filename"], f["location"]["row"], f["location"]["column"], f["code"])):
            if f["cell"] is not None:
                continue
            if applicability is None or (f["fix"] is not None and f["fix"]["applicability"] == applicability):
                pool.append((r, f))
    return pool


def draw(results: Sequence[RepoResult], count: int, seed: int, applicability: str | None) -> list[tuple[RepoResult, dict[str, Any]]]:
    pool = _population(results, applicability)
    return random.Random(seed).sample(pool, min(count, len(pool)))


def _title(number: int, r: RepoResult, f: dict[str, Any]) -> str:
    where = f"{f['filename']}:{f['location']['row']}:{f['location']['column']}"
    return f"### {number}. {r.base.name} `{where}` {f['code']}: {f['message']}"


def fix_sample(results: Sequence[RepoResult], count: int, seed: int, applicability: str, context: int) -> list[str]:
    """Seeded random fixes of one kind, each applied alone to its file, as unified diff hunks."""
    drawn = draw(results, count, seed, applicability)
    lines = [f"## {len(drawn)} sampled {applicability} fixes (seed {seed})", ""]
    for number, (r, f) in enumerate(drawn, start=1):
        text = r.texts[f["filename"]]
        fixed = apply_edits(text, f["fix"]["edits"])
        rel = f"{r.base.name}/{f['filename']}"
        diff = difflib.unified_diff(split_lines(text), split_lines(fixed), f"a/{rel}", f"b/{rel}", n=context)
        lines += [_title(number, r, f), f"fix ({f['fix']['applicability']}): {f['fix']['message']}", "```diff"]
        lines += [line.rstrip("\r\n") for line in diff]
        lines += ["```", ""]
    return lines


def finding_sample(results: Sequence[RepoResult], count: int, seed: int, context: int) -> list[str]:
    """Seeded random findings with their source lines and ``context`` lines around them."""
    drawn = draw(results, count, seed, None)
    lines = [f"## {len(drawn)} sampled findings (seed {seed})", ""]
    for number, (r, f) in enumerate(drawn, start=1):
        source = split_lines(r.texts[f["filename"]])
        first, last = f["location"]["row"], f["end_location"]["row"]
        fix = f"fix: {f['fix']['applicability']}" if f["fix"] else "fix: none"
        lines += [_title(number, r, f), fix, "```python"]
        for row in range(max(1, first - context), min(len(source), last + context) + 1):
            marker = ">" if first <= row <= last else " "
            lines.append(f"{marker}{row:5d}  {source[row - 1].rstrip()}")
        lines += ["```", ""]
    return lines


# --- the whole run -----------------------------------------------------------------------------


def to_json(results: Sequence[RepoResult], seconds: float) -> dict[str, Any]:
    def one(r: RepoResult) -> dict[str, Any]:
        data = asdict(r)
        data.pop("texts")
        return data

    return {"seconds": seconds, "rules": [dict(zip(RULE_HEADER, row)) for row in rule_rows(results)], "code_bases": [one(r) for r in results]}


def report(results: Sequence[RepoResult], seconds: float) -> list[str]:
    lines = ["## Per rule", "", _markdown(RULE_HEADER, rule_rows(results)), "", "## Per code base", ""]
    lines += [_markdown(REPO_HEADER, repo_rows(results)), ""]
    problems = problem_report(results)
    lines += [f"## Problems: {sum(r.problems() for r in results)}", "", *problems, ""]
    lines.append(f"total: {seconds:.1f} s")
    return lines


def select(names: Sequence[str] | None) -> list[CodeBase]:
    if not names:
        return list(CODE_BASES)
    wanted = [name.strip() for group in names for name in group.split(",") if name.strip()]
    known = {base.name: base for base in CODE_BASES}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise SystemExit(f"unknown code base(s): {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[name] for name in wanted]


def run_all(bases: Sequence[CodeBase], mirrors: Path | None, keep: Path | None, check_only: bool, options: Sequence[str] = ()) -> list[RepoResult]:
    results = []
    with tempfile.TemporaryDirectory(prefix="devlint-real-repos-") as scratch:
        for base in bases:
            print(f"{base.name} ...", file=sys.stderr, flush=True)
            results.append(run_code_base(base, mirrors, Path(scratch), keep, check_only, options))
    return results


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, help="folder of bare git directories (owner+name/repo); default: clone")
    parser.add_argument("--only", action="append", metavar="NAME", help="only these code bases (comma-separated, repeatable)")
    parser.add_argument("--keep", type=Path, help="keep the original and fixed trees here (must not exist)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write everything measured here")
    parser.add_argument("--check-only", action="store_true", help="run check only, no fix (enough for the samples)")
    parser.add_argument("--sample-fixes", type=int, default=0, metavar="N", help="print N random fixes as diff hunks")
    parser.add_argument("--applicability", choices=("safe", "unsafe"), default="safe", help="which fixes to sample")
    parser.add_argument("--sample-findings", type=int, default=0, metavar="N", help="print N random findings")
    parser.add_argument("--seed", type=int, default=0, help="seed of the samples")
    parser.add_argument("--context", type=int, default=3, help="lines of context in the samples")
    for option in ("--select", "--extend-select", "--torch-version"):
        parser.add_argument(option, metavar="VALUE", help=f"passed to every devlint run as {option} VALUE")
    args = parser.parse_args(argv)
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep}: already exists")
    return args


def devlint_options(args: argparse.Namespace) -> list[str]:
    """The devlint options given on the command line, in the form devlint takes them."""
    given = (("--select", args.select), ("--extend-select", args.extend_select), ("--torch-version", args.torch_version))
    return [part for option, value in given if value is not None for part in (option, value)]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    results = run_all(select(args.only), args.mirrors, args.keep, args.check_only, devlint_options(args))
    seconds = time.perf_counter() - start
    lines = report(results, seconds)
    if args.sample_fixes:
        lines += ["", *fix_sample(results, args.sample_fixes, args.seed, args.applicability, args.context)]
    if args.sample_findings:
        lines += ["", *finding_sample(results, args.sample_findings, args.seed, args.context)]
    print("\n".join(lines))
    if args.json is not None:
        args.json.write_text(json.dumps(to_json(results, seconds), indent=1, default=list) + "\n", encoding="utf-8")
    return 1 if any(r.problems() for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
