"""DEV603: the "nccl" backend through a name another module of the project binds (issue 22):
``from .dist_config import BACKEND`` ... ``init_process_group(BACKEND)``, where dist_config.py
says ``BACKEND = "nccl"``. The run reads that module (devlint.run.project_imports), the rule
guards the name at the call (the fix edits the checked file only), and a cached result counts
only while dist_config.py is unchanged."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from devlint.cli import main
from devlint.engine.lint import fix_text, lint_text
from devlint.registry import rule_by_code
from devlint.run.cache import Cache
from devlint.run.job import Job
from devlint.run.pool import execute
from devlint.run.config import FileSettings
from devlint.run.project_imports import imported_constants, scan_imports
from devlint.server.importers import reads
from devlint.server.model import Source
from devlint.settings import FixSettings

CONFIG = 'BACKEND = "nccl"\nDEFAULT = BACKEND\n'
TRAIN = (
    "import torch.distributed as dist\n"
    "from .dist_config import BACKEND\n"
    "from .dist_config import DEFAULT as CHOSEN\n"
    "import mypkg.dist_config as conf\n\n\n"
    "def setup(rank):\n"
    "    dist.init_process_group(BACKEND, rank=rank, world_size=2)\n"
    "    dist.new_group([0, 1], None, CHOSEN)\n"
    "    return dist.new_group([0, 1], backend=conf.BACKEND)\n"
)
ROWS = [8, 9, 10]
# A local copy of the imported name, at module level, in the function, through another copy, on
# both sides of a branch; and imports inside the function, which bind the name there only.
COPIES = (
    "import torch.distributed as dist\n"
    "from .dist_config import BACKEND\n"
    "import mypkg.dist_config as conf\n"
    "SHARED = BACKEND\n\n\n"
    "def setup(rank, fast):\n"
    "    dist.init_process_group(SHARED, rank=rank, world_size=2)\n"
    "    first = conf.BACKEND\n"
    "    second = first\n"
    "    dist.new_group([0, 1], backend=second)\n"
    "    if fast:\n"
    "        chosen = BACKEND\n"
    "    else:\n"
    '        chosen = "nccl"\n'
    "    return dist.new_group([0, 1], None, chosen)\n"
)
COPY_ROWS = [8, 11, 16]
LOCAL_IMPORTS = (
    "import torch.distributed as dist\n"
    'BACKEND = "gloo"\n\n\n'
    "def setup(rank):\n"
    "    from .dist_config import BACKEND\n"
    "    dist.init_process_group(BACKEND, rank=rank, world_size=2)\n\n\n"
    "def side():\n"
    "    import mypkg.dist_config as config\n"
    "    from .dist_config import DEFAULT as chosen\n"
    "    backend = chosen\n"
    "    dist.new_group([0, 1], backend=config.BACKEND)\n"
    "    return dist.new_group([0, 1], backend=backend)\n\n\n"
    "def cpu_side():\n"
    "    return dist.new_group([0, 1], backend=BACKEND)\n"
)
LOCAL_ROWS = [7, 14, 15]
DEV603 = [rule_by_code("DEV603")]


def _project(root: Path, config: str = CONFIG, train: str = TRAIN) -> Path:
    package = root / "mypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "dist_config.py").write_text(config)
    (package / "train.py").write_text(train)
    return package / "train.py"


def _rows(path: Path, settings: FixSettings = FixSettings()) -> list[int]:
    text = path.read_text()
    imported, _ = imported_constants(text, str(path), str(path.parent.parent))
    return sorted(f.location.row for f in lint_text(text, str(path), DEV603, settings, imported=imported))


def test_a_name_imported_from_a_module_that_binds_it_to_nccl_is_reported(tmp_path: Path) -> None:
    train = _project(tmp_path)
    assert _rows(train) == ROWS
    # Without what the other module says, the names say nothing.
    assert lint_text(train.read_text(), str(train), DEV603) == []


@pytest.mark.parametrize(
    "config",
    [
        'BACKEND = "gloo"\nDEFAULT = BACKEND\n',
        # bound twice, or under a block: no one value
        CONFIG + 'BACKEND = "gloo"\n',
        'import torch\nif torch.cuda.is_available():\n    BACKEND = "nccl"\nelse:\n    BACKEND = "gloo"\nDEFAULT = BACKEND\n',
        # read from the environment: the user's choice at run time
        'import os\nBACKEND = os.environ.get("BACKEND", "nccl")\nDEFAULT = BACKEND\n',
    ],
)
def test_a_module_without_one_nccl_value_gives_nothing(tmp_path: Path, config: str) -> None:
    assert _rows(_project(tmp_path, config=config)) == []


@pytest.mark.parametrize(
    "train",
    [
        # rebound on some path to the call
        TRAIN.replace("def setup", 'if not __debug__:\n    BACKEND = CHOSEN = "gloo"\n    conf = None\n\n\ndef setup'),
        # rebound by a function that declares it global
        TRAIN + '\n\ndef reset():\n    global BACKEND, CHOSEN, conf\n    BACKEND = CHOSEN = "gloo"\n    conf = None\n',
        # a parameter of the same name
        TRAIN.replace("def setup(rank)", "def setup(rank, BACKEND, CHOSEN, conf)"),
        # imported twice, from two modules
        TRAIN.replace("import mypkg.dist_config as conf\n", "import mypkg.dist_config as conf\nfrom .other import BACKEND, CHOSEN\nfrom . import other as conf\n"),
    ],
)
def test_a_name_that_may_hold_something_else_at_the_call_gives_nothing(tmp_path: Path, train: str) -> None:
    assert _rows(_project(tmp_path, train=train)) == []


def test_the_fix_guards_the_name_at_the_call_and_keeps_it(tmp_path: Path) -> None:
    train = _project(tmp_path)
    text = train.read_text()
    imported, _ = imported_constants(text, str(train), str(tmp_path))
    fixed = fix_text(text, str(train), DEV603, imported=imported).text
    assert 'dist.init_process_group(BACKEND if torch.cuda.is_available() else "gloo", rank=rank' in fixed
    assert 'dist.new_group([0, 1], None, CHOSEN if torch.cuda.is_available() else "gloo")' in fixed
    assert 'backend=conf.BACKEND if torch.cuda.is_available() else "gloo")' in fixed
    assert fix_text(fixed, str(train), DEV603, imported=imported).text == fixed
    # With DEV604 selected (torch-version >= 2.6) the test is the accelerator's: the name stays
    # the project's choice wherever an accelerator is present.
    accelerator = FixSettings(torch_version=(2, 6), device_expression="accelerator")
    fixed = fix_text(text, str(train), DEV603, accelerator, imported=imported).text
    assert 'dist.init_process_group(BACKEND if torch.accelerator.is_available() else "gloo", rank=rank' in fixed


def test_the_other_module_is_read_only_for_names_given_as_a_backend(tmp_path: Path) -> None:
    train = _project(tmp_path)
    _, dependencies = imported_constants(TRAIN, str(train), str(tmp_path))
    assert dependencies is not None and str(train.parent / "dist_config.py") in dict(dependencies.files)
    text = "from .dist_config import BACKEND\nprint(BACKEND)\nrun(BACKEND)\n"
    assert imported_constants(text, str(train), str(tmp_path))[1] is None


# A copy of the imported name, and a function's own import of it, depend on that module too.
@pytest.mark.parametrize(("text", "found"), [(TRAIN, ROWS), (COPIES, COPY_ROWS), (LOCAL_IMPORTS, LOCAL_ROWS)])
def test_the_cache_counts_an_edit_of_the_module_that_binds_the_backend(tmp_path: Path, text: str, found: list[int]) -> None:
    train = _project(tmp_path / "project", train=text)
    job = Job(codes=("DEV603",), settings=FixSettings(), root=str(tmp_path / "project"))
    cache = tmp_path / "cache"

    def rows() -> list[int]:
        return sorted(f.location.row for f in execute([(train, job)], jobs=1, cache=Cache(cache))[0].findings)

    assert rows() == found
    (train.parent / "dist_config.py").write_text(CONFIG.replace("nccl", "gloo"))
    assert rows() == []
    (train.parent / "dist_config.py").write_text(CONFIG)
    assert rows() == found


def test_devlint_fix_edits_the_checked_file_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    train = _project(tmp_path)
    (tmp_path / "devlint.toml").write_text('select = ["DEV603"]\n')
    monkeypatch.chdir(tmp_path)
    assert main(["fix", "--no-cache", "mypkg"]) == 0
    assert (train.parent / "dist_config.py").read_text() == CONFIG
    assert train.read_text().count('if torch.cuda.is_available() else "gloo"') == 3



@pytest.mark.parametrize(("train", "rows"), [(COPIES, COPY_ROWS), (LOCAL_IMPORTS, LOCAL_ROWS)])
def test_copies_and_imports_inside_a_function_are_followed(tmp_path: Path, train: str, rows: list[int]) -> None:
    assert _rows(_project(tmp_path, train=train)) == rows


@pytest.mark.parametrize("train", [COPIES, LOCAL_IMPORTS])
@pytest.mark.parametrize("config", ['BACKEND = "gloo"\nDEFAULT = BACKEND\n', CONFIG + 'BACKEND = "gloo"\n'])
def test_copies_and_local_imports_of_a_module_without_one_nccl_value_give_nothing(
    tmp_path: Path, train: str, config: str
) -> None:
    assert _rows(_project(tmp_path, config=config, train=train)) == []


@pytest.mark.parametrize(
    ("train", "rows"),
    [
        # the copy rebound on some path to the call
        (COPIES.replace("    dist.new_group([0, 1], backend=second)\n", '    if rank:\n        second = "gloo"\n    dist.new_group([0, 1], backend=second)\n'), [8, 18]),
        # a parameter (the caller's choice), with the imported name as its default
        (COPIES.replace("def setup(rank, fast):", "def setup(rank, fast, second=BACKEND):").replace("    second = first\n", ""), [8, 15]),
        # a copy a function may rebind (`global`)
        (COPIES + "\n\ndef cpu_only():\n    global SHARED\n    SHARED = 'gloo'\n", [11, 16]),
        # the imported name rebound in the file: no one value to copy
        (COPIES.replace("SHARED = BACKEND\n", 'BACKEND = "gloo"\nSHARED = BACKEND\n'), [12]),
        # a copy of something else on one side of the branch
        (COPIES.replace('        chosen = "nccl"\n', '        chosen = "gloo"\n'), [8, 11]),
    ],
)
def test_a_copy_that_may_hold_something_else_at_the_call_gives_nothing(tmp_path: Path, train: str, rows: list[int]) -> None:
    assert _rows(_project(tmp_path, train=train)) == rows


@pytest.mark.parametrize(
    "train",
    [
        # the function's import does not reach the call on every path
        "import torch.distributed as dist\n\n\ndef setup(cpu):\n    if not cpu:\n"
        "        from .dist_config import BACKEND\n    dist.init_process_group(BACKEND)\n",
        # a function's import binds the name in that function only
        "import torch.distributed as dist\n\n\ndef load():\n    from .dist_config import BACKEND\n\n\n"
        "def setup():\n    dist.init_process_group(BACKEND)\n",
        # rebound in the function after its import
        "import torch.distributed as dist\n\n\ndef setup():\n    from .dist_config import BACKEND\n"
        '    BACKEND = "gloo"\n    dist.init_process_group(BACKEND)\n',
        # the same name imported elsewhere in the file from a module that binds it otherwise
        "import torch.distributed as dist\nfrom .other import BACKEND\n\n\ndef setup():\n"
        "    from .dist_config import BACKEND\n    dist.init_process_group(BACKEND)\n",
        # a copy made in a comprehension, whose own name of the same spelling it reads
        "import torch.distributed as dist\nfrom .dist_config import BACKEND\n\n\ndef setup():\n"
        '    [(chosen := BACKEND) for BACKEND in ["gloo"]]\n    dist.init_process_group(chosen)\n',
        # a name the function declares global: the import binds the module's name
        "import torch.distributed as dist\n\n\ndef setup():\n    global BACKEND\n"
        "    from .dist_config import BACKEND\n    dist.init_process_group(BACKEND)\n",
    ],
)
def test_a_local_import_that_may_not_hold_at_the_call_gives_nothing(tmp_path: Path, train: str) -> None:
    train_file = _project(tmp_path, train=train)
    (train_file.parent / "other.py").write_text('BACKEND = "gloo"\n')
    assert _rows(train_file) == []


@pytest.mark.parametrize(
    ("train", "guarded"),
    [
        (
            COPIES,
            [
                'dist.init_process_group(SHARED if torch.cuda.is_available() else "gloo", rank=rank',
                'dist.new_group([0, 1], backend=second if torch.cuda.is_available() else "gloo")',
                'dist.new_group([0, 1], None, chosen if torch.cuda.is_available() else "gloo")',
            ],
        ),
        (
            LOCAL_IMPORTS,
            [
                'dist.init_process_group(BACKEND if torch.cuda.is_available() else "gloo", rank=rank',
                'dist.new_group([0, 1], backend=config.BACKEND if torch.cuda.is_available() else "gloo")',
                'dist.new_group([0, 1], backend=backend if torch.cuda.is_available() else "gloo")',
            ],
        ),
    ],
)
def test_the_fix_guards_a_copy_and_a_local_import_at_the_call(tmp_path: Path, train: str, guarded: list[str]) -> None:
    path = _project(tmp_path, train=train)
    imported, _ = imported_constants(train, str(path), str(tmp_path))
    fixed = fix_text(train, str(path), DEV603, imported=imported).text
    assert all(text in fixed for text in guarded) and fixed.count("is_available()") == len(guarded)
    assert fix_text(fixed, str(path), DEV603, imported=imported).text == fixed
    # The copy keeps the project's value wherever an accelerator is present, as the name does.
    accelerator = FixSettings(torch_version=(2, 6), device_expression="accelerator")
    fixed = fix_text(train, str(path), DEV603, accelerator, imported=imported).text
    assert all(text.replace("torch.cuda", "torch.accelerator") in fixed for text in guarded)


def test_a_copy_not_given_as_a_backend_reads_no_other_module(tmp_path: Path) -> None:
    train = _project(tmp_path)
    text = "from .dist_config import BACKEND\nchosen = BACKEND\nprint(chosen)\n"
    assert imported_constants(text, str(train), str(tmp_path))[1] is None
    given = text + "dist.init_process_group(backend=chosen)\n"
    assert imported_constants(given, str(train), str(tmp_path))[0].get("BACKEND") is not None


@pytest.mark.parametrize("train", [COPIES, LOCAL_IMPORTS])
def test_the_language_server_reads_the_same_constants_and_watches_the_module(tmp_path: Path, train: str) -> None:
    # The server scans each top-level statement apart (a copy and the call are in two of them)
    # and re-checks a document when a module it read changes (devlint.server.importers).
    path = _project(tmp_path, train=train)
    tree = ast.parse(train)
    whole = imported_constants(train, str(path), str(tmp_path))
    by_statement = imported_constants(train, str(path), str(tmp_path), tree, [scan_imports(s) for s in tree.body])
    assert by_statement == whole and whole[0].get("BACKEND") is not None
    source = Source(str(path), (train,), False, FileSettings(("DEV603",), FixSettings()), str(tmp_path))
    assert str(path.parent / "dist_config.py") in reads(source)
