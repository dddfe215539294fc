#!/usr/bin/env bash
# Install the CPU stack the VERL integration tests need: torch 2.13.0 (CPU) + a lean verl 0.9.1.
#
# Idempotent: when everything is already installed it only checks versions (a second or so).
# Order matters: torch==2.13.0 first, from the local CPU wheel, so that nothing later makes
# pip resolve "torch" from the registry (its newest build drags in several GB of CUDA packages).
# verl itself is installed with --no-deps: its full requirements pull wandb, datasets, pandas,
# pyarrow, ... that the reward path never imports (see shared/research/verl.md §3). The V1
# agent loop that integrations.verl.group subclasses imports TransferQueue, torchdata, peft,
# pillow and cachetools: those are installed too, TransferQueue/torchdata/peft
# with --no-deps.
set -euo pipefail
cd "$(dirname "$0")/.."

export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_ROOT_USER_ACTION=ignore
PY="${PYTHON:-python}"

# pip, minus the noise of local index directories that hold no entry for a package.
pip_install() {
  # pipefail (set above) makes a failing pip fail the script.
  "$PY" -m pip install --quiet "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
}

TORCH="torch==2.13.0"
VERL="verl==0.9.1"
DEPS=(
  "tensordict>=0.8,<=0.10.0,!=0.9.0"
  "ray>=2.41"
  "omegaconf"
  "hydra-core"
  "transformers>=5.5.3,<5.11,!=5.6.0"
  "tokenizers"
  "codetiming"
  "accelerate"
  "aiohttp"
  "numpy>=2"
  # VERL's agent loop and V1 trainer modules (integrations.verl.group runs them on CPU):
  "pillow"
  "cachetools"
  "pyzmq"
  "msgspec"
  "prometheus_client"
)
# Imported by VERL's V1 trainer modules; --no-deps, as their requirements (torch, ray[default])
# would reach for packages the CPU check does not use.
NODEPS=(
  "transferqueue==0.1.11"
  "torchdata==0.11.0"
  "peft>=0.17,<1"
)

# Fast path: every requirement already satisfied (checked without importing torch or verl).
if "$PY" - "$TORCH" "$VERL" "${DEPS[@]}" "${NODEPS[@]}" <<'PYCHECK' 2>/dev/null; then
import sys
from importlib.metadata import PackageNotFoundError, version

try:
    from packaging.requirements import Requirement
except ImportError:  # pip vendors it
    from pip._vendor.packaging.requirements import Requirement

for text in sys.argv[1:]:
    req = Requirement(text)
    try:
        installed = version(req.name)
    except PackageNotFoundError:
        sys.exit(1)
    if req.specifier and not req.specifier.contains(installed, prereleases=True):
        sys.exit(1)
PYCHECK
  echo "install-verl: torch 2.13.0, verl 0.9.1 and their lean deps are already installed"
  exit 0
fi

echo "install-verl: installing $TORCH (local CPU wheel)"
pip_install "$TORCH"
echo "install-verl: installing $VERL (--no-deps) and its lean dependency set"
pip_install --no-deps "$VERL" "${NODEPS[@]}"
# torch is named again, pinned, so the resolver can never pick another build for a dependency.
pip_install "$TORCH" "${DEPS[@]}"
"$PY" -c "import torch, verl; print('install-verl: torch', torch.__version__, '| verl', verl.__version__)"
