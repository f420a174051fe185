"""CPU time of the language server's worker checking a document again after an edit inside one
function, in this process (no server, no pipes): what the editor's latency is made of, with less
noise from other work on the machine than wall-clock figures (not a timed test).

    .venv/bin/python bench/recheck.py                      # 10,000 lines with findings
    .venv/bin/python bench/recheck.py --lines 1000 --kind clean

To compare two versions of devlint in one run, run it once per checkout, each with its own code
first on the path (``PYTHONPATH=/path/to/other/checkout``; a checkout not installed needs its
``rules/`` reachable as ``devlint/rules``, e.g. a symlink, or the installed rules are used); the
file checked is the one bench/lsp_latency.py edits, toggling the same call.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lsp_latency import TOGGLES, script  # noqa: E402

from devlint.run.config import Resolver  # noqa: E402
from devlint.server import analysis  # noqa: E402
from devlint.server.model import Source  # noqa: E402


def recheck_seconds(lines: int, kind: str, edits: int) -> tuple[list[float], int]:
    """CPU seconds of each check after an edit, and the findings of the last."""
    folder = Path(tempfile.mkdtemp())
    path = folder / "train.py"
    text = script(lines, kind)
    path.write_text(text)
    settings = Resolver(cwd=folder).settings_for(path)

    def source(body: str) -> Source:
        return Source(str(path), (body,), False, settings)

    analysis.analyze(source(text))
    # As in the worker: no collection during a check, one between checks.
    gc.disable()
    on, off = TOGGLES[kind]
    middle = text.index(on, len(text) // 2)
    times, found = [], 0
    for _ in range(edits):
        text = text[:middle] + off + text[middle + len(on) :] if text.startswith(on, middle) else text[:middle] + on + text[middle + len(off) :]
        gc.collect()
        started = time.process_time()
        found = len(analysis.analyze(source(text)).items)
        times.append(time.process_time() - started)
    gc.enable()
    return times, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--kind", choices=sorted(TOGGLES), default="findings")
    parser.add_argument("--edits", type=int, default=8)
    options = parser.parse_args()
    times, found = recheck_seconds(options.lines, options.kind, options.edits)
    import devlint

    print(f"devlint from {Path(devlint.__file__).parent.parent}")
    print(
        f"{options.lines} lines, {options.kind} ({found} findings): CPU per re-check median "
        f"{statistics.median(times) * 1000:.0f} ms ({min(times) * 1000:.0f}-{max(times) * 1000:.0f} ms), {options.edits} edits"
    )


if __name__ == "__main__":
    main()
