#!/usr/bin/env bash
# The one device call of a session that is lent a GPU (CUDA; a 15-minute lease, one call of ≤ 10 min):
# what the lease has time for, in order of what matters most, each stage under its own timeout.
# Sized from the three leases of 2026-12-04 (docs/gpu.md): a fresh machine compiles for ~65-75 s (digits
# MLP) to ~170-225 s (paper CNN) before the first step; the binary's kernel cache (src/train/kernel_cache.rs,
# on by default) makes every later process start in ~1 s (digits: 7.7 s -> 0.8-1.3 s measured).
#   Here:  CARGO_TARGET_DIR=target-cuda cargo build --release --features cuda
#          mkdir -p gpu-bin && strip -o gpu-bin/scaling-lab target-cuda/release/scaling-lab && gzip -f gpu-bin/scaling-lab
#          (gpu-bin/ is ignored through .git/info/exclude; carry it)
#   There: bash scripts/gpu-session.sh   (device tool: timeout_s 580, carry ["gpu-bin"])
# Results under $OUT: session.log (each stage and each run as it ends), devices.json, cnn-warm.json,
# cnn-bf16-warm.json. Measured already (docs/gpu.md, third lease): the cache (digits 74.9 s cold, 1.3 s
# warm), the fp32 CNN's steady state (9.0 ms a step) and the CPU at the same seed; so this lease goes
# to what is not:
# 1. the CUDA libraries found, `devices --json` (stops here when no CUDA device is usable), then
#    `devices --check` (devices-check.json: cuda:0 against the CPU's kernels)
# 2. the paper CNN, fp32, 300 steps at B = 256: cold (~225 s), then from the cache (~1.4 s)
# 3. the CIFAR-10 ResNet-8 (cifar10-resnet8-momentum, ghost BN, crop + flip): a short sweep of 8 trials
#    at B = 256 fused as one program on cuda:0 (300-step budget): compile, the group's step time,
#    examples/s = K·B / step_s; resnet-fused-8.jsonl. CIFAR-10 from $SCALING_LAB_DATA_DIR when it holds
#    the binary files, else synthetic files of the same format and size (random pixels: the
#    throughput is CIFAR-10's, the errors are not)
# 4. the paper CNN in bf16 (when 300 s are left)
# 5. fused trial groups: 8 (then 16, if time is left) trials of the paper CNN at B = 256 as
#    one program on cuda:0 (a copy of the preset with a 300-step budget, `sweep --fuse K`): the
#    group's step time against stage 2's one trial (trials/s = K / step_s); fused-K.jsonl
set -uo pipefail
OUT=${OUT:-/tmp/gpu-session}
mkdir -p "$OUT"
if [ -f gpu-bin/scaling-lab.gz ]; then
  gunzip -c gpu-bin/scaling-lab.gz >/tmp/scaling-lab && chmod +x /tmp/scaling-lab
fi
BIN=${BIN:-/tmp/scaling-lab}
export BIN
L="$OUT/session.log"
log() { echo "[$(date +%T)] $*" | tee -a "$L"; }
t0=$(date +%s)

log "stage 1: libraries and devices"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee -a "$L"
# cudarc dlopens libcuda and libnvrtc by name. The driver's own libcuda first: CUDA's forward-
# compatibility libcuda (…/compat) fails with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH on a matching
# driver, and …/stubs holds link-time stubs. Measured on the H200 image: /usr/local/nvidia/lib64,
# then /usr/local/cuda-13.0/targets/x86_64-linux/lib for NVRTC.
libdirs() { find /usr/local /usr/lib /opt /lib -maxdepth 9 -name "$1" 2>/dev/null | grep -v -e /compat/ -e /stubs/ | xargs -r -n1 dirname | sort -u; }
dirs=$( (ls -d /usr/local/nvidia/lib64 2>/dev/null; libdirs 'libcuda.so*'; libdirs 'libnvrtc.so*') | awk '!seen[$0]++' | tr '\n' ':')
export LD_LIBRARY_PATH="${dirs}${LD_LIBRARY_PATH:-}"
log "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
timeout -k 10 120 "$BIN" devices --json >"$OUT/devices.json" 2>/tmp/devices.err
cat "$OUT/devices.json" /tmp/devices.err | tee -a "$L"
if ! python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["cuda"]; sys.exit(0 if isinstance(n,int) and n>0 else 1)' "$OUT/devices.json"; then
  log "no usable CUDA device (the reason is in devices.json)"
  exit 3
fi
# the GPU's convolution block and optimizer updates against the CPU's own kernels (f32 rounding)
timeout -k 10 240 "$BIN" devices --check --json >"$OUT/devices-check.json" 2>>"$L"
log "devices --check: exit $? ($(python3 -c 'import json,sys; print([(c["device"], c["agrees"]) for c in json.load(open(sys.argv[1])).get("checks", [])])' "$OUT/devices-check.json" 2>&1))"

