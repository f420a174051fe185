"""What makes devlint fast must not change what it finds: the prefilter, the positions shortcut,
the walker, the parallel executor and the cache. These tests check behaviour, never timing."""

from __future__ import annotations

import gc
import importlib.util
import json
import multiprocessing
import random
import threading
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from libcst.metadata import MetadataWrapper, PositionProvider

import devlint.run.pool
from devlint.analysis.tree import children
from devlint.engine.context import FileContext
from devlint.engine.interning import SHARED_KINDS
from devlint.engine.lint import ParseError, fix_text, lint_text, parse
from devlint.engine.positions import positions
from devlint.engine.walk import walk
from devlint.fixes import LineIndex
from devlint.gate import prefilter
from devlint.registry import all_rules, rule_by_code, select_rules
from devlint.rule import Rule, Word
from devlint.run.cache import CACHEDIR_TAG, Cache
from devlint.run.command import Options, run_check
from devlint.run.job import FileResult, Job
from devlint.run.pool import Executor, execute
from devlint.run.source import SourceError, decode

ROOT = Path(__file__).resolve().parent.parent
RULES = select_rules(None)
JOB = Job(codes=tuple(rule.code for rule in RULES))

CUDA = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nx = torch.ones(3).cuda()\n"
CLEAN = "import torch\nx = torch.ones(2)\n"
NO_TRIGGER = "def add(a, b):\n    return a + b\n"
BROKEN = "import torch\ndef f(:\n    x.cuda()\n"


