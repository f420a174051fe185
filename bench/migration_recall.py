"""devlint against maintainers' own torch.cuda -> generic-device migrations: recall and the fixes side by side.

    .venv/bin/python bench/migration_recall.py --mirrors /work/.mirror
    .venv/bin/python bench/migration_recall.py --mirrors /work/.mirror --only torchao-test --torch-version 2.9 --show
    .venv/bin/python bench/migration_recall.py --mirrors /work/.mirror --defaults

Each entry of ``MIGRATIONS`` names a code base of ``bench/real_repos.py`` (pinned at the parent of
the first migration commit) and the maintainers' commits that moved it off CUDA. A *migrated
line* is a line such a commit removed that names CUDA (``torch.cuda.X``, ``.cuda(``, a ``"cuda"``
string) in a diff hunk whose added lines no longer name that same thing: the maintainers replaced
it by something device-generic, not deleted it or kept it. Hunks that only delete are left out.

Each migrated line is found in the pinned tree (the file at the commit's parent mapped onto the
pinned file with difflib; a line the pinned tree lacks is counted apart), and devlint runs once on
the pinned export, as a user would: ``check --output-format json --no-cache`` with the options
given (default ``--extend-select DEV604 --torch-version 2.9``). A migrated line is *reported* when
a finding starts on it. The table gives recall per code base for ``torch.cuda.X`` lines (the
main figure) and for every CUDA-naming line; ``--show`` prints each line with the maintainers'
replacement and devlint's (the finding's fix applied alone), which is what agreement is judged on.
Nothing fetched is committed: the trees are read from mirrors (see ``bench/real_repos.py``).
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from real_repos import CODE_BASES, CodeBase, SourceError, apply_edits, export_tree, mirror_git_dir, run_devlint, split_lines


@dataclass(frozen=True)
class Migration:
    """A code base of ``CODE_BASES`` and the maintainers' commits that moved it off torch.cuda."""

    base: str
    commits: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    # huggingface/peft: "Support XPU for ... example", one example folder per pull request (Aug-Sep 2025).
    Migration(
        "peft-examples",
        (
            "49b29c1d1acbba8385ec332f76135c2ab5d5acfc", "951e720081322c96043dde1ca8862cd2fd83907a",
            "68265a1583a5443f98797234773ff35e32393982", "207b27ec2c311ddfe752d7bb0d121a49f4392c3f",
            "daee6367aa046a4c71a630b701da7af4b24eb2a0", "86feb8c4f93ffce90ad75d69412d67592b6a8f62",
            "6d531c77a429f9c75ed01de532c3cbadff8fc1b5", "e3d8fc98f145b40865a5d842ed6e794ec870077c",
            "6a33744cc22e9f3ef286bbf7f97c167f77c91e8f", "154ef3756156da2a8167410a8f0c4b909fd8ce94",
            "d7194f869ac9ae1a073eb7191e0bd384eabae3f7", "a7781aa5e045fbda4d16b9a440e2eb5edd12e53b",
            "5ef4362e12239062ed5cbc5198494ccb6c9a98ea", "78bf27dd429e99beaea0824d0daa3ab2b207809f",
            "766a9776bb8eb2a73e66d7303958e8a92e5f364d", "a72bbaabf77314d64dc702424a484c519df62af1",
            "e98a59ec2db55908936e18fce42cdc5ae5ed48d2", "c15daaa5aa84cd757ed706106349fc5460b9db50",
        ),
    ),
    # pytorch/ao: "[xpu][test] Port ... UT files to intel XPU" (Nov-Dec 2025); #3411 was reverted, so left out.
    Migration(
        "torchao-test",
        (
            "6e21a1f5a2dc97484728c426c60a67391996ab26", "8d546c83f6c8ec38c2c8ce0e41e35bcd12be841d",
            "b0a668c75238f34273f321244bc4db23cbdf6b43", "2872c9b8255ffa9e7597a7a825b7066e0652d236",
            "1272f3cfa2e1c40f9c28ab1afbedf7e032993f03", "70e903b7238e68fcca714b9633ab9c21d7fbf798",
            "39d333c660cd23526018f2f67e0f65d076082d6c", "ff6d9e24421cf4b1e98a2ae139144adbc038e6f8",
        ),
    ),
    # huggingface/accelerate #3759: torch_native_parallelism examples made device agnostic.
    Migration("accelerate-examples", ("40ebb4bea35a1e0de22e68c29f5c446f86e58530",)),
    # pytorch/torchtune #2847: activation offloading for XPU (streams and devices via torch.accelerator).
    Migration("torchtune-training", ("7d30d4ccc3a70708776badf7ce00f407d4dc9d12",)),
)

