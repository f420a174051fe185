"""Time from an edit to published diagnostics in `devlint server`, for files of 100, 1,000 and
10,000 lines (not a timed test: run it by hand, on a machine as idle as you can get).

    .venv/bin/python bench/lsp_latency.py                  # 100, 1,000, 10,000 lines; 7 edits each
    .venv/bin/python bench/lsp_latency.py --edits 15 --lines 100 1000

The real server process is driven over stdio by the tests' client (tests/lsp_client.py). Each
file is a training script repeated to size (a finding every few dozen lines). After the first
diagnostics, each edit toggles one `.cuda()` call in the middle of the file (so every edit
changes the findings) and waits for the diagnostics of that version before the next. Measured
twice: with the default pause for typing (debounce, 200 ms: what a user sees) and with none
(the server's and the engine's own latency). For reference, the engine alone on the same text
in this process (lint only, warm), which is the floor the server adds to.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from lsp_client import LspClient, uri_of, utf16_position  # noqa: E402

BLOCK = '''\
def step_{n}(model, batch, optimizer):
    """One optimisation step of block {n}."""
    inputs, targets = batch
    inputs = inputs.cuda()
    outputs = model(inputs)
    loss = torch.nn.functional.cross_entropy(outputs, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


'''


def script(lines: int) -> str:
    header = "import torch\n\n\n"
    blocks: list[str] = []
    n = 0
    while header.count("\n") + sum(b.count("\n") for b in blocks) < lines:
        blocks.append(BLOCK.format(n=n))
        n += 1
    return header + "".join(blocks)


def engine_seconds(text: str, path: Path, repeat: int) -> float:
    from devlint.config import Resolver
    from devlint.process import Job, process_source

    settings = Resolver(cwd=path.parent).settings_for(path)
    job = Job(settings.codes, settings.fix)
    process_source(text.encode(), str(path), job)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        process_source(text.encode(), str(path), job)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(root: Path, lines: int, edits: int, debounce_ms: int | None) -> list[float]:
    options = {} if debounce_ms is None else {"debounceMs": debounce_ms}
    client = LspClient(root)
    try:
        client.initialize(root, options=options)
        text = script(lines)
        path = root / f"train_{lines}.py"
        uri = uri_of(path)
        client.open(uri, text)
        client.diagnostics(uri, 1, timeout=600)
        middle = text.index("inputs.cuda()", len(text) // 2)
        latencies = []
        for version in range(2, edits + 2):
            removing = text[middle : middle + len("inputs.cuda()")] == "inputs.cuda()"
            old, new = ("inputs.cuda()", "inputs") if removing else ("inputs", "inputs.cuda()")
            span = {"start": utf16_position(text, middle), "end": utf16_position(text, middle + len(old))}
            started = time.perf_counter()
            client.change(uri, version, [{"range": span, "text": new}])
            client.diagnostics(uri, version, timeout=600)
            latencies.append(time.perf_counter() - started)
            text = text[:middle] + new + text[middle + len(old) :]
        assert client.shutdown() == 0
        return latencies
    finally:
        client.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[100, 1_000, 10_000])
    parser.add_argument("--edits", type=int, default=7)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'lines':>7} {'findings':>8} {'engine':>9} {'debounce 0 ms: median (min-max)':>34} {'debounce 200 ms: median (min-max)':>36}")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for lines in args.lines:
            text = script(lines)
            engine = engine_seconds(text, root / f"train_{lines}.py", 3)
            row = [f"{lines:>7}", f"{text.count('.cuda()'):>8}", f"{engine * 1000:>7.0f}ms"]
            for debounce in (0, None):
                found = measure(root, lines, args.edits, debounce)
                median = statistics.median(found) * 1000
                row.append(f"{median:>15.0f}ms ({min(found) * 1000:.0f}-{max(found) * 1000:.0f} ms)")
            print(" ".join(row), flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
