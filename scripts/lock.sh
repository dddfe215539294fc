#!/usr/bin/env bash
# Regenerate requirements/test.txt, the lock every test install is constrained by.
#
# Run it after changing a dependency in pyproject.toml or requirements/*.in (pins already in
# the lock are kept), or as `bash scripts/lock.sh --upgrade` to move every pin to the newest
# release that resolves; then run `bash scripts/test.sh` and commit the new lock. It resolves with pip (pip-tools' pip-compile,
# in a throwaway virtual environment), so it sees the same indexes and local wheels as the
# installs (torch 2.13.0's CPU build from this machine's wheel directory).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_pip.sh

TOOLS="$(mktemp -d)"
trap 'rm -rf "$TOOLS"' EXIT
python3 -m venv "$TOOLS"
"$TOOLS/bin/pip" install --quiet "pip-tools==7.6.2" 2>&1 | { grep -v "is ignored" || true; }
"$TOOLS/bin/pip-compile" --quiet --strip-extras --allow-unsafe \
  --no-emit-index-url --no-emit-find-links \
  $(printf -- "--extra %s " ${TEST_EXTRAS//,/ }) \
  --output-file requirements/test.txt "$@" pyproject.toml requirements/test.in \
  2>&1 | { grep -v "is ignored" || true; }
echo "lock: wrote requirements/test.txt ($(grep -c '==' requirements/test.txt) pins)"