# What names CUDA on a line; the first group is the main figure's kind.
TORCH_CUDA = re.compile(r"torch\.cuda\.\w+")
OTHER_CUDA = re.compile(r"\.cuda\(|[\"']cuda(?::[^\"']*)?[\"']")
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class MigratedLine:
    """A line a maintainers' commit moved off CUDA, with where it is in the pinned tree."""

    commit: str
    path: str
    parent_row: int
    text: str
    tokens: tuple[str, ...]
    replacement: tuple[str, ...]
    pinned_row: int | None

    @property
    def torch_cuda(self) -> bool:
        return any(t.startswith("torch.cuda.") for t in self.tokens)


def _git(git_dir: Path, *args: str) -> str:
    done = subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True)
    if done.returncode != 0:
        raise SourceError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode("utf-8", errors="replace")


def cuda_tokens(line: str) -> tuple[str, ...]:
    return tuple(TORCH_CUDA.findall(line)) + tuple(OTHER_CUDA.findall(line))


def hunks(diff: str) -> list[tuple[str, list[tuple[int, str]], list[str]]]:
    """(path, removed (old row, text), added texts) per hunk of a ``-U0`` diff."""
    out: list[tuple[str, list[tuple[int, str]], list[str]]] = []
    path = ""
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else ""
        elif line.startswith("--- "):
            continue
        elif match := HUNK.match(line):
            out.append((path, [], []))
            row = int(match[1])
        elif out and line.startswith("-"):
            out[-1][1].append((row, line[1:]))
            row += 1
        elif out and line.startswith("+"):
            out[-1][2].append(line[1:])
    return out


def row_map(parent: list[str], pinned: list[str]) -> dict[int, int]:
    """1-based rows of ``parent`` that are unchanged in ``pinned``, to their rows there."""
    mapping: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, parent, pinned, autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            mapping[block.a + k + 1] = block.b + k + 1
    return mapping


def migrated_lines(git_dir: Path, base: CodeBase, migration: Migration) -> list[MigratedLine]:
    prefix = f"{base.subdir.strip('/')}/" if base.subdir else ""
    found: list[MigratedLine] = []
    for commit in migration.commits:
        diff = _git(git_dir, "diff", "-U0", "--no-renames", f"{commit}^", commit, "--", f"{prefix}*.py" if prefix else "*.py")
        pinned_cache: dict[str, dict[int, int] | None] = {}
        for path, removed, added in hunks(diff):
            if not added or not path.startswith(prefix):
                continue
            after = "\n".join(added)
            for row, text in removed:
                tokens = cuda_tokens(text)
                if not tokens or all(t in after for t in tokens):
                    continue
                if path not in pinned_cache:
                    pinned_cache[path] = _pinned_rows(git_dir, base, commit, path)
                rows = pinned_cache[path]
                found.append(MigratedLine(commit, path, row, text.strip(), tokens, tuple(a.strip() for a in added), rows.get(row) if rows else None))
    return found


def _pinned_rows(git_dir: Path, base: CodeBase, commit: str, path: str) -> dict[int, int] | None:
    try:
        pinned = _git(git_dir, "show", f"{base.commit}:{path}").splitlines()
    except SourceError:
        return None
    return row_map(_git(git_dir, "show", f"{commit}^:{path}").splitlines(), pinned)


@dataclass(frozen=True)
class Verdict:
    line: MigratedLine
    findings: tuple[dict[str, Any], ...]


