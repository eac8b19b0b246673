#!/usr/bin/env bash
# Verify the course's GPU items (launch `gpus: N > 0`) on a CUDA host; see bench/gpu_items.py.
#
#   on the GPU host, from the repository root:   bash bench/gpu_items.sh run      (writes $OUT/gpu_observations.json)
#   back here, with the observations file:        bash bench/gpu_items.sh judge PATH/gpu_observations.json
#
# `run` uses the host's python3 (torch with CUDA, PyYAML) and nothing of RankLab's; each item
# runs 3 times as `torchrun --standalone`, under a 170 s budget so it fits a 3-minute slot.
# `judge` applies `ranklab verify`'s rules and merges the verdicts into challenges/proofs.json.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  run)
    shift
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    timeout 170 python3 bench/gpu_items.py run --out "${OUT:-gpu-out}" "$@"
    ;;
  judge)
    shift
    .venv/bin/python bench/gpu_items.py judge "$@"
    ;;
  *)
    echo "usage: bash bench/gpu_items.sh run [--repeats N] | judge OBSERVATIONS.json [--proofs FILE]" >&2
    exit 2
    ;;
esac
