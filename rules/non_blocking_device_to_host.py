"""DEV303 non-blocking-device-to-host: a non-blocking copy to the host read before a synchronize."""

from __future__ import annotations

import libcst as cst

from devlint.rule import Invalid
from devlint.rulekit.calls import keyword
from devlint.rulekit.value_flow import FlowRule, Kind, host_read, is_synchronize, literal_true

HEAD = "import torch\n\n"


class NonBlockingDeviceToHost(FlowRule):
    code = "DEV303"
    name = "non-blocking-device-to-host"
    what = (
        'Flags `.to("cpu", non_blocking=True)` / `.cpu(non_blocking=True)` whose result is read on '
        "the host (`.numpy()`, `.item()`, `.tolist()`, `print`, `float()`, indexing, arithmetic, a "
        "comparison) before a synchronize."
    )
    why = (
        "A non-blocking copy from the GPU returns at once, before the data has arrived; the host "
        "tensor holds whatever was in that memory until the copy finishes. Reading it without a "
        "synchronize (`torch.accelerator.synchronize()`, or an event's `.synchronize()`) is a race: the program may "
        "read stale or partial values, and only sometimes. On a CPU-only machine the bug stays "
        "hidden, because there the copy is synchronous."
    )
    example = 'host = logits.to("cpu", non_blocking=True)\nprint(host.argmax().item())'
    use_instead = (
        'host = logits.to("cpu")  # the copy waits for the data: no race\n\n'
        "# or, to overlap other work with the copy:\n"
        'host = logits.to("cpu", non_blocking=True)\n...  # work that does not read host\n'
        "if torch.accelerator.is_available():\n    torch.accelerator.synchronize()\nprint(host.argmax().item())"
    )
    fix_availability = "none"
    fix_note = (
        "Whether to synchronize, record an event, or drop `non_blocking` depends "
        "on what the code overlaps with the copy. Any `.synchronize()` or `.wait()` call in the same "
        "function before the read silences the rule."
    )
    triggers = ("non_blocking",)

    VALID = (
        HEAD + 'host = out.to("cpu", non_blocking=True)\ntorch.cuda.synchronize()\nprint(host.numpy())\n',
        HEAD + "host = out.cpu(non_blocking=True)\ndone.synchronize()\nvalue = host[0] + 1\n",
        HEAD + 'host = out.to("cpu", non_blocking=True)\ntorch.accelerator.synchronize()\nprint(host.item())\n',
        # a blocking copy is read safely
        HEAD + 'host = out.to("cpu")\nprint(host.numpy())\n',
        # a non-blocking copy to the device is stream-ordered: no race for the host
        HEAD + "x = batch.to(device, non_blocking=True)\nprint(x.sum().item())\n",
        # copied but not read on the host before the synchronize
        HEAD + 'host = out.to("cpu", non_blocking=True)\nresults.append(host)\n'
        "torch.cuda.current_stream().synchronize()\nprint(results[-1].tolist())\n",
        # rebound to a blocking copy before the read
        HEAD + 'host = out.to("cpu", non_blocking=True)\nhost = out.to("cpu")\nprint(host)\n',
        # another name in another function
        HEAD + 'def copy(out):\n    host = out.to("cpu", non_blocking=True)\n    return host\n\n'
        "def show(host):\n    print(host)\n",
    )
    INVALID = (
        Invalid(
            HEAD + 'def report(logits):\n    host = logits.to("cpu", non_blocking=True)\n'
            "    return host.argmax(1).tolist(), host.numpy()\n"
        ),
        Invalid(HEAD + "values = out.cpu(non_blocking=True)\nprint(values)\n"),
        Invalid(HEAD + 'probs = out.to(device="cpu", non_blocking=True)\nif probs[0] > 0.5:\n    pass\n'),
        # read in the same expression
        Invalid(HEAD + 'total = float(out.to(torch.device("cpu"), non_blocking=True))\n'),
        # the synchronize comes too late
        Invalid(HEAD + 'host = out.to("cpu", non_blocking=True)\nprint(f"loss {host:.3f}")\ntorch.cuda.synchronize()\n'),
        Invalid(HEAD + 'host = out.to("cpu", non_blocking=True)\nscaled = host * 2\n'),
        # an alias is the same memory
        Invalid(HEAD + 'host = out.to("cpu", non_blocking=True)\nview = host\nprint(view.item())\n'),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._reported: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if is_synchronize(node):
            self.flow.synchronized()
            return
        if not literal_true(keyword(node, "non_blocking")):
            return
        found = self.flow.value(node)
        if found is not None and found.kind is Kind.PENDING and host_read(self.ctx, node):
            self._report(node, "is read on the host at once")

    def visit_Name(self, node: cst.Name) -> None:
        if not self.flow.pending_count:
            return
        found = self.flow.fact(node.value, own_function=True)
        if found is None or found.kind is not Kind.PENDING or found.copy is None:
            return
        if host_read(self.ctx, node):
            self._report(found.copy, f"is read on the host through `{node.value}`")

    def _report(self, copy: cst.Call, how: str) -> None:
        if id(copy) in self._reported:
            return
        self._reported.add(id(copy))
        self.report(
            copy,
            f"this non-blocking copy to the host {how} before any synchronize; the data may still "
            "be in flight (drop `non_blocking`, or synchronize the device before the read)",
        )
