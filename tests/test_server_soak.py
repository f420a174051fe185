"""A soak test of `devlint server`: 2,000 seeded random edits to a real training script, as a
person types (half-typed lines, deletions retyped, words replaced, lines removed), with code
action and hover requests in between. Every request is answered, and the server ends with
exactly the diagnostics devlint's own lint gives for the final text.

DEVLINT_SLOW_TESTS=1 runs more seeds.
"""

from __future__ import annotations

import os
import random
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the language server needs the `server` extra")

from lsp_client import LspClient, uri_of, utf16_position  # noqa: E402
from server_helpers import engine_diagnostics, published, session  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "examples" / "train_cuda.py"
EDITS = 2_000
SEEDS = [14, 1401, 20261123] if os.environ.get("DEVLINT_SLOW_TESTS") else [14]
CONTENT_MODIFIED = -32801

STATEMENTS = [
    "x = torch.zeros(3).cuda()",
    "batch = batch.to('cuda', non_blocking=True)",
    "state = torch.load(path)",
    "print('é 😀', x)",
    "torch.cuda.synchronize()",
    "y = x.cuda(1)  # noqa: DEV102",
    "value = 1",
]
SNIPPETS = [".cuda()", "é", "😀", " + 1", "  # noqa: DEV101", "("]
WORDS = re.compile(r"[A-Za-z_]\w*")

Edit = tuple[int, int, str]  # replace text[start:end] with the string


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]


def _type(text: str, at: int, typed: str) -> Iterator[Edit]:
    """One character at a time, as keystrokes arrive."""
    for index, char in enumerate(typed):
        yield at + index, at + index, char


def _operation(rng: random.Random, text: str) -> list[Edit]:
    """The edits of one thing a person does, each against the text the previous one left."""
    starts = _line_starts(text)
    line = rng.randrange(len(starts))
    begin = starts[line]
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    body = text[begin:end].rstrip("\r\n")
    choice = rng.random()
    if choice < 0.4:
        # Type a statement at the start of a line, indented like it.
        indent = body[: len(body) - len(body.lstrip())]
        return list(_type(text, begin, indent + rng.choice(STATEMENTS) + "\n"))
    if choice < 0.6 and body:
        # Backspace over a few characters, then type them again.
        stop = begin + rng.randrange(len(body) + 1)
        start = max(begin, stop - rng.randint(1, 12))
        gone = text[start:stop]
        return [(start + n - 1, start + n, "") for n in range(len(gone), 0, -1)] + list(_type(text, start, gone))
    if choice < 0.75:
        at = begin + rng.randrange(len(body) + 1)
        return [(at, at, rng.choice(SNIPPETS))]
    if choice < 0.9 and WORDS.search(body):
        words = list(WORDS.finditer(body))
        word = rng.choice(words)
        return [(begin + word.start(), begin + word.end(), rng.choice(["model", "net", "x", "device", "cuda"]))]
    return [(begin, end, "")]


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # `1.cuda` and kin: half-typed code warns
            compile(text, "train.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _back_to(text: str, good: str) -> Edit:
    """One edit that turns ``text`` into ``good``, as undo does."""
    head = 0
    while head < min(len(text), len(good)) and text[head] == good[head]:
        head += 1
    tail = 0
    while tail < min(len(text), len(good)) - head and text[-1 - tail] == good[-1 - tail]:
        tail += 1
    return head, len(text) - tail, good[head : len(good) - tail]


def random_edits(seed: int, text: str, count: int) -> Iterator[tuple[Edit, str]]:
    """``count`` edits, each with the text after it. A person who breaks the code mostly undoes
    it, sometimes goes on typing in broken code, and ends with code that parses."""
    rng = random.Random(seed)
    good = text
    made = 0
    while made < count:
        edits = _operation(rng, text)
        if not _parses(text) and rng.random() < 0.3:
            edits = [_back_to(text, good)]
        for start, end, new in edits:
            if made == count - 1 and not _parses(text[:start] + new + text[end:]):
                start, end, new = _back_to(text, good)
            text = text[:start] + new + text[end:]
            made += 1
            yield (start, end, new), text
            if made == count:
                return
        if _parses(text):
            good = text


def _request(client: LspClient, rng: random.Random, uri: str, text: str) -> int:
    position = utf16_position(text, rng.randrange(len(text) + 1))
    if rng.random() < 0.5:
        return client.send_request("textDocument/hover", {"textDocument": {"uri": uri}, "position": position})
    return client.send_request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": {"start": position, "end": position}, "context": {"diagnostics": []}},
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_random_edits_end_with_the_diagnostics_of_the_final_text(tmp_path: Path, seed: int) -> None:
    text = SCRIPT.read_text()
    path = tmp_path / "train.py"
    uri = uri_of(path)
    rng = random.Random(seed + 1)
    with session(tmp_path, options={"debounceMs": 100}) as client:
        client.open(uri, text)
        client.diagnostics(uri, 1)
        requests: list[int] = []
        version = 1
        for (start, end, new), after in random_edits(seed, text, EDITS):
            version += 1
            span = {"start": utf16_position(text, start), "end": utf16_position(text, end)}
            client.change(uri, version, [{"range": span, "text": new}])
            text = after
            if version % 40 == 0:
                requests.append(_request(client, rng, uri, text))
        for request_id in requests:
            answer = client.response(request_id)
            assert "result" in answer or answer["error"]["code"] == CONTENT_MODIFIED, answer
        final = client.diagnostics(uri, version, timeout=120)
        assert published(final) == engine_diagnostics(text, path)
        versions = [p["version"] for p in client.publishes(uri)]
        assert versions == sorted(versions)
        # The last request, made after every edit, sees the final text.
        last = client.request(
            "textDocument/codeAction",
            {"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": utf16_position(text, len(text))}, "context": {"diagnostics": [], "only": ["quickfix"]}},
        )
        codes = {d["code"] for action in last for d in action.get("diagnostics", [])}
        assert codes == {code for code, _ in published(final) if code is not None}


@pytest.mark.parametrize("seed", SEEDS)
def test_the_edits_are_what_a_person_types(seed: int) -> None:
    """Every kind of edit, code that does not parse for a good share of them, texts that follow
    from the edits, and a final text that parses and has findings (so the soak compares some)."""
    text = SCRIPT.read_text()
    kinds = set()
    broken = 0
    for index, ((start, end, new), after) in enumerate(random_edits(seed, text, EDITS)):
        assert after == text[:start] + new + text[end:]
        kinds.add("insert" if start == end else "delete" if not new else "replace")
        broken += index % 10 == 0 and not _parses(after)
        text = after
    assert kinds == {"insert", "delete", "replace"}
    # Sampled every tenth edit: broken for a good share of them, not for all.
    assert EDITS // 100 < broken < EDITS // 10
    assert _parses(text)
    assert len(engine_diagnostics(text, Path("train.py"))) >= 10
