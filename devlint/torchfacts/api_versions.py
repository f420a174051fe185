"""From which torch release each API a fix writes exists, and the check that holds every fix to the
project's `torch-version`: a fix whose new code names an API newer than that is not offered.

The check reads the text a fix puts in place of what it replaces and takes the names the fix
introduces (a name the original already used there is the program's own, not the fix's), so it
holds for every rule without each rule remembering to declare what it needs. A name of the form
``torch.get_device_module().X`` stands for an attribute of the module that call returns.

First releases: observed in each installed torch release (tools/torch_releases.py introspects every
name below with that release's python; devlint/torchfacts/observed_releases.py records the answers)
and derived by tools/device_api_table.py into devlint/torchfacts/api_first_releases.py: the oldest
observed release that has the name. HAND below lists the names a fix may write, each with a
hand-entered first release where the observations cannot tell it (a release between two observed
ones, or one before the oldest observed, 2.4: torch's documentation and release notes), else None;
the tools fail on a hand entry that an observation contradicts. A name from before 2.0 carries the
release that introduced it where it is known, else 1.0 (torch's stable API of that time:
``torch.device``, the factories, the dtypes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from devlint.torchfacts.api_first_releases import FIRST
from devlint.torchfacts.version import TorchVersion

ANCIENT: TorchVersion = (1, 0)

HAND: dict[str, TorchVersion | None] = {
    # what every torch the project could name has
    "torch.device": ANCIENT,
    "torch.cuda.is_available": ANCIENT,
    "torch.cuda.device_count": ANCIENT,
    "torch.empty": ANCIENT,
    "torch.zeros": ANCIENT,
    "torch.ones": ANCIENT,
    "torch.tensor": ANCIENT,
    "torch.set_default_dtype": ANCIENT,
    "torch.load": ANCIENT,
    "torch.float16": ANCIENT,
    "torch.float32": ANCIENT,
    "torch.float64": ANCIENT,
    "torch.int8": ANCIENT,
    "torch.int16": ANCIENT,
    "torch.int32": ANCIENT,
    "torch.int64": ANCIENT,
    "torch.uint8": ANCIENT,
    "torch.bool": (1, 2),
    "torch.bfloat16": (1, 3),
    "torch.autocast": (1, 10),
    "torch.amp.autocast": (1, 13),
    "torch.set_default_device": (2, 0),
    "torch.manual_seed": ANCIENT,
    "torch.seed": ANCIENT,
    # the device-generic torch.Stream / torch.Event (pytorch#123611, April 2024)
    "torch.Stream": (2, 4),
    "torch.Event": (2, 4),
    # torch.cuda.OutOfMemoryError's class under its generic name (pytorch#121702); DEV602 writes it.
    # torch 2.4 has it (observed; this table said 2.5): its first release is 2.4 or earlier
    "torch.OutOfMemoryError": None,
    # torch.amp's device-generic GradScaler (torch.cuda.amp's takes no device)
    "torch.amp.GradScaler": (2, 3),
    # torch 2.4 has torch.get_device_module, and torch.cpu and torch.cuda have these (observed; this
    # table said 2.5)
    "torch.get_device_module": None,
    "torch.get_device_module().synchronize": None,
    "torch.get_device_module().current_stream": None,
    "torch.get_device_module().stream": None,
    "torch.get_device_module().Stream": None,
    "torch.get_device_module().Event": None,
    "torch.get_device_module().device_count": None,
    "torch.get_device_module().is_available": None,
    "torch.get_device_module().current_device": None,
    "torch.accelerator.is_available": (2, 6),
    "torch.accelerator.device_count": (2, 6),
    "torch.accelerator.current_accelerator": (2, 6),
    "torch.accelerator.synchronize": (2, 6),
    "torch.accelerator.current_stream": (2, 6),
    "torch.accelerator.set_stream": (2, 6),
    "torch.accelerator.current_device_idx": (2, 6),
    "torch.accelerator.set_device_idx": (2, 6),
    # torch 2.6 has them (observed; this table said 2.7)
    "torch.accelerator.current_device_index": (2, 6),
    "torch.accelerator.set_device_index": (2, 6),
    "torch.accelerator.device_index": (2, 8),
    "torch.accelerator.empty_cache": (2, 9),
    "torch.accelerator.memory_allocated": (2, 9),
    "torch.accelerator.max_memory_allocated": (2, 9),
    "torch.accelerator.memory_reserved": (2, 9),
    "torch.accelerator.max_memory_reserved": (2, 9),
    "torch.accelerator.memory_stats": (2, 9),
    "torch.accelerator.reset_peak_memory_stats": (2, 9),
    "torch.accelerator.reset_accumulated_memory_stats": (2, 9),
    "torch.accelerator.get_memory_info": (2, 10),
    # torch.distributed's backend for a device type (pytorch#140536, November 2024)
    "torch.distributed.get_default_backend_for_device": (2, 6),
}

# Each name's first release, derived from the observations and HAND (generated; the tools check it).
SINCE: dict[str, TorchVersion] = FIRST

# `torch.a.b` (attribute chains), and `torch.get_device_module(...).X`.
_NAME = re.compile(r"\btorch((?:\.[A-Za-z_]\w*)+)(\((?:[^()]|\([^()]*\))*\)\.[A-Za-z_]\w*)?")


@dataclass(frozen=True)
class Requirement:
    """The newest API a piece of new code names, and from which torch it exists."""

    name: str
    since: TorchVersion


def names_in(code: str) -> set[str]:
    """The torch API names ``code`` writes: ``torch.amp.GradScaler``,
    ``torch.get_device_module().Stream``; a chain is cut at the first name the table knows or,
    failing that, kept whole (``torch.nn.Linear``)."""
    found: set[str] = set()
    for match in _NAME.finditer(code):
        chain = "torch" + match.group(1)
        call = match.group(2)
        if call is not None:
            # the call's own arguments name APIs too: `torch.get_device_module(torch.device(d))`
            found |= names_in(call[1 : call.rindex(")")])
            if chain == "torch.get_device_module":
                found |= {chain, chain + "()." + call.rsplit(".", 1)[1]}
                continue
        found.add(_known_prefix(chain))
    return found


def _known_prefix(chain: str) -> str:
    parts = chain.split(".")
    for end in range(2, len(parts) + 1):
        candidate = ".".join(parts[:end])
        if candidate in SINCE:
            return candidate
    return chain


def introduced(new: str, old: str) -> set[str]:
    """The API names in ``new`` that ``old`` (the code it replaces) did not already use."""
    return names_in(new) - names_in(old)


def newest(names: Iterable[str]) -> Requirement | None:
    """The newest of ``names`` the table knows (None when it knows none of them)."""
    known = [Requirement(name, SINCE[name]) for name in names if name in SINCE]
    return max(known, key=lambda r: (r.since, r.name), default=None)