def _torch_directory() -> Path | None:
    """The installed torch package, found without importing it (that takes seconds)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _tree(root: Path, count: int = 24) -> list[Path]:
    """Files of varied size and kind: findings, none, no trigger at all, a syntax error."""
    root.mkdir(parents=True, exist_ok=True)
    kinds = [CUDA, CLEAN, NO_TRIGGER, BROKEN]
    paths = []
    for index in range(count):
        path = root / f"m{index:02d}.py"
        padding = "# padding\n" * (index * 37 % 200)
        path.write_text(padding + kinds[index % len(kinds)])
        paths.append(path)
    return paths


def _summary(results: list[FileResult]) -> list[tuple]:
    return [
        (r.filename, [(f.code, f.location, f.end_location, f.fix) for f in r.findings], str(r.error) if r.error else None)
        for r in results
    ]


# -- the prefilter ------------------------------------------------------------------------------


def test_prefilter_findings_are_identical_on_the_whole_torch_corpus() -> None:
    """Every .py file of the installed torch package (about 2,300 files): where the prefilter
    skips a file, linting it fully finds nothing. Where it lets a file through, only the rules
    whose triggers the file holds run: checked against all rules on every 40th such file under
    30 KB (all of them would take minutes)."""
    torch = _torch_directory()
    if torch is None:
        pytest.skip("torch is not installed: no corpus")
    skipped = passed = 0
    sample: list[tuple[Path, str]] = []
    for path in sorted(torch.rglob("*.py")):
        try:
            text = decode(path.read_bytes()).text
        except (OSError, SourceError):
            continue
        if prefilter.may_match(text, RULES):
            passed += 1
            if passed % 40 == 0 and len(text) < 30_000:
                sample.append((path, text))
            continue
        skipped += 1
        try:
            assert lint_text(text, str(path), RULES, prefilter=False) == [], path
        except ParseError:
            continue
    assert skipped > 100 and passed > 100
    for path, text in sample:
        assert lint_text(text, str(path), RULES) == lint_text(text, str(path), RULES, prefilter=False)


def test_prefilter_matches_triggers_literally() -> None:
    class Dotted(Rule):
        code, name, triggers = "DEV990", "dotted", ("a.b",)

    assert prefilter.may_match("x = a.b", [Dotted])
    assert not prefilter.may_match("x = axb", [Dotted])


def test_word_triggers_match_whole_identifiers_only() -> None:
    class Loads(Rule):
        code, name, triggers = "DEV993", "loads", (Word("load"),)

    class Plain(Rule):
        code, name, triggers = "DEV994", "plain", ("load",)

    for text in ("torch.load(p)", "from torch import load as ld", "load", "x=load\n", "getattr(torch, 'load')"):
        assert prefilter.may_match(text, [Loads]) and prefilter.matching_rules(text, [Loads]) == [Loads], text
    for text in ("from typing import overload", "m.load_state_dict(s)", "payload", "_load()", "load2", "unload"):
        assert not prefilter.may_match(text, [Loads]) and prefilter.matching_rules(text, [Loads]) == [], text
    # Beside a plain trigger of the same text, the plain one decides.
    assert prefilter.matching_rules("overload", [Loads, Plain]) == [Plain]
    assert prefilter.triggers([Loads, Plain]) == ("load",)


@settings(max_examples=400, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ampload_ x.(9\u00e9\u0663\u2160\n")), max_size=40),
    word=st.sampled_from(["amp", "load", "a", "_l"]),
)
def test_has_word_is_the_regex_of_a_whole_identifier(text: str, word: str) -> None:
    """``has_word`` (str.find and a look at each side) says what ``(?<!\\w)word(?!\\w)`` says,
    Unicode letters and digits (``é``, Arabic-Indic digits, Roman numerals) included."""
    import re

    assert prefilter.has_word(text, word) == (re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text) is not None)


def test_dev605_needs_a_namespace_as_a_whole_identifier() -> None:
    """DEV605 reports only names under torch.accelerator, torch.amp, torch.Stream, torch.Event or a
    device module: each spelled as an identifier in the file. Torch's own files that hold them only
    inside other words (`sample`, `clamp`, `CUDAStream`, `EventList`) are not read for it."""
    rule = rule_by_code("DEV605")
    for case in rule.INVALID:
        assert prefilter.matching_rules(case.code, [rule]) == [rule], case.code
    for text in (
        "import torch\ntorch.amp.missing()\n",
        "from torch import amp\namp.missing()\n",
        "from torch.accelerator import missing\n",
        "import torch as t\nt.Stream.missing()\n",
    ):
        assert prefilter.matching_rules(text, [rule]) == [rule], text
        assert lint_text(text, "t.py", [rule]) == lint_text(text, "t.py", [rule], prefilter=False) != [], text
    for text in ("x = sample(clamp(y))\n", "from torch.cuda import CUDAStream\n", "events = EventList()\n"):
        assert prefilter.matching_rules(text, [rule]) == [], text


def test_only_the_rules_whose_triggers_appear_run_in_their_order() -> None:
    by_code = {rule.code: rule for rule in RULES}
    chosen = prefilter.matching_rules("import torch\nmodel = torch.load(p).cuda()\n", RULES)
    assert [rule.code for rule in chosen] == sorted(code for code, rule in by_code.items() if "cuda" in rule.triggers or "load" in rule.triggers)
    assert by_code["DEV101"] in chosen and by_code["DEV402"] in chosen and by_code["DEV403"] not in chosen
    assert prefilter.matching_rules("x = 1\n", RULES) == []


def test_a_rule_without_triggers_turns_the_prefilter_off() -> None:
    class Anywhere(Rule):
        code, name, triggers = "DEV991", "anywhere", ()

    assert prefilter.may_match("x = 1", [Anywhere, *RULES])
    assert not prefilter.may_match("x = 1", [])


def test_every_shipped_rule_declares_triggers() -> None:
    assert all(rule.triggers for rule in all_rules())


# -- positions ----------------------------------------------------------------------------------


def _position_sources() -> list[str]:
    texts = [path.read_text() for path in sorted((ROOT / "fixtures" / "pairs").glob("*.py"))]
    texts.append("x = (\n    a  # c\n)\r\ny = [1,\r\n 2]\r\n@d\nclass C:\n\tdef f(self): return  1\nz = 'é' ; w = 2")
    texts.append("if x:\n    pass\nelse:\n    y = 1")
    return texts


@pytest.mark.parametrize("text", _position_sources(), ids=lambda text: str(len(text)))
def test_positions_equal_libcsts_for_every_node_and_for_any_few(text: str) -> None:
    module = parse(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    lines = LineIndex(text)
    # Whitespace and punctuation nodes are shared while parsing (devlint.engine.interning): one object
    # stands in many places, so it has no one position, and no rule ever asks for one.
    nodes = [node for node in expected if not isinstance(node, SHARED_KINDS)]
    every = positions(module, lines, nodes)
    assert all(every[node] == expected[node] for node in nodes)
    rng = random.Random(len(text))
    for _ in range(5):
        few = rng.sample(nodes, min(7, len(nodes)))
        found = positions(module, lines, few)
        assert [found[node] for node in few] == [expected[node] for node in few]


def test_statements_ending_in_a_shared_parenthesis_end_where_they_end() -> None:
    """Every `from m import (...)` whose `)` ends alike shares one `)` object (interning), and a
    statement's range ends at its `)`: each must end at its own, as in a parse that shares
    nothing (LibCST's PositionProvider on the shared tree would give the first one's end)."""
    text = (
        "import torch\nfrom a import (\n    b,\n)\nfrom c import (\n    d,\n    e,\n)\n"
        "import os, sys\nfrom f import (g)\nfrom h import (i)\nx = torch.zeros(2).cuda()\n"
    )
    module = parse(text)
    assert module.body[1].body[0].rpar is module.body[2].body[0].rpar  # shared, as the case needs
    plain = cst.parse_module(text)
    expected = MetadataWrapper(plain, unsafe_skip_copy=True).resolve(PositionProvider)
    found = positions(module, LineIndex(text), list(module.body))
    assert [found[s] for s in module.body] == [expected[s] for s in plain.body]


def test_the_definition_goes_after_the_last_of_several_parenthesised_imports() -> None:
    text = "import torch\nfrom a import (\n    b,\n)\nfrom c import (\n    d,\n)\n\nx = torch.zeros(2).cuda()\n"
    from devlint.engine.lint import fix_text

    fixed = fix_text(text, "t.py", RULES).text
    assert fixed.index("device = ") > fixed.index("from c import")


def test_a_node_not_asked_for_is_still_positioned() -> None:
    text = "import torch\nx = torch.ones(2).cuda()\n"
    module = parse(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    found = positions(module, LineIndex(text), [module.body[0]])
    call = module.body[1].body[0].value
    assert found[call] == expected[call]


# -- the walker ---------------------------------------------------------------------------------


class _Recorder(Rule):
    code, name, triggers = "DEV992", "recorder", ("",)

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.events: list[tuple[str, int]] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.events.append(("visit", id(node)))

    def leave_Call(self, node: cst.Call) -> None:
        self.events.append(("leave", id(node)))

    def visit_Name(self, node: cst.Name) -> None:
        self.events.append(("visit", id(node)))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.events.append(("leave", id(node)))


def _reference_events(node: cst.CSTNode, events: list[tuple[str, int]]) -> None:
    if isinstance(node, (cst.Call, cst.Name)):
        events.append(("visit", id(node)))
    for child in children(node):
        _reference_events(child, events)
    if isinstance(node, (cst.Call, cst.FunctionDef)):
        events.append(("leave", id(node)))


def test_walk_visits_and_leaves_in_the_order_of_a_plain_recursive_walk() -> None:
    text = (ROOT / "fixtures" / "pairs" / "dev101_training_script.py").read_text()
    text += "\ndef f(a):\n    return g(h(a), [k(b) for b in a])\n"
    module = parse(text)
    ctx = FileContext("t.py", text, module)
    rule = _Recorder(ctx)
    walk(ctx, [rule])
    expected: list[tuple[str, int]] = []
    _reference_events(module, expected)
    assert rule.events == expected
    assert len(ctx.parents) > 100
    for child, parent in ctx.parents.items():
        assert child in children(parent)


# -- the executor -------------------------------------------------------------------------------


def test_results_come_back_in_input_order_whatever_the_jobs(tmp_path: Path) -> None:
    paths = _tree(tmp_path / "src", 30)
    paths.insert(5, tmp_path / "missing.py")
    paths.reverse()
    work = [(path, JOB) for path in paths]
    serial = execute(work, jobs=1)
    parallel = execute(work, jobs=2)
    assert [r.filename for r in parallel] == [str(path) for path in paths]
    assert _summary(parallel) == _summary(serial)
    assert any(r.findings for r in serial) and any(r.error for r in serial)
    assert "cannot read" in str(serial[paths.index(tmp_path / "missing.py")].error)


def test_workers_start_afresh_while_another_thread_runs(tmp_path: Path) -> None:
    """Forking with a live thread (a progress bar) is unsafe: the workers are spawned instead."""
    work = [(path, JOB) for path in _tree(tmp_path, 12)]
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        parallel = execute(work, jobs=2)
    finally:
        stop.set()
        thread.join()
    assert _summary(parallel) == _summary(execute(work, jobs=1))


def test_where_no_process_can_start_files_are_checked_in_this_process(tmp_path: Path, monkeypatch) -> None:
    class NoProcesses:
        def Pool(self, *args, **kwargs):
            raise OSError("this platform lacks a functioning sem_open implementation")

    work = [(path, JOB) for path in _tree(tmp_path, 12)]
    expected = _summary(execute(work, jobs=1))
    monkeypatch.setattr(multiprocessing, "get_context", lambda method: NoProcesses())
    assert _summary(execute(work, jobs=2)) == expected


def test_one_executor_serves_every_batch_of_a_progress_bar_with_one_set_of_workers(tmp_path: Path, monkeypatch) -> None:
    work = [(path, JOB) for path in _tree(tmp_path, 40)]
    expected = _summary(execute(work, jobs=1))
    pools = []
    real = Executor._start_pool

    def start(self: Executor):
        pools.append(real(self))
        return pools[-1]

    monkeypatch.setattr(Executor, "_start_pool", start)
    with Executor(jobs=2) as run:
        batches = run(work[:20]) + run(work[20:])
    assert _summary(batches) == expected
    assert len(pools) == 2 and pools[0] is pools[1] is not None
    assert run._pool is None


def test_a_few_files_are_checked_in_this_process(tmp_path: Path, monkeypatch) -> None:
    paths = _tree(tmp_path, 3)
    monkeypatch.setattr(Executor, "_start_pool", lambda self: pytest.fail("started workers for three files"))
    assert len(execute([(path, JOB) for path in paths], jobs=4)) == 3


def test_chunks_start_with_the_largest_files_and_stay_small() -> None:
    tasks = [devlint.run.pool._Task(i, Path(f"{i}.py"), JOB, size) for i, size in enumerate([10, 500_000, 30, 70_000])]
    chunks = devlint.run.pool._chunks(sorted(tasks, key=lambda task: -task.size))
    assert [index for index, _, _ in chunks[0]] == [1]
    assert [index for index, _, _ in chunks[1]] == [3]
    assert sorted(index for chunk in chunks for index, _, _ in chunk) == [0, 1, 2, 3]


def test_the_collector_is_paused_only_while_files_are_checked(tmp_path: Path) -> None:
    assert gc.isenabled()
    execute([(path, JOB) for path in _tree(tmp_path, 2)], jobs=1)
    assert gc.isenabled()


# -- the cache ----------------------------------------------------------------------------------


def test_a_warm_run_parses_nothing_and_reports_the_same(tmp_path: Path, monkeypatch) -> None:
    paths = _tree(tmp_path / "src", 12)
    work = [(path, JOB) for path in paths]
    cold = execute(work, jobs=1, cache=Cache(tmp_path / "cache"))
    monkeypatch.setattr(devlint.run.pool, "_process", lambda *a: pytest.fail("a cached file was checked again"))
    warm = execute(work, jobs=1, cache=Cache(tmp_path / "cache"))
    assert _summary(warm) == _summary(cold)
    assert [r.findings for r in warm] == [r.findings for r in cold]


def test_a_fix_that_removes_an_import_is_cached_whole(tmp_path: Path, monkeypatch) -> None:
    """A fix carries the uses of imported names it removes (a set, which JSON lacks): the cache
    keeps it, and a warm run reads back the same findings, fixes included."""
    path = tmp_path / "amp.py"
    path.write_text("import torch\nfrom torch.cuda.amp import autocast\nwith autocast():\n    pass\n")
    cold = execute([(path, JOB)], jobs=1, cache=Cache(tmp_path / "cache"))
    assert any(f.fix is not None and f.fix.releases for f in cold[0].findings)
    monkeypatch.setattr(devlint.run.pool, "_process", lambda *a: pytest.fail("a cached file was checked again"))
    warm = execute([(path, JOB)], jobs=1, cache=Cache(tmp_path / "cache"))
    assert warm[0].findings == cold[0].findings
    assert [f.fix.releases for f in warm[0].findings] == [f.fix.releases for f in cold[0].findings]


def test_identical_content_under_another_name_reports_that_name(tmp_path: Path) -> None:
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text(CUDA)
    second.write_text(CUDA)
    execute([(first, JOB)], jobs=1, cache=Cache(tmp_path / "cache"))
    (result,) = execute([(second, JOB)], jobs=1, cache=Cache(tmp_path / "cache"))
    assert result.findings and all(f.filename == str(second) for f in result.findings)


def test_changed_content_or_other_rules_or_settings_miss(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text(CUDA)
    cache_dir = tmp_path / "cache"
    assert len(execute([(path, JOB)], jobs=1, cache=Cache(cache_dir))[0].findings) == 2
    path.write_text(CUDA + "y = torch.zeros(1).cuda()\n")
    assert len(execute([(path, JOB)], jobs=1, cache=Cache(cache_dir))[0].findings) == 3
    only_loads = Job(codes=("DEV402",))
    assert execute([(path, only_loads)], jobs=1, cache=Cache(cache_dir))[0].findings == []
    renamed = Job(codes=JOB.codes, settings=type(JOB.settings)(device_name="dev"))
    (result,) = execute([(path, renamed)], jobs=1, cache=Cache(cache_dir))
    assert any("dev" in e.content for f in result.findings if f.fix for e in f.fix.edits)


def test_the_cache_folder_is_tagged_ignored_and_left_without_temporary_files(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    execute([(path, JOB) for path in _tree(tmp_path / "src", 4)], jobs=1, cache=Cache(cache_dir))
    assert (cache_dir / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (cache_dir / "CACHEDIR.TAG").read_text() == CACHEDIR_TAG
    assert (cache_dir / ".gitignore").read_text() == "*\n"
    stores = list(cache_dir.glob("*.json"))
    assert len(stores) == 1 and json.loads(stores[0].read_text())
    assert not [p for p in cache_dir.iterdir() if p.name.endswith(".tmp")]


def test_the_cache_key_reads_libcsts_version_even_without_its_version_file(monkeypatch) -> None:
    """Where LibCST's version file cannot be read, the key falls back to the installed version."""
    from importlib import metadata

    from devlint.run import cache

    def unreadable(self: Path) -> bytes:
        raise OSError("no version file")

    monkeypatch.setattr(Path, "read_bytes", unreadable)
    assert cache._libcst_version() == metadata.version("libcst")


