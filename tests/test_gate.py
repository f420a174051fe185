"""The gate (devlint.gate) must lose no finding: with it and without it, every file gives the same
findings, fixes and errors. Checked on every rule's examples, every fixture and example, aliased
spellings of each rule's targets, every entry of the name tables the gate and the rules read
(devlint.torchfacts.names), notebooks, a file parsed in sections, and the torch sources
the textual prefilter lets through (a deterministic sample; all of them with
DEVLINT_SLOW_TESTS=1). Also: every rule has a condition, and the catalog matches the rules."""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from collections import Counter
from pathlib import Path

import pytest

from devlint import registry
from devlint.engine.lint import ParseError, fix_text, lint_text
from devlint.engine.sections import SECTION_CHARS
from devlint.gate.catalog import RULES, Word
from devlint.gate.conditions import CONDITIONS, WITH_THE_TREE
from devlint.gate.facts import collect
from devlint.gate.prefilter import matching_rules
from devlint.gate.screen import screen, screened
from devlint.registry import all_rules, rule_by_code
from devlint.rule import Rule
from devlint.run.notebook import CELL_BREAK, Program, read_notebook
from devlint.run.source import SourceError, decode
from devlint.settings import FixSettings
from devlint.torchfacts import names

ROOT = Path(__file__).resolve().parent.parent
RULES_ALL = list(all_rules())
SLOW = os.environ.get("DEVLINT_SLOW_TESTS") == "1"


def _outcome(text: str, rules: list[type[Rule]], gate: bool, settings: FixSettings = FixSettings()) -> object:
    try:
        return lint_text(text, "t.py", rules, settings, gate=gate)
    except ParseError as error:
        return ("error", error.message, error.row, error.column)


def _assert_same(text: str, rules: list[type[Rule]] = RULES_ALL, settings: FixSettings = FixSettings()) -> object:
    with_gate = _outcome(text, rules, True, settings)
    assert with_gate == _outcome(text, rules, False, settings)
    return with_gate


def _torch_directory() -> Path | None:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


# -- what the gate needs to exist ---------------------------------------------------------------


def test_every_rule_has_a_condition() -> None:
    """A new rule without a condition still works (always parsed) but must get one: see
    devlint/gate/__init__.py for how to write it."""
    missing = [rule.code for rule in RULES_ALL if rule.code not in CONDITIONS]
    assert not missing, f"no gate condition for {missing}: add one to devlint/gate/conditions.py"
    assert set(CONDITIONS) <= {rule.code for rule in RULES_ALL}


def test_the_catalog_describes_the_rules_exactly() -> None:
    real = [
        (rule.code, rule.name, rule.default_enabled, [(str(t), isinstance(t, Word)) for t in rule.triggers], rule.__module__, rule.default_since)
        for rule in RULES_ALL
    ]
    listed = [
        (info.code, info.name, info.default_enabled, [(str(t), isinstance(t, Word)) for t in info.triggers], info.module, info.default_since)
        for info in RULES
    ]
    assert listed == real, "devlint/gate/catalog.py must list every rule of devlint.rules as it is"
    assert registry.infos() is RULES
    assert all(registry.load(info.code) is rule_by_code(info.code) for info in RULES)


def test_a_rule_module_missing_from_the_catalog_falls_back_to_the_rule_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    registry.infos.cache_clear()
    monkeypatch.setattr(registry, "RULES", RULES[1:])
    try:
        found = registry.infos()
        assert found is not RULES[1:] and [info.code for info in found] == [rule.code for rule in RULES_ALL]
        assert found[0] == RULES[0]
        assert isinstance(next(info for info in found if info.code == "DEV402").triggers[0], Word)
    finally:
        registry.infos.cache_clear()


def test_a_rule_without_a_condition_is_always_parsed() -> None:
    class Anything(Rule):
        code, name, triggers = "DEV998", "anything", ("spam",)

        def visit_Name(self, node) -> None:
            if node.value == "spam":
                self.report(node, "spam")

    assert "DEV998" not in CONDITIONS
    text = "spam = 1\n"
    assert screen(text, [Anything]) == [Anything]
    assert [f.code for f in lint_text(text, "t.py", [Anything])] == ["DEV998"]
    # ...while a rule with a condition beside it is still ruled out.
    cuda = rule_by_code("DEV101")
    assert screen("import torch\nspam = torch.cuda.is_available()\n", [cuda, Anything]) == [Anything]


