"""Fix safety at scale, on the installed torch package's own source (bench/fix_torch_corpus.py).

By default a deterministic sample: every torch file under 60 KB whose text suggests a finding and
every 100th other file (torch 2.13: 199 files, 3.9 MB, 34 of them with findings; 20 to 40 s on
the 2-core development machine). The whole package (2,285 files, 46 MB; 11 minutes there) runs
with DEVLINT_SLOW_TESTS=1, or as ``.venv/bin/python bench/fix_torch_corpus.py``.

Each file the fixes changed must compile, a second fix must change nothing, and every file
without a fix of the kind applied must stay byte-identical; safe fixes first, then unsafe ones.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _corpus_module():
    spec = importlib.util.spec_from_file_location("fix_torch_corpus", ROOT / "bench" / "fix_torch_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses look their module up in sys.modules while the class is made.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


corpus = _corpus_module()
TORCH = corpus.torch_root()
needs_torch = pytest.mark.skipif(TORCH is None, reason="torch is not installed: no corpus to fix")


def _fix_and_check(tmp_path: Path, files: list[Path]) -> None:
    assert TORCH is not None
    dest = tmp_path / "torch"
    dest.mkdir()
    original = corpus.copy_corpus(TORCH, files, dest)
    report = corpus.check_corpus(dest, original, jobs=2)
    summary = "\n".join(report.lines())
    assert report.problems == [], summary
    # Guard against a run that proves nothing: fixes were made, and most files were left alone.
    assert report.changed_safe > 0 and report.changed_unsafe >= report.changed_safe, summary
    assert report.identical == report.files - report.changed_unsafe, summary
    assert all(run.returncode in (0, 1) for run in report.runs), summary


@needs_torch
def test_fix_on_a_sample_of_torch(tmp_path: Path) -> None:
    files = corpus.sample_files(TORCH)
    assert len(files) > 50
    _fix_and_check(tmp_path, files)


@needs_torch
@pytest.mark.skipif(os.environ.get("DEVLINT_SLOW_TESTS") != "1", reason="the whole torch package: ~11 min; set DEVLINT_SLOW_TESTS=1")
def test_fix_on_all_of_torch(tmp_path: Path) -> None:
    _fix_and_check(tmp_path, corpus.corpus_files(TORCH))
