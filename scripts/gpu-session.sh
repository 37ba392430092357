#!/usr/bin/env bash
# The one device call of a session that is lent a GPU (CUDA; a 15-minute lease, one call of ≤ 10 min):
# what the lease has time for, in order of what matters most, each stage under its own timeout.
# Sized from the first CUDA runs (docs/gpu.md, 2026-12-04): on a fresh machine the first process
# spends ~50 s (digits MLP) to ~170 s (paper CNN) compiling and autotuning before its first step;
# later processes reuse the autotune cache (target/autotune) but compile again (~6 s digits, ~60 s CNN).
# So the A/B runs use the digits MLP, and the paper CNN runs once, last.
#   Here:  CARGO_TARGET_DIR=target-cuda cargo build --release --features cuda
#          mkdir -p gpu-bin && strip -o gpu-bin/scaling-lab target-cuda/release/scaling-lab && gzip -f gpu-bin/scaling-lab
#          (gpu-bin/ is ignored through .git/info/exclude; carry it)
#   There: bash scripts/gpu-session.sh   (device tool: timeout_s 580, carry ["gpu-bin"])
# Results under $OUT in at most 6 files (the device tool brings back 8): session.log (each stage and
# each run as it ends), devices.json, gpu-check-digits.json, ptx-cache.log, sweep.json, cnn.json.
# 1. the CUDA libraries found, `devices --json` (stops here when no CUDA device is usable)
# 2. digits MLP, 300 steps at B = 256 in a fresh process: the first compile and autotune
# 3. scripts/gpu-check.sh on digits-mlp-momentum: fp32/bf16/fp16, fusion off, two packed, the CPU
# 4. a sweep on cuda:0 (two B x two trials, two packed, the fit probe's child processes)
# 5. CubeCL's PTX cache (a cubecl.toml with [compilation] cache): the same run twice, with and without
# 6. the paper CNN, fp32, 300 steps at B = 256 (the CPU at the same seed is in gpu-check's CNN preset)
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

log "stage 2: digits MLP in a fresh process (first compile and autotune)"
train digits-cold 150 --preset digits-mlp-momentum --batch-size 256 --steps 300

log "stage 3: gpu-check, digits MLP"
PRESETS=digits-mlp-momentum B=256 STEPS=300 T=60 OUT_JSON="$OUT/gpu-check-digits.json" RUNS_LOG="$L" \
  bash scripts/gpu-check.sh 2>&1 | tail -n 60 | tee -a "$L"
python3 scripts/gpu-check-verify.py "$OUT/gpu-check-digits.json" 2>&1 | tee -a "$L"

log "stage 4: a sweep on cuda:0 (digits MLP, B 64 and 1024 x 2 trials, 2 trials packed)"
runs=$(mktemp -d)
s=$(date +%s)
timeout -k 10 150 "$BIN" sweep digits-mlp-momentum --devices cuda:0 --trials-per-device 2 --batch-sizes 64,1024 \
  --trials 2 --runs-dir "$runs" --json >"$OUT/sweep.json" 2>/tmp/sweep.err
log "sweep exit $? in $(( $(date +%s) - s )) s ($(wc -c <"$OUT/sweep.json") bytes of report; stderr: $(tail -c 1500 /tmp/sweep.err))"

log "stage 5: CubeCL's PTX cache, off then on twice"
train ptx-off 90 --preset digits-mlp-momentum --batch-size 256 --steps 300
printf '[compilation]\ncache = "target"\n' >cubecl.toml
train ptx-fill 90 --preset digits-mlp-momentum --batch-size 256 --steps 300
train ptx-on 90 --preset digits-mlp-momentum --batch-size 256 --steps 300
rm -f cubecl.toml
grep '^ptx-' "$L" >"$OUT/ptx-cache.log"
ls -la target 2>&1 | tee -a "$OUT/ptx-cache.log"

log "stage 6: the paper CNN, fp32, 300 steps at B = 256"
train cnn 240 --preset mnist-cnn-paper-momentum --batch-size 256 --steps 300
cp /tmp/cnn.json "$OUT/cnn.json" 2>/dev/null
log "done in $(( $(date +%s) - t0 )) s"
