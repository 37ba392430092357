#!/usr/bin/env bash
# One prepared GPU check. Writes ONE JSON summary (default gpu-check.json, or
# $OUT_JSON): per preset on the first device of GPU_BACKEND (cuda or wgpu) the examples/s and
# steps-to-target in fp32, bf16 and fp16 (a precision the device cannot do is recorded as refused,
# with the reason), the CPU run at the same seed (steps within 20%?), fusion on vs off
# (SCALING_LAB_FUSION=0 runs the unfused backend), two trials packed on one device, and two
# replicas data-parallel (two devices when there are two, else two replicas sharing device 0 on
# wgpu) against two CPU workers at the same seed.
# Without a device of that backend it prints "no GPU" in one line and exits 0.
#   GPU_BACKEND=cuda (default): build with `cargo build --release --features cuda`; presets
#     mnist-cnn-paper-momentum and shakespeare-mlstm-paper-adam at B=256, 60 s a run (8 minutes).
#   GPU_BACKEND=wgpu: `cargo build --release --features wgpu`; presets sized for a software
#     device (lavapipe): digits-mlp-momentum and mnist-cnn-momentum at B=64, every run capped at
#     $STEPS steps and $T s (CI runs this on lavapipe; its time there is not yet measured: docs/gpu.md).
# Env: BIN, OUT_JSON, RUNS_LOG, GPU_BACKEND, PRESETS, B, SEED, T, STEPS, SIDE_STEPS (a cap for the runs whose
# steps are not compared with the CPU — bf16, fp16, fusion off, the packed pair — on wgpu 20: they show
# that the path runs, and its examples/s), CPU (0: no CPU runs, for a preset too slow on the CPU to
# reach its target inside a device lease).
set -uo pipefail
BIN=${BIN:-./target/release/scaling-lab}
OUT_JSON=${OUT_JSON:-gpu-check.json}
GPU_BACKEND=${GPU_BACKEND:-cuda}
SEED=${SEED:-0}

if [ ! -x "$BIN" ]; then
  echo "no binary at $BIN: build with cargo build --release --features $GPU_BACKEND" >&2
  exit 1
fi
case "$GPU_BACKEND" in
  cuda)
    B=${B:-256}
    T=${T:-60}           # seconds per GPU run
    STEPS=${STEPS:-}     # no cap: the preset's budget, cut by T
    SIDE_STEPS=${SIDE_STEPS:-}
    PRESETS=${PRESETS:-"mnist-cnn-paper-momentum shakespeare-mlstm-paper-adam"}  # the bf16 goal (>= 2x) is on the 1024-unit mLSTM
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
    ;;
  wgpu)
    B=${B:-64}
    T=${T:-240}          # a software device compiles each kernel on first use (seconds each)
    STEPS=${STEPS:-300}
    SIDE_STEPS=${SIDE_STEPS:-20}
    PRESETS=${PRESETS:-"digits-mlp-momentum mnist-cnn-momentum"}
    # autotune benchmarks every kernel variant on first use: minutes on a software device
    export CUBECL_AUTOTUNE_LEVEL=${CUBECL_AUTOTUNE_LEVEL:-minimal}
    ngpu=$("$BIN" devices --json 2>/dev/null | python3 -c 'import json,sys
d = json.load(sys.stdin)["wgpu"]
print(len(d) if isinstance(d, list) else 0)' 2>/dev/null || echo 0)
    ;;
  *)
    echo "GPU_BACKEND must be cuda or wgpu (got $GPU_BACKEND)" >&2
    exit 2
    ;;
esac
if [ "${ngpu:-0}" -eq 0 ]; then
  echo "no GPU"
  exit 0
fi
dev0="$GPU_BACKEND:0"
if [ "$ngpu" -gt 1 ]; then
  two="$GPU_BACKEND:0,1"
elif [ "$GPU_BACKEND" = wgpu ]; then
  two="wgpu:0,0"       # two replicas sharing adapter 0
