#!/usr/bin/env bash
# Runs every google-benchmark binary (BUILD_DIR/bin/*_bench), then the PyTorch peer comparison
# (bench/peer_damper.sh), then the dashboard benchmarks (bench/dashboard_sse.mjs,
# bench/dashboard_series.mjs; about 10 minutes; BENCH_DASHBOARD=0 skips them, BENCH_KEEP=DIR keeps
# and reuses the 1,000,000-event job). Used by `make bench`.
#
# Usage: bench/run_all.sh [BUILD_DIR] [peer_damper.sh options, e.g. --epochs 2000]
#   BUILD_DIR defaults to build. BENCH_MIN_TIME (seconds, default 0.2) sets --benchmark_min_time;
#   extra google-benchmark flags can be passed in BENCH_FLAGS (e.g. "--benchmark_repetitions=5").
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:-build}"
[[ $# -gt 0 ]] && shift
cd "$ROOT"
[[ "$BUILD_DIR" = /* ]] || BUILD_DIR="$ROOT/$BUILD_DIR"
MIN_TIME="${BENCH_MIN_TIME:-0.2}"  # google-benchmark 1.7: a plain number of seconds

shopt -s nullglob
benches=("$BUILD_DIR"/bin/*_bench)
if [[ ${#benches[@]} -eq 0 ]]; then
  echo "run_all.sh: no benchmarks in $BUILD_DIR/bin (build with -DSPARROW_BUILD_BENCH=ON)" >&2
  exit 1
fi
status=0
for b in "${benches[@]}"; do
  echo "=== $(basename "$b")"
  # shellcheck disable=SC2086
  "$b" --benchmark_min_time="$MIN_TIME" ${BENCH_FLAGS:-} || status=1
  echo
done
echo "=== peer_damper.sh"
"$ROOT/bench/peer_damper.sh" --build-dir "$BUILD_DIR" "$@" || status=1
if [[ "${BENCH_DASHBOARD:-1}" != 0 ]]; then
  if command -v node >/dev/null && [[ -x "$BUILD_DIR/bin/sparrowd" ]]; then
    echo
    echo "=== dashboard_sse.mjs"
    node "$ROOT/bench/dashboard_sse.mjs" --bin-dir "$BUILD_DIR/bin" || status=1
    echo
    echo "=== dashboard_series.mjs"
    node "$ROOT/bench/dashboard_series.mjs" --bin-dir "$BUILD_DIR/bin" || status=1
  else
    echo "=== dashboard benchmarks skipped (no node or no $BUILD_DIR/bin/sparrowd)"
  fi
fi
exit "$status"
