#!/usr/bin/env bash
# The action's first step: devlint in a virtual environment of its own under RUNNER_TEMP, so the
# project's dependencies and devlint's never meet; its bin folder goes on PATH for the next step.
set -euo pipefail
venv="${RUNNER_TEMP:?}/devlint-venv"
"${DEVLINT_PYTHON:-python3}" -m venv "$venv"
spec="${DEVLINT_VERSION:-}"
if [ -z "$spec" ]; then
  spec="$GITHUB_ACTION_PATH"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$spec"
echo "$venv/bin" >> "$GITHUB_PATH"
