#!/usr/bin/env bash
# Install what the TRL and SkyRL integration tests need: trl 1.16.0 and skyrl-gym 0.4.0, and
# llguidance 1.9.1 (constrained decoding of the in-process `transformers` provider).
#
# Idempotent: when everything is already installed it only checks versions (a second or so).
# torch is never changed: torch==2.13.0 is named on the pip command line so that the resolver
# keeps the installed CPU build (trl -> accelerate requires torch; left free, pip could pull
# the newest CUDA build). transformers is held to the range VERL 0.9.1 accepts (see
# scripts/install-verl.sh), so running this script after that one changes nothing of VERL's.
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
REQS=(
  "trl==1.16.0"
  "skyrl-gym==0.4.0"
  "llguidance==1.9.1"
  "transformers>=5.5.3,<5.11,!=5.6.0"
)

# Fast path: every requirement already satisfied (checked without importing torch or trl).
if "$PY" - "$TORCH" "${REQS[@]}" <<'PYCHECK' 2>/dev/null; then
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
  echo "install-rl-extras: trl 1.16.0 and skyrl-gym 0.4.0 are already installed"
  exit 0
fi

echo "install-rl-extras: installing trl 1.16.0 and skyrl-gym 0.4.0 (torch pinned to 2.13.0)"
pip_install "$TORCH" "${REQS[@]}"
"$PY" -c "import torch, trl, skyrl_gym; from importlib.metadata import version; print('install-rl-extras: torch', torch.__version__, '| trl', trl.__version__, '| skyrl-gym', version('skyrl-gym'))"
