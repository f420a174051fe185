"""The map a newcomer reads first matches the code.

CONTRIBUTING.md lists each layer with its step, its folder and what it may import: that list must
be ``ALLOWED`` of tests/test_layers.py, the table the import graph is checked against. The README's
Architecture section must put each folder in the same step, each package's ``__init__`` docstring
must open with that step, and every path, name and command the two documents give must exist.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import pytest
from test_layers import ALLOWED, MODULES, layer

from devlint.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text()


def _section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def layers_listed(text: str) -> dict[str, tuple[int, str, set[str]]]:
    """CONTRIBUTING's layer list: name -> (step, path, the layers it may import)."""
    found = {}
    for item in re.split(r"\n(?=- `)", _section(text, "The layers")):
        head = re.match(r"- `([\w.]+)` \(step (\d+), `([^`]+)`", item)
        if head is None:
            continue
        imports = re.search(r"May import: (.+?)\.(?:\s|$)", " ".join(item.split()))
        assert imports is not None, f"no 'May import:' for {head.group(1)}"
        names = set() if imports.group(1) == "nothing" else set(re.findall(r"`([\w.]+)`", imports.group(1)))
        found[head.group(1)] = (int(head.group(2)), head.group(3), names)
    return found


LAYERS = layers_listed(CONTRIBUTING)
STEP_OF_PATH = {path: step for step, path, _ in LAYERS.values()}


def readme_steps(text: str) -> list[tuple[int, str]]:
    """The README's list of steps: (number, the item's text), before the data path of one file."""
    steps = _section(text, "Architecture").split("\nOne file through", 1)[0]
    return [(int(m.group(1)), m.group(2)) for m in re.finditer(r"^(\d+)\. (.*?)(?=^\d+\. |\Z)", steps, re.M | re.S)]


def _code_spans(text: str) -> list[str]:
    fenced = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    return fenced + re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))


# What commands make and git ignores (a bench's venv, trees it exports): named, never committed.
_MADE = tuple(line.rstrip("/") for line in (ROOT / ".gitignore").read_text().splitlines() if line and "*" in line)


def _made_by_a_command(word: str) -> bool:
    parts = word.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return word.startswith(("/tmp/", "$")) or any(fnmatch.fnmatch(p, pattern) for p in prefixes for pattern in _MADE)


def _path_like(span: str) -> list[str]:
    # Paths of the repository; ``.venv/bin/...`` is where the README's command puts the environment.
    words = [word.strip("'\"[],()").split("=")[-1] for word in span.split()]
    return [
        w
        for w in words
        if ("/" in w or w.endswith((".py", ".md"))) and "<" not in w and not w.startswith(".venv/") and not _made_by_a_command(w)
    ]


def test_contributing_lists_the_layers_the_import_test_allows() -> None:
    assert {name: imports for name, (_, _, imports) in LAYERS.items()} == ALLOWED


def test_the_parsers_can_fail() -> None:
    """A list that leaves out a layer or an import is seen as different."""
    broken = CONTRIBUTING.replace("May import: `torchfacts`, `signals`.", "May import: `torchfacts`.")
    assert layers_listed(broken)["gate"][2] == {"torchfacts"}
    assert readme_steps("\n## Architecture\n\n0. `a/`: x\n1. `b/`: y\n\nOne file through\n") == [(0, "`a/`: x\n"), (1, "`b/`: y\n")]


def test_no_layer_may_import_a_later_step() -> None:
    later = sorted(
        f"{name} (step {step}) -> {below} (step {LAYERS[below][0]})"
        for name, (step, _, imports) in LAYERS.items()
        for below in imports
        if LAYERS[below][0] > step
    )
    assert later == []


def test_each_module_lies_in_the_folder_its_layer_names() -> None:
    misplaced = []
    for module, path in MODULES.items():
        listed = LAYERS[layer(module)][1]
        relative = path.relative_to(ROOT).as_posix()
        if not (relative == listed or (listed.endswith("/") and relative.startswith(listed))):
            misplaced.append(f"{relative}: {layer(module)} is listed at {listed}")
    assert misplaced == []


def test_the_readme_puts_each_layer_in_its_step() -> None:
    placed: dict[str, int] = {}
    for number, item in readme_steps(README):
        for path in re.findall(r"`((?:devlint|rules)/[^`]*)`", item):
            if path in STEP_OF_PATH:
                placed[path] = number
    assert placed == {path: step for path, step in STEP_OF_PATH.items() if not path.startswith("devlint/__")}


@pytest.mark.parametrize(
    "name", sorted(name for name, (_, path, _) in LAYERS.items() if path.startswith("devlint/") and path.endswith("/"))
)
def test_each_package_docstring_opens_with_its_step(name: str) -> None:
    step, path, _ = LAYERS[name]
    docstring = ast.get_docstring(ast.parse((ROOT / path / "__init__.py").read_text())) or ""
    assert docstring.startswith(f"Step {step}"), docstring[:80]


def _folders(text: str) -> list[Path]:
    return [ROOT / path for path in re.findall(r"`((?:devlint|rules|tests|fixtures)/[^`]*/)`", text)]


def test_every_path_contributing_names_exists() -> None:
    missing = []
    for section in CONTRIBUTING.split("\n## "):
        # A bare file name lies in a folder the same section names.
        bases = [ROOT, *_folders(section)]
        for span in _code_spans(section):
            missing += [path for path in _path_like(span) if not any((base / path).exists() for base in bases)]
    assert missing == []


def test_every_path_the_readme_architecture_names_exists() -> None:
    # After the list of steps, paths are written from devlint/ (``run/command.py``), or from
    # verify/ and verify/child/ in what the child side holds.
    data_path = "One file through" + _section(README, "Architecture").split("\nOne file through", 1)[1]
    bases = [ROOT, ROOT / "devlint", ROOT / "devlint" / "verify", ROOT / "devlint" / "verify" / "child"]
    missing = []
    # A bare file name in a step's item lies in that step's folder.
    for text, folders in [*((item, _folders(item)) for _, item in readme_steps(README)), (data_path, [])]:
        for span in re.findall(r"`([^`\n]+)`", text):
            for path in _path_like(span):
                if not any((base / path).exists() for base in [*bases, *folders]):
                    missing.append(path)
    assert missing == []


def test_every_name_said_to_be_in_a_file_is_there() -> None:
    """``NAME`` in ``path``: CONTRIBUTING sends readers to a table or function by name."""
    pairs = re.findall(r"`([\w.]+)` in `([\w.]+/[\w./]+\.py)`", " ".join(CONTRIBUTING.split()))
    assert len(pairs) >= 4
    absent = [f"{name} in {path}" for name, path in pairs if name.rpartition(".")[2] not in (ROOT / path).read_text()]
    assert absent == []


def test_every_test_named_exists() -> None:
    tests = "\n".join(path.read_text() for path in (ROOT / "tests").glob("test_*.py"))
    named = set(re.findall(r"`(test_\w+)`", CONTRIBUTING))
    assert named and [name for name in sorted(named) if f"def {name}(" not in tests] == []


def test_the_commands_before_a_pull_request_are_the_readme_s_and_devlint_s() -> None:
    quick = _section(README, "Quick start")
    readme_test_command = re.findall(r"```sh\n(.+?)\n```", quick, re.S)[1]
    assert readme_test_command in _section(CONTRIBUTING, "Before a pull request")
    commands = build_parser()._subparsers._group_actions[0].choices  # noqa: SLF001
    used = {word for span in _code_spans(CONTRIBUTING) for word in re.findall(r"\bdevlint ([a-z]+)", span)}
    assert "verify" in used and used <= set(commands)
