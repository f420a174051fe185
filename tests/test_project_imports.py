"""Version guards through constants another module of the project defines (issue 22 item 2):
``from .compat import IS_TORCH_2_4`` ... ``if IS_TORCH_2_4: <new> else: <old API>``. The run reads
the other module with ``ast`` (devlint.run.project_imports), the engine gets the values as data,
the cache keeps what was read, and the language server reads the other module from disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from devlint.cli import main
from devlint.engine.lint import lint_text
from devlint.project import Constant, ImportedConstants
from devlint.registry import rule_by_code
from devlint.run.cache import Cache
from devlint.run.config import FileSettings
from devlint.run.job import Job
from devlint.run.pool import execute
from devlint.run.file_job import process_source
from devlint.run.project_imports import MAX_HOPS, ProjectImports, imported_constants
from devlint.server.analysis import analyze
from devlint.server.model import Source
from devlint.settings import FixSettings

VERSION = 'import torch\n\nTORCH_VERSION = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])\n'
COMPAT = "from ._version import TORCH_VERSION\n\nIS_TORCH_2_4 = TORCH_VERSION >= (2, 4)\n"
OLD = "scaler = torch.cuda.amp.GradScaler()"
# The four ways a file reaches the flag; each else branch runs only below torch 2.4.
TRAIN = (
    "import torch\n"
    "from mypkg.utils.compat import IS_TORCH_2_4\n"
    "from .utils.compat import IS_TORCH_2_4 as NEW\n"
    "import mypkg.utils.compat as compat\n"
    "from mypkg.utils import compat as c2\n\n"
    f"if IS_TORCH_2_4:\n    pass\nelse:\n    {OLD}\n"
    f"if NEW:\n    pass\nelse:\n    {OLD}\n"
    f"if compat.IS_TORCH_2_4:\n    pass\nelse:\n    {OLD}\n"
    f"if not c2.IS_TORCH_2_4:\n    {OLD}\n"
)
SETTINGS_2_4 = FixSettings(torch_version=(2, 4))


def _project(root: Path, compat: str = COMPAT, train: str = TRAIN) -> Path:
    package = root / "mypkg"
    (package / "utils").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "utils" / "__init__.py").write_text("")
    (package / "utils" / "_version.py").write_text(VERSION)
    (package / "utils" / "compat.py").write_text(compat)
    (package / "train.py").write_text(train)
    return package / "train.py"


def _rows(findings) -> list[int]:
    return sorted(f.location.row for f in findings if f.code == "DEV501")


def _lint(path: Path, root: str = "") -> list[int]:
    text = path.read_text()
    imported, _ = imported_constants(text, str(path), root)
    return _rows(lint_text(text, str(path), [rule_by_code("DEV501")], SETTINGS_2_4, imported=imported))


def test_every_form_of_import_reaches_the_flag_two_modules_away(tmp_path: Path) -> None:
    train = _project(tmp_path)
    assert _lint(train) == []
    # The same file without what the other modules say: each fallback is reported.
    alone = lint_text(train.read_text(), str(train), [rule_by_code("DEV501")], SETTINGS_2_4)
    assert _rows(alone) == [10, 14, 18, 20]


def test_the_flag_decides_by_its_own_bound(tmp_path: Path) -> None:
    # `>= (2, 6)`: the else branches run on 2.4 and 2.5, which the project supports.
    train = _project(tmp_path, compat=COMPAT.replace("(2, 4)", "(2, 6)"))
    assert _lint(train) == [10, 14, 18, 20]


@pytest.mark.parametrize(
    "compat",
    [
        # bound twice, or under a block, or rebound by a function: no one value
        COMPAT + "IS_TORCH_2_4 = False\n",
        "from ._version import TORCH_VERSION\n\nif True:\n    IS_TORCH_2_4 = TORCH_VERSION >= (2, 4)\n",
        COMPAT + "def reset():\n    global IS_TORCH_2_4\n    IS_TORCH_2_4 = True\n",
        # a value that says nothing about torch's version
        "import sys\n\nIS_TORCH_2_4 = sys.version_info >= (3, 9)\n",
    ],
)
def test_a_name_without_one_known_value_guards_nothing(tmp_path: Path, compat: str) -> None:
    assert _lint(_project(tmp_path, compat=compat)) == [10, 14, 18, 20]


def test_a_name_the_file_binds_itself_too_is_no_known_constant(tmp_path: Path) -> None:
    train = TRAIN.replace("import torch\n", "import torch\nIS_TORCH_2_4 = False\n", 1)
    assert _lint(_project(tmp_path, train=train)) == [11]


def test_imports_in_a_circle_end_and_hops_are_bounded(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import FLAG\n")
    (package / "b.py").write_text("from .a import FLAG\n")
    text = "from .a import FLAG\nif FLAG:\n    pass\n"
    assert imported_constants(text, str(package / "main.py"), "")[0] == ImportedConstants()
    # A chain of re-exports longer than MAX_HOPS modules is not followed to its end.
    (package / "m0.py").write_text("import torch\nFLAG = torch.__version__ >= '2.4'\n")
    for hop in range(1, MAX_HOPS + 1):
        (package / f"m{hop}.py").write_text(f"from .m{hop - 1} import FLAG\n")
    test = "if FLAG:\n    pass\n"
    near = imported_constants(f"from .m{MAX_HOPS - 1} import FLAG\n{test}", str(package / "main.py"), "")[0]
    far = imported_constants(f"from .m{MAX_HOPS} import FLAG\n{test}", str(package / "main.py"), "")[0]
    assert near.get("FLAG") == Constant("torch.__version__ >= '2.4'") and far.get("FLAG") is None


def test_an_absolute_import_is_found_at_the_project_root(tmp_path: Path) -> None:
    _project(tmp_path)
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    script = scripts / "run.py"
    script.write_text(f"import torch\nfrom mypkg.utils.compat import IS_TORCH_2_4\n\nif not IS_TORCH_2_4:\n    {OLD}\n")
    assert _lint(script) == [5]
    assert _lint(script, root=str(tmp_path)) == []


def test_the_cache_keeps_what_was_read_and_an_edit_of_the_other_module_counts(tmp_path: Path) -> None:
    train = _project(tmp_path / "project")
    job = Job(codes=("DEV501",), settings=SETTINGS_2_4)
    cache_dir = tmp_path / "cache"
    first = execute([(train, job)], jobs=1, cache=Cache(cache_dir))
    assert _rows(first[0].findings) == [] and first[0].dependencies is not None
    compat = train.parent / "utils" / "compat.py"
    compat.write_text(COMPAT.replace("(2, 4)", "(2, 6)"))
    assert _rows(execute([(train, job)], jobs=1, cache=Cache(cache_dir))[0].findings) == [10, 14, 18, 20]
    compat.write_text(COMPAT)
    assert _rows(execute([(train, job)], jobs=1, cache=Cache(cache_dir))[0].findings) == []
    # The same bytes in another package, whose compat module says otherwise: not the cached result.
    other = _project(tmp_path / "other", compat=COMPAT.replace("(2, 4)", "(2, 6)"))
    assert _rows(execute([(other, job)], jobs=1, cache=Cache(cache_dir))[0].findings) == [10, 14, 18, 20]


def test_an_unchanged_project_is_answered_from_the_cache(tmp_path: Path, monkeypatch) -> None:
    train = _project(tmp_path)
    job = Job(codes=("DEV501",), settings=SETTINGS_2_4)
    cache_dir = tmp_path / "cache"
    execute([(train, job)], jobs=1, cache=Cache(cache_dir))
    monkeypatch.setattr("devlint.run.pool.process_data", lambda *args: pytest.fail("not answered from the cache"))
    assert _rows(execute([(train, job)], jobs=1, cache=Cache(cache_dir))[0].findings) == []


def test_the_language_server_reads_the_buffer_and_the_other_module_from_disk(tmp_path: Path) -> None:
    train = _project(tmp_path)
    settings = FileSettings(("DEV501",), SETTINGS_2_4)
    buffer = TRAIN + f"if IS_TORCH_2_4:\n    {OLD}\n"  # unsaved: only in the editor
    rows = [item.finding.location.row for item in analyze(Source(str(train), (buffer,), False, settings)).items]
    assert rows == [22]


def test_fix_on_the_command_line_leaves_the_fallbacks(tmp_path: Path, monkeypatch, capsys) -> None:
    train = _project(tmp_path)
    (tmp_path / "devlint.toml").write_text('torch-version = "2.4"\nselect = ["DEV501"]\n')
    monkeypatch.chdir(tmp_path)
    assert main(["fix", "--no-cache", "mypkg"]) == 0
    assert train.read_text() == TRAIN
    (train.parent / "utils" / "compat.py").write_text(COMPAT.replace("(2, 4)", "(2, 6)"))
    assert main(["fix", "--no-cache", "mypkg"]) == 0
    assert OLD not in train.read_text() and train.read_text().count("torch.amp.GradScaler(") == 4


def test_only_names_a_test_reads_are_looked_up(tmp_path: Path) -> None:
    train = _project(tmp_path)
    # read outside any test: nothing to look up, so the result depends on no other file
    text = "import torch\nfrom mypkg.utils.compat import IS_TORCH_2_4\nprint(IS_TORCH_2_4)\n"
    assert imported_constants(text, str(train), "") == (ImportedConstants(), None)
    # a conditional expression's test counts
    text = f"import torch\nfrom .utils.compat import IS_TORCH_2_4\nscaler = None if IS_TORCH_2_4 else {OLD.split(' = ')[1]}\n"
    train.write_text(text)
    assert _lint(train) == []
    train.write_text(text.replace("IS_TORCH_2_4 else", "False else"))
    assert _lint(train) == [3]


def test_a_run_reads_the_other_modules_only_when_the_check_asks(tmp_path: Path) -> None:
    # The same imports and tests, with the finding outside the branches they choose: the check
    # never asks for the flag, so a run reads no other module and its result depends on none.
    quiet = TRAIN.replace(OLD, "scaler = None") + OLD + "\n"
    train = _project(tmp_path, train=quiet)
    assert imported_constants(quiet, str(train), "")[1] is not None  # what reading everything would read
    result = process_source(quiet.encode(), str(train), Job(codes=("DEV501",), settings=SETTINGS_2_4))[0]
    assert _rows(result.findings) == [quiet.count("\n")] and result.dependencies is None
    # Asked: the same constants and the same files as reading everything up front.
    lazy = ProjectImports(TRAIN, str(train), "")
    eager, read = imported_constants(TRAIN, str(train), "")
    assert lazy.dependencies() is None
    assert lazy.get("IS_TORCH_2_4") == eager.get("IS_TORCH_2_4") is not None
    assert lazy.get("compat.IS_TORCH_2_4") == eager.get("compat.IS_TORCH_2_4") is not None
    assert lazy.dependencies() == read
    result = process_source(TRAIN.encode(), str(train), Job(codes=("DEV501",), settings=SETTINGS_2_4))[0]
    assert result.findings == [] and result.dependencies == read