else
  two=""
fi
cap=()
[ -n "$STEPS" ] && cap=(--steps "$STEPS")
side_cap=("${cap[@]}")
[ -n "$SIDE_STEPS" ] && side_cap=(--steps "$SIDE_STEPS")
# the CPU runs are capped at 300 steps unless $STEPS already caps every run (`--steps` once only)
cpu_cap=(--steps 300)
[ -n "$STEPS" ] && cpu_cap=()
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t_start=$(date +%s)

# run NAME TIMEOUT ARGS...: one `train --json` run, its JSON (or an error object) in $tmp/NAME.json
run() {
  local name=$1 to=$2; shift 2
  local t0=$(date +%s.%N)
  if timeout -k 15 "$to" "$BIN" train --json "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"; then
    python3 - "$tmp/$name.out" "$name" "$(date +%s.%N)" "$t0" >"$tmp/$name.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); o = d.get("outcome", d)
print(json.dumps({"run": sys.argv[2], "backend": d.get("backend"), "outcome": o.get("outcome", {}).get("status"),
  "steps": o.get("steps"), "steps_to_target": o.get("outcome", {}).get("step") if o.get("outcome", {}).get("status") == "reached" else None,
  "examples_per_s": o.get("throughput", {}).get("examples_per_s"), "final_loss_scale": o.get("final_loss_scale"),
  "skipped_steps": o.get("skipped_steps"), "step_s": o.get("throughput", {}).get("step_s"),
  "reads_per_step": o.get("throughput", {}).get("reads_per_step"), "reads_per_eval": o.get("throughput", {}).get("reads_per_eval"),
  "noise_cost_s": (o.get("noise") or {}).get("cost_s"), "trial_wall_s": o.get("wall_s"),
  "wall_s": float(sys.argv[3]) - float(sys.argv[4])}))
PY
  else
    local rc=$?
    local why=""
    # 124: `timeout` stopped it; 137: killed after the grace (a first step still compiling)
    case $rc in 124 | 137) why="timed out after $to s (T): " ;; esac
    printf '{"run": "%s", "exit": %d, "error": %s}\n' "$name" "$rc" "$( (printf '%s' "$why"; tail -c 400 "$tmp/$name.err") | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()))')" >"$tmp/$name.json"
  fi  # each run's line as it ends (RUNS_LOG: a log that outlives a check killed by its caller's timeout)
  [ -n "${RUNS_LOG:-}" ] && cat "$tmp/$name.json" >>"$RUNS_LOG"
}

for p in $PRESETS; do
  common=(--preset "$p" --batch-size "$B" --seed "$SEED" "${cap[@]}")
  side=(--preset "$p" --batch-size "$B" --seed "$SEED" "${side_cap[@]}")
  run "$p.fp32.gpu0" "$T" "${common[@]}" --precision fp32 --devices "$dev0"
  for prec in bf16 fp16; do
    run "$p.$prec.gpu0" "$T" "${side[@]}" --precision "$prec" --devices "$dev0"
  done
  SCALING_LAB_FUSION=0 run "$p.fp32.gpu0.nofusion" "$T" "${side[@]}" --precision fp32 --devices "$dev0"
  # two trials packed on one device at once
  run "$p.fp32.packed.a" "$T" "${side[@]}" --precision fp32 --devices "$dev0" &
  run "$p.fp32.packed.b" "$T" --preset "$p" --batch-size "$B" --seed "$((SEED + 1))" "${side_cap[@]}" --precision fp32 --devices "$dev0" &
  wait
  if [ -n "$two" ]; then
    run "$p.fp32.two" "$T" "${common[@]}" --precision fp32 --devices "$two"
    [ "${CPU:-1}" = 0 ] || run "$p.fp32.cpu2" 300 "${common[@]}" --precision fp32 --workers 2 "${cpu_cap[@]}"
  fi
  # the CPU at the same seed, capped at 300 steps (steps-to-target compared when both reach the target)
  [ "${CPU:-1}" = 0 ] && continue
  run "$p.fp32.cpu" 300 "${common[@]}" --precision fp32 --workers 1 "${cpu_cap[@]}"
