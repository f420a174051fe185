"""bench/real_repos.py on a tiny git repository made here: no network, so the script cannot rot.

The repository holds a `.cuda()` script (a safe fix), a `.cuda(gpu)` one (an unsafe fix), a Python 2
file (counted as not parsed) and a clean file; the bench exports it from a bare mirror and from a
clone, runs check and both fixes, and must report exactly what devlint did.
"""

from __future__ import annotations

import re
import runpy
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


# The script is no package module: run it as a file (not as __main__) and use its functions.
bench = SimpleNamespace(**runpy.run_path(str(ROOT / "bench" / "real_repos.py"), run_name="real_repos"))

TRAIN = """\
import torch


def train(model, batches):
    model = model.cuda()
    for x in batches:
        x = x.cuda()
        print(model(x).sum().item())
"""

PINNED = """\
import torch


def place(x, gpu):
    return x.cuda(gpu)
"""

PYTHON2 = 'print "only Python 2 parses this"\n'

CLEAN = """\
import torch


def place(x, device):
    return x.to(device)
"""


def _git(*args: str, cwd: Path) -> str:
    identity = ["-c", "user.name=bench test", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"]
    return subprocess.run(["git", *identity, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A work tree with two commits (the pinned one is the first) and a bare mirror of it."""
    repo = tmp_path_factory.mktemp("upstream") / "tiny"
    (repo / "pkg").mkdir(parents=True)
    _git("init", "--quiet", cwd=repo)
    for name, text in (("train.py", TRAIN), ("pkg/pinned.py", PINNED), ("legacy.py", PYTHON2), ("pkg/clean.py", CLEAN), ("README.md", "tiny\n")):
        (repo / name).write_text(text, encoding="utf-8")
    (repo / "logo.gif").write_bytes(b"GIF89a not really an image")
    _git("add", ".", cwd=repo)
    _git("commit", "--quiet", "-m", "pinned", cwd=repo)
    pinned = _git("rev-parse", "HEAD", cwd=repo)
    (repo / "later.py").write_text("import torch\nx = torch.zeros(1).cuda()\n", encoding="utf-8")
    _git("add", ".", cwd=repo)
    _git("commit", "--quiet", "-m", "after the pin", cwd=repo)
    return repo, pinned


@pytest.fixture(scope="module")
def mirrors(upstream: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Mirrors laid out as the fetch tool leaves them: ``owner+name/repo``, a bare git directory
    whose largest blobs may be absent (here the image's)."""
    root = tmp_path_factory.mktemp("mirrors")
    mirror = root / "acme+tiny" / "repo"
    _git("clone", "--quiet", "--bare", str(upstream[0]), str(mirror), cwd=root)
    blob = _git("hash-object", "logo.gif", cwd=upstream[0])
    (mirror / "objects" / blob[:2] / blob[2:]).unlink()
    assert subprocess.run(["git", "--git-dir", str(mirror), "cat-file", "-e", blob], capture_output=True).returncode != 0
    return root


@pytest.fixture(scope="module")
def result(upstream: tuple[Path, str], mirrors: Path, tmp_path_factory: pytest.TempPathFactory):
    base = bench.CodeBase("tiny", "https://github.com/acme/tiny.git", upstream[1])
    return bench.run_code_base(base, mirrors, tmp_path_factory.mktemp("scratch"), None, check_only=False)


def test_check_counts_findings_and_unparsed_files(result) -> None:
    assert result.error is None
    # The pinned commit, not the newest one: later.py is not there.
    assert (result.py_files, result.notebooks) == (4, 0)
    assert Counter(f["code"] for f in result.findings) == {"DEV101": 2, "DEV102": 1}
    assert list(result.unparsed) == ["legacy.py"] and result.not_python3 == 1
    assert result.crashes == [] and result.problems() == 0


def test_fixes_change_exactly_the_files_with_fixes(result) -> None:
    safe, unsafe = result.fixes
    assert (safe.applicability, safe.changed) == ("safe", ["train.py"])
    assert (unsafe.applicability, unsafe.changed) == ("unsafe", ["pkg/pinned.py", "train.py"])
    assert safe.remaining == {"DEV102": 1} and unsafe.remaining == {}
    for fix in result.fixes:
        assert fix.compile_failures == fix.idempotency_failures == fix.unexpected_changes == []


def test_tables_report_rules_and_code_bases(result) -> None:
    rows = {row[0]: row for row in bench.rule_rows([result])}
    header = list(bench.RULE_HEADER)
    assert rows["DEV101"][header.index("findings")] == 2
    assert rows["DEV101"][header.index("fixed by fix")] == 2
    assert rows["DEV102"][header.index("fixed by fix")] == 0
    assert rows["DEV102"][header.index("fixed by --unsafe-fixes")] == 1
    assert rows["DEV102"][header.index("files changed (unsafe)")] == 1
    (repo_row,) = bench.repo_rows([result])
    assert repo_row[:7] == ["tiny", result.base.commit[:10], 4, 0, 1, 1, 3]
    assert "| DEV101 | 2 | 1 | 2 | 0 | 0 | 2 | 2 | 1 | 1 | 0 | 0 |" in "\n".join(bench.report([result], 1.0))


def test_fix_sample_shows_one_fix_applied_alone(result) -> None:
    text = "\n".join(bench.fix_sample([result], 5, 0, "unsafe", 2))
    assert text.startswith("## 1 sampled unsafe fixes (seed 0)")
    assert "tiny `pkg/pinned.py:5:14` DEV102" in text
    assert "-    return x.cuda(gpu)\n+    return x.to(torch.device(\"cuda\", gpu) if torch.cuda.is_available() else torch.device(\"cpu\"))" in text
    # Alone: the safe fixes of train.py are not part of the unsafe sample.
    assert "train.py" not in text
    safe = "\n".join(bench.fix_sample([result], 1, 3, "safe", 2))
    assert len(re.findall(r"^### \d+\. ", safe, re.M)) == 1
    assert re.search(r"^-        x = x\.cuda\(\)$|^-    model = model\.cuda\(\)$", safe, re.M)


def test_finding_sample_marks_the_lines(result) -> None:
    text = "\n".join(bench.finding_sample([result], 10, 0, 1))
    assert len(re.findall(r"^### \d+\. ", text, re.M)) == 3
    assert ">    7          x = x.cuda()" in text
    assert "     6      for x in batches:" in text


def test_devlint_options_reach_every_run(upstream: tuple[Path, str], mirrors: Path, tmp_path: Path) -> None:
    args = bench.parse_args(["--only", "tiny", "--select", "DEV102", "--torch-version", "2.9"])
    options = bench.devlint_options(args)
    assert options == ["--select", "DEV102", "--torch-version", "2.9"]
    base = bench.CodeBase("tiny", "https://github.com/acme/tiny.git", upstream[1])
    narrowed = bench.run_code_base(base, mirrors, tmp_path, None, check_only=False, options=options)
    assert Counter(f["code"] for f in narrowed.findings) == {"DEV102": 1}
    safe, unsafe = narrowed.fixes
    # DEV101's safe fixes are not selected, so the safe fix changes nothing.
    assert (safe.changed, unsafe.changed) == ([], ["pkg/pinned.py"])
    assert narrowed.problems() == 0


def test_clone_without_mirror(upstream: tuple[Path, str], tmp_path: Path) -> None:
    base = bench.CodeBase("tiny", upstream[0].as_uri(), upstream[1])
    cloned = bench.run_code_base(base, None, tmp_path, tmp_path / "kept", check_only=True)
    assert cloned.error is None and cloned.fixes == []
    assert Counter(f["code"] for f in cloned.findings) == {"DEV101": 2, "DEV102": 1}
    assert (tmp_path / "kept" / "tiny" / "original" / "train.py").read_text(encoding="utf-8") == TRAIN
    assert not (tmp_path / "clone-tiny").exists()


def test_missing_mirror_and_commit_are_reported(mirrors: Path, tmp_path: Path) -> None:
    absent = bench.run_code_base(bench.CodeBase("nowhere", "https://github.com/acme/absent.git", "0" * 40), mirrors, tmp_path, None, True)
    assert absent.error == f"nowhere: no mirror of acme+absent under {mirrors}"
    wrong = bench.run_code_base(bench.CodeBase("tiny", "https://github.com/acme/tiny.git", "1" * 40), mirrors, tmp_path, None, True)
    assert wrong.error is not None and wrong.error.startswith(f"tiny: commit {'1' * 40} not in")
    assert wrong.problems() == 1


def test_a_fix_that_breaks_compilation_is_reported_with_its_hunk() -> None:
    before = b"import torch\nx = torch.zeros(1)\ny = x + 1\nz = y * 2\n"
    after = b"import torch\nx = torch.zeros(1).to(device\ny = x + 1\nz = y * 2\n"
    outcome = bench.FixOutcome("safe", rules_by_file={"a.py": ["DEV101"]})
    bench._check_changed_file("a.py", {"a.py": before, "b.py": b"x = 1\n"}, {"a.py": after}, outcome)
    (problem,) = outcome.compile_failures
    assert problem.file == "a.py" and problem.what.startswith("line 2: SyntaxError")
    assert "+x = torch.zeros(1).to(device\n" in problem.diff
    assert outcome.unexpected_changes == []
    bench._check_changed_file("b.py", {"b.py": b"x = 1\n"}, {"b.py": b"x = 2\n"}, outcome)
    assert [p.file for p in outcome.unexpected_changes] == ["b.py"]


def test_apply_edits_counts_rows_like_the_tokenizer() -> None:
    text = "a = 1\r\nb = x.cuda()\rc = 3\n"
    edits = [{"content": "x.to(d)", "location": {"row": 2, "column": 5}, "end_location": {"row": 2, "column": 13}}]
    assert bench.apply_edits(text, edits) == "a = 1\r\nb = x.to(d)\rc = 3\n"
    start = {"row": 2, "column": 1}
    inserts = [{"content": "import torch\n", "location": start, "end_location": start}, {"content": "d = 1\n", "location": start, "end_location": start}]
    assert bench.apply_edits(text, [*inserts, *edits]) == "a = 1\r\nimport torch\nd = 1\nb = x.to(d)\rc = 3\n"


def test_code_base_table_is_pinned() -> None:
    names = [base.name for base in bench.CODE_BASES]
    assert len(names) == len(set(names)) >= 15
    for base in bench.CODE_BASES:
        assert re.fullmatch(r"[0-9a-f]{40}", base.commit), base
        assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+\.git", base.url), base
    with pytest.raises(SystemExit, match="unknown code base"):
        bench.select(["timm,no-such-repo"])
    assert [b.name for b in bench.select(["timm,detr", "d2l"])] == ["timm", "detr", "d2l"]