def test_collect_sees_every_node_ast_walk_sees() -> None:
    texts = [path.read_text() for path in sorted((ROOT / "rules").glob("*.py"))]
    texts += [path.read_text() for path in sorted((ROOT / "devlint").rglob("*.py"))]
    texts.append("match x:\n    case {'a': 1, **rest}: pass\n    case C(k=v): pass\nglobal g\nf(**k, a=1)\nd = {**e}\n")
    for text in texts:
        tree = ast.parse(text)
        facts = collect(tree)
        nodes = list(ast.walk(tree))
        attributes = Counter(node.attr for node in nodes if isinstance(node, ast.Attribute))
        assert Counter({name: len(found) for name, found in facts.attributes.items()}) == attributes
        assert facts.strings == {node.value for node in nodes if isinstance(node, ast.Constant) and isinstance(node.value, str)}
        named = [node for node in nodes if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))]
        assert sum(len(calls) for calls in facts.calls.values()) == len(named)
        kinds = (ast.For, ast.AsyncFor, ast.comprehension)
        assert len(facts.iterables) == sum(isinstance(node, kinds) for node in nodes)
        kinds = (ast.Assign, ast.AugAssign, ast.NamedExpr)
        assert len(facts.assignments) == sum(isinstance(node, kinds) or (isinstance(node, ast.AnnAssign) and node.value is not None) for node in nodes)


# -- equivalence ----------------------------------------------------------------------------------


def _examples() -> list[tuple[str, str]]:
    found = []
    for rule in RULES_ALL:
        found += [(f"{rule.code}-valid-{i}", text) for i, text in enumerate(rule.VALID)]
        found += [(f"{rule.code}-invalid-{i}", case.code) for i, case in enumerate(rule.INVALID)]
    return found


@pytest.mark.parametrize(("name", "text"), _examples(), ids=[name for name, _ in _examples()])
def test_rule_examples_give_the_same_findings_with_and_without_the_gate(name: str, text: str) -> None:
    code = name.split("-")[0]
    _assert_same(text)
    _assert_same(text, [rule_by_code(code)])
    for unsafe in (False, True):
        with_gate = fix_text(text, "t.py", RULES_ALL, unsafe=unsafe)
        without = fix_text(text, "t.py", RULES_ALL, unsafe=unsafe, gate=False)
        assert (with_gate.text, with_gate.applied, with_gate.remaining) == (without.text, without.applied, without.remaining)


def test_a_condition_read_with_the_tree_holds_only_where_the_condition_does() -> None:
    """``WITH_THE_TREE`` is asked instead of ``CONDITIONS`` where the tree is read: it may only
    narrow it (on every rule example, fixture and example program)."""
    texts = [text for _, text in _examples()] + [decode(path.read_bytes()).text for path in _fixture_files()]
    narrowed = 0
    for text in texts:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        facts = collect(tree)
        for code, with_the_tree in WITH_THE_TREE.items():
            plain = CONDITIONS[code](facts)
            assert with_the_tree(facts, tree) <= plain, (code, text[:200])
            narrowed += plain and not with_the_tree(facts, tree)
    assert narrowed > 0


