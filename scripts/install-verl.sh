#!/usr/bin/env bash
# Install a CPU stack for VERL's reward path: torch 2.13.0 (CPU) + a lean verl 0.9.1.
#
# Versions come from the test lock (requirements/test.txt, written by scripts/lock.sh).
# Order matters: torch==2.13.0 first, from the local CPU wheel, so that nothing later makes
# pip resolve "torch" from the registry (its newest build drags in several GB of CUDA packages).
# verl itself is installed with --no-deps: its full requirements pull wandb, datasets, pandas,
# pyarrow, ... that the reward path never imports (see requirements/verl-lean.in); so is
# TransferQueue, which VERL's V1 agent loop imports and which asks for ray[default].
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_pip.sh

echo "install-verl: installing torch 2.13.0 (local CPU wheel)"
pip_install "torch==2.13.0"
echo "install-verl: installing verl $VERL_VERSION and TransferQueue $TRANSFERQUEUE_VERSION (--no-deps) and their lean dependency set"
pip_install --no-deps "${VERL_PINS[@]}"
pip_install -r requirements/verl-lean.in
"$PY" -c "import torch, verl; print('install-verl: torch', torch.__version__, '| verl', verl.__version__)"