def judge(base: CodeBase, lines: Sequence[MigratedLine], tree: Path, options: Sequence[str]) -> list[Verdict]:
    run = run_devlint(["check", *options], tree)
    if run.returncode not in (0, 1, 2) or "Traceback" in run.stderr:
        raise SourceError(f"{base.name}: devlint check failed: {run.stderr.strip()[-500:]}")
    by_row: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for f in run.findings:
        by_row.setdefault((f["filename"], f["location"]["row"]), []).append(f)
    return [Verdict(ml, tuple(by_row.get((ml.path, ml.pinned_row), ()) if ml.pinned_row else ())) for ml in lines]


def devlint_line(tree: Path, finding: dict[str, Any]) -> str:
    """The finding's fix applied alone: the changed lines of the file, joined."""
    if finding["fix"] is None:
        return "(no fix)"
    text = (tree / finding["filename"]).read_text(encoding="utf-8", errors="surrogateescape")
    fixed = apply_edits(text, finding["fix"]["edits"])
    changed = [d[1:].strip() for d in difflib.unified_diff(split_lines(text), split_lines(fixed), n=0) if d.startswith("+") and not d.startswith("+++")]
    return f"[{finding['fix']['applicability']}] " + " / ".join(c for c in changed if c)


def _ratio(hit: int, total: int) -> str:
    return f"{hit}/{total} ({100 * hit / total:.0f}%)" if total else "0/0"


def report(name: str, verdicts: Sequence[Verdict], tree: Path, show: bool) -> tuple[list[str], list[object]]:
    at_pin = [v for v in verdicts if v.line.pinned_row]
    main = [v for v in at_pin if v.line.torch_cuda]
    row = [name, len(verdicts), len(verdicts) - len(at_pin), _ratio(sum(bool(v.findings) for v in main), len(main)), _ratio(sum(bool(v.findings) for v in at_pin), len(at_pin))]
    lines: list[str] = []
    if show:
        lines += [f"## {name}", ""]
        for v in verdicts:
            ml = v.line
            where = f"{ml.path}:{ml.pinned_row}" if ml.pinned_row else f"{ml.path} (not at the pin; {ml.commit[:9]}^:{ml.parent_row})"
            lines.append(f"- `{where}` [{ml.commit[:9]}] `{ml.text}`")
            lines.append(f"  - maintainers: {' / '.join(f'`{a}`' for a in ml.replacement if a)[:400]}")
            for f in v.findings:
                lines.append(f"  - devlint {f['code']}: {devlint_line(tree, f)[:400]}")
            if not v.findings and ml.pinned_row:
                lines.append("  - devlint: not reported")
        lines.append("")
    return lines, row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="folder of bare git mirrors (owner+name/repo)")
    parser.add_argument("--only", help="comma-separated code base names")
    parser.add_argument("--show", action="store_true", help="print every migrated line with both replacements")
    parser.add_argument("--torch-version", default="2.9")
    parser.add_argument("--select", help="devlint --select instead of --extend-select DEV604")
    parser.add_argument("--defaults", action="store_true", help="run devlint with no options (its default rules and torch-version)")
    args = parser.parse_args(argv)
    options = ["--torch-version", args.torch_version, *(["--select", args.select] if args.select else ["--extend-select", "DEV604"])]
    if args.defaults:
        options = []
    wanted = set(args.only.split(",")) if args.only else None
    bases = {b.name: b for b in CODE_BASES}
    rows: list[list[object]] = []
    out: list[str] = []
    for migration in MIGRATIONS:
        if wanted and migration.base not in wanted:
            continue
        base = bases[migration.base]
        git_dir = mirror_git_dir(args.mirrors, base)
        lines = migrated_lines(git_dir, base, migration)
        with tempfile.TemporaryDirectory(prefix="devlint-migration-") as scratch:
            tree = Path(scratch) / "tree"
            export_tree(git_dir, base, tree)
            shown, row = report(base.name, judge(base, lines, tree, options), tree, args.show)
        out += shown
        rows.append(row)
    header = ["code base", "migrated lines", "not at the pin", "torch.cuda.X reported", "all CUDA-naming reported"]
    print(f"devlint check {' '.join(options)}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    print()
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