def _fixture_files() -> list[Path]:
    return sorted(path for folder in ("fixtures", "examples") for path in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_fixtures_give_the_same_findings_and_fixes_with_and_without_the_gate(path: Path) -> None:
    text = decode(path.read_bytes()).text
    _assert_same(text)
    _assert_same(text, RULES_ALL, FixSettings(device_name="dev", device_expression="accelerator"))
    with_gate, without = (fix_text(text, path.name, RULES_ALL, unsafe=True, gate=gate) for gate in (True, False))
    assert (with_gate.text, with_gate.remaining) == (without.text, without.remaining)


@pytest.mark.parametrize("path", sorted((ROOT / "fixtures" / "notebooks").glob("*.ipynb")), ids=lambda path: path.name)
def test_notebooks_give_the_same_findings_on_the_masked_program(path: Path) -> None:
    notebook = read_notebook(path.read_bytes())
    program = Program.build(notebook)
    findings = _assert_same(program.text, RULES_ALL, FixSettings(cell_break=CELL_BREAK))
    # What the gate reads is the program LibCST parses: magics masked, cells joined.
    assert findings or path.name.endswith(".fixed.ipynb")
    assert program.text != "\n".join(cell.source for cell in notebook.cells)


# Each rule's target spelled through the aliases the semantic model resolves: imports under
# another name, from-imports, value aliases, modules imported as such.
ALIASED = [
    "import torch as t\nx = t.ones(2).cuda()\ny = t.ones(2).cuda(1)\n",
    "from torch import device as dv\nd = dv('cuda:1')\n",
    "import torch as t\nz = t.zeros(2, device='cuda')\n",
    "from torch import zeros\nz = zeros(2, device=f'cuda:{rank}')\n",
    "import torch\nDEV = 'cuda'\nx = torch.ones(2).to(DEV)\n",
    "import torch\ndef f(x, where: torch.device = 'cuda'):\n    return x\n",
    "import torch\ng = lambda dev='cuda:0': dev\n",
    "from torch.cuda import FloatTensor as CF\nx = CF(3)\n",
    "import torch\nT = torch.cuda.FloatTensor\nx = T(2, 3)\n",
    "from torch import cuda as c\nx = c.LongTensor([1])\n",
    "import torch.cuda as tc\nok = isinstance(x, tc.HalfTensor)\n",
    "import torch\nT = torch.cuda if fast else torch\nx = T.FloatTensor(2)\n",
    "import torch\nx = y.type('torch.cuda.DoubleTensor')\n",
    "from torch import set_default_tensor_type as sd\nsd('torch.cuda.FloatTensor')\n",
    "import os as o\no.environ['CUDA_VISIBLE_DEVICES'] = '1'\no.putenv('CUDA_VISIBLE_DEVICES', '0')\n",
    "from os import environ as env\nenv.update({'CUDA_VISIBLE_DEVICES': '2'})\nenv.update(CUDA_VISIBLE_DEVICES='3')\n",
    "import os\nos.environ['CUDA_VISIBLE_DEVICES'] += ',1'\n",
    "from torch.cuda import set_device as sd\nsd(0)\n",
    "import torch.cuda as tc\nwith tc.device(1):\n    pass\n",
    "import torch\nfrom torch.utils.data import DataLoader\ndl = DataLoader(ds)\nother = dl\nfor i, x in tqdm(enumerate(other)):\n    y = x.to(device)\n",
    "import torch\nfrom torch.utils.data import DataLoader\nit = next(iter(DataLoader(ds)))\nb = it.cuda()\n",
    "import torch\nfor b in train_loader:\n    x = b.to('cuda')\n",
    "import torch\nh = x.to('cpu', non_blocking=True)\nprint(h)\n",
    "import torch\ny = x.to(device).numpy()\n",
    "import torch\nimport torch.nn as nn\nL = nn.CrossEntropyLoss\nm = m.to(device)\ncrit = L(weight=torch.tensor([1.0, 2.0]))\n",
    "from torch.nn import BCEWithLogitsLoss as B\nimport torch\nm.cuda()\nc = B(pos_weight=torch.ones(2))\n",
    "from torch import load as ld\nstate = ld('m.pt')\n",
    "import torch as t\nstate = t.load(path)\n",
    "from torch.nn.parallel import DataParallel as DP\nm = DP(m)\n",
    "import torch.nn as tnn\nm = tnn.DataParallel(m)\n",
    "from torch.cuda.amp import autocast as ac\nwith ac():\n    pass\n",
    "import torch\n@torch.cuda.amp.autocast()\ndef f():\n    pass\ns = torch.cuda.amp.grad_scaler.GradScaler()\n",
]


@pytest.mark.parametrize("text", ALIASED, ids=[str(i) for i in range(len(ALIASED))])
def test_aliased_spellings_are_not_ruled_out(text: str) -> None:
    findings = _assert_same(text)
    assert isinstance(findings, list) and findings, "each aliased example holds a finding"
    for code in sorted({f.code for f in findings}):
        assert [rule.code for rule in screen(text, [rule_by_code(code)]) or []] == [code]


def _module(qualname: str) -> str:
    return qualname.rpartition(".")[0]


def _table_examples() -> list[tuple[str, str]]:
    """(rule code, text) for every entry of every table of devlint.torchfacts.names that a rule
    and its gate condition both read: the gate must let each through, so that no entry of a
    table is read by the rule alone."""
    loop = "for b in {}:\n    x = b.{}('cuda')\n"
    examples = [("DEV104", f"import torch\nx = torch.cuda.{name}(2)\n") for name in names.LEGACY_TENSOR_TYPES]
    examples += [("DEV103", f"import torch\ny = x.{method}(2, device='cuda')\n") for method in names.DEVICE_METHODS]
    examples += [("DEV103", f"import torch\nd = {name}('cuda')\n") for name in names.POSITIONAL_DEVICE_FUNCTIONS]
    examples += [("DEV103", f"import torch\ns = torch.load(p, {name}='cuda')\n") for name in names.DEVICE_KEYWORDS]
    examples += [("DEV103", f"import torch\ndef f(x, {name}='cuda'):\n    return x\n") for name in names.DEVICE_PARAM_NAMES]
    examples += [("DEV102", f"import torch\ny = x.cuda({name}=1)\n") for name in names.CUDA_DEVICE_KEYWORDS]
    examples += [("DEV301", "import torch\n" + loop.format("train_loader", method)) for method in names.MOVES]
    examples.append(("DEV201", f"import os\nos.environ['{names.VISIBLE_DEVICES}'] = '0'\n"))
    for loader in names.DATALOADERS:
        given = ", ".join(["ds"] * names.PIN_MEMORY_POSITION)
        examples.append(("DEV302", f"import {_module(loader)}\nloader = {loader}({given})\n" + loop.format("loader", "to")))
    for wrapper in names.LOOP_WRAPPERS:
        target = "i, b" if wrapper == "enumerate" else "b"
        examples.append(("DEV301", f"import torch\nfor {target} in {wrapper}(train_loader):\n    x = b.to('cuda')\n"))
    examples += [
        ("DEV401", f"import torch\nimport torch.nn as nn\nm = m.to(device)\ncrit = nn.{loss}({keyword}=torch.ones(2))\n")
        for loss, arguments in names.LOSS_TENSOR_ARGUMENTS.items()
        for keyword in arguments.values()
    ]
    for name in names.DATA_PARALLEL:
        examples.append(("DEV403", f"import {_module(name)}\nm = {name}(m)\n"))
        examples.append(("DEV403", f"from {_module(name)} import DataParallel\n"))
    examples += [("DEV501", f"import {_module(name)}\nx = {name}()\n") for name in names.DEPRECATED_AMP]
    examples += [("DEV603", f"import {_module(name)}\nx = {name}('cuda')\n") for name in names.AMP_DEVICE_TYPE]
    for prefix in names.AMP_MODULES:
        name = prefix + "custom_fwd" if prefix.endswith(".") else prefix
        examples.append(("DEV603", f"import {_module(name)}\nf = {name}(device_type='cuda')\n"))
    examples += [
        ("DEV603", f"import {_module(name)}\nmesh = {name}({', '.join(['g'] * position + ['{0}cuda{0}'.format(chr(39))])})\n")
        for name, position in names.MESH_DEVICE_TYPE.items()
    ]
    examples += [
        ("DEV603", f"import {_module(name)}\ng = {name}({', '.join(['None'] * position + [repr(names.CUDA_BACKEND)])})\n")
        for name, position in names.PROCESS_GROUP_BACKEND.items()
    ]
    for prefix in names.CUDA_SUBMODULES:
        # set_device is DEV601's only under a device check, with no literal index (else DEV202's)
        examples += [
            ("DEV601", f"import {prefix[:-1]}\nif torch.cuda.is_available():\n    x = {prefix}{name}(rank)\n")
            for name in names.CUDA_RUNTIME_API
        ]
        examples += [("DEV602", f"import {prefix[:-1]}\nx = {prefix}{name}()\n") for name in names.CUDA_MEMORY_API]
        examples += [("DEV601", f"import {prefix[:-1]}\n{prefix}{name}(0)\n") for name in names.CUDA_SEED_API]
        examples += [("DEV601", f"import {prefix[:-1]}\nx = {prefix}{name}(0)\n") for name in names.CUDA_ONLY_CALLS]
    for namespace in (*names.DEVICE_API_MODULES, *names.DEVICE_API_CLASSES):
        examples.append(("DEV605", f"import torch\nx = {namespace}.no_such_name\n"))
    # a frozenset iterates in another order in each process; an id (an index) must name one example
    return sorted(examples)


TABLE_EXAMPLES = _table_examples()


@pytest.mark.parametrize(("code", "text"), TABLE_EXAMPLES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(TABLE_EXAMPLES)])
def test_every_entry_of_a_shared_table_passes_the_gate(code: str, text: str) -> None:
    # at torch-version 2.6, where the DEV6 rules report a CUDA call that already runs without CUDA
    findings = _assert_same(text, settings=FixSettings(torch_version=(2, 6)))
    assert isinstance(findings, list) and code in {f.code for f in findings}, "each example holds a finding of its rule"
    assert [rule.code for rule in screen(text, [rule_by_code(code)]) or []] == [code]