done

python3 - "$tmp" "$ngpu" "$OUT_JSON" "$GPU_BACKEND" "$dev0" "$two" "$B" "$SEED" "$(( $(date +%s) - t_start ))" <<'PY'
import json, os, sys
tmp, ngpu, out, backend, dev0, two, b, seed, wall = sys.argv[1:10]
runs = {}
for f in sorted(os.listdir(tmp)):
    if f.endswith(".json"):
        d = json.load(open(os.path.join(tmp, f))); runs[d["run"]] = d
def eps(k): return (runs.get(k) or {}).get("examples_per_s") or None
def ratio(a, b): return a / b if a and b else None
def close(a, c):
    a, c = runs.get(a, {}), runs.get(c, {})
    if a.get("outcome") == "reached" and c.get("outcome") == "reached":
        return abs(a["steps_to_target"] - c["steps_to_target"]) <= 0.2 * max(c["steps_to_target"], 1)
    return None
def precision(k):
    r = runs.get(k, {})
    if "error" in r:
        return {"ran": False, "refused": "cannot compute in" in r["error"], "error": r["error"]}
    return {"ran": True, "outcome": r.get("outcome"), "steps_to_target": r.get("steps_to_target"),
            "final_loss_scale": r.get("final_loss_scale"), "skipped_steps": r.get("skipped_steps")}
summary = {"backend": backend, "devices": int(ngpu), "device": dev0, "two_replicas": two or None,
           "batch_size": int(b), "seed": int(seed), "wall_s": int(wall), "runs": runs, "presets": {}}
for k in runs:
    p = k.split(".")[0]
    if p in summary["presets"]: continue
    g = p + ".fp32.gpu0"
    f32 = eps(g)
    pa, pb = eps(p + ".fp32.packed.a"), eps(p + ".fp32.packed.b")
    summary["presets"][p] = {
        "gpu_backend_label": runs.get(g, {}).get("backend"),
        "fp32_examples_per_s": f32,
        "fp32_steps_to_target": runs.get(g, {}).get("steps_to_target"),
        "fp32_step_s": runs.get(g, {}).get("step_s"),
        "fp32_reads_per_step": runs.get(g, {}).get("reads_per_step"),
        "cpu_steps_to_target": runs.get(p + ".fp32.cpu", {}).get("steps_to_target"),
        "steps_gpu_vs_cpu_within_20pct": close(g, p + ".fp32.cpu"),
        "precision": {"bf16": precision(p + ".bf16.gpu0"), "fp16": precision(p + ".fp16.gpu0")},
        "bf16_over_fp32": ratio(eps(p + ".bf16.gpu0"), f32),
        "fp16_over_fp32": ratio(eps(p + ".fp16.gpu0"), f32),
        "fusion_on_over_off": ratio(f32, eps(p + ".fp32.gpu0.nofusion")),
        "nofusion_steps_to_target": runs.get(p + ".fp32.gpu0.nofusion", {}).get("steps_to_target"),
        "packed_two_total_over_one": ratio((pa or 0) + (pb or 0), f32) if pa and pb else None,
        "two_replicas_over_one": ratio(eps(p + ".fp32.two"), f32),
        "two_replicas_steps_to_target": runs.get(p + ".fp32.two", {}).get("steps_to_target"),
        "cpu2_steps_to_target": runs.get(p + ".fp32.cpu2", {}).get("steps_to_target"),
        "steps_two_replicas_vs_cpu2_within_20pct": close(p + ".fp32.two", p + ".fp32.cpu2"),
    }
json.dump(summary, open(out, "w"), indent=1)
print(json.dumps(summary["presets"], indent=1))
print("wrote", out)
PY
