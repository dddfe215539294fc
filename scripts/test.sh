#!/usr/bin/env bash
# The full test suite, from a fresh machine: installs what it needs, then lint, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."

export LITELLM_LOCAL_MODEL_COST_MAP=True   # never fetch litellm's cost map from the network
export PIP_DISABLE_PIP_VERSION_CHECK=1

python -m pip install --quiet -e ".[dev]"

echo "== ruff"
python -m ruff check .
python -m ruff format --check .
echo "== mypy --strict"
python -m mypy
echo "== pytest"
python -m pytest "$@"
