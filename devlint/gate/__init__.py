"""Step 2, which rules must walk a text, decided without LibCST: the catalog of rules and their
triggers (``catalog``), the textual prefilter (``prefilter``), CPython's parse (``syntax``), the
nesting check (``nesting``) and the gate below (``facts``, ``conditions``), put together by
``screen``. May import ``devlint.torchfacts`` and ``devlint.signals``; never LibCST, the analyses,
the rules or a run, so that a run over files without findings never imports them.

The gate: CPython's parser decides which files LibCST must parse.

After the textual prefilter (devlint.gate.prefilter) a file still holds some rule's trigger, yet most
such files hold no finding: `torch.cuda` is everywhere in torch, and a `.cuda()` call is rare.
CPython's ``ast`` reads a file about twenty times faster than LibCST; one walk over its tree
records a few facts (devlint.gate.facts), and each rule's condition over those facts
(devlint.gate.conditions) says whether the rule can report anything in the file. Only the rules
whose condition holds walk LibCST's tree, and a file where none holds is not parsed by LibCST.

A condition must be true for every file in which its rule reports, or findings are lost; it may
be true where the rule reports nothing. A rule without a condition counts as always true: its
files are parsed as before.

Writing the condition of a new rule (say DEV601):

1. Read the rule's hooks and list what every one of its reports requires: the node reported
   and what the rule checked about it (a call of a given qualified name, a keyword, a literal).
   Only requirements count; the rule's exemptions (guards, aliases it ignores) need not appear.
2. State that over ``Facts``: ``calls_to(facts, "torch.x.y")`` for a callee resolved through
   imports (as ``SemanticModel.qualname`` and ``imported_qualname`` resolve it), ``mentions``
   and ``Facts.import_roots`` for names resolved through value aliases too
   (``SemanticModel.qualnames``), ``method_calls(facts, "name")`` for ``x.name(...)``,
   ``facts.strings`` for string literals, ``facts.keywords``, ``facts.loops``... Keep it a
   superset: when unsure, leave a requirement out. If the rule needs a fact no field records,
   add the field to ``Facts`` and fill it in ``collect``.
3. Add it to ``CONDITIONS`` in devlint/gate/conditions.py under the rule's code, with a comment
   saying which of the rule's code makes each part necessary; add the rule's line to
   devlint/gate/catalog.py.
4. ``tests/test_gate.py`` fails until both exist, and compares the findings with and without the
   gate on the rule's own VALID and INVALID examples, the fixtures and the torch sources; give
   the rule examples that exercise aliases (``import torch as t``, ``from torch import x as y``).

Some exemptions are taken where they are certain and costly to miss, read from the tree itself
(``WITH_THE_TREE``: the rule's condition and the exemption, asked instead of the condition where
the tree is read; each "yes, exempt" must be a "yes" of the rule's code, and the tests hold the
findings equal with and without them):

- DEV101, DEV102 and DEV103 leave alone code that runs only where CUDA is in use
  (``if x.is_cuda:``, ``if x.type == "cuda":``; devlint.gate.cuda_only); DEV101 and DEV102 a
  method ``cuda`` delegating (``super().cuda()``) or passing its own parameter on; DEV103 a
  `torch.device("cuda:N")` on the CUDA side of a choice on `torch.cuda.is_available()`;
- DEV304 leaves alone values its flow never places on the device (a `.cpu()` copy, a parameter,
  numpy's own results; devlint.gate.host_values), read per function where the function binds
  the name;
- ``torch.cuda.<name>`` is read as torch's only where the file binds ``torch`` by ``import
  torch`` alone (devlint.gate.torch_name).

And where the project's torch-version is known (``KNOWING_THE_VERSION``, asked last, only when
the caller passes it): DEV601 leaves alone every call under a GPU check below torch-version 2.6,
and device queries under one from 2.6 on, and library code guards its CUDA calls (torch's
``_inductor``: files the gate passed for DEV601 alone were a third of LibCST's parse there).
Guards count where their shape says so (devlint.gate.guards: ``x.type == "cuda"``,
``x == "cuda"``, ``x.is_cuda``, ``torch.cuda.is_available()`` where ``torch`` is certain; never
another name or call, which only the rule can resolve).

``devlint.gate.decision`` puts the conditions to work (``passing``); this package's face imports
nothing, so that the catalog, the prefilter or the nesting check come without the conditions
(a warm run answered from the cache reads none of them).
"""
