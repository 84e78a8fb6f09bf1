#!/usr/bin/env bash
# run.sh BUILD_DIR SECONDS TARGET...: runs each libFuzzer target for SECONDS from its committed
# seed corpus (fuzz/corpus/TARGET, read only) plus a working corpus in BUILD_DIR/corpus/TARGET
# (new inputs go there, not into the repository), then prints executions, exec/s, coverage and
# crashes per target. Crash inputs land in BUILD_DIR/artifacts/. Exit 1 if any target crashed.
set -uo pipefail
build=$1
seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$build/artifacts" "$build/logs"
stamp=$(mktemp)
trap 'rm -f "$stamp"' EXIT
rows=()
failed=0
for target in "$@"; do
  work="$build/corpus/$target"
  log="$build/logs/$target.log"
  mkdir -p "$work"
  # rpc_fuzz runs a server with background threads: per-input leak checks would blame it.
  leaks=1
  [[ $target == rpc_fuzz ]] && leaks=0
  dict=()
  [[ -f "$here/$target.dict" ]] && dict=(-dict="$here/$target.dict")
  "$build/fuzz/$target" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2560 \
    -print_final_stats=1 -detect_leaks=$leaks "${dict[@]}" -artifact_prefix="$build/artifacts/$target-" \
    "$work" "$here/corpus/$target" >"$log" 2>&1
  rc=$?
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  crashes=$(find "$build/artifacts" -newer "$stamp" \( -name "$target-crash-*" -o -name "$target-leak-*" -o -name "$target-timeout-*" -o -name "$target-oom-*" \) | wc -l)
  [[ $rc -ne 0 ]] && failed=1
  rows+=("$(printf '%-16s %12s %8s %6s %7s %7s   %s' "$target" "${execs:-?}" "${rate:-?}" \
    "${cov:-?}" "${ft:-?}" "$crashes" "$( [[ $rc -eq 0 ]] && echo ok || echo "exit $rc: $log")")")
done
printf '%-16s %12s %8s %6s %7s %7s   %s\n' target executions exec/s cov ft crashes result
printf '%s\n' "${rows[@]}"
exit $failed
