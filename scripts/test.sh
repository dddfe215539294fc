#!/usr/bin/env bash
# The full test suite, from a fresh machine: installs what it needs, then lint, types, tests.
#
# First run on a new machine: ~15-20 minutes of installs (torch CPU wheel and a lean VERL,
# litellm, and llama-cpp-python built from source for the e2e tests; pip caches the wheel),
# then the suite itself.
set -euo pipefail
cd "$(dirname "$0")/.."

export LITELLM_LOCAL_MODEL_COST_MAP=True   # never fetch litellm's cost map from the network
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_ROOT_USER_ACTION=ignore

# torch 2.13.0 (CPU) first, then verl 0.9.1's lean set: nothing later may pull a CUDA torch.
bash scripts/install-verl.sh
# trl and skyrl-gym for the TRL/SkyRL adapters (torch stays pinned).
bash scripts/install-rl-extras.sh
# The package itself (editable: registers the verl.plugins entry point) with every extra the tests use.
CMAKE_BUILD_PARALLEL_LEVEL=2 python -m pip install --quiet -e ".[dev,litellm,math,metaeval,e2e,ray]"

echo "== ruff"
python -m ruff check .
python -m ruff format --check .
echo "== mypy --strict"
python -m mypy
echo "== pytest"
python -m pytest "$@"
