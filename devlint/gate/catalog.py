"""What devlint needs to know about each shipped rule before it reads a file, without importing
the rule (which imports LibCST): its code, name, whether it is on by default, and its triggers.

Most files of a run hold no trigger, or no finding of any rule; a run over such files then never
imports LibCST or a rule body (see devlint.gate.screen). ``RULES`` must describe the rules of
``devlint.rules`` exactly; ``tests/test_gate.py`` compares it with the real classes, and
``devlint.registry.infos`` falls back to the real classes when a rule module is missing here.
When you add a rule, add its line here (and its condition in devlint.gate.conditions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Word(str):
    """A trigger that counts only as a whole identifier: ``Word("load")`` is in ``torch.load(``
    and ``from torch import load``, not in ``overload`` or ``load_state_dict``."""


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    default_enabled: bool
    # As the rule's own ``triggers``: without one of them in the text it cannot fire.
    triggers: tuple[str, ...]
    # The module that defines the rule class.
    module: str
    # On by default from this torch-version on, as the rule's own ``default_since`` (None: as
    # ``default_enabled`` says at every version).
    default_since: tuple[int, int] | None = None

    def on_by_default(self, torch_version: tuple[int, int]) -> bool:
        """Whether a run that selects nothing itself gets this rule, for code that must run on
        ``torch_version``."""
        return self.default_enabled or (self.default_since is not None and torch_version >= self.default_since)


class Triggered(Protocol):
    """A rule class or a ``RuleInfo``: what the prefilter and the gate read."""

    code: str
    triggers: tuple[str, ...]


_PACKAGE = "devlint.rules"

RULES: tuple[RuleInfo, ...] = (
    RuleInfo("DEV101", "cuda-call", True, ("cuda",), f"{_PACKAGE}.cuda_call"),
    RuleInfo("DEV102", "cuda-call-with-index", True, ("cuda",), f"{_PACKAGE}.cuda_call_with_index"),
    RuleInfo("DEV103", "hardcoded-device-string", True, ("cuda",), f"{_PACKAGE}.hardcoded_device_string"),
    RuleInfo("DEV104", "legacy-cuda-tensor-type", True, ("cuda",), f"{_PACKAGE}.legacy_cuda_tensor_type"),
    RuleInfo("DEV105", "set-default-tensor-type", True, ("set_default_tensor_type",), f"{_PACKAGE}.set_default_tensor_type"),
    RuleInfo("DEV201", "visible-devices-in-code", True, ("CUDA_VISIBLE_DEVICES",), f"{_PACKAGE}.visible_devices_in_code"),
    RuleInfo("DEV202", "hardcoded-device-selection", True, ("cuda",), f"{_PACKAGE}.hardcoded_device_selection"),
    RuleInfo("DEV301", "blocking-host-to-device-copy", True, ("loader", "Loader"), f"{_PACKAGE}.blocking_host_to_device_copy"),
    RuleInfo("DEV302", "loader-without-pin-memory", True, ("DataLoader",), f"{_PACKAGE}.loader_without_pin_memory"),
    RuleInfo("DEV303", "non-blocking-device-to-host", True, ("non_blocking",), f"{_PACKAGE}.non_blocking_device_to_host"),
    RuleInfo("DEV304", "numpy-on-device-tensor", True, ("numpy",), f"{_PACKAGE}.numpy_on_device_tensor"),
    RuleInfo("DEV401", "loss-not-on-device", True, ("Loss",), f"{_PACKAGE}.loss_not_on_device"),
    RuleInfo("DEV402", "load-without-map-location", True, (Word("load"),), f"{_PACKAGE}.load_without_map_location"),
    RuleInfo("DEV403", "data-parallel", True, ("DataParallel",), f"{_PACKAGE}.data_parallel"),
    RuleInfo("DEV501", "deprecated-cuda-amp", True, ("autocast", "GradScaler"), f"{_PACKAGE}.deprecated_cuda_amp"),
    RuleInfo("DEV601", "cuda-runtime-api", True, ("cuda",), f"{_PACKAGE}.cuda_runtime_api"),
    RuleInfo("DEV602", "cuda-memory-api", True, ("cuda",), f"{_PACKAGE}.cuda_memory_api"),
    RuleInfo(
        "DEV603", "cuda-device-type", True, ("cuda", "GradScaler", "nccl", Word("init_process_group"), Word("new_group")),
        f"{_PACKAGE}.cuda_device_type",
    ),
    # On by default where torch-version has torch.accelerator (2.6): there the goal is accelerator-generic code.
    RuleInfo("DEV604", "cuda-availability-check", False, ("is_available",), f"{_PACKAGE}.cuda_availability_check", (2, 6)),
    RuleInfo(
        "DEV605", "unknown-device-api", True,
        (Word("accelerator"), Word("amp"), Word("Stream"), Word("Event"), Word("get_device_module")),
        f"{_PACKAGE}.unknown_device_api",
    ),
)
