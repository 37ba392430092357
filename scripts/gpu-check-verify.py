#!/usr/bin/env python3
"""Checks the JSON summary of scripts/gpu-check.sh (CI runs it on lavapipe with GPU_BACKEND=wgpu).

Per preset: the fp32 run on device 0 finished; where it and the CPU run at the same seed both reached
the target, their steps agree within 20 %; bf16 ran or was refused with the probe's reason (never a
crash); fp16 ran with the loss scaler; the unfused run, both packed runs and the two-replica run
finished with examples/s measured; two replicas and two CPU workers agree within 20 % where both
reached. At least one preset must reach the target on the device and on the CPU.
Usage: gpu-check-verify.py SUMMARY.json   (exit 1 with one line per failed check)
"""
import json
import sys


def main(path):
    s = json.load(open(path))
    bad = []
    if not s.get("presets"):
        bad.append("no preset ran")
    compared = 0
    for name, p in s.get("presets", {}).items():
        runs = s["runs"]

        def ran(key):
            r = runs.get(f"{name}.{key}", {})
            if "error" in r:
                bad.append(f"{name}.{key}: failed (exit {r.get('exit')}): {r['error'][-200:]}")
                return None
            if not r.get("examples_per_s"):
                bad.append(f"{name}.{key}: no examples/s measured: {r}")
                return None
            return r

        g = ran("fp32.gpu0")
        ran("fp32.cpu")
        if p["steps_gpu_vs_cpu_within_20pct"] is False:
            bad.append(f"{name}: device {p['fp32_steps_to_target']} vs CPU {p['cpu_steps_to_target']} steps (> 20 %)")
        if p["steps_gpu_vs_cpu_within_20pct"]:
            compared += 1
        bf16 = p["precision"]["bf16"]
        if not bf16["ran"] and not bf16.get("refused"):
            bad.append(f"{name}: bf16 failed without the precision refusal: {bf16.get('error', '')[-200:]}")
        fp16 = ran("fp16.gpu0")
        if fp16 and fp16.get("final_loss_scale", 1) <= 1:
            bad.append(f"{name}: fp16 ran without loss scaling: {fp16}")
        ran("fp32.gpu0.nofusion")
        if g and "unfused" not in (runs.get(f"{name}.fp32.gpu0.nofusion", {}).get("backend") or "") and s["backend"] == "wgpu":
            bad.append(f"{name}: the fusion-off run did not run unfused")
        ran("fp32.packed.a")
        ran("fp32.packed.b")
        if s.get("two_replicas"):
            ran("fp32.two")
            ran("fp32.cpu2")
            if p["steps_two_replicas_vs_cpu2_within_20pct"] is False:
                bad.append(f"{name}: two replicas {p['two_replicas_steps_to_target']} vs two CPU workers {p['cpu2_steps_to_target']} steps (> 20 %)")
    if compared == 0:
        bad.append("no preset reached the target on both the device and the CPU: nothing compared")
    for b in bad:
        print("gpu-check:", b)
    if not bad:
        print(f"gpu-check: OK ({s['backend']}, {len(s['presets'])} presets, {s['wall_s']} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
