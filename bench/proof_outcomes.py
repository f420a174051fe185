"""Per-test outcomes of one test-suite-proof run, as JSON, and the comparison of an emulated run
with a GPU run test by test (issue 32: "the bench compares with a GPU").

One outcomes file per run (``plain``, ``emulated`` or ``gpu``)::

    {"run": "emulated", "torch": "2.13.0+cpu", "device": "CPU, emulated", "date": "...",
     "code_bases": {"pyro": {"commit": "...", "exit_status": 1, "timed_out": false,
                             "tests": {"tests.ops.test_x::test_y": {"outcome": "passed", "reason": ""}}}}}

An outcome is one of ``OUTCOMES``; ``reason`` is the first line of the failure's or skip's
message. Test ids are ``dotted.module[.Class]::name`` from the JUnit XML, the same in every run.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NOT_EMULATED = "not emulated:"
OUTCOMES = ("passed", "failed", "skipped", "not emulated", "error")

AGREE = "agree"
REFUSED = "refused (not emulated)"
EMULATION_PASSES = "emulation passes where the GPU fails"
EMULATION_FAILS = "emulation fails where the GPU passes"
DIFFER = "outcomes differ otherwise"
ONLY_EMULATED = "only under emulation"
ONLY_GPU = "only on the GPU"
CLASSES = (AGREE, REFUSED, EMULATION_PASSES, EMULATION_FAILS, DIFFER, ONLY_EMULATED, ONLY_GPU)


class OutcomesError(Exception):
    """An outcomes file that is not one this module wrote; the message names the file."""


@dataclass(frozen=True)
class TestOutcome:
    outcome: str  # one of OUTCOMES
    reason: str  # the first line of the message, "" for a pass

    __test__ = False  # a record, not a pytest test class


def first_line(text: str | None, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text and text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def outcome_of(junit_outcome: str, message: str) -> str:
    """A JUnit outcome in this module's terms: a failure emulation raised for what it does not
    model is ``not emulated`` whatever pytest called it."""
    if junit_outcome in ("failed", "error") and NOT_EMULATED in message:
        return "not emulated"
    return junit_outcome


def read_junit(path: Path) -> dict[str, tuple[str, str]]:
    """Test id -> (JUnit outcome: passed, failed, error or skipped; the whole message)."""
    if not path.exists():
        return {}
    tests: dict[str, tuple[str, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                message = (child.get("message") or child.text or "").strip()
                break
        tests[f"{case.get('classname', '')}::{case.get('name', '')}"] = (outcome, message)
    return tests


def outcomes_from_junit(path: Path) -> dict[str, TestOutcome]:
    return {nodeid: TestOutcome(outcome_of(o, m), first_line(m)) for nodeid, (o, m) in read_junit(path).items()}


# --- the JSON file -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CodeBaseOutcomes:
    commit: str
    exit_status: int
    timed_out: bool
    tests: Mapping[str, TestOutcome]


@dataclass(frozen=True)
class RunOutcomes:
    run: str  # plain, emulated or gpu
    torch: str
    device: str
    date: str
    code_bases: Mapping[str, CodeBaseOutcomes]


def to_json(run: RunOutcomes) -> dict[str, Any]:
    return {
        "run": run.run, "torch": run.torch, "device": run.device, "date": run.date,
        "code_bases": {
            name: {
                "commit": cb.commit, "exit_status": cb.exit_status, "timed_out": cb.timed_out,
                "tests": {nodeid: {"outcome": t.outcome, "reason": t.reason} for nodeid, t in sorted(cb.tests.items())},
            }
            for name, cb in run.code_bases.items()
        },
    }


def from_json(data: Any, source: str) -> RunOutcomes:
    """The outcomes ``to_json`` wrote; anything else is an ``OutcomesError`` naming ``source``."""
    try:
        code_bases = {}
        for name, cb in data["code_bases"].items():
            tests = {}
            for nodeid, t in cb["tests"].items():
                if t["outcome"] not in OUTCOMES:
                    raise OutcomesError(f"{source}: {name} {nodeid}: unknown outcome {t['outcome']!r}")
                tests[nodeid] = TestOutcome(t["outcome"], t.get("reason", ""))
            code_bases[name] = CodeBaseOutcomes(cb["commit"], cb["exit_status"], cb["timed_out"], tests)
        return RunOutcomes(data["run"], data["torch"], data["device"], data["date"], code_bases)
    except (KeyError, TypeError, AttributeError) as error:
        raise OutcomesError(f"{source}: not a test-suite-proof outcomes file (missing or malformed {error})") from None


# --- the comparison ------------------------------------------------------------------------------

FAILS = ("failed", "error")


def classify(emulated: TestOutcome | None, gpu: TestOutcome | None) -> str:
    """One test's class. ``failed`` and ``error`` count as the same (both: the test did not pass);
    a refusal is never an agreement, whatever the GPU did."""
    if emulated is None and gpu is None:
        raise ValueError("a test is in at least one run")
    if gpu is None:
        return ONLY_EMULATED
    if emulated is None:
        return ONLY_GPU
    if emulated.outcome == "not emulated":
        return REFUSED
    emu = "fails" if emulated.outcome in FAILS else emulated.outcome
    real = "fails" if gpu.outcome in FAILS else gpu.outcome
    if emu == real:
        return AGREE
    if emu == "passed" and real == "fails":
        return EMULATION_PASSES
    if emu == "fails" and real == "passed":
        return EMULATION_FAILS
    return DIFFER


@dataclass(frozen=True)
class Difference:
    code_base: str
    nodeid: str
    kind: str
    emulated: TestOutcome | None
    gpu: TestOutcome | None


@dataclass(frozen=True)
class Comparison:
    counts: Mapping[str, Counter[str]]  # code base -> class -> tests
    differences: Sequence[Difference]  # every test not in AGREE
    missing: Mapping[str, str]  # code base in one run only -> which


def compare(emulated: RunOutcomes, gpu: RunOutcomes) -> Comparison:
    counts: dict[str, Counter[str]] = {}
    differences: list[Difference] = []
    missing: dict[str, str] = {}
    for name in sorted(set(emulated.code_bases) | set(gpu.code_bases)):
        if name not in gpu.code_bases:
            missing[name] = "only in the emulated run"
            continue
        if name not in emulated.code_bases:
            missing[name] = "only in the GPU run"
            continue
        emu, real = emulated.code_bases[name].tests, gpu.code_bases[name].tests
        counts[name] = Counter()
        for nodeid in sorted(set(emu) | set(real)):
            kind = classify(emu.get(nodeid), real.get(nodeid))
            counts[name][kind] += 1
            if kind != AGREE:
                differences.append(Difference(name, nodeid, kind, emu.get(nodeid), real.get(nodeid)))
    return Comparison(counts, differences, missing)


def _markdown(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return lines + ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]


def _cell(got: TestOutcome | None) -> str:
    if got is None:
        return "-"
    return f"{got.outcome}: {got.reason}" if got.reason and got.outcome != "passed" else got.outcome


def comparison_report(comparison: Comparison, emulated: RunOutcomes, gpu: RunOutcomes) -> list[str]:
    out = [
        f"## Emulation ({emulated.device}, torch {emulated.torch}, {emulated.date}) against the GPU "
        f"({gpu.device}, torch {gpu.torch}, {gpu.date})", "",
    ]
    rows = []
    total: Counter[str] = Counter()
    for name, counts in comparison.counts.items():
        total.update(counts)
        rows.append([name, sum(counts.values()), *(counts[kind] for kind in CLASSES)])
    rows.append(["all", sum(total.values()), *(total[kind] for kind in CLASSES)])
    out += _markdown(["code base", "tests", *CLASSES], rows)
    out += ["", f"Agree: {total[AGREE]} of {sum(total.values())}.", ""]
    for name, where in comparison.missing.items():
        out.append(f"- {name}: {where}, not compared")
    if comparison.differences:
        out += ["", "Every test that does not agree:", ""]
        out += _markdown(
            ["code base", "test", "class", "emulated", "GPU"],
            ([d.code_base, f"`{d.nodeid}`", d.kind, _cell(d.emulated), _cell(d.gpu)] for d in comparison.differences),
        )
    return out