# one `train --json` run on cuda:0: its summary line in session.log
train() {
  local name=$1 to=$2; shift 2
  local s=$(date +%s.%N)
  timeout -k 10 "$to" "$BIN" train --json --devices cuda:0 "$@" >"/tmp/$name.json" 2>"/tmp/$name.err"
  python3 - "/tmp/$name.json" "$name" "$?" "$s" "$(date +%s.%N)" >>"$L" 2>&1 <<'PY'
import json, sys
f, n, rc, s, e = sys.argv[1:]
try:
    d = json.load(open(f)); o = d["outcome"]; t = o["throughput"]; nz = o.get("noise") or {}
    print(n, "rc", rc, "wall %.1f" % (float(e) - float(s)), d["backend"], "steps", o["steps"], o["outcome"],
          "step_s %.4f compute_s %.4f ex/s %.0f" % (t["step_s"], t["compute_s"], t["examples_per_s"]),
          "reads/step", t["reads_per_step"], "noise cost_s", nz.get("cost_s"), "every", nz.get("sample_every"),
          "evals", [(v["step"], round(v["metric"], 4)) for v in o["evals"]][-3:], flush=True)
except Exception as x:
    print(n, "rc", rc, "wall %.1f" % (float(e) - float(s)), "no JSON:", x, open(f[:-5] + ".err").read()[-1500:])
PY
  tail -n 1 "$L"
}

log "stage 2: the paper CNN, fp32, B = 256, cold (fills the cache), then its steady state"
train cnn-cold 260 --preset mnist-cnn-paper-momentum --batch-size 256 --steps 300
train cnn-warm 60 --preset mnist-cnn-paper-momentum --batch-size 256 --steps 300
cp /tmp/cnn-warm.json "$OUT/cnn-warm.json" 2>/dev/null

# a fused sweep of `$2` trials at B = 256 of preset file $1 on cuda:0; its summary line in session.log
fused() {
  local toml=$1 k=$2 name=$3 to=$4
  rm -rf "/tmp/$name"
  local s=$(date +%s.%N)
  timeout -k 10 "$to" "$BIN" sweep "$toml" --devices cuda:0 --batch-sizes 256 --trials "$k" \
    --fuse "$k" --concurrency 1 --confirm off --runs-dir "/tmp/$name" >"/tmp/$name.out" 2>&1
  local rc=$?
  cp /tmp/$name/*.jsonl "$OUT/$name.jsonl" 2>/dev/null
  python3 - "$OUT/$name.jsonl" "$k" "$rc" "$s" "$(date +%s.%N)" "$name" >>"$L" 2>&1 <<'PY'
import json, sys
f, k, rc, s, e, n = sys.argv[1:]
try:
    ts = [json.loads(l) for l in open(f)]
    ts = [t for t in ts if isinstance(t.get("outcome"), dict)]
    st = [t["outcome"]["throughput"]["step_s"] for t in ts]
    print(n, "fused K", k, "rc", rc, "wall %.1f" % (float(e) - float(s)), "trials", len(ts),
          "group step_s %.4f" % max(st), "trial-steps/s %.1f" % (int(k) / max(st)),
          "examples/s %.0f" % (int(k) * 256 / max(st)),
          "steps", [t["outcome"]["steps"] for t in ts], flush=True)
except Exception as x:
    print(n, "fused K", k, "rc", rc, "no log:", x, open("/tmp/%s.out" % n).read()[-1500:])
PY
  tail -n 1 "$L"
}

log "stage 3: the CIFAR-10 ResNet-8 with ghost BN, 8 trials fused at B = 256 (short sweep)"
if ! ls "${SCALING_LAB_DATA_DIR:-/nonexistent}"/{,cifar-10-batches-bin/}data_batch_5.bin >/dev/null 2>&1; then
  export SCALING_LAB_DATA_DIR=/tmp/cifar-synthetic
  mkdir -p "$SCALING_LAB_DATA_DIR"
  python3 - "$SCALING_LAB_DATA_DIR" <<'PY'
import os, sys
for f in ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]:
    b = bytearray(os.urandom(3073 * 10000))
    b[0::3073] = bytes(i % 10 for i in range(10000))
    open(os.path.join(sys.argv[1], f), "wb").write(b)
PY
  log "no CIFAR-10 files: synthetic ones of the same format in $SCALING_LAB_DATA_DIR (throughput only)"
fi
sed -e 's/^step_budget = .*/step_budget = 300/' -e 's/^max_examples = .*/max_examples = 100000000/' \
  presets/cifar10-resnet8-momentum.toml >/tmp/resnet-300.toml
fused /tmp/resnet-300.toml 8 resnet-fused-8 240

log "stage 4: the paper CNN in bf16, cold, then its steady state (bf16 against fp32 on a model that computes)"
if [ $(( 560 - ($(date +%s) - t0) )) -lt 300 ]; then log "bf16 skipped: under 300 s left"; else
train cnn-bf16-cold 280 --preset mnist-cnn-paper-momentum --batch-size 256 --steps 300 --precision bf16
train cnn-bf16-warm 60 --preset mnist-cnn-paper-momentum --batch-size 256 --steps 300 --precision bf16
cp /tmp/cnn-bf16-warm.json "$OUT/cnn-bf16-warm.json" 2>/dev/null
fi
log "stage 5: fused groups of the paper CNN at B = 256 (K trials as one program)"
sed -e 's/^step_budget = .*/step_budget = 300/' -e 's/^max_examples = .*/max_examples = 100000000/' \
  presets/mnist-cnn-paper-momentum.toml >/tmp/paper-300.toml
for k in 8 16; do
  left=$(( 560 - ($(date +%s) - t0) ))
  if [ "$left" -lt 120 ]; then log "fused K = $k skipped: $left s left"; continue; fi
  fused /tmp/paper-300.toml "$k" "fused-$k" "$left"
done
log "done in $(( $(date +%s) - t0 )) s"