@pytest.mark.parametrize(
    "garbage",
    [b"\x00\xff not json", b"[1, 2, 3]", b'{"py:x": "y"}', b"[" * 50_000, None],
    ids=["bytes", "list", "bad-entry", "deep", "bad-entries"],
)
def test_a_corrupt_cache_is_a_miss_never_an_error(tmp_path: Path, garbage: bytes | None) -> None:
    paths = _tree(tmp_path / "src", 8)
    work = [(path, JOB) for path in paths]
    cache_dir = tmp_path / "cache"
    expected = _summary(execute(work, jobs=1, cache=Cache(cache_dir)))
    (store,) = cache_dir.glob("*.json")
    if garbage is None:
        # Valid JSON whose entries have the right outer shape and nonsense inside.
        entries = json.loads(store.read_text())
        store.write_text(json.dumps({key: [value[0], {"findings": [{"code": 1}], "error": 5}] for key, value in entries.items()}))
    else:
        store.write_bytes(garbage)
    assert _summary(execute(work, jobs=1, cache=Cache(cache_dir))) == expected
    # ...and the next run rewrote it into a working cache.
    assert _summary(execute(work, jobs=1, cache=Cache(cache_dir))) == expected


def test_an_unwritable_cache_never_breaks_a_run(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    paths = _tree(tmp_path / "src", 6)
    results = execute([(path, JOB) for path in paths], jobs=1, cache=Cache(blocker / "cache"))
    assert _summary(results) == _summary(execute([(path, JOB) for path in paths], jobs=1))


def test_fix_runs_reuse_check_results_only_where_nothing_would_be_fixed(tmp_path: Path) -> None:
    clean, dirty = tmp_path / "clean.py", tmp_path / "dirty.py"
    clean.write_text(CLEAN)
    dirty.write_text(CUDA)
    cache_dir = tmp_path / "cache"
    execute([(clean, JOB), (dirty, JOB)], jobs=1, cache=Cache(cache_dir))
    fix = Job(codes=JOB.codes, fix=True)
    results = execute([(clean, fix), (dirty, fix)], jobs=1, cache=Cache(cache_dir))
    assert results[1].fixes_applied == 2 and ".to(device)" in dirty.read_text()
    assert results[0].fixes_applied == 0 and clean.read_text() == CLEAN


def test_the_cli_writes_the_cache_and_no_cache_bypasses_it(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DEVLINT_CACHE_DIR", raising=False)
    (tmp_path / "a.py").write_text(CUDA)
    assert run_check(Options(paths=["a.py"], output_format="concise", no_cache=True)) == 1
    assert not (tmp_path / ".devlint_cache").exists()
    capsys.readouterr()
    assert run_check(Options(paths=["a.py"], output_format="concise", jobs=1)) == 1
    assert (tmp_path / ".devlint_cache" / "CACHEDIR.TAG").is_file()
    first = capsys.readouterr().out
    assert run_check(Options(paths=["a.py"], output_format="concise")) == 1
    assert capsys.readouterr().out == first


def test_a_checked_file_leaves_no_tree_for_the_garbage_collector() -> None:
    """Once a check's findings are out, nothing of its tree is held in a reference cycle: the tree
    is freed as the last reference goes, not by the collector walking all of it (which took
    0.45 s of 11.3 s in one process on issue 29's corpus)."""
    files = [path for path in sorted((ROOT / "fixtures").rglob("*.py")) if "cuda" in path.read_text(encoding="utf-8")][:25]
    assert len(files) == 25
    found = fixed = 0
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for path in files:
            text = path.read_text(encoding="utf-8")
            try:
                found += len(lint_text(text, path.name, RULES))
                fixed += fix_text(text, path.name, RULES, unsafe=True).applied
            except ParseError:
                continue
            gc.collect()
            held = [type(node).__name__ for node in gc.garbage if isinstance(node, cst.CSTNode)]
            assert held == [], (path, held[:5])
            gc.garbage.clear()
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert found > 25 and fixed > 10
