"""A progress bar on stderr for long runs on a terminal; nothing in pipes, files or CI.

``execute()`` (devlint.run.pool) takes the whole list of work and reports nothing until it is done,
so the bar advances once per batch: a few dozen batches, each big enough that starting one costs
little next to checking its files.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TextIO, TypeVar

MIN_FILES = 50
BATCHES = 25
MIN_BATCH = 50

Work = TypeVar("Work")
Result = TypeVar("Result")


def wanted(total: int, stream: TextIO, environ: Mapping[str, str] = os.environ) -> bool:
    if total < MIN_FILES or environ.get("CI", "").lower() not in ("", "0", "false"):
        return False
    if environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def batches(work: Sequence[Work], count: int = BATCHES, smallest: int = MIN_BATCH) -> list[Sequence[Work]]:
    size = max(smallest, -(-len(work) // count))
    return [work[i : i + size] for i in range(0, len(work), size)]


def run_with_progress(
    run: Callable[[list[Work]], list[Result]],
    work: list[Work],
    stream: TextIO,
    environ: Mapping[str, str] = os.environ,
    label: str = "Checking",
) -> list[Result]:
    """``run(work)``, with a bar on ``stream`` when that is a terminal and the run is long."""
    if not wanted(len(work), stream, environ):
        return run(work)
    # Imported only for a bar: a run in a pipe or on a few files never pays for rich.
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    results: list[Result] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(file=stream), transient=True) as bar:
        task = bar.add_task(label, total=len(work))
        for batch in batches(work):
            results += run(list(batch))
            bar.advance(task, len(batch))
    return results
