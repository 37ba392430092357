#!/usr/bin/env bash
# One prepared GPU check (issue 13, item 7). Writes ONE JSON summary (default gpu-check.json, or $OUT_JSON):
# per preset and precision on cuda:0 examples/s and steps-to-target, the CPU run at the same seed
# (steps within 20%?), bf16/fp32 and fp16/fp32 speedups, fusion on vs off (CUBECL fusion env switch if the
# build honours it), two trials packed on one GPU, and 2 GPUs data-parallel when more than one is visible.
# Without a GPU it prints "no GPU" in one line and exits 0. Budget: 8 minutes (every run has a timeout).
# Build first, on a machine with the toolkit or offline: `cargo build --release --features cuda`.
set -uo pipefail
BIN=${BIN:-./target/release/scaling-lab}
OUT_JSON=${OUT_JSON:-gpu-check.json}
SEED=${SEED:-0}
B=${B:-256}
T=${T:-60}          # seconds per GPU run
PRESETS=${PRESETS:-"mnist-cnn-paper-momentum shakespeare-mlstm-paper-adam"}  # the bf16 goal (>= 2x) is on the 1024-unit mLSTM

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${ngpu:-0}" -eq 0 ]; then
  echo "no GPU"
  exit 0
fi
if [ ! -x "$BIN" ]; then
  echo "no binary at $BIN: build with cargo build --release --features cuda" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME TIMEOUT ARGS...: one `train --json` run, its JSON (or an error object) in $tmp/NAME.json
run() {
  local name=$1 to=$2; shift 2
  local t0=$(date +%s.%N)
  if timeout "$to" "$BIN" train --json "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"; then
    python3 - "$tmp/$name.out" "$name" "$(date +%s.%N)" "$t0" >"$tmp/$name.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); o = d.get("outcome", d)
print(json.dumps({"run": sys.argv[2], "outcome": o.get("outcome"), "steps": o.get("steps"),
  "examples_per_s": o.get("throughput", {}).get("examples_per_s"), "wall_s": float(sys.argv[3]) - float(sys.argv[4])}))
PY
  else
    printf '{"run": "%s", "error": %s}\n' "$name" "$(tail -c 300 "$tmp/$name.err" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')" >"$tmp/$name.json"
  fi
}

for p in $PRESETS; do
  for prec in fp32 bf16 fp16; do
    run "$p.$prec.cuda0" "$T" --preset "$p" --batch-size "$B" --precision "$prec" --seed "$SEED" --devices cuda:0
  done
  CUBECL_FUSION=0 BURN_FUSION=0 run "$p.fp32.cuda0.nofusion" "$T" --preset "$p" --batch-size "$B" --seed "$SEED" --devices cuda:0
  # two trials packed on one GPU at once
  run "$p.fp32.packed.a" "$T" --preset "$p" --batch-size "$B" --seed "$SEED" --devices cuda:0 &
  run "$p.fp32.packed.b" "$T" --preset "$p" --batch-size "$B" --seed "$((SEED + 1))" --devices cuda:0 &
  wait
  if [ "$ngpu" -gt 1 ]; then
    run "$p.fp32.cuda01" "$T" --preset "$p" --batch-size "$B" --seed "$SEED" --devices cuda:0,cuda:1
  fi
  # the CPU at the same seed, capped at 300 steps (steps-to-target compared when both reach the target)
  run "$p.fp32.cpu" 90 --preset "$p" --batch-size "$B" --seed "$SEED" --workers 1 --steps 300
done

python3 - "$tmp" "$ngpu" "$OUT_JSON" <<'PY'
import json, os, sys
tmp, ngpu, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = {}
for f in sorted(os.listdir(tmp)):
    if f.endswith(".json"):
        d = json.load(open(os.path.join(tmp, f))); runs[d["run"]] = d
def eps(k): return (runs.get(k) or {}).get("examples_per_s") or None
summary = {"gpus": ngpu, "runs": runs, "presets": {}}
for k in runs:
    p = k.split(".")[0]
    if p in summary["presets"]: continue
    f32, b16, f16 = eps(p + ".fp32.cuda0"), eps(p + ".bf16.cuda0"), eps(p + ".fp16.cuda0")
    cpu, gpu = runs.get(p + ".fp32.cpu", {}), runs.get(p + ".fp32.cuda0", {})
    same = None
    if cpu.get("outcome") == "reached" and gpu.get("outcome") == "reached":
        same = abs(cpu["steps"] - gpu["steps"]) <= 0.2 * max(cpu["steps"], 1)
    pa, pb = eps(p + ".fp32.packed.a"), eps(p + ".fp32.packed.b")
    summary["presets"][p] = {
        "fp32_examples_per_s": f32, "bf16_over_fp32": b16 / f32 if b16 and f32 else None,
        "fp16_over_fp32": f16 / f32 if f16 and f32 else None,
        "fusion_on_over_off": f32 / eps(p + ".fp32.cuda0.nofusion") if f32 and eps(p + ".fp32.cuda0.nofusion") else None,
        "packed_two_total_over_one": (pa + pb) / f32 if pa and pb and f32 else None,
        "two_gpus_over_one": eps(p + ".fp32.cuda01") / f32 if eps(p + ".fp32.cuda01") and f32 else None,
        "steps_cuda_vs_cpu_within_20pct": same,
    }
json.dump(summary, open(out, "w"), indent=1)
print(json.dumps(summary["presets"], indent=1))
print("wrote", out)
PY
