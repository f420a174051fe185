"""Runs the per-file work of a run and returns results in the order the files were given."""

from __future__ import annotations

from pathlib import Path

from devlint.process import FileResult, Job, process_file


def execute(work: list[tuple[Path, Job]]) -> list[FileResult]:
    return [process_file(path, job) for path, job in work]
