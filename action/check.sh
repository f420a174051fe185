#!/usr/bin/env bash
# The action's gate: `devlint check --output-format github` (annotations on the pull request's
# diff); its exit status is the step's. On a pull request only the lines the change touched count.
set -uo pipefail
cd "${GITHUB_WORKSPACE:-.}"
args=()
if [ -n "${DEVLINT_TORCH_VERSION:-}" ]; then
  args+=(--torch-version "$DEVLINT_TORCH_VERSION")
fi
base="${DEVLINT_DIFF_BASE:-}"
if [ -z "$base" ] && [ -n "${GITHUB_BASE_REF:-}" ]; then
  # A pull request: its base branch, fetched where the checkout lacks it (actions/checkout needs
  # fetch-depth: 0, or enough history, for the merge base).
  if git rev-parse --verify --quiet "origin/$GITHUB_BASE_REF" >/dev/null \
    || git fetch --quiet --no-tags origin "$GITHUB_BASE_REF:refs/remotes/origin/$GITHUB_BASE_REF" 2>/dev/null; then
    base="origin/$GITHUB_BASE_REF"
  else
    base="$GITHUB_BASE_REF"
  fi
fi
if [ -n "$base" ] && [ "$base" != "none" ]; then
  args+=(--diff-base "$base")
fi
read -r -a extra <<< "${DEVLINT_ARGS:-}"
read -r -a src <<< "${DEVLINT_SRC:-.}"
if [ -n "${DEVLINT_SARIF:-}" ]; then
  devlint check --output-format sarif --exit-zero "${args[@]}" "${extra[@]}" -- "${src[@]}" > "$DEVLINT_SARIF"
  echo "sarif-file=$DEVLINT_SARIF" >> "${GITHUB_OUTPUT:-/dev/null}"
fi
devlint check --output-format github "${args[@]}" "${extra[@]}" -- "${src[@]}"