NEAR_MISSES = [
    # (manual_seed_all is DEV601's since issue 22 item 7; seed_all is no rule's)
    "import torch\nif torch.backends.cuda.is_built():\n    torch.cuda.seed_all()\n",
    "import torch\nif x.device.type == 'cuda':\n    pass\nbackend = 'cuda'\n",
    "import numba.cuda as cuda\ncuda.select_device(0)\nx = torch.FloatTensor(2)\n",
    "import torch\nt = torch.autocast('cpu')\nsd = model.load_state_dict(s)\n",
    "import torch\n# x.cuda()\ns = 'torch.load(p)'\n",
]


@pytest.mark.parametrize("text", NEAR_MISSES, ids=[str(i) for i in range(len(NEAR_MISSES))])
def test_near_misses_pass_the_prefilter_but_not_the_gate(text: str) -> None:
    assert matching_rules(text, RULES_ALL)
    assert screen(text, RULES_ALL) == []
    assert _assert_same(text) == []


# DEV601 where the project's torch-version is known: (program, ruled out at 2.4, ruled out at
# 2.6). Below 2.6 the rule reports no call under a GPU check, from 2.6 on only device queries
# are left alone there; the gate knows the checks that say so by their shape.
GUARDED_RUNTIME_CALLS = [
    ("def props(device):\n    if device.type == 'cuda':\n        return torch.cuda.get_device_properties(device)\n", True, True),
    ("def index(device):\n    if device.type == 'cuda':\n        return torch.cuda.current_device()\n", True, False),
    ("def cap(x):\n    return x.is_cuda and torch.cuda.get_device_capability()\n", True, True),
    ("def cap(x, y):\n    return y and x.is_cuda and torch.cuda.get_device_capability()\n", True, True),
    ("def wait(device):\n    if device.type != 'cpu':\n        torch.cuda.synchronize()\n", True, False),
    ("def name(x):\n    if not x.is_cuda:\n        return None\n    else:\n        return torch.cuda.get_device_name()\n", True, True),
    ("def name(x):\n    return torch.cuda.get_device_name() if x.type == 'cuda' else 'cpu'\n", True, True),
    ("def name(d):\n    if d.type == 'cpu':\n        pass\n    elif d.is_cuda:\n        print(torch.cuda.get_device_name())\n", True, True),
    # the program's device string says CUDA, on either side, also as a CUDA index
    ("def props(device):\n    if device == 'cuda' and torch.version.hip:\n        return torch.cuda.get_device_properties(0)\n", True, True),
    ("def name(args):\n    return torch.cuda.get_device_name() if 'cuda:0' == args.device else 'cpu'\n", True, True),
    ("def name(device):\n    if device != 'cuda':\n        return 'cpu'\n    else:\n        return torch.cuda.get_device_name()\n", True, True),
    # never reported below 2.6: device_count runs without CUDA, an unguarded set_device is DEV202's
    ("def pick():\n    torch.cuda.set_device(torch.cuda.device_count() - 1)\n", True, False),
    # the shape says nothing: the rule decides
    ("def props(device):\n    if device.type == 'cpu':\n        return torch.cuda.get_device_properties(device)\n", False, False),
    ("def props(device):\n    if device.type == 'cuda' or device.is_cuda:\n        return torch.cuda.get_device_properties(device)\n", False, False),
    ("def wait(use_cuda):\n    if use_cuda:\n        torch.cuda.synchronize()\n", False, False),
    # always true of a torch.device, a string that is no device, two strings, a chained comparison
    ("def name(device):\n    if device != 'cpu':\n        return torch.cuda.get_device_name()\n", False, False),
    ("def name(device):\n    if device == 'cudnn':\n        return torch.cuda.get_device_name()\n", False, False),
    ("if 'cuda' == 'cuda':\n    print(torch.cuda.get_device_name())\n", False, False),
    ("def name(a, b):\n    if a == 'cuda' == b:\n        return torch.cuda.get_device_name()\n", False, False),
    # torch certainly is torch: its availability tests count
    ("if torch.cuda.is_available():\n    torch.cuda.synchronize()\n", True, False),
    # (from 2.6 on the count itself is reported: torch.accelerator.device_count())
    ("def name():\n    return torch.cuda.get_device_name() if torch.cuda.device_count() > 0 else 'cpu'\n", True, False),
    ("def name():\n    if not torch.cuda.is_available():\n        return 'cpu'\n    else:\n        return torch.cuda.get_device_name()\n", True, True),
    # ... not where `torch` may be something else, or before it is imported
    ("def name(torch):\n    if torch.cuda.is_available():\n        return torch.cuda.get_device_name()\n", False, False),
    ("def name():\n    if torch.cuda.is_available():\n        return torch.cuda.get_device_name()\ntorch = load()\n", False, False),
    ("def name():\n    if torch.cuda.device_count() >= 0:\n        return torch.cuda.get_device_name()\n", False, False),
    ("def name():\n    if torch.cuda.is_available(0):\n        return torch.cuda.get_device_name()\n", False, False),
    ("assert x.is_cuda\nprint(torch.cuda.get_device_name())\n", False, False),
    ("def outer(d):\n    if d.type == 'cuda':\n        def inner():\n            return torch.cuda.get_device_name()\n        return inner\n", False, False),
    ("@skip_if(torch.cuda.get_device_capability() < (8, 0))\ndef test(d):\n    pass\n", False, False),
    ("def wait(device):\n    if device.type == 'cuda':\n        torch.cuda.synchronize()\n    torch.cuda.synchronize()\n", False, False),
]


