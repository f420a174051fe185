"""DEV301 blocking-host-to-device-copy: a DataLoader batch moved to the device without `non_blocking=True`."""

from __future__ import annotations

import libcst as cst

from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid
from devlint.rulekit.calls import append_arg, arg, code_in_place, keyword, positional
from devlint.rulekit.value_flow import Fact, FlowRule
from devlint.torchfacts.names import HOST_READ_METHODS

LOADER = "import torch\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(dataset, batch_size=8)\n"


class BlockingHostToDeviceCopy(FlowRule):
    code = "DEV301"
    name = "blocking-host-to-device-copy"
    what = (
        "Flags a batch from a DataLoader moved with `.to(device)` or `.cuda()` without "
        "`non_blocking=True`."
    )
    why = (
        "A host-to-device copy without `non_blocking=True` makes the Python thread wait until the "
        "copy has finished, so the GPU idles while the next batch is prepared. From pinned memory "
        "(`pin_memory=True` on the DataLoader) a non-blocking copy runs asynchronously and overlaps "
        "with compute; the kernels that use the batch are queued behind the copy on the same "
        "stream, so the result is the same."
    )
    example = "for x, y in loader:\n    x, y = x.to(device), y.to(device)"
    use_instead = "for x, y in loader:\n    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)"
    fix_availability = "safe"
    fix_note = (
        "Safe: adds `non_blocking=True`. Only copies of loader batches to a device are touched, "
        "never `.cpu()`, `.to(\"cpu\")`, dtype-only `.to(...)`, or a copy read at once by "
        "`.item()`/`.numpy()`/`.tolist()`. On the CPU the flag does nothing. A batch counts when it "
        "comes from `for ... in LOADER` (also `enumerate`, `tqdm`, `next(iter(LOADER))`) in the same "
        "function, where LOADER is a `DataLoader(...)` or a name ending in `loader`. Unsafe where the "
        "copy is of the whole batch as the loader yields it (`for batch in loader: batch.to(device)`), "
        "not of a part of it (`x` of `for x, y in loader`, `batch[0]`, a dict's values): its type is "
        "whatever the collate function made, and that type's `to()` may not take `non_blocking` (a "
        "tokenizer's `BatchEncoding` did not before transformers 4.48). Unsafe too for every value of "
        "such a batch, or of a part of it, in turn (`{k: v.to(device) for k, v in batch.items()}`, "
        "`[t.to(device) for t in targets]` of `for images, targets in loader`, a loop over it) unless "
        "the loader is a `DataLoader(...)` in sight that batches with `default_collate` (no "
        "`collate_fn`, no `batch_size=None`), which makes each value a tensor or a container without "
        "`to()`: a collate function of the program's own may make any type (flex attention's "
        "`BlockMask.to()` takes no `non_blocking`, torch 2.5 to 2.14)."
    )
    triggers = ("loader", "Loader")

    VALID = (
        LOADER + "for x, y in loader:\n    x = x.to(device, non_blocking=True)\n",
        # copies to the host and dtype conversions are no host-to-device copies
        LOADER + "for x, y in loader:\n    a = x.cpu()\n    b = x.to('cpu')\n    c = y.to(torch.float32)\n",
        # read at once on the host: nothing to overlap
        LOADER + "for x, y in loader:\n    total = x.to(device).sum().item() + y.to(device).item()\n",
        # an explicit choice is left alone
        LOADER + "for x, y in loader:\n    x = x.to(device, non_blocking=False)\n",
        # the model is no batch; neither is a list that is not a loader
        LOADER + "model = model.to(device)\nfor x in tensors:\n    x = x.to(device)\n",
        # a fresh tensor computed on the host is not pinned: the flag would not help
        LOADER + "for x, y in loader:\n    x = x.float().to(device)\n",
        # a batch moved already stays on the device
        LOADER + "for x, y in loader:\n    x = x.to(device, non_blocking=True)\n    x = x.to(device)\n",
        # the dataset lives on the device: its batches are no host memory
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
        "data = TensorDataset(features.to(device), labels.to(device))\n"
        "for x, y in DataLoader(data, batch_size=4):\n    x = x.to(device)\n",
        # a batch that is rebound to something else is no longer a batch
        LOADER + "for x, y in loader:\n    x = augment(x)\n    x = x.to(device)\n",
    )
    INVALID = (
        Invalid(
            LOADER + "for x, y in loader:\n    x = x.to(device)\n",
            LOADER + "for x, y in loader:\n    x = x.to(device, non_blocking=True)\n",
        ),
        Invalid(
            "import torch\n\ndef train(model, train_loader, device):\n"
            "    for i, (x, y) in enumerate(train_loader):\n        x, y = x.to(device), y.to(device=device)\n",
            "import torch\n\ndef train(model, train_loader, device):\n"
            "    for i, (x, y) in enumerate(train_loader):\n"
            "        x, y = x.to(device, non_blocking=True), y.to(device=device, non_blocking=True)\n",
            count=2,
        ),
        # the loader's whole batch: its `to()` is the collate's object's (a tokenizer's
        # `BatchEncoding` took no `non_blocking` before transformers 4.48): fixed only as unsafe
        Invalid(
            LOADER + "for step, batch in enumerate(loader):\n    batch = batch.to(device)\n",
            LOADER + "for step, batch in enumerate(loader):\n    batch = batch.to(device, non_blocking=True)\n",
            unsafe=True,
        ),
        # a dict batch through tqdm, moved in a comprehension
        Invalid(
            LOADER + "for batch in tqdm(loader):\n    batch = {k: v.to(device) for k, v in batch.items()}\n",
            LOADER + "for batch in tqdm(loader):\n"
            "    batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}\n",
        ),
        # ... unless the program's own collate function made the values: any type, flex
        # attention's `BlockMask` among them, whose `to()` takes no `non_blocking`
        Invalid(
            "import torch\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(dataset, batch_size=8, collate_fn=pack)\n"
            "for batch in loader:\n    batch = {k: v.to(device) for k, v in batch.items()}\n",
            "import torch\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(dataset, batch_size=8, collate_fn=pack)\n"
            "for batch in loader:\n    batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}\n",
            unsafe=True,
        ),
        # ... and so may every element of a part of such a batch (maskrcnn-benchmark's targets:
        # its own `BoxList`s, whose `to(device)` takes nothing more)
        Invalid(
            "import torch\n\ndef train(model, data_loader, device):\n    for images, targets, _ in data_loader:\n"
            "        images = images.to(device)\n        targets = [target.to(device) for target in targets]\n",
            "import torch\n\ndef train(model, data_loader, device):\n    for images, targets, _ in data_loader:\n"
            "        images = images.to(device, non_blocking=True)\n"
            "        targets = [target.to(device, non_blocking=True) for target in targets]\n",
            count=2,
            unsafe=True,
        ),
        Invalid(
            LOADER + "for images, targets in loader:\n    for target in targets:\n        target = target.to(device)\n",
            LOADER + "for images, targets in loader:\n    for target in targets:\n"
            "        target = target.to(device, non_blocking=True)\n",
        ),
        # the classic tutorial shape: index the batch, move each part
        Invalid(
            LOADER + "for i, data in enumerate(loader, 0):\n"
            "    inputs, labels = data[0].to(device), data[1].to('cuda')\n",
            LOADER + "for i, data in enumerate(loader, 0):\n"
            "    inputs, labels = data[0].to(device, non_blocking=True), data[1].to('cuda', non_blocking=True)\n",
            count=2,
        ),
        # `.cuda()` on a batch (DEV101 then turns it into `.to(device, non_blocking=True)`)
        Invalid(
            LOADER + "images, targets = next(iter(loader))\nimages = images.cuda()\n",
            LOADER + "images, targets = next(iter(loader))\nimages = images.cuda(non_blocking=True)\n",
        ),
        # a call written one argument a line keeps its shape
        Invalid(
            LOADER + "for x, y in loader:\n    x = x.to(\n        device,\n        memory_format=fmt,\n    )\n",
            LOADER + "for x, y in loader:\n    x = x.to(\n        device,\n        memory_format=fmt,\n"
            "        non_blocking=True,\n    )\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        batch = self.flow.batch_move(node)
        if batch is None or self._non_blocking_given(node) or self._read_at_once(node):
            return
        self.report(
            node,
            "a DataLoader batch is copied to the device without `non_blocking=True`; the host waits for the copy",
            fix=lambda site: self._fix(node, batch),
        )

    def _non_blocking_given(self, node: cst.Call) -> bool:
        assert isinstance(node.func, cst.Attribute)
        if keyword(node, "non_blocking") is not None or any(a.star for a in node.args):
            return True
        # `.to(device, dtype, non_blocking)` / `.cuda(device, non_blocking)`
        return len(positional(node)) >= (3 if node.func.attr.value == "to" else 2)

    def _read_at_once(self, node: cst.Call) -> bool:
        parent = self.ctx.parent(node)
        while isinstance(parent, cst.Attribute) and parent.value is node:
            call = self.ctx.parent(parent)
            if not isinstance(call, cst.Call):
                return False
            if parent.attr.value in HOST_READ_METHODS:
                return True
            node, parent = call, self.ctx.parent(call)
        return False

    def _fix(self, node: cst.Call, batch: Fact) -> FixPlan:
        new = append_arg(node, arg("True", "non_blocking"))
        if batch.each:
            return FixPlan(
                "Add `non_blocking=True` (unsafe: each value of the batch is whatever the loader's collate "
                "function made, and its `to()` may not take `non_blocking`, as flex attention's `BlockMask` does not)",
                [Replace(node, code_in_place(self.ctx, node, new))],
                "unsafe",
            )
        if batch.whole:
            return FixPlan(
                "Add `non_blocking=True` (unsafe: the batch is whatever the loader's collate made, and its "
                "`to()` may not take `non_blocking`, as a tokenizer's `BatchEncoding` did not before "
                "transformers 4.48)",
                [Replace(node, code_in_place(self.ctx, node, new))],
                "unsafe",
            )
        return FixPlan("Add `non_blocking=True`", [Replace(node, code_in_place(self.ctx, node, new))], "safe")
