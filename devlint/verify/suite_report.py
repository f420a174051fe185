"""The report of `devlint verify --tests`: what changed, test by test, as text or JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from devlint.verify.project_copy import FixedFile
from devlint.verify.suite_runs import Outcome, RunResult
from devlint.verify.suite_verdict import CHANGED, NEEDS, NOW_PASSES, TestRow, ran

@dataclass(frozen=True)
class SuiteReport:
    command: str
    torch: str
    gpu: str | None
    fixes: list[FixedFile]
    runs: list[RunResult]
    rows: list[TestRow]
    errors: list[str]
    # What `devlint fix` reported on the copy (a file that does not parse): no reason to stop.
    warnings: list[str]
    exit_code: int

    def summary(self) -> dict[str, int]:
        proven = [row for row in self.rows if ran(row.reference)]
        return {
            "tests": len(self.rows),
            "tests_run": len(proven),
            "emulation_only": sum(row.emulation_only for row in self.rows),
            "changed": sum(row.changed for row in self.rows),
            "fails_on_original": sum(row.fails_on_original for row in self.rows),
            "needs_cuda": sum(any(v.verdict == NEEDS for v in row.verdicts.values()) for row in self.rows),
            "now_passes": sum(any(v.verdict == NOW_PASSES for v in row.verdicts.values()) for row in self.rows),
        }

def _outcome(outcome: Outcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    return {"outcome": outcome.outcome, "message": outcome.message or None, "when": outcome.when}

def write_json(report: SuiteReport, out: TextIO) -> None:
    data = {
        "command": report.command,
        "torch": report.torch,
        "gpu": report.gpu,
        "fixes": [{"path": f.path, "lines": sorted(f.edited)} for f in report.fixes],
        "runs": {
            result.run.name: {
                "fixed": result.run.fixed,
                "emulated": result.run.emulated,
                "gpus_hidden": result.run.hidden,
                "exit_status": result.exit_status,
                "timed_out": result.timed_out,
                "seconds": round(result.seconds, 2),
                "tests": len(result.outcomes),
            }
            for result in report.runs
        },
        "tests": [
            {
                "nodeid": row.nodeid,
                "reference": _outcome(row.reference),
                "runs": {
                    name: {**(_outcome(v.outcome) or {"outcome": None}), "verdict": v.verdict, "causes": list(v.causes)}
                    for name, v in row.verdicts.items()
                },
                "changed": row.changed,
                "fails_on_original": row.fails_on_original,
            }
            for row in report.rows
        ],
        "errors": report.errors,
        "warnings": report.warnings,
        "summary": report.summary(),
        "exit_code": report.exit_code,
    }
    out.write(json.dumps(data, indent=2) + "\n")

def _describe(outcome: Outcome | None) -> str:
    if outcome is None:
        return "not run"
    return f"{outcome.outcome} ({outcome.message})" if outcome.message else outcome.outcome

def write_full(report: SuiteReport, out: TextIO) -> None:
    console = Console(file=out, width=None if out.isatty() else 10_000, highlight=False, soft_wrap=False)
    machine = f"{report.gpu}: the original on the GPU is the reference" if report.gpu else "no GPU: CUDA emulated"
    console.print(Text(f"devlint verify --tests: {report.command} (torch {report.torch}, {machine})", style="bold"))
    edited = sum(len(f.edited) for f in report.fixes)
    files = ", ".join(f.path for f in report.fixes) or "none"
    console.print(f"fixes: {edited} line(s) written in {len(report.fixes)} file(s): {files}")
    for result in report.runs:
        kind = ("fixed" if result.run.fixed else "original") + (", emulated CUDA" if result.run.emulated else "")
        kind += ", GPUs hidden" if result.run.hidden else ""
        status = "timed out" if result.timed_out else f"exit {result.exit_status}"
        console.print(f"  {result.run.name:<9} ({kind}): {len(result.outcomes)} tests, {status}, {result.seconds:.1f}s")
    for row in report.rows:
        for name, verdict in row.verdicts.items():
            if verdict.verdict == CHANGED:
                console.print(
                    Text(f"CHANGED {row.nodeid} [{name}]: {_describe(row.reference)} -> {_describe(verdict.outcome)}",
                         style="bold red")
                )
            elif verdict.verdict in (NEEDS, NOW_PASSES):
                words = "still needs CUDA" if verdict.verdict == NEEDS else "passes after the fix"
                console.print(Text(f"{words}: {row.nodeid} [{name}]: {_describe(verdict.outcome)}", style="yellow"))
            else:
                continue
            for cause in verdict.causes:
                console.print(f"    cause: {cause}")
    for row in report.rows:
        if row.fails_on_original:
            console.print(Text(f"fails on the original too (not a change): {row.nodeid}: {_describe(row.reference)}",
                               style="dim"))
    for warning in report.warnings:
        console.print(Text(f"warning: {warning}", style="yellow"))
    for error in report.errors:
        console.print(Text(f"error: {error}", style="bold red"))
    if report.errors:
        # Nothing was judged: no count may read as a pass.
        console.print(Text(f"could not verify the fixes: {len(report.errors)} error(s) above", style="bold red"))
        return
    counts = report.summary()
    line = (
        f"{counts['tests_run']} test(s) run; {counts['emulation_only']} ran only under emulation "
        f"(skipped on the CPU by their GPU gate); {counts['changed']} changed by the fixes"
    )
    if counts["fails_on_original"]:
        line += f"; {counts['fails_on_original']} fail on the original too"
    console.print(Text(line, style="bold red" if counts["changed"] else "bold"))