@pytest.mark.parametrize(("body", "at_2_4", "at_2_6"), GUARDED_RUNTIME_CALLS)
def test_guarded_runtime_calls_are_ruled_out_only_where_the_version_says_so(body: str, at_2_4: bool, at_2_6: bool) -> None:
    text = "import torch\n\n" + body
    rule = rule_by_code("DEV601")
    for version, ruled_out in (((2, 4), at_2_4), ((2, 6), at_2_6), ((2, 9), at_2_6)):
        settings = FixSettings(torch_version=version)
        assert (screened(text, [rule], torch_version=version).rules == []) is ruled_out, version
        found = _assert_same(text, [rule], settings)
        _assert_same(text, RULES_ALL, settings)
        if ruled_out:
            assert found == []
    # a caller that does not pass the version gets the condition that holds for every version
    assert screened(text, [rule]).rules == [rule]


# Exemptions the gate takes, most read from CPython's tree (`WITH_THE_TREE`; DEV303's from the
# facts alone): (rule, program, ruled out). A program
# not ruled out (False) has a finding the exemption must not lose; None: the rule reports
# nothing, but the gate cannot tell (a name that may be bound elsewhere, torch under another name).
TREE_EXEMPTIONS = [
    # DEV304: values its flow never places on the device
    ("DEV304", "def f(w, device):\n    t = torch.rand(3, device=device)\n"
     "    w_cpu = t.to(dtype=torch.float32, device='cpu')\n    w_cpu = t.cpu()\n    return w_cpu.numpy()\n", True),
    ("DEV304", "x = y.to(device)\nref = lambda a, beta=1: np.asarray(beta, dtype=a.dtype)\n"
     "grid = np.array(np.tril_indices(3), dtype=float)\nnan = np.array(float('nan'))\n", True),
    # a name read where its own function binds it: that function's code alone counts
    ("DEV304", "def g(device):\n    inputs = [x.to(device)]\n    inputs.append(y.to(device))\n\n\n"
     "def f(seq):\n    inputs = tuple(a for a in seq)\n    return np.concatenate(inputs)\n", True),
    ("DEV304", "def f(t, device):\n    u = t.to(device)\n    return t.detach().cpu().to(torch.float32).numpy(), t.cpu().to(u.dtype).numpy()\n", True),
    ("DEV304", "def f(device):\n    x = torch.rand(3, device=device)\n    return x.numpy()\n", False),
    ("DEV304", "def f(t, device):\n    u = t.to(device)\n    return u.to(torch.float32).numpy()\n", False),
    ("DEV304", "def f(t, device):\n    return t.cpu().to(torch.float32, device=device).numpy()\n", False),
    ("DEV304", "def f(device):\n    out = []\n    out.append(torch.rand(3, device=device))\n    return np.stack(out)\n", False),
    ("DEV304", "x = t.to(device)\n\n\ndef f():\n    print(x.numpy())\n    x = 1\n", False),
    ("DEV304", "x = t.cuda()\n\n\ndef f():\n    global x\n    x = 1\n    return x.numpy()\n", None),
    ("DEV304", "def f(device, t):\n    y = t.float()\n    y = torch.exp(y.to(device))\n    return np.array(y)\n", False),
    ("DEV304", "model = Net().cuda()\nnet = model\nprint(net(batch).numpy())\n", False),
    # a default is read around its function, not in it: the file's code counts
    ("DEV304", "x = t.cuda()\n\n\ndef f(x=np.array(x)):\n    return x\n", None),
    # DEV101 / DEV102: a method `cuda` delegating or passing its own parameter on, code that
    # runs only on CUDA
    ("DEV102", "class Holder(torch.nn.Module):\n    def cuda(self, device=None):\n        return self._apply(lambda t: t.cuda(device))\n", True),
    ("DEV101", "class Net(torch.nn.Module):\n    def cuda(self):\n        return super().cuda()\n", True),
    ("DEV101", "def f(x, y):\n    if x.is_cuda:\n        y = y.cuda()\n    return y\n", True),
    ("DEV102", "def f(x, y):\n    return y.cuda(0) if x.device.type == 'cuda' else y\n", True),
    ("DEV102", "def cuda(device=None):\n    x = torch.ones(2)\n    return x.cuda(0)\n", False),
    ("DEV102", "def cuda(self, *, device=None):\n    x = torch.ones(2)\n    return x.cuda(device)\n", False),
    ("DEV102", "def cuda(self, device=None):\n    def inner(device_id):\n        return torch.ones(2).cuda(device_id)\n    return inner\n", False),
    ("DEV101", "def f(x, y):\n    if x.is_cuda:\n        return y\n    return y.cuda()\n", False),
    # DEV303: a non-blocking copy to the device leaves nothing pending on the host
    ("DEV303", "def step(batch, device, lr, t):\n    x = batch.to(device, non_blocking=True)\n"
     "    y = lr.to(device=t.device, non_blocking=True)\n    z = t.to('cuda:0', non_blocking=True)\n    return x.sum().item()\n", True),
    ("DEV303", "def step(t):\n    host = t.to('cpu', non_blocking=True)\n    return host.numpy()\n", False),
    ("DEV303", "device = torch.device('cpu')\n\n\ndef step(t):\n    host = t.to(device, non_blocking=True)\n    return host.numpy()\n", False),
    ("DEV303", "def step(t):\n    host = t.cpu(non_blocking=True)\n    print(host)\n", False),
    # DEV103: the CUDA side of an availability choice, code that runs only on CUDA
    ("DEV103", "devs = [torch.device('cpu'), torch.device('cuda:0')] if torch.cuda.is_available() else []\n", True),
    ("DEV103", "def f(x):\n    if x.is_cuda:\n        return torch.randn(2, device='cuda')\n    return x\n", True),
    ("DEV103", "def f(device):\n    if torch.device(device).type != 'cuda':\n        return None\n    else:\n"
     "        return torch.randn((), device='cuda')\n", True),
    ("DEV103", "devs = [torch.device('cuda:0')] if ok else []\nx = torch.ones(2, device=devs[0])\n", False),
    ("DEV103", "devs = [] if torch.cuda.is_available() else [torch.device('cuda:0')]\n", False),
    ("DEV103", "def f(torch):\n    return [torch.device('cuda:0')] if torch.cuda.is_available() else []\n", None),
    ("DEV103", "import torch as t\ndevs = [t.device('cuda:0')] if t.cuda.is_available() else []\n", None),
    ("DEV103", "def f(x):\n    if x.is_cuda:\n        def g():\n            return torch.randn(2, device='cuda')\n        return g\n", False),
]


