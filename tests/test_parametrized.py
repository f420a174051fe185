"""A device parameter that a test's parametrize decorator may give None is no device on every
path: `.cuda(device)` moves to the current GPU where `device` is None, `.to(device)` does not
move at all (devlint.analysis.parametrized). Each case is checked through DEV102's fix of
`.cuda(device)`: safe where every value is a device, unsafe where one may be None."""

from __future__ import annotations

import pytest

from devlint.engine.lint import lint_text
from devlint.registry import rule_by_code

BODY = "    return torch.ones(2).cuda(device)\n"
INDEX_FORM = 'to(torch.device("cuda", device) if torch.cuda.is_available() else torch.device("cpu")'


def applicability(decorated: str) -> str:
    text = f"import pytest\nimport torch\nfrom pytest import mark\n\n{decorated}" + BODY
    [finding] = lint_text(text, "t.py", [rule_by_code("DEV102")])
    assert finding.fix is not None
    return finding.fix.applicability


@pytest.mark.parametrize(
    "decorated",
    [
        '@pytest.mark.parametrize("device", ["cuda:0", "cuda:1"])\ndef test_move(device):\n',
        '@pytest.mark.parametrize(("n", "device"), [(1, "cuda:0"), [2, "cuda:1"]])\ndef test_move(n, device):\n',
        '@pytest.mark.parametrize("n,device", [pytest.param(1, "cuda", id="one")])\ndef test_move(n, device):\n',
        # a None given to another parameter
        '@pytest.mark.parametrize("n, device", [(None, "cuda")])\ndef test_move(n, device):\n',
        # a decorator of another library with the same name
        '@other.parametrize("device", [None])\ndef test_move(device):\n',
        "def test_move(device):\n",
    ],
)
def test_devices_only_keep_the_fix_safe(decorated: str) -> None:
    assert applicability(decorated) == "safe"


@pytest.mark.parametrize(
    "decorated",
    [
        '@pytest.mark.parametrize("device", [None, "cuda:0"])\ndef test_move(device):\n',
        '@mark.parametrize(argvalues=["cuda", None], argnames="device")\ndef test_move(device):\n',
        '@pytest.mark.parametrize("n, device", [(1, "cuda"), (2, None)])\ndef test_move(n, device):\n',
        '@pytest.mark.parametrize(["n", "device"], [pytest.param(2, None, marks=pytest.mark.slow)])\ndef test_move(n, device):\n',
        # values it cannot read
        '@pytest.mark.parametrize("device", DEVICES)\ndef test_move(device):\n',
        '@pytest.mark.parametrize("device", ["cuda", *MORE])\ndef test_move(device):\n',
        '@pytest.mark.parametrize("n, device", [CASE])\ndef test_move(n, device):\n',
        # on the class
        '@pytest.mark.parametrize("device", [None])\nclass TestMove:\n    def test_move(self, device):\n    ',
        # said by the annotation
        "def test_move(device: Optional[torch.device]):\n",
        'def test_move(device: "torch.device | None"):\n',
    ],
)
def test_a_possible_none_makes_it_unsafe(decorated: str) -> None:
    assert applicability(decorated) == "unsafe"


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        # only None, an index of no GPU: the index form keeps `.cuda(None)`'s current GPU
        ("move(torch.ones(2), None)", ("safe", INDEX_FORM)),
        ("move(torch.ones(2), device=None)", ("safe", INDEX_FORM)),
        ('move(torch.ones(2), None)\nmove(torch.ones(2), "cuda:1")', ("unsafe", "to")),
        ('move(torch.ones(2), "cpu")', ("unsafe", "to")),
        ('move(torch.ones(2), "cuda:1")', ("safe", "to")),
    ],
)
def test_what_calls_give_decides_the_fix(call: str, expected: tuple[str, str]) -> None:
    text = f"import torch\n\ndef move(x, device):\n    return x.cuda(device)\n\n{call}\n"
    [finding] = lint_text(text, "t.py", [rule_by_code("DEV102")])
    assert finding.fix is not None
    assert (finding.fix.applicability, finding.fix.edits[0].content) == expected


def test_a_device_a_call_gives_none_is_not_reused() -> None:
    text = "import torch\n\ndef move(x, device):\n    return x.cuda()\n\nmove(torch.ones(2), None)\n"
    [finding] = lint_text(text, "t.py", [rule_by_code("DEV101")])
    assert finding.fix is not None
    assert "x.to(device)" not in "".join(edit.content for edit in finding.fix.edits)
