"""Time from an edit to published diagnostics in `devlint server`, for files of 100, 1,000 and
10,000 lines, with findings and clean, and from spawning the server to its answer to
`initialize` (not a timed test: run it by hand, on a machine as idle as you can get).

    .venv/bin/python bench/lsp_latency.py                  # 100, 1,000, 10,000 lines; 7 edits each
    .venv/bin/python bench/lsp_latency.py --edits 15 --lines 100 1000

The real server process is driven over stdio by the tests' client (tests/lsp_client.py). Each
file is a training script repeated to size: with findings, a `.cuda()` call every 12 lines;
clean, the same script with `.float()` instead. After the first diagnostics, each edit toggles
the call in the middle of the file (`.cuda()` on and off, so every edit changes the findings;
`.float()` and `.half()` in the clean file, which stays clean) and waits for the diagnostics of
that version before the next. Measured twice: with the default pause for typing (debounce,
200 ms: what a user sees) and with none (the server's and the engine's own latency). For
reference, the engine alone on the same text in this process (lint only, warm, no reuse of an
earlier parse), which a first check costs.
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


# What each edit toggles, in the file with findings and in the clean one.
TOGGLES = {"findings": ("inputs.cuda()", "inputs"), "clean": ("inputs.float()", "inputs.half()")}


def script(lines: int, kind: str = "findings") -> str:
    header = "import torch\n\n\n"
    block = BLOCK if kind == "findings" else BLOCK.replace("inputs.cuda()", "inputs.float()")
    blocks: list[str] = []
    n = 0
    while header.count("\n") + sum(b.count("\n") for b in blocks) < lines:
        blocks.append(block.format(n=n))
        n += 1
    return header + "".join(blocks)


def initialize_seconds(root: Path, repeat: int) -> list[float]:
    """From spawning `devlint server` to its answer to `initialize`."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        client = LspClient(root)
        try:
            client.request("initialize", {"processId": None, "rootUri": uri_of(root), "capabilities": {}})
            times.append(time.perf_counter() - started)
            client.notify("initialized", {})
            client.request("shutdown", None)
            client.notify("exit", None)
            client.process.wait(timeout=60)
        finally:
            client.kill()
    return times


def engine_seconds(text: str, path: Path, repeat: int) -> float:
    from devlint.run.config import Resolver
    from devlint.run.file_job import process_source
    from devlint.run.job import Job

    settings = Resolver(cwd=path.parent).settings_for(path)
    job = Job(settings.codes, settings.fix)
    process_source(text.encode(), str(path), job)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        process_source(text.encode(), str(path), job)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(root: Path, lines: int, kind: str, edits: int, debounce_ms: int | None) -> list[float]:
    options = {} if debounce_ms is None else {"debounceMs": debounce_ms}
    client = LspClient(root)
    try:
        client.initialize(root, options=options)
        text = script(lines, kind)
        path = root / f"train_{lines}_{kind}.py"
        uri = uri_of(path)
        client.open(uri, text)
        client.diagnostics(uri, 1, timeout=600)
        on, off = TOGGLES[kind]
        middle = text.index(on, len(text) // 2)
        latencies = []
        for version in range(2, edits + 2):
            removing = text[middle : middle + len(on)] == on
            old, new = (on, off) if removing else (off, on)
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
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        started = initialize_seconds(root, args.edits)
        print(
            f"initialize (spawn to answer): median {statistics.median(started) * 1000:.0f} ms "
            f"({min(started) * 1000:.0f}-{max(started) * 1000:.0f} ms)",
            flush=True,
        )
        print(
            f"{'lines':>7} {'kind':>8} {'findings':>8} {'engine':>9} "
            f"{'debounce 0 ms: median (min-max)':>34} {'debounce 200 ms: median (min-max)':>36}"
        )
        for lines in args.lines:
            for kind in ("findings", "clean"):
                text = script(lines, kind)
                engine = engine_seconds(text, root / f"train_{lines}_{kind}.py", 3)
                row = [f"{lines:>7}", f"{kind:>8}", f"{text.count('.cuda()'):>8}", f"{engine * 1000:>7.0f}ms"]
                for debounce in (0, None):
                    found = measure(root, lines, kind, args.edits, debounce)
                    median = statistics.median(found) * 1000
                    row.append(f"{median:>15.0f}ms ({min(found) * 1000:.0f}-{max(found) * 1000:.0f} ms)")
                print(" ".join(row), flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