@pytest.mark.parametrize(("code", "body", "ruled_out"), TREE_EXEMPTIONS, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(TREE_EXEMPTIONS)])
def test_exemptions_read_from_the_tree(code: str, body: str, ruled_out: bool | None) -> None:
    text = "import numpy as np\nimport torch\n\n" + body
    rule = rule_by_code(code)
    assert (screened(text, [rule]).rules == []) is bool(ruled_out)
    found = _assert_same(text, [rule])
    _assert_same(text, RULES_ALL)
    assert isinstance(found, list) and (found == []) is (ruled_out is not False)


def test_code_nested_past_the_gates_depth_is_left_to_the_rule() -> None:
    # A chain of 1,000 `+` is 1,000 levels deep: the gate neither climbs it for every call nor
    # recurses through it (a RecursionError on the default stack), it answers "not known".
    calls = " + ".join(f"t{i}.cuda()" for i in range(1000))
    guarded = f"import torch\n\n\ndef f(x):\n    if x.is_cuda:\n        return {calls}\n"
    assert screened(guarded, [rule_by_code("DEV101")]).rules == [rule_by_code("DEV101")]
    names = " + ".join(f"a{i}" for i in range(1000))
    copied = f"import numpy as np\nimport torch\n\nx = t.to(device)\ny = {names}\nz = np.array(y)\n"
    assert screened(copied, [rule_by_code("DEV304")]).rules == [rule_by_code("DEV304")]


