#!/usr/bin/env bash
# What the gradient-noise-scale estimate costs a one-worker trial, per preset, as whole processes:
# `scaling-lab train` with the estimate (the default: tr(Σ) sampled on a cadence chosen from its
# measured cost) against the same trial with `--no-noise-scale`, ROUNDS interleaved pairs
# (A B A B …). Prints per preset the median wall and CPU (user + system) ratio A/B and their range.
# The trajectory is the same with and without the estimate, so the pair differs only by its cost.
#
# usage: benches/noise_overhead.sh [BIN] [ROUNDS] [PRESET:STEPS ...]
#   BIN     the scaling-lab binary (default target/release/scaling-lab)
#   ROUNDS  pairs per preset (default 7)
#   PRESET:STEPS  which presets, and how many steps each trial runs (default: one preset per
#           model, steps for a ~1-10 s run on a 2-core CPU). Every trial runs its whole budget
#           (an unreachable target) at B = 64 with the preset's evaluation cadence.
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

run() { # preset steps extra-flag → "wall cpu"
  "$TIME" -o "$tmp/t" -f "%e %U %S" "$BIN" train --preset "$1" --batch-size 64 --steps "$2" \
    --target 0.000001 ${3:+"$3"} >/dev/null 2>&1 || true
  awk '{ printf "%s %.3f\n", $1, $2 + $3 }' "$tmp/t"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "load: $(uptime | sed 's/.*load average: //')"
printf "%-30s %6s %8s %8s  %-24s %-24s\n" preset steps "wall A" "wall B" "wall A/B median [range]" "CPU A/B median [range]"
for ps in "${PRESETS[@]}"; do
  p=${ps%%:*}; steps=${ps##*:}
  : > "$tmp/w"; : > "$tmp/c"; : > "$tmp/wa"; : > "$tmp/wb"
  run "$p" "$steps" >/dev/null # warm-up (data cache, page cache)
  for _ in $(seq "$ROUNDS"); do
    read -r wa ca < <(run "$p" "$steps")
    read -r wb cb < <(run "$p" "$steps" --no-noise-scale)
    echo "$wa" >> "$tmp/wa"; echo "$wb" >> "$tmp/wb"
    awk -v a="$wa" -v b="$wb" 'BEGIN { print a / b }' >> "$tmp/w"
    awk -v a="$ca" -v b="$cb" 'BEGIN { print a / b }' >> "$tmp/c"
  done
  range() { sort -g "$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f-%.3f", lo, hi }'; }
  printf "%-30s %6s %8.2f %8.2f  %-24s %-24s\n" "$p" "$steps" "$(median < "$tmp/wa")" "$(median < "$tmp/wb")" \
    "$(median < "$tmp/w") [$(range "$tmp/w")]" "$(median < "$tmp/c") [$(range "$tmp/c")]"
done
