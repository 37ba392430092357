#!/usr/bin/env bash
# What the gradient-noise-scale estimate costs a one-worker trial, per preset, as whole processes:
# `scaling-lab train` with the estimate (the default: tr(Σ) sampled on a cadence chosen from its
# measured cost) against the same trial with `--no-noise-scale`, ROUNDS interleaved pairs
# (A B A B …). Prints per preset the median wall and CPU (user + system) ratio A/B and their range,
# and the share of A's trial time that the trainer itself timed in the estimate's extra work
# (`noise.cost_s / wall_s` of `train --json`: the sampled half-batch backward passes; on a noisy
# machine far tighter than the paired ratio, which also carries start-up and the machine's noise).
# The trajectory is the same with and without the estimate, so the pair differs only by its cost.
#
# usage: benches/noise_overhead.sh [BIN] [ROUNDS] [PRESET:STEPS ...]
#   BIN     the scaling-lab binary (default target/release/scaling-lab)
#   ROUNDS  pairs per preset (default 7)
#   PRESET:STEPS[:B]  which presets, how many steps each trial runs and at which batch size
#           (default B = 64; default presets: one per model, steps for a ~1-10 s run on a 2-core
#           CPU). Every trial runs its whole budget (an unreachable target) with the preset's
#           evaluation cadence.
# Needs /usr/bin/time (GNU time). Quote the medians with the machine's load (uptime).
set -euo pipefail
BIN=${1:-target/release/scaling-lab}
ROUNDS=${2:-7}
shift $(( $# > 2 ? 2 : $# ))
PRESETS=("$@")
if [ ${#PRESETS[@]} -eq 0 ]; then
  PRESETS=(digits-mlp-sgd:3000 digits-mlp-adam:3000 mnist-cnn-momentum:60 fashion-cnn-adam:60
           fashion-cnn-paper-sgd:20 shakespeare-lstm-adam:60 shakespeare-mlstm-adam:40
           shakespeare-transformer-adam:40)
fi
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "needs GNU time at $TIME" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

run() { # preset steps batch extra-flag → "wall cpu" (A's JSON kept in $tmp/j)
  "$TIME" -o "$tmp/t" -f "%e %U %S" "$BIN" train --preset "$1" --batch-size "$3" --steps "$2" \
    --target 0.000001 --json ${4:+"$4"} >"$tmp/j" 2>/dev/null || true
  awk '{ printf "%s %.3f\n", $1, $2 + $3 }' "$tmp/t"
}

cost_share() { # the trial's own timing of the estimate: noise.cost_s / wall_s of the last A run
  python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); o=o.get("outcome", o); n=o.get("noise", {}); print(n.get("cost_s", 0.0) / max(o.get("wall_s", 0.0), 1e-9))' "$tmp/j" 2>/dev/null || echo nan
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "load: $(uptime | sed 's/.*load average: //')"
printf "%-30s %6s %5s %8s %8s  %-24s %-24s %s\n" preset steps B "wall A" "wall B" "wall A/B median [range]" "CPU A/B median [range]" "timed in-trial, median [range]"
for ps in "${PRESETS[@]}"; do
  IFS=: read -r p steps batch <<< "$ps"; batch=${batch:-64}
  : > "$tmp/w"; : > "$tmp/c"; : > "$tmp/wa"; : > "$tmp/wb"; : > "$tmp/s"
  run "$p" "$steps" "$batch" >/dev/null # warm-up (data cache, page cache)
  for _ in $(seq "$ROUNDS"); do
    read -r wa ca < <(run "$p" "$steps" "$batch")
    cost_share >> "$tmp/s"
    read -r wb cb < <(run "$p" "$steps" "$batch" --no-noise-scale)
    echo "$wa" >> "$tmp/wa"; echo "$wb" >> "$tmp/wb"
    awk -v a="$wa" -v b="$wb" 'BEGIN { print a / b }' >> "$tmp/w"
    awk -v a="$ca" -v b="$cb" 'BEGIN { print a / b }' >> "$tmp/c"
  done
  range() { sort -g "$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f-%.3f", lo, hi }'; }
  printf "%-30s %6s %5s %8.2f %8.2f  %-24s %-24s %s\n" "$p" "$steps" "$batch" "$(median < "$tmp/wa")" "$(median < "$tmp/wb")" \
    "$(median < "$tmp/w") [$(range "$tmp/w")]" "$(median < "$tmp/c") [$(range "$tmp/c")]" \
    "$(median < "$tmp/s") [$(range "$tmp/s")]"
done