def test_a_file_parsed_in_sections_is_gated_on_its_whole_text() -> None:
    filler = "".join(f"n{i} = '{'a' * 100}'  # {'b' * 100}\n" for i in range(650))
    text = "import torch\n" + filler + "x = torch.ones(2).cuda()\n"
    assert len(text) > 2 * SECTION_CHARS
    findings = _assert_same(text, [rule_by_code("DEV101"), rule_by_code("DEV402")])
    assert [f.code for f in findings] == ["DEV101"]
    assert screen(text.replace(".cuda()", ".to('cpu')"), RULES_ALL) == []


def test_syntax_errors_and_newer_syntax_are_left_to_libcst() -> None:
    broken = "import torch\ndef f(:\n    x.cuda()\n"
    assert screen(broken, RULES_ALL) is None
    assert isinstance(_assert_same(broken), tuple)
    # A syntax this Python may not know (PEP 701 quotes) goes to LibCST, whatever CPython says.
    newer = 'import torch\nx = f"{"cuda"}"\ny = torch.ones(2).cuda()\n'
    if sys.version_info < (3, 12):
        assert screen(newer, RULES_ALL) is None
    assert [f.code for f in _assert_same(newer)] == ["DEV101"]


# -- the torch sources --------------------------------------------------------------------------


