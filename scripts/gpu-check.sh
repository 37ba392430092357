#!/usr/bin/env bash
# GPU check: MNIST-CNN and mLSTM at one batch size, fp32 and bf16, on CUDA vs the CPU at the same seed.
# Build here with `cargo build --release --features cuda`, carry target/release/scaling-lab, run there.
set -uo pipefail
BIN=${BIN:-./target/release/scaling-lab}
B=${B:-256}
SEED=${SEED:-0}
echo "== devices"; nvidia-smi -L 2>/dev/null || echo "nvidia-smi not found"
for preset in mnist-cnn-momentum shakespeare-mlstm-adam; do
  for prec in fp32 bf16; do
    echo "== $preset B=$B $prec cuda:0"
    timeout 120 "$BIN" train --preset "$preset" --batch-size "$B" --precision "$prec" --seed "$SEED" --devices cuda:0 --json \
      | python3 -c 'import sys,json; d=json.load(sys.stdin); o=d["outcome"]; print("outcome", o["outcome"], "steps", o["steps"], "ex/s %.0f" % o["throughput"]["examples_per_s"])'
  done
  echo "== $preset B=$B fp32 cpu (same seed, step budget capped at 300)"
  timeout 300 "$BIN" train --preset "$preset" --batch-size "$B" --seed "$SEED" --workers 1 --steps 300 --json \
    | python3 -c 'import sys,json; d=json.load(sys.stdin); o=d["outcome"]; print("outcome", o["outcome"], "steps", o["steps"], "ex/s %.0f" % o["throughput"]["examples_per_s"])'
done
