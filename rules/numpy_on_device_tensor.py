"""DEV304 numpy-on-device-tensor: `.numpy()` on a tensor that lives on the device, or numpy's
copy (`np.array`, `np.concatenate`, ...) of such a tensor or of a list of them."""

from __future__ import annotations

import libcst as cst

from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid
from devlint.rulekit.calls import keyword, method_call, positional
from devlint.rulekit.value_flow import GATHERED, FlowRule, Kind
from devlint.torchfacts.names import NUMPY_HOST_COPIES, TENSOR_RESULT_METHODS

HEAD = "import torch\n"
NUMPY = "import numpy as np\nimport torch\n"
# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
# A tensor's own attributes that are tensors: `x.to(device).data` is one.
_TENSOR_FIELDS = frozenset({"data", "grad", "T", "mT", "H", "mH", "real", "imag"})


class NumpyOnDeviceTensor(FlowRule):
    code = "DEV304"
    name = "numpy-on-device-tensor"
    what = (
        "Flags `.numpy()` on a tensor that lives on the device, and numpy's copy of such a tensor or of a "
        "list of them (`np.array`, `np.asarray`, `np.concatenate`, `np.stack`, `np.vstack`, `np.hstack`)."
    )
    why = (
        "`.numpy()` only works on CPU tensors: on a CUDA (or MPS, XPU) tensor it raises "
        "`TypeError: can't convert cuda:0 device type tensor to numpy`. numpy's functions convert a "
        "tensor (each tensor of a list) the same way, and fail the same way. Code that runs on a "
        "CPU-only machine breaks the first time it meets a GPU."
    )
    example = (
        "preds = model(x.to(device)).argmax(1)\nlabels = preds.numpy()\n\nscores = []\nfor x in batches:\n"
        "    scores.append(model(x.to(device)))\ntable = np.concatenate(scores)"
    )
    use_instead = (
        "preds = model(x.to(device)).argmax(1)\nlabels = preds.cpu().numpy()\n\nscores = []\nfor x in batches:\n"
        "    scores.append(model(x.to(device)))\ntable = np.concatenate([t.cpu() for t in scores])"
    )
    fix_availability = "safe"
    fix_note = (
        "Safe: inserts `.cpu()` before `.numpy()`; on a CPU tensor `.cpu()` returns the tensor "
        "itself. A value is on the device when it was moved there in the same function "
        "(`.to(device)`, `.cuda()`), created there (`device=device`), computed from such a value, "
        "returned by a module that was moved, or joined (`torch.cat`, `torch.stack`) from a list "
        "that such values were appended to. numpy's copy of such a tensor gets `.cpu()` "
        "(`np.array(x.cpu())`); of such a list, each element does (`np.concatenate([t.cpu() for t in "
        "preds])`), which leaves the list itself, and every other use of it, on the device. Unsafe "
        "for numpy's copy of a field read from a call's result (`image = pipe(prompt).images[0]`): "
        "such a field may be no tensor (a diffusers pipeline's images are PIL images), and has no "
        "`.cpu()` then; `.numpy()` on it would have shown a tensor. Unsafe too for numpy's copy of "
        "a method's result (`np.asarray(img.to_numpy())`): what was moved with `.to()` need not be a "
        "tensor (kornia's `Image.to_numpy()` returns an array), and a tensor's `max(dim)` returns a "
        "tuple; torch's functions and the tensor methods that return one tensor (`float`, `detach`, "
        "`argmax`, `reshape`, ...) keep the safe fix."
    )
    triggers = ("numpy",)

    VALID = (
        HEAD + DEVICE + "x = torch.randn(3).to(device)\nprint(x.cpu().numpy())\n",
        # tensors created with device=device, brought back before .numpy()
        HEAD + DEVICE + "x = torch.zeros(3, device=device)\narr = x.detach().cpu().numpy()\n",
        HEAD + DEVICE + 'x = torch.ones(2, device=device).to("cpu").numpy()\n',
        # created on the host, or made to copy: nothing to fix
        HEAD + "x = torch.zeros(3, device='cpu')\nprint(x.numpy(), torch.ones(2).numpy())\n",
        HEAD + DEVICE + "x = torch.randn(3).to(device)\narr = x.numpy(force=True)\n",
        # a module moved in place: the tensor statement itself proves nothing
        HEAD + DEVICE + "model.to(device)\nprint(features.numpy())\n",
        # a class with its own to() and numpy() that is no nn.Module
        HEAD + DEVICE + "class Cache:\n    def to(self, device):\n        return self\n\n"
        "    def numpy(self):\n        return []\n\ncache = Cache().to(device)\nrows = cache.numpy()\n",
        # rebound on the host
        HEAD + DEVICE + "x = torch.randn(3).to(device)\nx = x.cpu()\nprint(x.numpy())\n",
        # a parameter: where it lives is not known here
        HEAD + "def to_array(t):\n    return t.detach().numpy()\n",
        # results gathered on the host before they are joined, or host tensors gathered
        HEAD + DEVICE + "model = Net().to(device)\npreds = []\nfor x in batches:\n"
        "    preds.append(model(x.to(device)).argmax(1).cpu())\n    seen = []\n    seen.append(torch.ones(2))\n"
        "labels = torch.cat(preds).numpy()\nshown = torch.stack(seen).numpy()\n",
        # numpy's copies of host values: lists of CPU tensors, of `.cpu()` copies, of Python numbers
        NUMPY + DEVICE + "model = Net().to(device)\nkept, losses, seen = [], [], []\nfor x in batches:\n"
        "    out = model(x.to(device))\n    kept.append(out.cpu())\n    losses.append(out.sum().item())\n"
        "    seen.append(torch.ones(2))\nall_out = np.concatenate(kept)\nmean = np.array(losses).mean()\n"
        "shown = np.stack(seen)\nhost = np.asarray(torch.cat(kept))\n",
        # a method no tensor has (`astype`): its receiver and result are NumPy's (GroundingDINO's
        # notebook: a moved pipeline's numpy `.images`, scaled)
        NUMPY + 'pipe = Pipeline().to("cuda")\nimages = pipe(prompt, output_type="numpy").images\n'
        "images = (images * 255).astype(np.uint8)\nrow = np.concatenate(images, axis=1)\n",
    )
    INVALID = (
        Invalid(
            HEAD + DEVICE + "x = torch.randn(3).to(device)\nprint(x.detach().numpy())\n",
            HEAD + DEVICE + "x = torch.randn(3).to(device)\nprint(x.detach().cpu().numpy())\n",
        ),
        # the output of a module that was moved
        Invalid(
            HEAD + DEVICE + "model = Net().to(device)\n\nwith torch.no_grad():\n"
            "    preds = model(inputs).argmax(dim=1)\nlabels = preds.numpy()\n",
            HEAD + DEVICE + "model = Net().to(device)\n\nwith torch.no_grad():\n"
            "    preds = model(inputs).argmax(dim=1)\nlabels = preds.cpu().numpy()\n",
        ),
        Invalid(
            HEAD + "def noise(device):\n    return torch.randn(4, device=device).numpy()\n",
            HEAD + "def noise(device):\n    return torch.randn(4, device=device).cpu().numpy()\n",
        ),
        # moved in place, then called; torch functions keep the device
        Invalid(
            HEAD + "net.cuda()\nscores = torch.softmax(net(batch), dim=1)\nout = (scores * 100).numpy()\n",
            HEAD + "net.cuda()\nscores = torch.softmax(net(batch), dim=1)\nout = (scores * 100).cpu().numpy()\n",
        ),
        # device results gathered in a list, then joined: the join is on the device too
        Invalid(
            HEAD + DEVICE + "model = Net().to(device)\npreds = []\nfor x in batches:\n"
            "    preds.append(model(x.to(device)).argmax(1))\nlabels = torch.cat(preds).numpy()\n"
            "first = torch.stack(preds)[0].numpy()\n",
            HEAD + DEVICE + "model = Net().to(device)\npreds = []\nfor x in batches:\n"
            "    preds.append(model(x.to(device)).argmax(1))\nlabels = torch.cat(preds).cpu().numpy()\n"
            "first = torch.stack(preds)[0].cpu().numpy()\n",
            count=2,
        ),
        # numpy's copy of a list of device results: each element comes back first
        Invalid(
            NUMPY + DEVICE + "model = Net().to(device)\npreds = []\nfor x in batches:\n"
            "    preds.append(model(x.to(device)).argmax(1))\nlabels = np.concatenate(preds)\n"
            "table = np.stack(preds, axis=1)\n",
            NUMPY + DEVICE + "model = Net().to(device)\npreds = []\nfor x in batches:\n"
            "    preds.append(model(x.to(device)).argmax(1))\nlabels = np.concatenate([t.cpu() for t in preds])\n"
            "table = np.stack([t.cpu() for t in preds], axis=1)\n",
            count=2,
        ),
        # numpy's copy of a device tensor, joined or not
        Invalid(
            NUMPY + DEVICE + "t = []\nfor x in batches:\n    t.append(x.to(device) * 2)\n"
            "joined = np.array(torch.cat(t))\nboth = np.asarray(t)\n",
            NUMPY + DEVICE + "t = []\nfor x in batches:\n    t.append(x.to(device) * 2)\n"
            "joined = np.array(torch.cat(t).cpu())\nboth = np.asarray([item.cpu() for item in t])\n",
            count=2,
        ),
        # a field of a moved module's output may be no tensor (a diffusers pipeline's `.images`
        # are PIL images): numpy's copy of it is reported, its fix unsafe
        Invalid(
            NUMPY + DEVICE + "pipe = Pipeline().to(device)\nimage = pipe(prompt).images[0]\narr = np.asarray(image)\n",
            NUMPY + DEVICE + "pipe = Pipeline().to(device)\nimage = pipe(prompt).images[0]\narr = np.asarray(image.cpu())\n",
            unsafe=True,
        ),
        # numpy's copy of a method's result: what was moved need not be a tensor (kornia's
        # `Image.to_numpy()` returns an array), so the fix is unsafe; a tensor method's is safe
        Invalid(
            NUMPY + DEVICE + "img = Image(data).to(device)\narr = np.asarray(img.to_numpy())\n",
            NUMPY + DEVICE + "img = Image(data).to(device)\narr = np.asarray(img.to_numpy().cpu())\n",
            unsafe=True,
        ),
        Invalid(
            NUMPY + DEVICE + "x = data.to(device)\narr = np.asarray(x.float())\n",
            NUMPY + DEVICE + "x = data.to(device)\narr = np.asarray(x.float().cpu())\n",
        ),
        # two reads, one finding each
        Invalid(
            HEAD + 'x, y = a.to("cuda"), b.cuda()\nprint(x.numpy(), y[0].numpy())\n',
            HEAD + 'x, y = a.to("cuda"), b.cuda()\nprint(x.cpu().numpy(), y[0].cpu().numpy())\n',
            count=2,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.model.qualname(node.func) in NUMPY_HOST_COPIES:
            self._numpy_copy(node)
            return
        attribute = method_call(node, "numpy")
        if attribute is None or keyword(node, "force") is not None:
            return
        found = self.flow.value(attribute.value)
        if found is None or found.kind is not Kind.DEVICE:
            return
        self.report(
            node,
            "`.numpy()` on a tensor that lives on the device fails; call `.cpu()` first",
            fix=lambda site: FixPlan("Insert `.cpu()` before `.numpy()`", [Replace(attribute.attr, "cpu().numpy")]),
            start=attribute.attr,
        )

    def _numpy_copy(self, node: cst.Call) -> None:
        """`np.array(x)` of a device tensor `x`, `np.concatenate(results)` of a list that device
        tensors were appended to. Only a name or a call is read: a slice of a list is a list, an
        element a tensor, and the fix of one would break the other."""
        plain = positional(node)
        value = plain[0].value if plain else None
        if not isinstance(value, (cst.Name, cst.Call)):
            return
        found = self.flow.value(value)
        if found is None or found.kind is not Kind.DEVICE:
            return
        function = self.ctx.code(node.func)
        if found is GATHERED:
            assert isinstance(value, cst.Name)
            # the comprehension's own variable: any name but the list's
            item = "item" if value.value == "t" else "t"
            copy = f"[{item}.cpu() for {item} in {value.value}]"
            message = f"`{function}` of a list of tensors on the device fails; move each to the host first"
        else:
            copy = f"{self.ctx.code(value)}.cpu()"
            message = f"`{function}` of a tensor on the device fails; call `.cpu()` first"
        # read during the walk: the binding the name holds here
        doubt = self._output_field(value) or self._method_result(value)
        self.report(node, message, fix=lambda site: self._copy_fix(value, copy, doubt))

    def _copy_fix(self, value: cst.BaseExpression, copy: str, doubt: str | None) -> FixPlan:
        if doubt is None:
            return FixPlan(f"Replace `{self.ctx.code(value)}` with `{copy}`", [Replace(value, copy)])
        return FixPlan(
            f"Replace `{self.ctx.code(value)}` with `{copy}` (unsafe: {doubt} may be no tensor, and has no `.cpu()` then)",
            [Replace(value, copy)],
            applicability="unsafe",
        )

    def _output_field(self, value: cst.BaseExpression) -> str | None:
        """The field read from a call's result that ``value`` (a name) was set to, as in `image =
        pipe(prompt).images[0]`: numpy's copy does not show that it is a tensor (a diffusers
        pipeline's `.images` are PIL images), where `.numpy()` would have. Said as the doubt."""
        if not isinstance(value, cst.Name):
            return None
        binding = self.flow.binding(value.value)
        current = binding.value if binding is not None else None
        while isinstance(current, (cst.Subscript, cst.Attribute)):
            if (
                isinstance(current, cst.Attribute)
                and isinstance(current.value, (cst.Call, cst.Subscript))
                and current.attr.value not in _TENSOR_FIELDS
            ):
                return f"`.{current.attr.value}` of a module's output"
            current = current.value
        return None

    def _method_result(self, value: cst.BaseExpression) -> str | None:
        """The doubt about numpy's copy of a method's result, as in `np.asarray(img.to_numpy())`:
        what was moved to the device need not be a tensor, nor is every result of a tensor's
        method one tensor; None for torch's functions (`torch.cat(preds)`) and the methods that
        give one tensor (``TENSOR_RESULT_METHODS``)."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
            return None
        if (self.ctx.model.qualname(value.func) or "").startswith("torch."):
            return None
        method = value.func.attr.value
        return None if method in TENSOR_RESULT_METHODS else f"the result of `.{method}()`"
