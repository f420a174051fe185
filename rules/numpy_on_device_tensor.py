"""DEV304 numpy-on-device-tensor: `.numpy()` on a tensor that lives on the device."""

from __future__ import annotations

import libcst as cst

from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid
from devlint.rulekit.calls import keyword, method_call
from devlint.rulekit.value_flow import FlowRule, Kind

HEAD = "import torch\n"
# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


class NumpyOnDeviceTensor(FlowRule):
    code = "DEV304"
    name = "numpy-on-device-tensor"
    what = "Flags `.numpy()` on a tensor that lives on the device."
    why = (
        "`.numpy()` only works on CPU tensors: on a CUDA (or MPS, XPU) tensor it raises "
        "`TypeError: can't convert cuda:0 device type tensor to numpy`. Code that runs on a "
        "CPU-only machine breaks the first time it meets a GPU."
    )
    example = "preds = model(x.to(device)).argmax(1)\nlabels = preds.numpy()"
    use_instead = "preds = model(x.to(device)).argmax(1)\nlabels = preds.cpu().numpy()"
    fix_availability = "safe"
    fix_note = (
        "Safe: inserts `.cpu()` before `.numpy()`; on a CPU tensor `.cpu()` returns the tensor "
        "itself. A value is on the device when it was moved there in the same function "
        "(`.to(device)`, `.cuda()`), created there (`device=device`), computed from such a value, "
        "returned by a module that was moved, or joined (`torch.cat`, `torch.stack`) from a list "
        "that such values were appended to."
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
        # two reads, one finding each
        Invalid(
            HEAD + 'x, y = a.to("cuda"), b.cuda()\nprint(x.numpy(), y[0].numpy())\n',
            HEAD + 'x, y = a.to("cuda"), b.cuda()\nprint(x.cpu().numpy(), y[0].cpu().numpy())\n',
            count=2,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
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
