"""Part of step 8's child side (devlint/verify/child): files that child processes import by name
from ``PYTHONPATH``, never through devlint; they import nothing from devlint either (the user's
interpreter may not have it):

- ``sitecustomize.py``: Python imports it at start-up; under ``devlint emulate`` it arms
  ``_devlint_cuda_hook`` so that emulated CUDA is installed once the process imports torch, then
  runs the ``sitecustomize`` it shadows;
- ``_devlint_cuda_hook.py``: that hook, also used by the pytest option ``--emulate-cuda``;
- ``_devlint_outcomes.py``: a pytest plugin that ``devlint verify --tests`` names in
  ``PYTEST_PLUGINS`` to record each test's outcome.
"""
