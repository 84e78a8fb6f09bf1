#!/bin/bash
# Two builds of a Google Benchmark binary compared side by side: each round starts binary A
# on one core and binary B on the other together (taskset), and the next round swaps the
# cores. While both run they see the same state of the machine, so the per-round ratio B / A
# survives the minute-to-minute speed changes of a shared VM that make times taken one after
# another incomparable. Each runs beside the other, so the absolute times are those of a
# loaded machine; only the ratio is the result. Choose a filter that matches single-threaded
# benchmarks only (e.g. 'DamperNormalEquations/1', not '/2'): both get one core each.
#
# Usage: bench/ab_pinned.sh FILTER ROUNDS A_BINARY B_BINARY [MIN_TIME]
#   e.g. bench/ab_pinned.sh 'DamperJacobians' 10 /tmp/old/models_bench build/bin/models_bench
# Prints per benchmark the median, min and max of B / A over the rounds and both medians (ns).
set -euo pipefail
if [ $# -lt 4 ]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
filter=$1 rounds=$2 a=$3 b=$4 min_time=${5:-0.3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {  # core binary output
  taskset -c "$1" "$2" --benchmark_min_time="$min_time" --benchmark_filter="$filter" \
    >"$3.out" 2>"$3.err" || { echo "ab_pinned: $2 failed:" >&2; cat "$3.err" >&2; return 1; }
  awk '/^BM_/ {print $1, $2}' "$3.out" >"$3"
}
for i in $(seq "$rounds"); do
  run $((i % 2)) "$a" "$tmp/a" & pid_a=$!
  run $(((i + 1) % 2)) "$b" "$tmp/b" & pid_b=$!
  wait "$pid_a"
  wait "$pid_b"
  if [ ! -s "$tmp/a" ]; then
    echo "ab_pinned: no benchmark matches '$filter'" >&2
    exit 1
  fi
  paste -d ' ' "$tmp/a" "$tmp/b"
done | /usr/bin/python3 -c '
import statistics, sys
pairs = {}
for line in sys.stdin:
    name_a, time_a, name_b, time_b = line.split()
    if name_a != name_b:
        sys.exit(f"ab_pinned: the binaries ran different benchmarks ({name_a}, {name_b})")
    pairs.setdefault(name_a, []).append((float(time_a), float(time_b)))
for name, v in pairs.items():
    r = sorted(b / a for a, b in v)
    print(f"{name}: B/A median {statistics.median(r):.3f} (min {r[0]:.3f}, max {r[-1]:.3f}) "
          f"over {len(r)} rounds; A median {statistics.median(a for a, _ in v):.0f} ns, "
          f"B median {statistics.median(b for _, b in v):.0f} ns")
'