def _gated_torch_files() -> list[tuple[Path, str]]:
    """The torch files the textual prefilter lets through: where the gate decides."""
    torch = _torch_directory()
    if torch is None:
        pytest.skip("torch is not installed: no corpus")
    found = []
    for path in sorted(torch.rglob("*.py")):
        try:
            text = decode(path.read_bytes()).text
        except (OSError, SourceError):
            continue
        if matching_rules(text, RULES_ALL):
            found.append((path, text))
    return found


def test_torch_sources_give_the_same_findings_with_and_without_the_gate() -> None:
    """Every 6th file under 64 KB the prefilter lets through (about 100 files, tens of seconds);
    with DEVLINT_SLOW_TESTS=1 every one of them (757 files of torch 2.13, a few minutes)."""
    files = _gated_torch_files()
    assert len(files) > 300
    sample = files if SLOW else [(path, text) for path, text in files[::6] if len(text) < 64 * 1024]
    ruled_out = findings = 0
    for path, text in sample:
        outcome = _assert_same(text)
        ruled_out += screen(text, RULES_ALL) == []
        findings += len(outcome) if isinstance(outcome, list) else 0
    print(f"{len(sample)} files compared, {findings} findings, {ruled_out} files not parsed by LibCST with the gate")
    # The gate must act on this sample, and the sample must hold findings to lose.
    assert ruled_out > len(sample) // 2 and findings > 0
