"""DEV302 loader-without-pin-memory: a DataLoader whose batches go to the device, without `pin_memory`."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from devlint.analysis.semantic import Scope, dotted_name
from devlint.fixes import FixPlan, Replace
from devlint.rule import Invalid, Site
from devlint.rulekit.calls import append_arg, arg, calls_in, code_in_place, imported_qualname, keyword, positional
from devlint.rulekit.accelerator import ACCELERATOR, AVAILABLE
from devlint.rulekit.dataset_items import LOADED, MOVED, Causes, cpu_map_location, item_causes
from devlint.rulekit.value_flow import FlowRule
from devlint.torchfacts.names import DATALOADERS, MOVES, PIN_MEMORY_POSITION

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory, ...)
HEAD = "import torch\nfrom torch.utils.data import DataLoader\n\n"


_COLLATE_POSITION = 6
# How many names and calls to follow back from a dataset to a `torch.load` or a device placement.
_SOURCE_DEPTH = 4
_DEFAULT_DEVICE_SETTERS = frozenset({"torch.set_default_device", "torch.set_default_tensor_type"})
# A loader given one of these as `pin_memory` pins only where there is a GPU.
_CHECKS = frozenset({"torch.cuda.is_available", "torch.accelerator.is_available"})


@dataclass
class _Argument:
    """A DataLoader passed to a module-level function: ``f(loader)`` or ``f(data=loader)``."""

    function: str
    position: int | None
    keyword: str | None
    loader: cst.Call


def _places_on_a_device(node: cst.Call) -> bool:
    """`.cuda(...)`, `.to(...)` given a device, or a call given `device=`. A `.to()` given
    neither a positional argument nor `device=`/`other=` (`.to(memory_format=...)`, `.to(dtype=...)`)
    leaves the tensor where it is."""
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in MOVES:
        if node.func.attr.value == "to" and not any(arg.star for arg in node.args):
            return bool(positional(node)) or keyword(node, "device") is not None or keyword(node, "other") is not None
        return True
    return keyword(node, "device") is not None


class LoaderWithoutPinMemory(FlowRule):
    code = "DEV302"
    name = "loader-without-pin-memory"
    what = (
        "Flags a DataLoader whose batches are moved to the device, built without `pin_memory`, and "
        "beside it, or beside one pinning by a device check, a DataLoader given `pin_memory=True`."
    )
    why = (
        "Batches in pageable host memory are copied to the GPU through a staging buffer, and "
        "`non_blocking=True` cannot make such a copy asynchronous. With `pin_memory=True` the "
        "DataLoader hands out page-locked batches, which copy faster and overlap with compute."
    )
    example = "loader = DataLoader(data, batch_size=64)\nfor x, y in loader:\n    x = x.to(device, non_blocking=True)"
    use_instead = (
        "loader = DataLoader(data, batch_size=64, pin_memory=torch.cuda.is_available())\n"
        "for x, y in loader:\n    x = x.to(device, non_blocking=True)"
    )
    fix_availability = "safe"
    fix_note = (
        "Safe: adds `pin_memory=torch.cuda.is_available()`, which pins only where there is a CUDA "
        "device (pinning without one only warns and costs time). A loader counts when its batches "
        "are moved to a device in the function that builds it, or in a function of the same file "
        "it is passed to by name; a loader over a dataset already on the device is left alone "
        "(pinning device tensors fails), and the fix is unsafe where a local class that puts data on "
        "a device (or calls `torch.load`) may have made the dataset, unless every value its "
        "`__getitem__` can return is built on the host (tensors from `torch.tensor` of a list, "
        "`torch.from_numpy`, `.cpu()`, lists, dicts, numbers, strings: DataLoader pins only tensors, "
        "and those are CPU tensors), where the dataset holds what `torch.load` restored "
        "without `map_location=\"cpu\"` (a checkpoint of CUDA tensors comes back on the GPU), or "
        "where the loader's `collate_fn` is a function of the file that puts batches on a device. A "
        "dataset from another module is taken to hold host tensors: its batches are copied to the "
        "device, which is why the rule speaks. With DEV604 selected (torch-version >= 2.6) the fix "
        "writes `pin_memory=torch.accelerator.is_available()`, as DEV604 asks. A file pins one way: "
        "where a loader is fixed so, or already pins by `torch.cuda.is_available()` or "
        "`torch.accelerator.is_available()`, each loader given `pin_memory=True` gets the same check "
        "(safe: a DataLoader pins only where that check holds, `loader.pin_memory and "
        "torch.cuda.is_available()` in torch 2.4, `torch.accelerator.is_available()` from 2.6, so the "
        "values are the same and only the warning torch gives without a GPU is gone). Nothing is said where "
        "the file changes the default device (`torch.set_default_device`, `with torch.device(...)`)."
    )
    triggers = ("DataLoader",)

    VALID = (
        HEAD + "loader = DataLoader(data, batch_size=8, pin_memory=True)\nfor x, y in loader:\n    x = x.to(device)\n",
        HEAD + "loader = DataLoader(data, pin_memory=use_pinning)\nfor x, y in loader:\n    x = x.to(device)\n",
        # the batches stay on the host: nothing to pin for
        HEAD + "loader = DataLoader(data, batch_size=8)\nfor x, y in loader:\n    loss = model(x.float())\n",
        # a dataset already on the device cannot be pinned
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
        "data = TensorDataset(torch.randn(8, 2, device=device), torch.zeros(8, device=device))\n"
        "loader = DataLoader(data, batch_size=4)\nfor x, y in loader:\n    x = x.to(device)\n",
        # the default device may be the GPU: the dataset's tensors may not be pinnable
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
        "torch.set_default_tensor_type('torch.cuda.FloatTensor')\n"
        "loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)\nfor (x,) in loader:\n    x = x.to(device)\n",
        # inside `with torch.device("cuda"):` torch.tensor makes CUDA tensors: they may not be pinnable
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\nwith torch.device(\"cuda\"):\n"
        "    data = TensorDataset(torch.tensor([[1.0, 2.0]] * 8))\n"
        "loader = DataLoader(data, batch_size=4)\nfor (x,) in loader:\n    x = x.to(device)\n",
        # the options come from elsewhere
        HEAD + "loader = DataLoader(data, **options)\nfor x, y in loader:\n    x = x.to(device)\n",
        # not torch's DataLoader
        "from graphs.loader import DataLoader\nloader = DataLoader(data)\nfor g in loader:\n    g = g.to(device)\n",
        # a loader passed to a function that keeps the batches on the host
        HEAD + "def evaluate(model, loader):\n    for x, y in loader:\n        model(x)\n\n"
        "evaluate(model, DataLoader(data))\n",
        # `pin_memory=True` where no loader of the file pins by a check: the file pins one way
        HEAD + "train = DataLoader(data, pin_memory=True)\ntest = DataLoader(data, pin_memory=False)\n"
        "for x, y in train:\n    x = x.to(device)\n",
    )
    INVALID = (
        # a dataset class that keeps its data on the GPU: pinning its batches would fail
        Invalid(
            HEAD + "class Cached(torch.utils.data.Dataset):\n    def __init__(self, x):\n        self.x = x.cuda()\n\n"
            "loader = DataLoader(Cached(xs), batch_size=4)\nfor b in loader:\n    b = b.to(device, non_blocking=True)\n",
            HEAD + "class Cached(torch.utils.data.Dataset):\n    def __init__(self, x):\n        self.x = x.cuda()\n\n"
            "loader = DataLoader(Cached(xs), batch_size=4, pin_memory=torch.cuda.is_available())\n"
            "for b in loader:\n    b = b.to(device, non_blocking=True)\n",
            unsafe=True,
        ),
        # a dataset of what torch.load restored: a checkpoint of CUDA tensors comes back on the GPU
        Invalid(
            HEAD + "feats = torch.load(path)\nloader = DataLoader(TensorDataset(feats[\"x\"]), batch_size=4)\n"
            "for (x,) in loader:\n    x = x.cuda()\n",
            HEAD + "feats = torch.load(path)\n"
            "loader = DataLoader(TensorDataset(feats[\"x\"]), batch_size=4, pin_memory=torch.cuda.is_available())\n"
            "for (x,) in loader:\n    x = x.cuda()\n",
            unsafe=True,
        ),
        Invalid(
            HEAD + "class Features(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
            "        self.x = torch.load(path)\n\n"
            "loader = DataLoader(Features(path), batch_size=4)\nfor x in loader:\n    x = x.to(device)\n",
            HEAD + "class Features(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
            "        self.x = torch.load(path)\n\n"
            "loader = DataLoader(Features(path), batch_size=4, pin_memory=torch.cuda.is_available())\n"
            "for x in loader:\n    x = x.to(device)\n",
            unsafe=True,
        ),
        # a cache read with torch.load, but every item is a tensor built from lists on the host: safe
        Invalid(
            HEAD + "class Features(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
            "        rows = torch.load(path) if os.path.exists(path) else read_rows()\n"
            "        self.ids = torch.tensor([r.ids for r in rows], dtype=torch.long)\n        self.names = [str(r.name) for r in rows]\n\n"
            "    def __getitem__(self, i):\n        return self.ids[i], {\"name\": self.names[i], \"n\": len(self.names)}\n\n"
            "loader = DataLoader(Features(path), batch_size=4)\nfor x, meta in loader:\n    x = x.to(device)\n",
            HEAD + "class Features(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
            "        rows = torch.load(path) if os.path.exists(path) else read_rows()\n"
            "        self.ids = torch.tensor([r.ids for r in rows], dtype=torch.long)\n        self.names = [str(r.name) for r in rows]\n\n"
            "    def __getitem__(self, i):\n        return self.ids[i], {\"name\": self.names[i], \"n\": len(self.names)}\n\n"
            "loader = DataLoader(Features(path), batch_size=4, pin_memory=torch.cuda.is_available())\n"
            "for x, meta in loader:\n    x = x.to(device)\n",
        ),
        # ... but what torch.load restored, returned through a method, may be CUDA tensors
        Invalid(
            HEAD + "class Features(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
            "        self.x = torch.load(path)\n\n    def row(self, i):\n        return self.x[i]\n\n"
            "    def __getitem__(self, i):\n        return self.row(i).float()\n\n"
            "loader = DataLoader(Features(path), batch_size=4)\nfor x in loader:\n    x = x.to(device)\n",
            HEAD + "class Features(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
            "        self.x = torch.load(path)\n\n    def row(self, i):\n        return self.x[i]\n\n"
            "    def __getitem__(self, i):\n        return self.row(i).float()\n\n"
            "loader = DataLoader(Features(path), batch_size=4, pin_memory=torch.cuda.is_available())\n"
            "for x in loader:\n    x = x.to(device)\n",
            unsafe=True,
        ),
        # ... and so may a tensor made from such a tensor (torch.tensor keeps a tensor's device)
        Invalid(
            HEAD + "class Features(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
            "        x = torch.load(path)\n        self.x = torch.tensor(x)\n\n"
            "    def __getitem__(self, i):\n        return self.x[i]\n\n"
            "loader = DataLoader(Features(path), batch_size=4)\nfor x in loader:\n    x = x.to(device)\n",
            HEAD + "class Features(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
            "        x = torch.load(path)\n        self.x = torch.tensor(x)\n\n"
            "    def __getitem__(self, i):\n        return self.x[i]\n\n"
            "loader = DataLoader(Features(path), batch_size=4, pin_memory=torch.cuda.is_available())\n"
            "for x in loader:\n    x = x.to(device)\n",
            unsafe=True,
        ),
        # ... not one that only changes their layout (`.to(memory_format=...)` stays on the host)
        Invalid(
            HEAD + "def stack(batch):\n    return torch.stack(batch).to(memory_format=torch.contiguous_format)\n\n"
            "loader = DataLoader(data, batch_size=4, collate_fn=stack)\nfor x in loader:\n    x = x.to(device)\n",
            HEAD + "def stack(batch):\n    return torch.stack(batch).to(memory_format=torch.contiguous_format)\n\n"
            "loader = DataLoader(data, batch_size=4, collate_fn=stack, pin_memory=torch.cuda.is_available())\n"
            "for x in loader:\n    x = x.to(device)\n",
        ),
        # a collate function that puts batches on the device: they cannot be pinned
        Invalid(
            HEAD + "def to_gpu(batch):\n    return torch.stack(batch).cuda()\n\n"
            "loader = DataLoader(data, batch_size=4, collate_fn=to_gpu)\nfor x in loader:\n    x = x.to(device)\n",
            HEAD + "def to_gpu(batch):\n    return torch.stack(batch).cuda()\n\n"
            "loader = DataLoader(data, batch_size=4, collate_fn=to_gpu, pin_memory=torch.cuda.is_available())\n"
            "for x in loader:\n    x = x.to(device)\n",
            unsafe=True,
        ),
        Invalid(
            HEAD + "loader = DataLoader(data, 4, False, None, None, 0, lambda b: torch.stack(b).to(device))\n"
            "for x in loader:\n    x = x.to(device)\n",
            HEAD + "loader = DataLoader(data, 4, False, None, None, 0, lambda b: torch.stack(b).to(device), "
            "pin_memory=torch.cuda.is_available())\nfor x in loader:\n    x = x.to(device)\n",
            unsafe=True,
        ),
        # a list of CUDA tensors as the dataset
        Invalid(
            HEAD + "samples = [torch.randn(3).cuda() for _ in range(8)]\nloader = DataLoader(samples, batch_size=4)\n"
            "for x in loader:\n    x = x.cuda()\n",
            HEAD + "samples = [torch.randn(3).cuda() for _ in range(8)]\n"
            "loader = DataLoader(samples, batch_size=4, pin_memory=torch.cuda.is_available())\n"
            "for x in loader:\n    x = x.cuda()\n",
            unsafe=True,
        ),
        # restored to the host: safe to pin
        Invalid(
            HEAD + "feats = torch.load(path, map_location=\"cpu\")\nloader = DataLoader(TensorDataset(feats), batch_size=4)\n"
            "for (x,) in loader:\n    x = x.cuda()\n",
            HEAD + "feats = torch.load(path, map_location=\"cpu\")\n"
            "loader = DataLoader(TensorDataset(feats), batch_size=4, pin_memory=torch.cuda.is_available())\n"
            "for (x,) in loader:\n    x = x.cuda()\n",
        ),
        Invalid(
            HEAD + "loader = DataLoader(data, batch_size=8, shuffle=True)\nfor x, y in loader:\n"
            "    x = x.to(device, non_blocking=True)\n",
            HEAD + "loader = DataLoader(data, batch_size=8, shuffle=True, pin_memory=torch.cuda.is_available())\n"
            "for x, y in loader:\n    x = x.to(device, non_blocking=True)\n",
        ),
        # built at module level, looped over in a function it is passed to
        Invalid(
            HEAD + "def train(model, loader, device):\n    for step, (x, y) in enumerate(loader):\n"
            "        loss = model(x.to(device)).sum()\n\n"
            "train_loader = DataLoader(\n    data,\n    batch_size=8,\n)\ntrain(model, train_loader, device)\n",
            HEAD + "def train(model, loader, device):\n    for step, (x, y) in enumerate(loader):\n"
            "        loss = model(x.to(device)).sum()\n\n"
            "train_loader = DataLoader(\n    data,\n    batch_size=8,\n    pin_memory=torch.cuda.is_available(),\n)\n"
            "train(model, train_loader, device)\n",
        ),
        # beside a loader the fix makes pin by the check, `pin_memory=True` gets the same check: a
        # run without a GPU no longer warns for one loader while the other stays quiet
        Invalid(
            HEAD + "train = DataLoader(data, batch_size=8)\ntest = DataLoader(data, 8, False, None, None, 0, None, True)\n"
            "for x, y in train:\n    x = x.to(device)\n",
            HEAD + "train = DataLoader(data, batch_size=8, pin_memory=torch.cuda.is_available())\n"
            "test = DataLoader(data, 8, False, None, None, 0, None, torch.cuda.is_available())\n"
            "for x, y in train:\n    x = x.to(device)\n",
            count=2,
        ),
        # ... and beside one that already pins by it
        Invalid(
            HEAD + "train = DataLoader(data, pin_memory=torch.cuda.is_available())\n"
            "test = DataLoader(data, shuffle=False, pin_memory=True)\n",
            HEAD + "train = DataLoader(data, pin_memory=torch.cuda.is_available())\n"
            "test = DataLoader(data, shuffle=False, pin_memory=torch.cuda.is_available())\n",
        ),
        # `import torch` is added where the file lacks it
        Invalid(
            "from torch.utils import data\n\ndef main(device):\n"
            "    for images, labels in data.DataLoader(dataset):\n        images = images.cuda()\n",
            "from torch.utils import data\nimport torch\n\ndef main(device):\n"
            "    for images, labels in data.DataLoader(dataset, pin_memory=torch.cuda.is_available()):\n"
            "        images = images.cuda()\n",
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._candidates: list[tuple[cst.Call, Site]] = []
        self._moved: set[int] = set()
        # function scopes whose parameter's batches are moved, kept alive so their ids stay unique
        self._moved_params: dict[tuple[int, str], Scope] = {}
        self._functions: dict[str, list[Scope]] = {}
        self._arguments: list[_Argument] = []
        # torch.set_default_device / set_default_tensor_type may put every new tensor, the
        # dataset's too, on the GPU, and CUDA tensors cannot be pinned: then say nothing.
        self._default_device_changed = False
        # local classes that put data on a device: a dataset made by one may yield CUDA tensors
        self._device_classes: set[str] = set()
        self._class_nodes: dict[str, cst.ClassDef] = {}
        # why what a local class's `__getitem__` returns may be off the host (empty: it is not)
        self._item_causes: dict[str, Causes] = {}
        # loaders whose dataset may hold CUDA tensors, and why (see _device_source)
        self._device_data: dict[int, str] = {}
        # functions of this file that put data on a device: as a collate_fn, they hand out CUDA batches
        self._device_functions: set[str] = set()
        # `pin_memory=True` loaders, by the `True` they are given, and whether some loader pins by
        # a device check: the file then pins one way (see _pin_always_fix)
        self._pinned_always: list[tuple[cst.Call, cst.Name, Site]] = []
        self._pins_by_check = False

    def _enclosing_class(self) -> str | None:
        scope = self.ctx.model.scope
        while scope is not None and scope.kind != "class":
            scope = scope.parent
        return scope.name if scope is not None else None

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._class_nodes[node.name.value] = node

    def visit_WithItem(self, node: cst.WithItem) -> None:
        super().visit_WithItem(node)
        # `with torch.device("cuda"):` makes it the default device of the factories inside
        # (torch/utils/_device.py, DeviceContext), as torch.set_default_device does
        if isinstance(node.item, cst.Call) and self.ctx.model.qualname(node.item.func) == "torch.device":
            self._default_device_changed = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        scope = self.ctx.model.scope  # the walk has entered the function's own scope
        if scope.parent is not None and scope.parent.kind == "module":
            self._functions.setdefault(node.name.value, []).append(scope)

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.model.qualname(node.func) in _DEFAULT_DEVICE_SETTERS:
            self._default_device_changed = True
        if _places_on_a_device(node) or self._restores_checkpoint(node):
            owner = self._enclosing_class()
            if owner is not None:
                self._device_classes.add(owner)
            function = self.ctx.model.scope.function_scope()
            if function is not None:
                self._device_functions.add(function.name)
        self._record_pinning(node)
        if self._unpinned_dataloader(node):
            self._candidates.append((node, self.ctx.site(node)))
            dataset = self._dataset(node)
            reason = self._device_source(dataset, self.ctx.site(node), _SOURCE_DEPTH) if dataset is not None else None
            if reason is not None:
                self._device_data[id(node)] = reason
        batch = self.flow.batch_move(node)
        if batch is not None and batch.loader is not None:
            if batch.loader.call is not None:
                self._moved.add(id(batch.loader.call))
            elif batch.loader.param is not None:
                scope, name = batch.loader.param
                self._moved_params[(id(scope), name)] = scope
        if isinstance(node.func, cst.Name):
            self._record_arguments(node.func.value, node)

    def _restores_checkpoint(self, node: cst.Call) -> bool:
        return self.ctx.model.qualname(node.func) == "torch.load" and not cpu_map_location(node)

    def _device_source(self, expr: cst.BaseExpression, site: Site, depth: int) -> str | None:
        """Why the data a dataset is built from may be on the GPU, where pinning fails: what
        `torch.load` restored (a checkpoint of CUDA tensors comes back there), or a collection
        built with `.cuda()`, `.to(...)` or `device=` (`[t.cuda() for t in xs]`)."""
        if isinstance(expr, cst.Call):
            if self._restores_checkpoint(expr):
                return "the dataset holds what `torch.load` restored, maybe on the GPU"
            if _places_on_a_device(expr):
                return "the dataset is built from data put on a device"
            if self._host_items(dotted_name(expr.func)):
                return None  # its items do not depend on what it is given
            found = (self._device_source(a.value, site, depth - 1) for a in expr.args) if depth > 0 else ()
            return next((reason for reason in found if reason is not None), None)
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set, cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            if any(_places_on_a_device(call) for call in calls_in(expr)):
                return "the dataset is built from data put on a device"
            return None
        if isinstance(expr, (cst.Subscript, cst.Attribute)):
            return self._device_source(expr.value, site, depth)
        if isinstance(expr, cst.Name) and depth > 0:
            bindings = self.ctx.model.visible_bindings(expr.value, site.scope, site.order)
            found = (self._device_source(b.value, site, depth - 1) for b in bindings if b.value is not None)
            return next((reason for reason in found if reason is not None), None)
        return None

    def _unpinned_dataloader(self, node: cst.Call) -> bool:
        if imported_qualname(self.ctx.model, node.func, frozenset({"DataLoader"})) not in DATALOADERS:
            return False
        if keyword(node, "pin_memory") is not None or any(a.star for a in node.args):
            return False
        return len(positional(node)) <= PIN_MEMORY_POSITION

    def _record_pinning(self, node: cst.Call) -> None:
        if imported_qualname(self.ctx.model, node.func, frozenset({"DataLoader"})) not in DATALOADERS:
            return
        given = keyword(node, "pin_memory")
        plain = positional(node)
        value = given.value if given is not None else plain[PIN_MEMORY_POSITION].value if len(plain) > PIN_MEMORY_POSITION else None
        if isinstance(value, cst.Name) and value.value == "True":
            self._pinned_always.append((node, value, self.ctx.site(node)))
        elif isinstance(value, cst.Call) and self.ctx.model.qualname(value.func) in _CHECKS:
            self._pins_by_check = True

    def _record_arguments(self, function: str, node: cst.Call) -> None:
        for position, argument in enumerate(node.args):
            if argument.star:
                return
            loader = self.flow.loader(argument.value)
            if loader is None or loader.call is None or loader.on_device:
                continue
            name = argument.keyword.value if argument.keyword is not None else None
            self._arguments.append(_Argument(function, None if name else position, name, loader.call))

    def finish(self) -> None:
        if self._default_device_changed:
            return
        moved = set(self._moved)
        for passed in self._arguments:
            scopes = self._functions.get(passed.function, [])
            if len(scopes) != 1:
                continue  # redefined: which one runs is not ours to guess
            params = scopes[0].params
            name = passed.keyword
            if name is None and passed.position is not None and passed.position < len(params):
                name = params[passed.position]
            if name is not None and (id(scopes[0]), name) in self._moved_params:
                moved.add(id(passed.loader))
        # each reported where the walk met it: the engine reads the scope there (whether `torch`
        # is the function's own name)
        reported = [(node, site) for node, site in self._candidates if id(node) in moved]
        for node, site in reported:
            self.report(
                node,
                "this DataLoader's batches are copied to the device, but `pin_memory` is not set",
                fix=lambda _site, node=node: self._fix(node),
                site=site,
            )
        if reported or self._pins_by_check:
            check = self._check()[0]
            for node, given, site in self._pinned_always:
                self.report(
                    node,
                    f"`pin_memory=True` warns on every run without a GPU; another DataLoader of this file pins by `{check}` (or is fixed to)",
                    fix=lambda _site, given=given: self._pin_always_fix(given),
                    start=given,
                    site=site,
                )

    def _check(self) -> tuple[str, tuple[int, int]]:
        """The check a loader pins by, and the torch it needs: with DEV604 selected (torch-version
        >= 2.6) the accelerator's, which DEV604 asks for: DataLoader pins for the current
        accelerator from torch 2.6 (pytorch#131858)."""
        if self.ctx.settings.device_expression == "accelerator":
            return AVAILABLE, ACCELERATOR
        return "torch.cuda.is_available()", (0, 0)

    def _pin_always_fix(self, given: cst.Name) -> FixPlan:
        """`True` becomes the file's check. Safe: a DataLoader pins only where that check holds
        (torch/utils/data/dataloader.py: `loader.pin_memory and torch.cuda.is_available()` in 2.4,
        `torch.accelerator.is_available()` from 2.6), so a GPU run pins as before and a run without
        one skips pinning as before, without the warning torch gives there from 2.6."""
        check, requires = self._check()
        return FixPlan(f"Replace `True` with `{check}`", [Replace(given, check)], "safe", needs_torch=True, requires=requires)

    def _fix(self, node: cst.Call) -> FixPlan:
        check, requires = self._check()
        new = append_arg(node, arg(check, "pin_memory"))
        source = self._device_data.get(id(node), self._device_dataset(node))
        collate = self._device_collate(node)
        if collate is not None:
            source = f"the collate function `{collate}` puts batches on a device"
        if source is not None:
            return FixPlan(
                f"Add `pin_memory={check}` (unsafe: {source}, and device tensors cannot be pinned)",
                [Replace(node, code_in_place(self.ctx, node, new))],
                "unsafe",
                needs_torch=True,
                requires=requires,
            )
        return FixPlan(
            f"Add `pin_memory={check}`",
            [Replace(node, code_in_place(self.ctx, node, new))],
            "safe",
            needs_torch=True,
            requires=requires,
        )

    def _device_collate(self, loader: cst.Call) -> str | None:
        """The loader's `collate_fn`, when it is a function of this file (or a lambda) that puts
        data on a device: the batches it hands out are then CUDA tensors, which cannot be pinned."""
        given = keyword(loader, "collate_fn")
        plain = positional(loader)
        value = given.value if given is not None else plain[_COLLATE_POSITION].value if len(plain) > _COLLATE_POSITION else None
        if isinstance(value, cst.Name) and value.value in self._device_functions:
            return value.value
        if isinstance(value, cst.Lambda) and any(_places_on_a_device(c) for c in calls_in(value)):
            return "lambda"
        return None

    @staticmethod
    def _dataset(loader: cst.Call) -> cst.BaseExpression | None:
        plain = positional(loader)
        given = keyword(loader, "dataset")
        return plain[0].value if plain else given.value if given is not None else None

    def _device_dataset(self, loader: cst.Call) -> str | None:
        """Why the loader's dataset may hand out device tensors: a local class putting data on a device
        may have made it (the one it is built from, or, when that cannot be told, any such Dataset
        class) and what that class's `__getitem__` returns is not known to be built on the host."""
        given = self._dataset(loader)
        if isinstance(given, cst.Name):
            values = [b.value for b in self.ctx.model.visible_bindings(given.value, self.ctx.model.module_scope, 10**9)]
            given = values[0] if len(values) == 1 else None
        if isinstance(given, cst.Call):
            name = dotted_name(given.func)
            if name is not None and self.ctx.model.classes.get(name) is not None:
                return self._items_reason(name)
        datasets = sorted(
            name
            for name in self._device_classes
            if any(base.split(".")[-1].endswith("Dataset") for base in self.ctx.model.classes[name].bases)
        )
        reasons = (self._items_reason(name) for name in datasets)
        return next((reason for reason in reasons if reason is not None), None)

    def _items_reason(self, name: str) -> str | None:
        if name not in self._device_classes or self._host_items(name):
            return None
        causes = self._item_causes.get(name, frozenset())
        if LOADED in causes:
            return f"`{name}.__getitem__` may return what `torch.load` restored"
        if MOVED in causes:
            return f"`{name}.__getitem__` may return data put on a device"
        return f"`{name}` may put data on a device"

    def _host_items(self, name: str | None) -> bool:
        """A class of the file whose `__getitem__` returns only values built on the host
        (devlint.rulekit.dataset_items): pinning its batches changes no value."""
        node = self._class_nodes.get(name) if name is not None else None
        if node is None:
            return False
        if name not in self._item_causes:
            self._item_causes[name] = item_causes(node, self.ctx.module, self.ctx.model.qualname)
        return not self._item_causes[name]
