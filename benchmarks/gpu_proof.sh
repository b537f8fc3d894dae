#!/usr/bin/env bash
# The GPU proof (benchmarks/gpu_proof.py) on one H100/H200: the 1.3B paper preset trained by the
# project's loop (MFU, tokens/s, peak memory), the 3.3B and 7.2B presets' memory per layer at
# their micro batch with activation checkpointing, one rater backbone's documents/s. Needs only
# torch and transformers; about 3-5 minutes. Writes gpu_proof.json to $OUT (or the current
# directory); docs/cluster.md records the numbers and the card.
#   bash benchmarks/gpu_proof.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-.}/gpu_proof.json"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())"
PYTHONPATH=src timeout 540 python benchmarks/gpu_proof.py --config config/paper.yaml --out "$out" "$@"
echo "wrote $out"
