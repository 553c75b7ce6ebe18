#!/usr/bin/env bash
# GPU check (issue 14): a few GRPO steps on a Qwen2-0.5B-shaped model (random weights), fp32 weights with
# bf16 autocast, one GPU; then the hf rollout timing (bench/training/gpu_rollouts.py). --dry-run: the same path on
# the CPU with a small config. Installs the project into .venv first if it is not there.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv && .venv/bin/python -m pip install -q -e .; fi
.venv/bin/python -m bench.training.gpu_check "$@"
.venv/bin/python -m bench.training.gpu_rollouts "$@"
